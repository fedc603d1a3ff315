//! The job runner of `redline serve`: one queued review becomes a checkout of the
//! pull request's commits into a bare mirror, a review by the engine, and one
//! idempotent publication through the shared publishing code.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::agent::strategy::StrategyChoice;
use crate::agent::{AgentConfig, AgentError, Orchestrator};
use crate::config::limits::{LimitCeilings, repository_limits};
use crate::config::{FileConfig, ModelSettings};
use crate::github::checkout::mirror;
use crate::github::{
    AppAuth, GitHubClient, GitHubError, PublishConfig, PublishError, PublishRequest,
    has_write_access, last_reviewed_sha, path_segment, publish_review,
};
use crate::llm::{ChatModel, Secret};
use crate::queue::{Job, JobError, JobRunner, ReviewTrigger, RunOutcome};
use crate::repo::{RepoView, ResolvedRange, load_change};
use crate::review::report::ReviewReport;
use crate::tools::Workspace;

/// Builds the model client for a job (one per job, so retries are reported per job).
pub type ModelFactory = Arc<dyn Fn() -> Arc<dyn ChatModel> + Send + Sync>;

/// Runs review jobs for a GitHub App.
pub struct ReviewRunner {
    /// App credentials and the installation-token cache.
    pub auth: AppAuth,
    /// Where the bare mirrors live (one per repository).
    pub cache_dir: PathBuf,
    /// The model to use.
    pub model: ModelFactory,
    /// Model settings (name) for the agent.
    pub settings: ModelSettings,
    /// Publishing settings.
    pub publish: PublishConfig,
    /// Metrics for model tokens and review durations.
    pub metrics: Arc<crate::server::Metrics>,
    /// Disk budget of the mirror cache, in bytes.
    pub cache_budget_bytes: u64,
    /// Post a short notice on the pull request when a review fails for good.
    pub failure_notice: bool,
    /// What a repository's `max_cost` and `timeout` may be at most.
    pub ceilings: LimitCeilings,
}

/// What the API says about the pull request.
struct PullRequest {
    base_sha: String,
    head_sha: String,
    clone_url: String,
}

#[async_trait]
impl JobRunner for ReviewRunner {
    async fn run(&self, job: &Job, cancel: CancellationToken) -> Result<RunOutcome, JobError> {
        let result = send(self.run_job(job, cancel)).await;
        // A retryable failure is tried again from the job's transcript; otherwise the job is done.
        if !matches!(result, Err(JobError::Retryable(_))) {
            super::job_transcript::remove(&self.cache_dir, job);
        }
        let last_attempt = job.attempts >= job.max_attempts;
        if let Err(error) = &result
            && self.failure_notice
            && (last_attempt || matches!(error, JobError::Permanent(_)))
        {
            self.post_failure_notice(job, error).await;
        }
        result
    }
}

impl ReviewRunner {
    /// Tells the pull request that its review failed (the reason carries no secrets:
    /// errors are redacted where they are made).
    async fn post_failure_notice(&self, job: &Job, error: &JobError) {
        let Some((owner, repo)) = job.repo_full_name.split_once('/') else {
            return;
        };
        let client = self.auth.installation_client(job.installation_id);
        let path = format!(
            "/repos/{}/{}/issues/{}/comments",
            path_segment(owner),
            path_segment(repo),
            job.pr_number
        );
        let body = serde_json::json!({"body": format!("Redline could not review this pull request: {error}")});
        if let Err(e) = send(client.post_json(&path, &body)).await {
            tracing::warn!(job = %job.id, error = %e, "could not post the failure notice");
        }
    }

