//! What a pull request's author says it does: its title and description, and the issues
//! its description says it closes (`Fixes #12`, `Closes #3`, `Resolves #7`; this
//! repository's issues only), each read with the REST issues API.
//!
//! Invariants: reading the intent never fails a review: an issue that cannot be read is
//! left out, and a token without `issues: read` is said once (a warning in the log) for
//! the whole pull request; at most [`MAX_ISSUES`] issues are read; the texts are returned
//! as written (the section that reaches the model is cleaned and bounded by
//! [`crate::intent::Intent::render`]).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::client::{GitHubClient, path_segment};
use super::error::GitHubError;
use crate::intent::{CommitMessage, Intent, LinkedIssue, MAX_ISSUES};

/// GitHub's closing keywords before a same-repository issue reference.
static CLOSING: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+#(\d{1,9})\b").ok()
});

/// The issue numbers `body` says the pull request closes, in order, each once.
pub(crate) fn closing_references(body: &str) -> Vec<u64> {
    let Some(closing) = CLOSING.as_ref() else {
        return Vec::new();
    };
    let mut numbers: Vec<u64> = Vec::new();
    for found in closing.captures_iter(body) {
        let number = found.get(1).and_then(|n| n.as_str().parse().ok());
        if let Some(number) = number.filter(|n| *n > 0 && !numbers.contains(n)) {
            numbers.push(number);
        }
    }
    numbers
}

/// A pull request and what its author wrote on it.
#[derive(Debug, Clone, Copy)]
pub struct PullText<'a> {
    /// Repository owner.
    pub owner: &'a str,
    /// Repository name.
    pub repo: &'a str,
    /// The pull request's title.
    pub title: &'a str,
    /// The pull request's description.
    pub body: &'a str,
}

/// The intent of the pull request `at`, with the commit messages of the reviewed range.
pub async fn fetch_pull_intent(
    client: &GitHubClient,
    at: PullText<'_>,
    commits: Vec<CommitMessage>,
) -> Intent {
    let PullText {
        owner,
        repo,
        title,
        body,
    } = at;
    let mut issues = Vec::new();
    for number in closing_references(body).into_iter().take(MAX_ISSUES) {
        match fetch_issue(client, owner, repo, number).await {
            Ok(Some(issue)) => issues.push(issue),
            Ok(None) => {}
            Err(GitHubError::Api { status, .. }) if matches!(status, 401 | 403 | 404) => {
                tracing::warn!(
                    issue = number,
                    status,
                    "the linked issues cannot be read (the token needs `issues: read`); \
                     reviewing without them"
                );
                break;
            }
            Err(error) => {
                tracing::warn!(issue = number, %error, "a linked issue was not read");
            }
        }
    }
    Intent {
        title: Some(title.to_string()).filter(|t| !t.trim().is_empty()),
        description: Some(body.to_string()).filter(|b| !b.trim().is_empty()),
        issues,
        commits,
    }
}

/// `GET /repos/{owner}/{repo}/issues/{n}`; `None` when it is a pull request, not an issue.
async fn fetch_issue(
    client: &GitHubClient,
    owner: &str,
    repo: &str,
    number: u64,
) -> Result<Option<LinkedIssue>, GitHubError> {
    let path = format!(
        "/repos/{}/{}/issues/{number}",
        path_segment(owner),
        path_segment(repo)
    );
    let answer = client.get_json(&path).await?;
    if answer.get("pull_request").is_some_and(|p| !p.is_null()) {
        return Ok(None);
    }
    let text = |key: &str| {
        answer
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    Ok(Some(LinkedIssue {
        number,
        title: text("title"),
        body: text("body"),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closing_keywords_name_same_repository_issues() {
        let body = "Fixes #12 and closes: #3.\nResolved #12 again; see #99, other/repo#5, \
                    prefix#7 and Fix #0. fixes  #41";
        assert_eq!(closing_references(body), vec![12, 3, 41]);
        assert!(closing_references("no references; a fix for #8 (not a keyword use)").is_empty());
    }
}
