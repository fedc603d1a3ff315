//! The job runner of `redline serve`: one queued review becomes a checkout of the
//! pull request's commits into a bare mirror, the repository's settings (its
//! `.redline.toml` at the base commit, through [`crate::config::settings::resolve`],
//! bounded by the server's), a review by the engine, and one idempotent publication
//! through the shared publishing code. A broken repository config is not reviewed: the
//! pull request gets one notice naming the key and the error. The review's state is shown
//! in the pull request's checks as the job goes ([`super::check_status`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::check_status::{
    Checks, Ended, JobStatus, broken_settings, no_review_needed, reviewed, show_running,
};
use crate::agent::AgentError;
use crate::config::limits::LimitCeilings;
use crate::config::settings::{self, Scope, SettingFlags, Settings, SettingsInput};
use crate::config::{CONFIG_FILE, ConfigError, ConfigSource, ModelSettings};
use crate::flow;
use crate::flow::pull::{CommitSource, FlowError, PullCommits, PullTarget, short};
use crate::forge::command::already_reviewed;
use crate::forge::dismissed::Dismissals;
use crate::forge::{PublishConfig, PublishError};
use crate::github::{
    AppAuth, GitHubClient, GitHubError, GitHubPull, PullInfo, PullText, fetch_pull,
    has_write_access, last_reviewed_sha, path_segment, post_notice_once,
};
use crate::llm::ChatModel;
use crate::queue::{ForgeKind, Job, JobError, JobRunner, Queue, ReviewTrigger, RunOutcome};
use crate::review::report::ReviewReport;

/// What a queued review of a change whose head is `head` reviews, given the `last` head
/// reviewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Since {
    /// Review the commits after this head (`None`: the whole change).
    Review(Option<String>),
    /// The head is reviewed and a push asked again: nothing to do, nothing to say.
    NothingNew,
    /// The head is reviewed and a `/redline review` comment (without `--force`) asked
    /// again: the person asking is answered ([`crate::forge::command::already_reviewed`]).
    AlreadyReviewed,
}

/// [`Since`] for `job`: a `/redline review --force` reviews the whole change again (findings
/// already posted are not posted twice); otherwise only what came after `last`.
pub(crate) fn since(job: &Job, last: Option<String>, head: &str) -> Since {
    let command = match job.trigger() {
        Ok(ReviewTrigger::Command { force, .. }) => Some(force),
        _ => None,
    };
    match (command, last.as_deref() == Some(head)) {
        (Some(true), _) => Since::Review(None),
        (_, false) => Since::Review(last),
        (Some(false), true) => Since::AlreadyReviewed,
        (None, true) => Since::NothingNew,
    }
}

/// Builds the model client for a job's settings (one per job, so retries are reported per job).
pub type ModelFactory = Arc<dyn Fn(&ModelSettings) -> Arc<dyn ChatModel> + Send + Sync>;

/// Runs review jobs for a GitHub App.
pub struct ReviewRunner {
    /// App credentials and the installation-token cache.
    pub auth: AppAuth,
    /// Where the bare mirrors live (one per repository).
    pub cache_dir: PathBuf,
    /// The model to use.
    pub model: ModelFactory,
    /// The server's model settings: they win over every repository's file.
    pub settings: ModelSettings,
    /// Publishing settings (a repository's `max_comments` and `request_changes` replace those).
    pub publish: PublishConfig,
    /// Metrics for model tokens and review durations.
    pub metrics: Arc<crate::server::Metrics>,
    /// Disk budget of the mirror cache, in bytes.
    pub cache_budget_bytes: u64,
    /// Post a short notice on the pull request when a review fails for good.
    pub failure_notice: bool,
    /// What a repository's `max_cost` and `timeout` may be at most.
    pub ceilings: LimitCeilings,
    /// Where dismissed findings are kept (the queue's database); `None`: none are.
    pub dismissals: Option<Queue>,
    /// Where the review's state is shown (the pull request's checks); `None`: nowhere.
    pub checks: Option<Checks>,
}

