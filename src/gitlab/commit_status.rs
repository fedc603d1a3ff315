//! Redline's commit status on a merge request's head (`POST /projects/:id/statuses/:sha`,
//! name [`STATUS_NAME`]): GitLab's side of [`crate::forge::Forge::show_status`].
//!
//! Invariants: the states are GitLab's `pending`, `running`, `success`, `failed` and
//! `canceled`; a skipped review shows `success` (a `skipped` status would block a merge
//! request whose pipelines must succeed) unless an earlier review's conclusion stands. GitLab
//! refuses a transition to the state a status is in already (400, "Cannot transition
//! status"): that answer means the status shows what was asked, and is no error.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use super::GitLabMergeRequest;
use super::client::GitLabError;
use super::path_segment;
use crate::forge::status::{Conclusion, ReviewStatus};

/// The name of Redline's commit status.
pub const STATUS_NAME: &str = "redline";

/// Shows `status` on commit `head` of the merge request's project.
pub(crate) async fn show(
    mr: &GitLabMergeRequest<'_>,
    head: &str,
    status: &ReviewStatus,
) -> Result<Option<u64>, GitLabError> {
    let path = format!(
        "/projects/{}/statuses/{}",
        path_segment(mr.project),
        path_segment(head)
    );
    let mut body = json!({
        "state": state(status),
        "name": STATUS_NAME,
        "description": status.description(),
    });
    if let ReviewStatus::Done(verdict) = status
        && let Some(link) = &verdict.link
    {
        body["target_url"] = json!(link);
    }
    match mr
        .client
        .write_json(Method::POST, &path, &body, Duration::ZERO)
        .await
    {
        Ok(answer) => Ok(answer["id"].as_u64()),
        Err(error) if is_same_state(&error) => Ok(None),
        Err(error) => Err(error),
    }
}

/// The conclusion of the last finished `redline` status of `head` (success or failed).
pub(crate) async fn shown_conclusion(
    mr: &GitLabMergeRequest<'_>,
    head: &str,
) -> Result<Option<Conclusion>, GitLabError> {
    let path = format!(
        "/projects/{}/repository/commits/{}/statuses?name={STATUS_NAME}&all=true",
        path_segment(mr.project),
        path_segment(head)
    );
    let mut statuses = mr.client.get_all_pages(&path).await?;
    statuses.sort_by_key(|status| std::cmp::Reverse(status["id"].as_u64().unwrap_or(0)));
    Ok(statuses
        .iter()
        .filter(|status| status["name"] == STATUS_NAME)
        .find_map(|status| match status["status"].as_str() {
            Some("success") => Some(Conclusion::Success),
            Some("failed") => Some(Conclusion::Failure),
            _ => None,
        }))
}

/// GitLab's state of `status`.
pub(crate) fn state(status: &ReviewStatus) -> &'static str {
    match status.conclusion() {
        None => match status {
            ReviewStatus::Running { .. } => "running",
            _ => "pending",
        },
        Some(Conclusion::Success | Conclusion::Neutral) => "success",
        Some(Conclusion::Failure | Conclusion::TimedOut) => "failed",
        Some(Conclusion::Cancelled) => "canceled",
    }
}

/// GitLab's answer to a status set to the state it is in already.
fn is_same_state(error: &GitLabError) -> bool {
    matches!(error, GitLabError::Api { status: 400, message, .. }
        if message.contains("Cannot transition status"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::status::SkipReason;

    #[test]
    fn states_are_gitlab_s() {
        let state_of = |status: ReviewStatus| state(&status);
        assert_eq!(state_of(ReviewStatus::Queued { note: None }), "pending");
        let running = ReviewStatus::Running {
            strategy: "auto".into(),
            limits: "none".into(),
        };
        assert_eq!(state_of(running), "running");
        let skipped = |carried| ReviewStatus::Skipped {
            reason: SkipReason::AlreadyReviewed,
            carried,
        };
        assert_eq!(state_of(skipped(None)), "success");
        assert_eq!(state_of(skipped(Some(Conclusion::Failure))), "failed");
        let failed = ReviewStatus::Failed {
            reason: "x".into(),
            timed_out: true,
        };
        assert_eq!(state_of(failed), "failed");
        let cancelled = ReviewStatus::Cancelled { newer_head: None };
        assert_eq!(state_of(cancelled), "canceled");
    }
}
