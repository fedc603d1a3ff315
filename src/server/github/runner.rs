//! GitHub's steps of `redline serve`'s job pipeline ([`crate::server::pipeline`]): a job acts
//! through its App installation (a job without one is not GitHub's to run), its pull
//! request is read as GitHub has it now, a `/redline review` comment or a re-run needs a
//! requester with write access, the mirror lives at `<cache>/<owner>/<name>.git` and is
//! fetched with the installation's token, dismissals are kept under `owner/name`, and a
//! failure is told in a comment on the pull request.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;

use crate::forge::notice::notice_once;
use crate::forge::{Forge, ForgeKind, PublishConfig};
use crate::github::{
    AppAuth, GitHubClient, GitHubError, GitHubPull, PullInfo, PullText, fetch_pull,
    has_write_access, path_segment,
};
use crate::queue::{Job, JobError, ReviewTrigger};
use crate::server::pipeline::{JobSteps, MirrorSource, Pipeline};

/// Runs review jobs for a GitHub App.
pub type ReviewRunner = Pipeline<GitHubSteps>;

/// GitHub's steps of a review job: the App's credentials and installation-token cache.
#[derive(Clone)]
pub struct GitHubSteps {
    /// App credentials and the installation-token cache.
    pub auth: AppAuth,
}

/// A pull request of an installation, as GitHub has it when the job runs.
pub(crate) struct GitHubChange {
    /// The installation that can read it.
    installation_id: u64,
    /// Its client.
    client: GitHubClient,
    /// Repository owner and name.
    owner: String,
    repo: String,
    /// The pull request.
    pull: PullInfo,
}

impl GitHubChange {
    /// The pull request at `owner/repo#number`, as GitHub has it now, through `client`
    /// (of installation `installation_id`).
    pub(crate) async fn read(
        client: GitHubClient,
        installation_id: u64,
        (owner, repo): (&str, &str),
        number: u64,
    ) -> Result<GitHubChange, GitHubError> {
        let pull = fetch_pull(&client, owner, repo, number).await?;
        Ok(GitHubChange {
            installation_id,
            client,
            owner: owner.to_string(),
            repo: repo.to_string(),
            pull,
        })
    }

    /// The pull request `number` as the forge seam has it, its title and description included.
    pub(crate) fn seam(&self, number: u64) -> GitHubPull<'_> {
        let text = PullText {
            owner: &self.owner,
            repo: &self.repo,
            title: &self.pull.title,
            body: &self.pull.body,
        };
        GitHubPull {
            client: &self.client,
            text,
            number,
        }
    }

    /// Where the pull request's mirror is and how it is fetched (`number` names it in errors).
    pub(crate) async fn mirror(
        &self,
        auth: &AppAuth,
        number: u64,
    ) -> Result<MirrorSource, JobError> {
        let (owner, repo) = (&self.owner, &self.repo);
        let clone_url = self.pull.clone_url.clone().ok_or_else(|| {
            JobError::Permanent(
                format!("pull request {owner}/{repo}#{number} has no clone URL").into(),
            )
        })?;
        let token = auth
            .installation_token(self.installation_id)
            .await
            .map_err(github_error)?;
        let path = PathBuf::from(path_segment(owner)).join(format!("{}.git", path_segment(repo)));
        Ok(MirrorSource {
            path,
            clone_url,
            token,
        })
    }

    /// The pull request's base and head commits.
    pub(crate) fn revisions(&self) -> (&str, &str) {
        (&self.pull.base_sha, &self.pull.head_sha)
    }
}

#[async_trait]
impl JobSteps for GitHubSteps {
    type Change = GitHubChange;

    const FORGE: ForgeKind = ForgeKind::GitHub;
    const NOUN: &'static str = "pull request";