#[async_trait]
impl JobRunner for ReviewRunner {
    async fn run(&self, job: &Job, cancel: CancellationToken) -> Result<RunOutcome, JobError> {
        let status = self.checks.as_ref().and_then(|checks| checks.for_job(job));
        // The one boxing point: it proves the whole job `Send` for `async_trait`.
        let result = send(self.run_job(job, cancel.clone(), status.as_ref())).await;
        // A retryable failure is tried again from the job's transcript; otherwise the job is done.
        if !matches!(result, Err(JobError::Retryable(_))) {
            super::job_transcript::remove(&self.cache_dir, job);
        }
        if let (Some(checks), Some(status)) = (&self.checks, &status) {
            send(checks.job_ended(status, job, &result, &cancel)).await;
        }
        let last_attempt = job.attempts >= job.max_attempts;
        if let Err(error) = &result
            && self.failure_notice
            && (last_attempt || matches!(error, JobError::Permanent(_)))
        {
            self.post_failure_notice(job, error).await;
        }
        result.map(|ended| ended.outcome)
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

impl ReviewRunner {
    /// Tells the pull request that its review failed (the reason carries no secrets:
    /// errors are redacted where they are made).
    async fn post_failure_notice(&self, job: &Job, error: &JobError) {
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
        let body = serde_json::json!({"body": format!("Redline could not review this pull request: {error}")});
        if let Err(e) = client.post_json(&path, &body).await {
            tracing::warn!(job = %job.id, error = %e, "could not post the failure notice");
        }
    }

    async fn run_job(
        &self,
        job: &Job,
        cancel: CancellationToken,
        status: Option<&JobStatus>,
    ) -> Result<Ended, JobError> {
        let Some((owner, repo)) = job.repo_full_name.split_once('/') else {
            return Err(JobError::Permanent(
                format!("bad repository name {}", job.repo_full_name).into(),
            ));
        };
        let installation_id = github_installation(job)?;
        let client = self.auth.installation_client(installation_id);
        if !may_request(job, &client, owner, repo).await? {
            return Ok(Ended::quietly());
        }
        let pull = fetch_pull(&client, owner, repo, job.pr_number)
            .await
            .map_err(github_error)?;
        let last = last_reviewed_sha(&client, owner, repo, job.pr_number)
            .await
            .map_err(github_error)?;
        let since = since(job, last, &pull.head_sha);
        if since == Since::AlreadyReviewed {
            let text = already_reviewed(short(&pull.head_sha), "pull request");
            post_notice_once(&client, owner, repo, job.pr_number, &text)
                .await
                .map_err(github_error)?;
        }
        // `None`: reviewed before, nothing to review (the status says so below).
        let review_from = match since {
            Since::Review(last) => Some(last),
            Since::NothingNew | Since::AlreadyReviewed => None,
        };
        if let Some(skipped) =
            no_review_needed(job, &pull.head_sha, review_from.is_none(), status).await
        {
            return Ok(Ended::showing(skipped));
        }
        let last = review_from.flatten();
        let at = PullAt {
            installation_id,
            owner,
            repo,
            number: job.pr_number,
        };
        let commits = self.checkout(at, &pull, last).await?;
        if cancel.is_cancelled() {
            return Ok(Ended::cancelled());
        }
        let strategy = job.kind.strategy();
        let mut settings = match self.repository_settings(&job.id.to_string(), strategy, &commits) {
            Ok(settings) => settings,
            Err(error) => {
                let text = format!("Redline did not review this pull request: {error}");
                post_notice_once(&client, owner, repo, job.pr_number, &text)
                    .await
                    .map_err(github_error)?;
                return Ok(Ended::showing(broken_settings(&error)));
            }
        };
        let text = PullText {
            owner,
            repo,
            title: &pull.title,
            body: &pull.body,
        };
        let forge = GitHubPull {
            client: &client,
            text,
            number: job.pr_number,
        };
        let intent = flow::pull::pull_intent(&forge, &commits).await;
        settings.agent.set_intent(&intent);
        show_running(status, &settings).await;
        let Some(report) = self
            .review_recorded(job, &settings, &commits, &cancel)
            .await?
        else {
            return Ok(Ended::cancelled());
        };
        // The last safe point: a cancelled review publishes nothing.
        if cancel.is_cancelled() {
            return Ok(Ended::cancelled());
        }
        let target = PullTarget {
            owner,
            repo,
            number: job.pr_number,
            head_sha: &pull.head_sha,
        };
        self.publish_report(job, &forge, target, &commits, &report, &settings)
            .await
    }

    /// Counts the review in the metrics and publishes it with the pull request's dismissals.
    async fn publish_report(
        &self,
        job: &Job,
        forge: &GitHubPull<'_>,
        target: PullTarget<'_>,
        commits: &PullCommits,
        report: &ReviewReport,
        settings: &Settings,
    ) -> Result<Ended, JobError> {
        self.metrics
            .add_model_tokens(report.stats.prompt_tokens, report.stats.completion_tokens);
        if let Some(cost) = report.stats.cost_usd {
            self.metrics.add_review_cost(&job.repo_full_name, cost);
        }
        let dismissed = self.dismissed(&job.repo_full_name, job.pr_number).await?;
        let published = flow::pull::publish(
            forge,
            target,
            commits,
            report,
            settings,
            &self.publish,
            &dismissed,
        );
        match published.await {
            Ok(outcome) => Ok(Ended::showing(reviewed(
                commits, report, &outcome, settings,
            ))),
            Err(PublishError::Forbidden { message }) => Err(JobError::Permanent(
                format!("GitHub refused the review: {message}").into(),
            )),
            Err(PublishError::Api(e)) if e.is_permanent() => Err(JobError::Permanent(e.into())),
            Err(PublishError::Api(e)) => Err(JobError::Retryable(e.into())),
        }
    }

    /// Reviews with the job's transcript (a job taken over after a dead worker
    /// continues from it); `Ok(None)` when the review was cancelled.
    async fn review_recorded(
        &self,
        job: &Job,
        settings: &Settings,
        commits: &PullCommits,
        cancel: &CancellationToken,
    ) -> Result<Option<ReviewReport>, JobError> {
        review_recorded(&self.cache_dir, &self.model, job, settings, commits, cancel).await
    }

    /// The findings dismissed on the pull request (none without a database).
    async fn dismissed(&self, repo_full_name: &str, number: u64) -> Result<Dismissals, JobError> {
        let Some(queue) = &self.dismissals else {
            return Ok(Dismissals::new());
        };
        let keys = queue
            .dismissed(repo_full_name, number)
            .await
            .map_err(|e| JobError::Retryable(e.into()))?;
        Ok(keys.into_iter().collect())
    }

    /// Fetches the pull request's commits into the repository's mirror.
    pub(crate) async fn checkout(
        &self,
        at: PullAt<'_>,
        pull: &PullInfo,
        last: Option<String>,
    ) -> Result<PullCommits, JobError> {
        let (owner, repo) = (at.owner, at.repo);
        let clone_url = pull.clone_url.clone().ok_or_else(|| {
            JobError::Permanent(
                format!("pull request {owner}/{repo}#{} has no clone URL", at.number).into(),
            )
        })?;
        let token = self
            .auth
            .installation_token(at.installation_id)
            .await
            .map_err(github_error)?;
        let mirror = Mirror {
            path: self
                .cache_dir
                .join(path_segment(owner))
                .join(format!("{}.git", path_segment(repo))),
            clone_url,
            cache_dir: self.cache_dir.clone(),
            budget: self.cache_budget_bytes,
        };
        let (base, head) = (pull.base_sha.clone(), pull.head_sha.clone());
        fetch_into_mirror(mirror, base, head, last, token).await
    }

    /// The settings of a job (`label` names it in the log): see [`repository_settings`].
    pub(crate) fn repository_settings(
        &self,
        label: &str,
        strategy: Option<&str>,
        commits: &PullCommits,
    ) -> Result<Settings, ConfigError> {
        repository_settings(&self.settings, self.ceilings, label, strategy, commits)
    }
}

/// The settings of a job (`label` names it in the log): the repository's file at the
/// base commit (as the Action reads it), the `/redline` command's strategy, bounded by
/// the server's settings (`server`, `ceilings`).
pub(crate) fn repository_settings(
    server: &ModelSettings,
    ceilings: LimitCeilings,
    label: &str,
    strategy: Option<&str>,
    commits: &PullCommits,
) -> Result<Settings, ConfigError> {
    let repository =
        ConfigSource::read_at_commit(&commits.root, &commits.base, Path::new(CONFIG_FILE))?;
    if let Some(source) = &repository {
        for warning in source.warnings() {
            tracing::warn!(job = label, "{warning}");
        }
    }
    let flags = SettingFlags {
        strategy: strategy.map(str::to_string),
        ..SettingFlags::default()
    };
    settings::resolve(SettingsInput {
        flags,
        flags_origin: "/redline command",
        env: &|_| None,
        user: None,
        repository,
        scope: Scope::Server {
            model: server.clone(),
            ceilings,
        },
    })
}

/// Reviews `commits` with the job's transcript in `cache_dir` (a job taken over after a dead worker
/// continues from it); `Ok(None)` when the review was cancelled.
pub(crate) async fn review_recorded(
    cache_dir: &Path,
    model: &ModelFactory,
    job: &Job,
    settings: &Settings,
    commits: &PullCommits,
    cancel: &CancellationToken,
) -> Result<Option<ReviewReport>, JobError> {
    let attempt = super::job_transcript::Attempt {
        job,
        base: &commits.changes.base,
        head: commits.changes.head.as_deref().unwrap_or_default(),
        config: &settings.agent,
        settings: &settings.model,
    };
    let recorder = super::job_transcript::open(cache_dir, &attempt);
    let model = super::job_transcript::wrap(model(&settings.model), recorder.as_ref());
    let result =
        flow::pull::review(model, settings, commits, cancel.clone(), recorder.clone()).await;
    let error = result.as_ref().err().map(ToString::to_string);
    super::job_transcript::end(recorder.as_ref(), error);
    match result {
        Ok(report) => Ok(Some(report)),
        Err(AgentError::Cancelled) => Ok(None),
        Err(AgentError::Model(e)) if e.is_retryable() => Err(JobError::Retryable(e.into())),
        Err(other) => Err(JobError::Permanent(other.into())),
    }
}

/// A repository's bare mirror in the cache, and where it is fetched from.
pub(crate) struct Mirror {
    /// The mirror (`<cache>/<owner>/<name>.git`).
    pub(crate) path: PathBuf,
    /// The URL it is fetched from.
    pub(crate) clone_url: String,
    /// The cache, kept within `budget` bytes after the fetch.
    pub(crate) cache_dir: PathBuf,
    pub(crate) budget: u64,
}

/// Fetches `base` and `head` into `mirror` with `token` and loads the change since `last`;
/// then keeps the cache within its budget (the mirror just fetched stays).
pub(crate) async fn fetch_into_mirror(
    mirror: Mirror,
    base: String,
    head: String,
    last: Option<String>,
    token: crate::llm::Secret,
) -> Result<PullCommits, JobError> {
    let loaded = tokio::task::spawn_blocking(move || {
        let source = CommitSource::Mirror {
            path: &mirror.path,
            clone_url: &mirror.clone_url,
        };
        let loaded = flow::pull::load_commits(source, &base, &head, last.as_deref(), Some(&token));
        // The mirror just fetched is kept; older ones go until the cache fits its budget.
        for removed in super::cache::enforce_budget(&mirror.cache_dir, mirror.budget, &mirror.path) {
            tracing::info!(mirror = %removed.display(), "removed from the mirror cache (--cache-budget-mb)");
        }
        loaded
    })
    .await
    .map_err(|e| JobError::Retryable(e.into()))?;
    loaded.map_err(|e| match &e {
        FlowError::Fetch(_) => JobError::Retryable(e.into()),
        FlowError::Commits(_) => JobError::Permanent(e.into()),
    })
}

/// A pull request of an installation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PullAt<'a> {
    /// The installation that can read it.
    pub installation_id: u64,
    /// Repository owner.
    pub owner: &'a str,
    /// Repository name.
    pub repo: &'a str,
    /// Pull request number.
    pub number: u64,
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

pub(crate) fn github_error(e: GitHubError) -> JobError {
    match e.status() {
        Some(404) | Some(401) | Some(403) | Some(422) => JobError::Permanent(e.into()),
        _ => JobError::Retryable(e.into()),
    }
}

/// Pins a future as `Send` at its concrete lifetimes; without it the compiler cannot
/// prove `Send` for the borrowing futures inside an `async_trait` method. Used once per
/// entry point (the job runner's `run`, the thread hook's spawn), around the whole flow.
pub(crate) fn send<'a, T>(
    future: impl std::future::Future<Output = T> + Send + 'a,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>> {
    Box::pin(future)
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
            let posted = match has_write_access(&client, owner, repo, &reply.commenter).await {
                Ok(true) => post_notice_once(&client, owner, repo, reply.pr_number, &reply.text)
                    .await
                    .map(|_| ()),
                Ok(false) => Ok(()),
                Err(e) => Err(e),
            };
            if let Err(error) = posted {
                tracing::warn!(%error, "could not reply to a malformed /redline command");
            }
        });
    })
}
