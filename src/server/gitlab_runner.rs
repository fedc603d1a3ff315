//! GitLab's jobs in `redline serve`: a queued merge request review becomes a fetch of its
//! commits into a bare mirror, the project's settings (its `.redline.toml` at the base
//! commit, bounded by the server's), a review, and one idempotent publication through
//! the forge seam ([`GitLabMergeRequest`]), as GitHub's jobs are run
//! ([`super::review_runner`]), its state shown as the head's commit status
//! ([`super::check_status`]). [`ForgeRunner`] hands each job to its forge's runner.
//!
//! Invariants: positions name the merge request's `diff_refs` as GitLab has them when the
//! job runs (a head GitLab has moved past is reviewed as GitLab has it now; a newer push
//! queues its own job anyway); a `/redline review` note runs only for a commenter with
//! the Developer role or above; dismissals and thread caps are kept under the key
//! [`gitlab_key`], so a GitHub repository of the same name never shares them; mirrors
//! live under `<cache>/@gitlab/`, a name no GitHub owner can have.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::check_status::{
    Checks, Ended, JobStatus, broken_settings, no_review_needed, reviewed, show_running,
};
use super::review_runner::{
    Mirror, ModelFactory, ReviewRunner, Since, fetch_into_mirror, repository_settings,
    review_recorded, send, since,
};
use crate::config::ModelSettings;
use crate::config::limits::LimitCeilings;
use crate::config::settings::Settings;
use crate::flow;
use crate::flow::pull::{PullCommits, PullTarget, short};
use crate::forge::command::{Command, already_reviewed, parse_command};
use crate::forge::dismissed::Dismissals;
use crate::forge::publish::last_reviewed_sha;
use crate::forge::{Forge, ForgeKind};
use crate::forge::{PublishConfig, PublishError};
use crate::gitlab::discussion::clone_url;
use crate::gitlab::merge_request::{
    DiffRefs, MergeRequest, fetch_merge_request, merge_request_path,
};
use crate::gitlab::{GitLabClient, GitLabError, GitLabMergeRequest, path_segment};
use crate::llm::Secret;
use crate::queue::{Job, JobError, JobRunner, Queue, ReviewTrigger, RunOutcome};
use crate::review::report::ReviewReport;

/// The key GitLab project `project`'s dismissals, claimed notes and answer counts are kept
/// under (GitHub's are kept under `owner/name`, which has no colon).
pub(crate) fn gitlab_key(project: &str) -> String {
    format!("gitlab:{project}")
}

/// The longest mirror directory name (file systems take 255 bytes).
const MAX_MIRROR_NAME: usize = 200;

/// The directory name of `project`'s mirror: its path made one segment, and when that is
/// too long, a readable prefix of it and a hash of the whole path (at most
/// [`MAX_MIRROR_NAME`] bytes either way; distinct paths keep distinct names).
pub(crate) fn mirror_dir_name(project: &str) -> String {
    let whole = format!("{}.git", path_segment(project));
    if whole.len() <= MAX_MIRROR_NAME {
        return whole;
    }
    use sha2::{Digest, Sha256};
    let hash = hex::encode(Sha256::digest(project.as_bytes()));
    let prefix = crate::text::prefix_at_char_boundary(&whole, MAX_MIRROR_NAME - 64 - 6);
    format!("{prefix}-{hash}.git")
}

/// Runs GitLab merge request jobs.
pub struct GitLabRunner {
    /// The API client (`GITLAB_API_URL`, `GITLAB_TOKEN`).
    pub(crate) client: GitLabClient,
    /// The token, for fetching over HTTPS.
    pub(crate) token: Secret,
    /// The cache, model, limits and publishing settings (GitHub's runner has the same).
    pub(crate) shared: RunnerSettings,
}

