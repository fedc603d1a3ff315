//! GitHub's side of the forge seam ([`crate::forge::Forge`]): a pull request, read and
//! written through [`GitHubClient`] (reviews and issue comments over REST, review threads
//! over GraphQL, the check run `Redline`).

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{GitHubClient, PullText, path_segment};
use crate::forge::publish::{Plan, PublishError, PublishOutcome, PublishRequest};
use crate::forge::status::{Conclusion, ReviewStatus, StatusError, StatusTarget};
use crate::forge::{Earlier, Forge, SummaryComment};
use crate::intent::{CommitMessage, Intent};

/// A GitHub pull request, through [`GitHubClient`].
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
    /// publishing, replies and access checks; [`Forge::intent`] then has no title or
    /// description).
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

    /// The pull request's issue comments (where notices go).
    fn issue_comments_path(&self) -> String {
        format!("{}/issues/{}/comments", self.repo_path(), self.number)
    }

    /// `/repos/{owner}/{repo}`.
    pub(crate) fn repo_path(&self) -> String {
        format!(
            "/repos/{}/{}",
            path_segment(self.text.owner),
            path_segment(self.text.repo)
        )
    }
}

#[async_trait]
impl Forge for GitHubPull<'_> {
    async fn intent(&self, commits: Vec<CommitMessage>) -> Intent {
        super::fetch_pull_intent(self.client, self.text, commits).await
    }

    async fn summary(&self) -> Result<Option<SummaryComment>, PublishError> {
        super::publish::find_summary(self).await
    }

    async fn earlier(&self) -> Result<Earlier, PublishError> {
        super::publish::earlier(self).await
    }

    async fn post_review<'f>(
        &self,
        req: &PublishRequest<'f>,
        plan: &mut Plan<'f>,
        summary_url: Option<&str>,
        outcome: &mut PublishOutcome,
    ) -> Result<(), PublishError> {
        super::publish::post_review(self, req, plan, summary_url, outcome).await
    }

    async fn write_summary(
        &self,
        existing: Option<&SummaryComment>,
        body: &str,
        interval: Duration,
    ) -> Result<Option<String>, PublishError> {
        super::publish::write_summary(self, existing, body, interval).await
    }

    async fn resolve(&self, thread: &str) -> Result<(), PublishError> {
        Ok(super::review_threads::resolve_thread(self.client, thread).await?)
    }

    async fn reply(&self, thread: &str, body: &str) -> Result<(), PublishError> {
        let path = format!(
            "{}/pulls/{}/comments/{}/replies",
            self.repo_path(),
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
        Ok(super::has_write_access(self.client, owner, repo, user).await?)
    }

    async fn show_status(
        &self,
        target: &StatusTarget<'_>,
        status: &ReviewStatus,
    ) -> Result<Option<u64>, StatusError> {
        Ok(super::check_run::show(self, target, status).await?)
    }

    async fn shown_conclusion(&self, head: &str) -> Result<Option<Conclusion>, StatusError> {
        Ok(super::check_run::shown_conclusion(self, head).await?)
    }

    async fn comment_bodies(&self) -> Result<Vec<String>, PublishError> {
        let comments = self
            .client
            .get_all_pages(&self.issue_comments_path())
            .await?;
        let bodies = comments
            .iter()
            .filter_map(|comment| comment.get("body").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        Ok(bodies)
    }

    async fn post_comment(&self, body: &str) -> Result<(), PublishError> {
        let path = self.issue_comments_path();
        self.client
            .post_json(&path, &json!({ "body": body }))
            .await?;
        Ok(())
    }
}
