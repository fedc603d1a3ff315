//! GitHub's side of one-off notices ([`crate::forge::notice`]): an issue comment on the
//! pull request, posted unless the same notice is among its comments.

use serde_json::Value;

use super::client::{GitHubClient, path_segment};
use super::error::GitHubError;
use crate::forge::notice::MarkedNotice;

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
    let notice = MarkedNotice::of(text);
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