impl GitLabRunner {
    /// The merge request of `job` as GitLab has it now, as a forge to publish on.
    fn forge<'a>(&'a self, job: &'a Job, mr: &'a MergeRequest) -> GitLabMergeRequest<'a> {
        GitLabMergeRequest {
            client: &self.client,
            project: &job.repo_full_name,
            iid: job.pr_number,
            title: &mr.title,
            description: &mr.description,
            diff_refs: mr.diff_refs.as_ref(),
        }
    }

    async fn run_job(
        &self,
        job: &Job,
        cancel: CancellationToken,
        status: Option<&JobStatus>,
    ) -> Result<Ended, JobError> {
        let project = job.repo_full_name.as_str();
        let mr = fetch_merge_request(&self.client, project, job.pr_number)
            .await
            .map_err(gitlab_error)?;
        let forge = self.forge(job, &mr);
        if !may_request(job, &forge).await? {
            return Ok(Ended::quietly());
        }
        let Some(refs) = mr.diff_refs.as_ref() else {
            return Err(JobError::Retryable(
                format!("GitLab has no diff of {project}!{} yet", job.pr_number).into(),
            ));
        };
        let last = last_reviewed_sha(&forge).await.map_err(publish_error)?;
        let since = since(job, last, &refs.head_sha);
        if since == Since::AlreadyReviewed {
            let text = already_reviewed(short(&refs.head_sha), "merge request");
            forge.notice_once(&text).await.map_err(publish_error)?;
        }
        // `None`: reviewed before, nothing to review (the status says so below).
        let review_from = match since {
            Since::Review(last) => Some(last),
            Since::NothingNew | Since::AlreadyReviewed => None,
        };
        if let Some(skipped) =
            no_review_needed(job, &refs.head_sha, review_from.is_none(), status).await
        {
            return Ok(Ended::showing(skipped));
        }
        let last = review_from.flatten();
        let commits = self.checkout(project, refs, last).await?;
        if cancel.is_cancelled() {
            return Ok(Ended::cancelled());
        }
        let label = job.id.to_string();
        let mut settings = match repository_settings(
            &self.shared.settings,
            self.shared.ceilings,
            &label,
            job.kind.strategy(),
            &commits,
        ) {
            Ok(settings) => settings,
            Err(error) => {
                let text = format!("Redline did not review this merge request: {error}");
                forge.notice_once(&text).await.map_err(publish_error)?;
                return Ok(Ended::showing(broken_settings(&error)));
            }
        };
        let intent = flow::pull::pull_intent(&forge, &commits).await;
        settings.agent.set_intent(&intent);
        show_running(status, &settings).await;
        let reviewed = review_recorded(
            &self.shared.cache_dir,
            &self.shared.model,
            job,
            &settings,
            &commits,
            &cancel,
        );
        let Some(report) = reviewed.await? else {
            return Ok(Ended::cancelled());
        };
        // The last safe point: a cancelled review publishes nothing.
        if cancel.is_cancelled() {
            return Ok(Ended::cancelled());
        }
        let published = self.publish_report(job, &forge, refs, &commits, &report, &settings);
        published.await
    }

    /// The merge request's commits in the project's mirror.
    pub(crate) async fn checkout(
        &self,
        project: &str,
        refs: &DiffRefs,
        last: Option<String>,
    ) -> Result<PullCommits, JobError> {
        let clone_url = clone_url(&self.client, project)
            .await
            .map_err(gitlab_error)?
            .ok_or_else(|| {
                JobError::Permanent(format!("project {project} has no clone URL").into())
            })?;
        let mirror = Mirror {
            path: self
                .shared
                .cache_dir
                .join("@gitlab")
                .join(mirror_dir_name(project)),
            clone_url,
            cache_dir: self.shared.cache_dir.clone(),
            budget: self.shared.cache_budget_bytes,
        };
        let (base, head) = (refs.base_sha.clone(), refs.head_sha.clone());
        fetch_into_mirror(mirror, base, head, last, self.token.clone()).await
    }

    /// Counts the review in the metrics and publishes it with the merge request's dismissals.
    async fn publish_report(
        &self,
        job: &Job,
        forge: &GitLabMergeRequest<'_>,
        refs: &DiffRefs,
        commits: &PullCommits,
        report: &ReviewReport,
        settings: &Settings,
    ) -> Result<Ended, JobError> {
        self.shared
            .metrics
            .add_model_tokens(report.stats.prompt_tokens, report.stats.completion_tokens);
        if let Some(cost) = report.stats.cost_usd {
            self.shared
                .metrics
                .add_review_cost(&job.repo_full_name, cost);
        }
        let dismissed = self.dismissed(job).await?;
        let target = PullTarget {
            owner: &job.repo_full_name,
            repo: "",
            number: job.pr_number,
            head_sha: &refs.head_sha,
        };
        let published = flow::pull::publish(
            forge,
            target,
            commits,
            report,
            settings,
            &self.shared.publish,
            &dismissed,
        );
        let outcome = published.await.map_err(publish_error)?;
        Ok(Ended::showing(reviewed(
            commits, report, &outcome, settings,
        )))
    }

    /// The findings dismissed on the merge request (none without a database).
    async fn dismissed(&self, job: &Job) -> Result<Dismissals, JobError> {
        let Some(queue) = &self.shared.dismissals else {
            return Ok(Dismissals::new());
        };
        let key = gitlab_key(&job.repo_full_name);
        let keys = queue
            .dismissed(&key, job.pr_number)
            .await
            .map_err(|e| JobError::Retryable(e.into()))?;
        Ok(keys.into_iter().collect())
    }

    /// Posts `text` as a note on the job's merge request (a failure is logged).
    async fn post_note(&self, job: &Job, text: &str) {
        let path = format!(
            "{}/notes",
            crate::gitlab::merge_request::merge_request_path(&job.repo_full_name, job.pr_number)
        );
        let body = serde_json::json!({ "body": text });
        let interval = self.shared.publish.min_write_interval;
        let posted = self
            .client
            .write_json(reqwest::Method::POST, &path, &body, interval);
        if let Err(error) = posted.await {
            tracing::warn!(job = %job.id, %error, "could not post a note on the merge request");
        }
    }
}