    async fn open(&self, job: &Job) -> Result<Option<GitHubChange>, JobError> {
        let Some((owner, repo)) = job.repo_full_name.split_once('/') else {
            return Err(JobError::Permanent(
                format!("bad repository name {}", job.repo_full_name).into(),
            ));
        };
        let installation_id = github_installation(job)?;
        let client = self.auth.installation_client(installation_id);
        if !may_request(job, &client, owner, repo).await? {
            return Ok(None);
        }
        let read = GitHubChange::read(client, installation_id, (owner, repo), job.pr_number);
        read.await.map(Some).map_err(github_error)
    }

    fn revisions(change: &GitHubChange) -> (&str, &str) {
        change.revisions()
    }

    fn seam<'a>(&'a self, job: &'a Job, change: &'a GitHubChange) -> Box<dyn Forge + 'a> {
        Box::new(change.seam(job.pr_number))
    }

    async fn mirror(&self, job: &Job, change: &GitHubChange) -> Result<MirrorSource, JobError> {
        change.mirror(&self.auth, job.pr_number).await
    }

    fn key(job: &Job) -> String {
        job.repo_full_name.clone()
    }

    /// A comment on the pull request (the reason carries no secrets: errors are redacted
    /// where they are made).
    async fn post_failure(&self, job: &Job, text: &str, _publish: &PublishConfig) {
        let Some((owner, repo)) = job.repo_full_name.split_once('/') else {
            return;
        };
        let Ok(installation_id) = github_installation(job) else {
            return;
        };
        let client = self.auth.installation_client(installation_id);
        let path = format!(
            "/repos/{}/{}/issues/{}/comments",
            path_segment(owner),
            path_segment(repo),
            job.pr_number
        );
        let body = serde_json::json!({ "body": text });
        if let Err(e) = client.post_json(&path, &body).await {
            tracing::warn!(job = %job.id, error = %e, "could not post the failure notice");
        }
    }
}

/// The GitHub App installation a job acts through; a job of another forge, or without an
/// installation, is not this runner's to run (no retry mends that).
fn github_installation(job: &Job) -> Result<u64, JobError> {
    match (job.forge, job.installation_id) {
        (ForgeKind::GitHub, Some(id)) => Ok(id),
        (forge, _) => Err(JobError::Permanent(
            format!("job {} ({forge}) has no GitHub App installation", job.id).into(),
        )),
    }
}

/// Whether the job may run: a `/redline review` comment or a re-run needs a requester with
/// write access.
async fn may_request(
    job: &Job,
    client: &GitHubClient,
    owner: &str,
    repo: &str,
) -> Result<bool, JobError> {
    let Some(commenter) = job.trigger().ok().and_then(ReviewTrigger::into_requester) else {
        return Ok(true);
    };
    let allowed = has_write_access(client, owner, repo, &commenter)
        .await
        .map_err(github_error)?;
    if !allowed {
        tracing::info!(job = %job.id, %commenter, "review requested without write access; ignored");
    }
    Ok(allowed)
}

/// A GitHub failure as a job error: what a retry cannot mend is permanent.
pub(crate) fn github_error(e: GitHubError) -> JobError {
    match e.status() {
        Some(404) | Some(401) | Some(403) | Some(422) => JobError::Permanent(e.into()),
        _ => JobError::Retryable(e.into()),
    }
}

/// Posts the usage reply to a malformed `/redline` command, in the background, when the
/// commenter has write access (as a review request needs); once per text and pull request.
pub(crate) fn command_reply_hook(auth: AppAuth) -> crate::server::CommandReplyHook {
    Arc::new(move |reply: crate::server::CommandReply| {
        let auth = auth.clone();
        tokio::spawn(async move {
            let Some((owner, repo)) = reply.repo_full_name.split_once('/') else {
                return;
            };
            let client = auth.installation_client(reply.installation_id);
            let pull = GitHubPull::at(&client, owner, repo, reply.pr_number);
            let posted = match pull.may_write(&reply.commenter).await {
                Ok(true) => notice_once(&pull, &reply.text).await.map(|_| ()),
                Ok(false) => Ok(()),
                Err(e) => Err(e),
            };
            if let Err(error) = posted {
                tracing::warn!(%error, "could not reply to a malformed /redline command");
            }
        });
    })
}