    async fn run_job(&self, job: &Job, cancel: CancellationToken) -> Result<RunOutcome, JobError> {
        let Some((owner, repo)) = job.repo_full_name.split_once('/') else {
            return Err(JobError::Permanent(format!(
                "bad repository name {}",
                job.repo_full_name
            )));
        };
        let client = self.auth.installation_client(job.installation_id);
        if let Ok(ReviewTrigger::Command { commenter, .. }) =
            serde_json::from_value::<ReviewTrigger>(job.payload.clone())
        {
            if !send(has_write_access(&client, owner, repo, &commenter))
                .await
                .map_err(github_error)?
            {
                tracing::info!(job = %job.id, %commenter, "review requested without write access; ignored");
                return Ok(RunOutcome::Completed);
            }
        }
        let pull = send(fetch_pull_request(&client, owner, repo, job.pr_number)).await?;
        let last = send(last_reviewed_sha(&client, owner, repo, job.pr_number))
            .await
            .map_err(github_error)?;
        if last.as_deref() == Some(pull.head_sha.as_str()) {
            return Ok(RunOutcome::Completed);
        }
        let token = send(self.auth.installation_token(job.installation_id))
            .await
            .map_err(github_error)?;
        let mirror_path = self
            .cache_dir
            .join(path_segment(owner))
            .join(format!("{}.git", path_segment(repo)));
        let checkout = {
            let (path, url, base, head, token) = (
                mirror_path.clone(),
                pull.clone_url.clone(),
                pull.base_sha.clone(),
                pull.head_sha.clone(),
                token.clone(),
            );
            tokio::task::spawn_blocking(move || {
                prepare(&path, &url, &base, &head, last.as_deref(), &token)
            })
        };
        let prepared = checkout
            .await
            .map_err(|e| JobError::Retryable(e.to_string()))??;
        if cancel.is_cancelled() {
            return Ok(RunOutcome::Cancelled);
        }
        let report = match send(self.review(job, &prepared, cancel.clone())).await {
            Ok(report) => report,
            Err(AgentError::Cancelled) => return Ok(RunOutcome::Cancelled),
            Err(AgentError::Model(e)) if e.is_retryable() => {
                return Err(JobError::Retryable(e.to_string()));
            }
            Err(other) => return Err(JobError::Permanent(other.to_string())),
        };
        // The last safe point: a cancelled review publishes nothing.
        if cancel.is_cancelled() {
            return Ok(RunOutcome::Cancelled);
        }
        self.metrics
            .add_model_tokens(report.stats.prompt_tokens, report.stats.completion_tokens);
        if let Some(cost) = report.stats.cost_usd {
            self.metrics.add_review_cost(&job.repo_full_name, cost);
        }
        let view = prepared.view.clone();
        let head_line_text = move |path: &str, line: u32| {
            view.read_text(path).ok().and_then(|t| {
                t.lines()
                    .nth(line.checked_sub(1)? as usize)
                    .map(str::to_string)
            })
        };
        let request = PublishRequest {
            owner,
            repo,
            pr_number: job.pr_number,
            head_sha: &pull.head_sha,
            findings: &report.findings,
            summary: &report.summary,
            stats: Some(&report.stats),
            changes: &prepared.pr_changes,
            head_line_text: &head_line_text,
            config: &self.publish,
            reviewed_range: Some((prepared.from.clone(), pull.head_sha.clone())),
        };
        match send(publish_review(&client, request)).await {
            Ok(_) => Ok(RunOutcome::Completed),
            Err(PublishError::Forbidden { message }) => Err(JobError::Permanent(format!(
                "GitHub refused the review: {message}"
            ))),
            Err(PublishError::GitHub(e)) => Err(github_error(e)),
        }
    }
}

/// The commits and changes a job reviews.
struct Prepared {
    view: RepoView,
    root: PathBuf,
    /// The whole pull request (anchors are checked against it).
    pr_changes: crate::review::diff::ChangeSet,
    /// The commits to review: since the last reviewed head, or the whole pull request.
    changes: crate::review::diff::ChangeSet,
    from: String,
}

