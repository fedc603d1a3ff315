//! The review threads of a pull request as GitHub's GraphQL API reports them (state and
//! Redline's keys), and resolving one.
//!
//! Invariants: only a bot's first comment gives a thread Redline's keys; GraphQL failures
//! never fail a review (the caller then knows no resolved threads).

use serde_json::{Value, json};

use super::client::GitHubClient;
use super::error::GitHubError;
use crate::forge::dismissed::ReviewThread;
use crate::forge::fingerprint::{concern_of_comment, parse_markers};

/// Review threads read at most (GraphQL pages of 100).
const MAX_THREAD_PAGES: usize = 10;

const THREADS_QUERY: &str = "query($owner: String!, $repo: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $repo) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes { id isResolved isOutdated path comments(first: 1) { nodes { body author { __typename login } } } }
      }
    }
  }
}";

const RESOLVE_MUTATION: &str = "mutation($thread: ID!) {
  resolveReviewThread(input: {threadId: $thread}) { thread { id isResolved } }
}";

/// The review threads of pull request `owner/repo#number` (at most 1,000).
pub(crate) async fn review_threads(
    client: &GitHubClient,
    owner: &str,
    repo: &str,
    number: u64,
) -> Result<Vec<ReviewThread>, GitHubError> {
    let mut threads = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..MAX_THREAD_PAGES {
        let variables = json!({"owner": owner, "repo": repo, "number": number, "after": after});
        let data = client.graphql(THREADS_QUERY, &variables).await?;
        let page = &data["repository"]["pullRequest"]["reviewThreads"];
        let nodes = page["nodes"].as_array().cloned().unwrap_or_default();
        threads.extend(nodes.iter().filter_map(thread_of));
        after = page["pageInfo"]["endCursor"].as_str().map(str::to_string);
        if page["pageInfo"]["hasNextPage"] != json!(true) || after.is_none() {
            break;
        }
    }
    Ok(threads)
}

fn thread_of(node: &Value) -> Option<ReviewThread> {
    let path = node["path"].as_str().unwrap_or_default();
    let first = &node["comments"]["nodes"][0];
    let body = first["body"].as_str().unwrap_or_default();
    // GraphQL names a bot without its `[bot]` suffix; its type tells it apart.
    let by_bot = first["author"]["__typename"] == json!("Bot");
    let mut keys = if by_bot {
        parse_markers(body)
    } else {
        Vec::new()
    };
    if !keys.is_empty() {
        keys.extend(concern_of_comment(path, body));
    }
    Some(ReviewThread {
        id: node["id"].as_str()?.to_string(),
        is_resolved: node["isResolved"] == json!(true),
        is_outdated: node["isOutdated"] == json!(true),
        keys,
    })
}

/// Resolves review thread `id`.
pub async fn resolve_thread(client: &GitHubClient, id: &str) -> Result<(), GitHubError> {
    client
        .graphql(RESOLVE_MUTATION, &json!({ "thread": id }))
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::dismissed::resolved_keys;

    #[test]
    fn resolved_threads_give_their_finding_s_keys() {
        let node = |resolved: bool, body: &str| {
            json!({"id": "T1", "isResolved": resolved, "isOutdated": false, "path": "a.rs",
                "comments": {"nodes": [{"body": body, "author": {"__typename": "Bot", "login": "redline"}}]}})
        };
        let redline = "**[major · bug] Division**\n\n<!-- redline:fp=00ff -->";
        let threads: Vec<ReviewThread> = [
            node(true, redline),
            node(false, redline),
            node(true, "mine"),
        ]
        .iter()
        .filter_map(thread_of)
        .collect();
        let keys = resolved_keys(&threads);
        assert!(keys.contains("00ff"));
        assert_eq!(keys.len(), 2, "{keys:?}");
    }
}
