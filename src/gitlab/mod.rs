//! GitLab integration: a REST v4 client (gitlab.com and self-managed), reading a merge
//! request and its intent, publishing a review as discussions and one summary note, and
//! the Code Quality report. [`GitLabMergeRequest`] is GitLab's side of the forge seam
//! ([`crate::forge::Forge`]).

mod client;
pub(crate) mod code_quality;
pub(crate) mod merge_request;
mod position;
mod publish;

use async_trait::async_trait;

pub use client::GitLabError;
pub(crate) use client::{GitLabClient, api_url_from_env};
use merge_request::{DiffRefs, closed_issues};

use crate::forge::Forge;
use crate::github::{PublishError, PublishOutcome, PublishRequest};
use crate::intent::{CommitMessage, Intent};

/// A merge request, to review and publish on.
pub(crate) struct GitLabMergeRequest<'a> {
    /// The client.
    pub(crate) client: &'a GitLabClient,
    /// The project's id or full path.
    pub(crate) project: &'a str,
    /// The merge request's iid (its number in the project).
    pub(crate) iid: u64,
    /// Its title and description, as the author wrote them.
    pub(crate) title: &'a str,
    pub(crate) description: &'a str,
    /// The SHAs discussion positions name (none: every finding goes to the summary).
    pub(crate) diff_refs: Option<&'a DiffRefs>,
}

#[async_trait]
impl Forge for GitLabMergeRequest<'_> {
    async fn last_reviewed_sha(&self) -> Result<Option<String>, PublishError> {
        Ok(publish::last_reviewed_sha(self.client, self.project, self.iid).await?)
    }

    async fn intent(&self, commits: Vec<CommitMessage>) -> Intent {
        Intent {
            title: Some(self.title.to_string()).filter(|t| !t.trim().is_empty()),
            description: Some(self.description.to_string()).filter(|d| !d.trim().is_empty()),
            issues: closed_issues(self.client, self.project, self.iid).await,
            commits,
        }
    }

    async fn publish(&self, request: PublishRequest<'_>) -> Result<PublishOutcome, PublishError> {
        publish::publish(self.client, self.project, self.iid, self.diff_refs, request).await
    }
}
