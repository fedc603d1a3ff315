//! A merge request as GitLab describes it: title, description, `diff_refs` (the SHAs a
//! discussion's position must name), and the issues it closes, for the intent.
//!
//! Invariants: reading the closed issues never fails a review (what cannot be read is
//! left out, at most [`MAX_ISSUES`] are read); texts are returned
//! as written (the intent section bounds and cleans them).

use serde_json::Value;

use super::client::{GitLabClient, GitLabError};
use super::path_segment;
use crate::intent::{LinkedIssue, MAX_ISSUES};

/// The SHAs GitLab's diff of a merge request is computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DiffRefs {
    /// The merge base GitLab diffs from.
    pub(crate) base_sha: String,
    /// The target branch's head when the diff was made.
    pub(crate) start_sha: String,
    /// The source branch's head.
    pub(crate) head_sha: String,
}

/// A merge request, `GET /projects/:id/merge_requests/:iid`.
#[derive(Debug, Clone)]
pub(crate) struct MergeRequest {
    /// The title, as the author wrote it.
    pub(crate) title: String,
    /// The description, as the author wrote it.
    pub(crate) description: String,
    /// Its diff's SHAs (absent while GitLab is still preparing the diff).
    pub(crate) diff_refs: Option<DiffRefs>,
    /// Its author's username, when GitLab names one.
    pub(crate) author: Option<String>,
}

/// `/projects/:id/merge_requests/:iid`, the project id or path made one path segment.
pub(crate) fn merge_request_path(project: &str, iid: u64) -> String {
    format!("/projects/{}/merge_requests/{iid}", path_segment(project))
}

/// Reads merge request `iid` of `project`.
pub(crate) async fn fetch_merge_request(
    client: &GitLabClient,
    project: &str,
    iid: u64,
) -> Result<MergeRequest, GitLabError> {
    let answer = client.get_json(&merge_request_path(project, iid)).await?;
    let text = |key: &str| answer[key].as_str().unwrap_or_default().to_string();
    let refs = &answer["diff_refs"];
    let sha = |key: &str| refs[key].as_str().map(str::to_string);
    let diff_refs = match (sha("base_sha"), sha("start_sha"), sha("head_sha")) {
        (Some(base_sha), Some(start_sha), Some(head_sha)) => Some(DiffRefs {
            base_sha,
            start_sha,
            head_sha,
        }),
        _ => None,
    };
    Ok(MergeRequest {
        title: text("title"),
        description: text("description"),
        diff_refs,
        author: answer["author"]["username"]
            .as_str()
            .filter(|name| !name.is_empty())
            .map(str::to_string),
    })
}

/// The issues the merge request closes (`GET .../closes_issues`), at most [`MAX_ISSUES`].
pub(crate) async fn closed_issues(
    client: &GitLabClient,
    project: &str,
    iid: u64,
) -> Vec<LinkedIssue> {
    let path = format!("{}/closes_issues", merge_request_path(project, iid));
    match client.get_json(&path).await {
        Ok(Value::Array(issues)) => issues
            .iter()
            .take(MAX_ISSUES)
            .filter_map(issue_of)
            .collect(),
        Ok(_) => Vec::new(),
        Err(error) => {
            tracing::warn!(%error, "the issues the merge request closes were not read");
            Vec::new()
        }
    }
}

fn issue_of(issue: &Value) -> Option<LinkedIssue> {
    Some(LinkedIssue {
        number: issue["iid"].as_u64()?,
        title: issue["title"].as_str().unwrap_or_default().to_string(),
        body: issue["description"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    })
}
