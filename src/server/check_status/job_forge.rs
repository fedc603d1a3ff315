//! The change request a job's status is shown on, owned (the forge seam borrows), and
//! what it is told when its forge refuses Redline's statuses.

use crate::forge::Forge;
use crate::forge::notice::notice_once;
use crate::forge::status::{Conclusion, ReviewStatus, StatusError, StatusTarget};
use crate::github::GitHubClient;
use crate::github::GitHubPull;
use crate::gitlab::{GitLabClient, GitLabMergeRequest};

/// The notice a pull request gets when the App may not write checks.
const GITHUB_DENIED: &str = "Redline cannot show its review in this pull request's checks: \
    the GitHub App lacks the **Checks: Read and write** permission (`checks: write`). An \
    owner of the installation can grant it in the App's settings. Reviews are posted as before.";
/// The notice a merge request gets when the token may not set commit statuses.
const GITLAB_DENIED: &str = "Redline cannot set this merge request's `redline` commit status: \
    its token needs the Developer role or above (and the `api` scope). Reviews are posted as before.";

/// A change request as a status is shown on it, owned (the forge seam borrows).
pub(crate) enum JobForge {
    /// A GitHub pull request, through an installation client.
    GitHub {
        client: GitHubClient,
        owner: String,
        repo: String,
        number: u64,
    },
    /// A GitLab merge request.
    GitLab {
        client: GitLabClient,
        project: String,
        iid: u64,
    },
}

impl JobForge {
    /// The change through the forge seam, and the notice it gets when its statuses are
    /// refused: the one place the forges are told apart.
    fn seam(&self) -> (Box<dyn Forge + '_>, &'static str) {
        match self {
            JobForge::GitHub {
                client,
                owner,
                repo,
                number,
            } => (
                Box::new(GitHubPull::at(client, owner, repo, *number)),
                GITHUB_DENIED,
            ),
            JobForge::GitLab {
                client,
                project,
                iid,
            } => (
                Box::new(GitLabMergeRequest::at(client, project, *iid)),
                GITLAB_DENIED,
            ),
        }
    }

    pub(super) async fn show(
        &self,
        target: &StatusTarget<'_>,
        status: &ReviewStatus,
    ) -> Result<Option<u64>, StatusError> {
        self.seam().0.show_status(target, status).await
    }

    pub(super) async fn shown_conclusion(
        &self,
        head: &str,
    ) -> Result<Option<Conclusion>, StatusError> {
        self.seam().0.shown_conclusion(head).await
    }

    /// Tells the change, once, that its statuses cannot be shown.
    pub(super) async fn denied_notice(&self) {
        let (forge, notice) = self.seam();
        if let Err(error) = notice_once(forge.as_ref(), notice).await {
            tracing::warn!(%error, "could not post the notice of the missing permission");
        }
    }
}
