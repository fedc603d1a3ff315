//! The forge seam: what the pull-request flow ([`crate::review_flow`]) needs from the
//! place a change request lives (GitHub pull requests, GitLab merge requests).
//!
//! Invariants: every forge publishes the same plan for the same findings (the fingerprints,
//! dismissal keys, limits and summary of [`crate::github::publish`]), so a change reviewed
//! through GitHub or GitLab gets the same model requests and the same findings; nothing is
//! posted twice (earlier markers count as posted); what the author wrote (title,
//! description, closed issues) is data for the intent section, never instructions.
//! Layering: used by `review_flow` and `cli`; implemented by `github` and `gitlab`.

use async_trait::async_trait;

use crate::github::{GitHubClient, PublishError, PublishOutcome, PublishRequest, PullText};
use crate::intent::{CommitMessage, Intent};

/// A change request on a forge, and Redline's earlier work on it.
#[async_trait]
pub(crate) trait Forge: Send + Sync {
    /// The head SHA the last published review covered (from Redline's summary).
    async fn last_reviewed_sha(&self) -> Result<Option<String>, PublishError>;

    /// What the author says the change does: title, description and the issues it
    /// closes, with `commits` (the reviewed commits' messages). Never fails: what cannot
    /// be read is left out.
    async fn intent(&self, commits: Vec<CommitMessage>) -> Intent;

    /// Publishes one run's review: new findings inline (on lines of the diff only), the
    /// rest and the run's summary in Redline's one summary comment, edited in place.
    async fn publish(&self, request: PublishRequest<'_>) -> Result<PublishOutcome, PublishError>;
}

/// A GitHub pull request, through [`GitHubClient`]: today's behaviour.
pub(crate) struct GitHubPull<'a> {
    /// The client.
    pub(crate) client: &'a GitHubClient,
    /// The pull request and what its author wrote on it.
    pub(crate) text: PullText<'a>,
    /// Its number.
    pub(crate) number: u64,
}

#[async_trait]
impl Forge for GitHubPull<'_> {
    async fn last_reviewed_sha(&self) -> Result<Option<String>, PublishError> {
        let (owner, repo) = (self.text.owner, self.text.repo);
        Ok(crate::github::last_reviewed_sha(self.client, owner, repo, self.number).await?)
    }

    async fn intent(&self, commits: Vec<CommitMessage>) -> Intent {
        crate::github::pull_intent(self.client, self.text, commits).await
    }

    async fn publish(&self, request: PublishRequest<'_>) -> Result<PublishOutcome, PublishError> {
        crate::github::publish_review(self.client, request).await
    }
}