#[async_trait]
impl JobRunner for GitLabRunner {
    async fn run(&self, job: &Job, cancel: CancellationToken) -> Result<RunOutcome, JobError> {
        let checks = self.shared.checks.as_ref();
        let status = checks.and_then(|checks| checks.for_job(job));
        let result = send(self.run_job(job, cancel.clone(), status.as_ref())).await;
        if !matches!(result, Err(JobError::Retryable(_))) {
            super::job_transcript::remove(&self.shared.cache_dir, job);
        }
        if let (Some(checks), Some(status)) = (checks, &status) {
            send(checks.job_ended(status, job, &result, &cancel)).await;
        }
        let last_attempt = job.attempts >= job.max_attempts;
        if let Err(error) = &result
            && self.shared.failure_notice
            && (last_attempt || matches!(error, JobError::Permanent(_)))
        {
            let text = format!("Redline could not review this merge request: {error}");
            self.post_note(job, &text).await;
        }
        result.map(|ended| ended.outcome)
    }
}

/// Whether the job may run: a `/redline review` note needs the Developer role or above.
async fn may_request(job: &Job, forge: &GitLabMergeRequest<'_>) -> Result<bool, JobError> {
    let trigger = job.trigger().ok();
    let commenter = match trigger {
        Some(ReviewTrigger::Command { comment_id, .. }) => {
            match command_author(forge, comment_id).await? {
                Ok(author) => author,
                Err(reason) => {
                    tracing::info!(job = %job.id, note = comment_id, %reason, "review request ignored");
                    return Ok(false);
                }
            }
        }
        Some(trigger) => match trigger.into_requester() {
            Some(requester) => requester,
            None => return Ok(true),
        },
        None => return Ok(true),
    };
    let allowed = forge.may_write(&commenter).await.map_err(publish_error)?;
    if !allowed {
        tracing::info!(job = %job.id, commenter = %crate::text::logged(&commenter),
            "review requested without the Developer role; ignored");
    }
    Ok(allowed)
}

