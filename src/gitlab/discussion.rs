//! A merge request's discussion read as a review thread ([`Thread`]), and the project's
//! clone URL, for `redline serve`'s GitLab side.
//!
//! Invariants: a note counts as Redline's (`by_bot`) only when the token's own user wrote
//! it, so a copied marker in anyone else's note makes nothing Redline's; a discussion that
//! is gone (404) is `None`, never an error to retry.

use serde_json::Value;

use super::client::{GitLabClient, GitLabError};
use super::merge_request::merge_request_path;
use super::path_segment;
use crate::forge::thread::{Thread, ThreadPost};

/// Discussion `discussion_id` of merge request `iid`, its notes oldest first; `None` when
/// it is gone.
pub(crate) async fn load_discussion(
    client: &GitLabClient,
    project: &str,
    iid: u64,
    discussion_id: &str,
) -> Result<Option<Thread>, GitLabError> {
    let own = client.own_username().await?;
    let path = format!(
        "{}/discussions/{}",
        merge_request_path(project, iid),
        path_segment(discussion_id)
    );
    let discussion = match client.get_json(&path).await {
        Ok(discussion) => discussion,
        Err(error) if error.status() == Some(404) => return Ok(None),
        Err(error) => return Err(error),
    };
    Ok(thread_of(&discussion, &own))
}

/// The thread of a discussion's notes (`None` without notes).
pub(crate) fn thread_of(discussion: &Value, own: &str) -> Option<Thread> {
    let notes = discussion["notes"].as_array()?;
    let posts: Vec<ThreadPost> = notes
        .iter()
        .filter(|note| note["system"] != Value::Bool(true))
        .filter_map(|note| {
            let author = note["author"]["username"].as_str().unwrap_or_default();
            Some(ThreadPost {
                id: note["id"].as_u64()?,
                author: author.to_string(),
                by_bot: !own.is_empty() && author == own,
                body: note["body"].as_str().unwrap_or_default().to_string(),
                path: note["position"]["new_path"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            })
        })
        .collect();
    (!posts.is_empty()).then_some(Thread { posts })
}

/// The project's HTTP clone URL (`GET /projects/:id`, `http_url_to_repo`).
pub(crate) async fn clone_url(
    client: &GitLabClient,
    project: &str,
) -> Result<Option<String>, GitLabError> {
    let answer = client
        .get_json(&format!("/projects/{}", path_segment(project)))
        .await?;
    Ok(answer["http_url_to_repo"].as_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_tokens_own_notes_are_redlines() {
        let discussion = json!({"id": "d1", "notes": [
            {"id": 10, "author": {"username": "redline-bot"}, "body": "**[major · bug] X**\n\n<!-- redline:fp=00ff -->",
             "position": {"new_path": "src/a.rs"}},
            {"id": 11, "author": {"username": "ada"}, "body": "why?", "system": false},
            {"id": 12, "author": {"username": "ada"}, "body": "changed the line", "system": true},
        ]});
        let thread = thread_of(&discussion, "redline-bot").unwrap();
        assert_eq!(thread.posts.len(), 2, "system notes are not posts");
        assert!(thread.is_redline_s());
        assert_eq!(thread.root().map(|r| r.path.as_str()), Some("src/a.rs"));
        let copied = thread_of(&discussion, "someone-else").unwrap();
        assert!(!copied.is_redline_s());
        assert!(thread_of(&json!({"notes": []}), "redline-bot").is_none());
    }
}
