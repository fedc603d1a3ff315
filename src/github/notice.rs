//! One-off notices on a pull request (e.g. "the repository's config is broken"), posted
//! at most once per text: each carries a hidden marker with a hash of its text, and a
//! notice whose marker is already on the pull request is not posted again (redeliveries
//! and retried jobs stay quiet).

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::client::{GitHubClient, path_segment};
use super::error::GitHubError;
use super::fingerprint::neutralise_markers;

/// The prefix of a notice marker.
const NOTICE_PREFIX: &str = "<!-- redline:notice=";

/// The hidden marker of a notice text.
fn notice_marker(text: &str) -> String {
    let digest = hex::encode(Sha256::digest(text.as_bytes()));
    format!("{NOTICE_PREFIX}{} -->", &digest[..16])
}

/// A notice ready to post: its text with any Redline marker defused (it may quote
/// repository content), and the hidden marker that tells it is there already.
pub(crate) struct Notice {
    /// What to post: the text, then the marker.
    pub body: String,
    /// The marker to look for among the comments already posted.
    pub marker: String,
}

impl Notice {
    /// The notice of `text`.
    pub(crate) fn of(text: &str) -> Notice {
        let text = neutralise_markers(text);
        let marker = notice_marker(&text);
        Notice {
            body: format!("{text}\n\n{marker}"),
            marker,
        }
    }

    /// Whether one of `bodies` is this notice.
    pub(crate) fn is_among<'a>(&self, mut bodies: impl Iterator<Item = &'a str>) -> bool {
        bodies.any(|body| body.contains(&self.marker))
    }
}

/// Posts `text` as a comment on pull request `owner/repo#number` unless the same notice
/// is there already; `Ok(true)` when it was posted. `text` may quote repository content:
/// anything in it that reads as a Redline marker is defused.
pub(crate) async fn post_notice_once(
    client: &GitHubClient,
    owner: &str,
    repo: &str,
    number: u64,
    text: &str,
) -> Result<bool, GitHubError> {
    let notice = Notice::of(text);
    let path = format!(
        "/repos/{}/{}/issues/{number}/comments",
        path_segment(owner),
        path_segment(repo)
    );
    let comments = client.get_all_pages(&path).await?;
    let bodies = comments
        .iter()
        .filter_map(|c| c.get("body").and_then(Value::as_str));
    if notice.is_among(bodies) {
        return Ok(false);
    }
    let body = serde_json::json!({"body": notice.body});
    client.post_json(&path, &body).await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_depend_on_the_text_only() {
        assert_eq!(notice_marker("a"), notice_marker("a"));
        assert_ne!(notice_marker("a"), notice_marker("b"));
        assert!(notice_marker("a").starts_with(NOTICE_PREFIX));
    }
}