/// The author of the `/redline review` note `note_id` as GitLab has it (never the
/// delivery's word), or why it asks nothing: gone, or not such a command.
async fn command_author(
    forge: &GitLabMergeRequest<'_>,
    note_id: u64,
) -> Result<Result<String, &'static str>, JobError> {
    let path = format!(
        "{}/notes/{note_id}",
        merge_request_path(forge.project, forge.iid)
    );
    let note = match forge.client.get_json(&path).await {
        Ok(note) => note,
        Err(error) if error.status() == Some(404) => return Ok(Err("the note does not exist")),
        Err(error) => return Err(gitlab_error(error)),
    };
    let body = note["body"].as_str().unwrap_or_default();
    if !matches!(parse_command(body), Ok(Some(Command::Review { .. }))) {
        return Ok(Err("the note is no review request"));
    }
    match note["author"]["username"].as_str() {
        Some(author) if !author.is_empty() => Ok(Ok(author.to_string())),
        _ => Ok(Err("the note names no author")),
    }
}

/// A GitLab failure as a job error: what a retry cannot mend is permanent.
pub(crate) fn gitlab_error(e: GitLabError) -> JobError {
    match e.status() {
        Some(400) | Some(401) | Some(403) | Some(404) | Some(422) => JobError::Permanent(e.into()),
        _ => JobError::Retryable(e.into()),
    }
}

fn publish_error(e: PublishError) -> JobError {
    match e {
        PublishError::Api(e) if e.is_permanent() => JobError::Permanent(e.into()),
        PublishError::Api(e) => JobError::Retryable(e.into()),
        PublishError::Forbidden { message } => {
            JobError::Permanent(format!("GitLab refused the review: {message}").into())
        }
    }
}

/// What a review job runs with besides its forge (GitHub's [`ReviewRunner`] has the same).
#[derive(Clone)]
pub(crate) struct RunnerSettings {
    /// Where the bare mirrors live.
    pub(crate) cache_dir: PathBuf,
    /// Disk budget of the mirror cache, in bytes.
    pub(crate) cache_budget_bytes: u64,
    /// The model to use.
    pub(crate) model: ModelFactory,
    /// The server's model settings: they win over every project's file.
    pub(crate) settings: ModelSettings,
    /// What a project's `max_cost` and `timeout` may be at most.
    pub(crate) ceilings: LimitCeilings,
    /// Publishing settings.
    pub(crate) publish: PublishConfig,
    /// Metrics for model tokens and costs.
    pub(crate) metrics: Arc<crate::server::Metrics>,
    /// Post a short note on the merge request when a review fails for good.
    pub(crate) failure_notice: bool,
    /// Where dismissed findings are kept.
    pub(crate) dismissals: Option<Queue>,
    /// Where the review's state is shown (the change's checks).
    pub(crate) checks: Option<Checks>,
}

/// Hands each job to its forge's runner; a job of a forge the server was not set up for
/// fails for good (its settings are missing, a retry cannot help).
pub struct ForgeRunner {
    /// GitHub's runner, when the App is configured.
    pub github: Option<Arc<ReviewRunner>>,
    /// GitLab's runner, when GitLab is configured.
    pub gitlab: Option<Arc<GitLabRunner>>,
}

#[async_trait]
impl JobRunner for ForgeRunner {
    async fn run(&self, job: &Job, cancel: CancellationToken) -> Result<RunOutcome, JobError> {
        let runner: Option<&dyn JobRunner> = match job.forge {
            ForgeKind::GitHub => self.github.as_deref().map(|r| r as &dyn JobRunner),
            ForgeKind::GitLab => self.gitlab.as_deref().map(|r| r as &dyn JobRunner),
        };
        match runner {
            Some(runner) => runner.run(job, cancel).await,
            None => Err(JobError::Permanent(
                format!("this server is not set up for {} jobs", job.forge).into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mirror_name_is_short_whatever_the_project_path() {
        assert_eq!(mirror_dir_name("group/app"), "group%2Fapp.git");
        let long = format!("group/{}", "sub-group-name/".repeat(40));
        let name = mirror_dir_name(&long);
        assert!(name.len() <= MAX_MIRROR_NAME, "{}", name.len());
        assert!(name.starts_with("group%2Fsub-group-name") && name.ends_with(".git"));
        assert_ne!(name, mirror_dir_name(&format!("{long}x")));
    }
}
