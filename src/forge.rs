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
use serde_json::json;

use crate::github::{
    GitHubClient, PublishError, PublishOutcome, PublishRequest, PullText, path_segment,
};
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

    /// Posts `body` in thread `thread` (GitHub: the id of the thread's first review
    /// comment; GitLab: the discussion's id).
    async fn reply(&self, thread: &str, body: &str) -> Result<(), PublishError>;

    /// Whether `user` may ask for a review or dismiss a finding (GitHub: write access;
    /// GitLab: the Developer role or above). Not a member: no.
    async fn may_write(&self, user: &str) -> Result<bool, PublishError>;
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

impl<'a> GitHubPull<'a> {
    /// Pull request `owner/repo#number`, its title and description not read (for
    /// replies and access checks; [`Forge::intent`] then has no title or description).
    pub(crate) fn at(client: &'a GitHubClient, owner: &'a str, repo: &'a str, number: u64) -> Self {
        let text = PullText {
            owner,
            repo,
            title: "",
            body: "",
        };
        GitHubPull {
            client,
            text,
            number,
        }
    }
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

    async fn reply(&self, thread: &str, body: &str) -> Result<(), PublishError> {
        let path = format!(
            "/repos/{}/{}/pulls/{}/comments/{}/replies",
            path_segment(self.text.owner),
            path_segment(self.text.repo),
            self.number,
            path_segment(thread)
        );
        self.client
            .post_json(&path, &json!({ "body": body }))
            .await?;
        Ok(())
    }

    async fn may_write(&self, user: &str) -> Result<bool, PublishError> {
        let (owner, repo) = (self.text.owner, self.text.repo);
        Ok(crate::github::has_write_access(self.client, owner, repo, user).await?)
    }
}