fn prepare(
    path: &std::path::Path,
    url: &str,
    base: &str,
    head: &str,
    last: Option<&str>,
    token: &Secret,
) -> Result<Prepared, JobError> {
    mirror(path, url, &[base, head], Some(token))
        .map_err(|e| JobError::Retryable(e.to_string()))?;
    let repo =
        git2::Repository::open(path).map_err(|e| JobError::Retryable(e.message().to_string()))?;
    let oid =
        |s: &str| git2::Oid::from_str(s).map_err(|e| JobError::Permanent(e.message().to_string()));
    let merge_base = repo
        .merge_base(oid(base)?, oid(head)?)
        .map_err(|e| JobError::Permanent(e.message().to_string()))?
        .to_string();
    let from = last
        .filter(|sha| {
            git2::Oid::from_str(sha).ok().is_some_and(|a| {
                repo.graph_descendant_of(oid(head).unwrap_or(a), a)
                    .unwrap_or(false)
            })
        })
        .map(str::to_string)
        .unwrap_or_else(|| merge_base.clone());
    let range = |from: &str| ResolvedRange {
        base: from.to_string(),
        head: head.to_string(),
        base_label: from.to_string(),
    };
    let (view, pr_changes) = load_change(path, &range(&merge_base), false)
        .map_err(|e| JobError::Permanent(e.to_string()))?;
    let (_, changes) =
        load_change(path, &range(&from), false).map_err(|e| JobError::Permanent(e.to_string()))?;
    Ok(Prepared {
        view,
        root: path.to_path_buf(),
        pr_changes,
        changes,
        from,
    })
}

impl ReviewRunner {
    async fn review(
        &self,
        job: &Job,
        prepared: &Prepared,
        cancel: CancellationToken,
    ) -> Result<ReviewReport, AgentError> {
        if prepared.changes.files.is_empty() {
            return Ok(ReviewReport {
                summary: "No reviewable changes since the last review.".into(),
                ..ReviewReport::default()
            });
        }
        let base = prepared.pr_changes.base.clone();
        let file = FileConfig::load_at_commit(&prepared.root, &base).unwrap_or_default();
        let mut config = AgentConfig::new(self.settings.model.clone());
        config.instructions = file.instructions.clone();
        config.exclude = file.exclude.clone();
        config.review_limits =
            repository_limits(&file, &self.ceilings, config.price, &config.model)
                .map_err(|e| AgentError::Tool(e.to_string()))?;
        config.strategy = job
            .kind
            .strategy()
            .or(file.strategy.as_deref())
            .and_then(|s| s.parse().ok())
            .unwrap_or(StrategyChoice::Auto);
        let workspace = Workspace {
            repo: Arc::new(prepared.view.clone()),
            changes: Arc::new(prepared.changes.clone()),
        };
        // The job's transcript: a job taken over after a dead worker continues from it.
        let attempt = super::job_transcript::Attempt {
            job,
            base: &prepared.changes.base,
            head: prepared.changes.head.as_deref().unwrap_or_default(),
            config: &config,
            settings: &self.settings,
        };
        let recorder = super::job_transcript::open(&self.cache_dir, &attempt);
        let model = super::job_transcript::wrap((self.model)(), recorder.as_ref());
        let mut orchestrator = Orchestrator::new(model, workspace, config).with_cancel(cancel);
        if let Some(recorder) = &recorder {
            orchestrator = orchestrator.with_recorder(Arc::clone(recorder));
        }
        let result = orchestrator.review().await;
        let error = result.as_ref().err().map(ToString::to_string);
        super::job_transcript::end(recorder.as_ref(), error);
        result
    }
}

async fn fetch_pull_request(
    client: &GitHubClient,
    owner: &str,
    repo: &str,
    number: u64,
) -> Result<PullRequest, JobError> {
    let path = format!(
        "/repos/{}/{}/pulls/{number}",
        path_segment(owner),
        path_segment(repo)
    );
    let pull = client.get_json(&path).await.map_err(github_error)?;
    let text = |ptr: &str| {
        pull.pointer(ptr)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    match (
        text("/base/sha"),
        text("/head/sha"),
        text("/base/repo/clone_url"),
    ) {
        (Some(base_sha), Some(head_sha), Some(clone_url)) => Ok(PullRequest {
            base_sha,
            head_sha,
            clone_url,
        }),
        _ => Err(JobError::Permanent(format!(
            "pull request {owner}/{repo}#{number} lacks its base, head or clone URL"
        ))),
    }
}

fn github_error(e: GitHubError) -> JobError {
    match e.status() {
        Some(404) | Some(401) | Some(403) | Some(422) => JobError::Permanent(e.to_string()),
        _ => JobError::Retryable(e.to_string()),
    }
}

/// Pins a future as `Send` at its concrete lifetimes; without it the compiler cannot
/// prove `Send` for the borrowing futures inside an `async_trait` method.
fn send<'a, T>(
    future: impl std::future::Future<Output = T> + Send + 'a,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>> {
    Box::pin(future)
}
