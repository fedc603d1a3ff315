//! The job runner of `redline serve`: one queued review becomes a checkout of the
//! pull request's commits into a bare mirror, the repository's settings (its
//! `.redline.toml` at the base commit, through [`crate::config::settings::resolve`],
//! bounded by the server's), a review by the engine, and one idempotent publication
//! through the shared publishing code. A broken repository config is not reviewed: the
//! pull request gets one notice naming the key and the error.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentError, Orchestrator};
use crate::config::limits::LimitCeilings;
use crate::config::settings::{self, Scope, SettingFlags, Settings, SettingsInput};
use crate::config::{CONFIG_FILE, ConfigError, ConfigSource, ModelSettings};
use crate::github::checkout::mirror;
use crate::github::{
    AppAuth, GitHubClient, GitHubError, PublishConfig, PublishError, PublishRequest,
    has_write_access, last_reviewed_sha, path_segment, post_notice_once, publish_review,
};
use crate::llm::{ChatModel, Secret};
use crate::queue::{Job, JobError, JobRunner, ReviewTrigger, RunOutcome};
use crate::repo::{RepoView, ResolvedRange, load_change};
use crate::review::report::ReviewReport;
use crate::tools::Workspace;

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
        if !send(may_request(job, &client, owner, repo)).await? {
            return Ok(RunOutcome::Completed);
        }
        let pull = send(fetch_pull_request(&client, owner, repo, job.pr_number)).await?;
        let last = send(last_reviewed_sha(&client, owner, repo, job.pr_number))
            .await
            .map_err(github_error)?;
        if last.as_deref() == Some(pull.head_sha.as_str()) {
            return Ok(RunOutcome::Completed);
        }
        let mut prepared = send(self.checkout(job, owner, repo, &pull, last)).await?;
        if cancel.is_cancelled() {
            return Ok(RunOutcome::Cancelled);
        }
        let settings = match self.repository_settings(job, &prepared, &pull.base_sha) {
            Ok(settings) => settings,
            Err(error) => {
                let text = format!("Redline did not review this pull request: {error}");
                send(post_notice_once(&client, owner, repo, job.pr_number, &text))
                    .await
                    .map_err(github_error)?;
                return Ok(RunOutcome::Completed);
            }
        };
        settings.include.apply(&mut prepared.changes);
        let report = match send(self.review(&settings, &prepared, cancel.clone())).await {
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
        let publish_config = PublishConfig {
            max_comments: settings.max_comments,
            request_changes_at: settings.request_changes_at,
            ..self.publish.clone()
        };
        let target = Published {
            owner,
            repo,
            pr_number: job.pr_number,
            head_sha: &pull.head_sha,
        };
        send(publish(
            &client,
            target,
            &prepared,
            &report,
            &publish_config,
        ))
        .await
    }

    /// Fetches the pull request's commits into the repository's mirror.
    async fn checkout(
        &self,
        job: &Job,
        owner: &str,
        repo: &str,
        pull: &PullRequest,
        last: Option<String>,
    ) -> Result<Prepared, JobError> {
        let token = send(self.auth.installation_token(job.installation_id))
            .await
            .map_err(github_error)?;
        let mirror_path = self
            .cache_dir
            .join(path_segment(owner))
            .join(format!("{}.git", path_segment(repo)));
        let (url, base, head) = (
            pull.clone_url.clone(),
            pull.base_sha.clone(),
            pull.head_sha.clone(),
        );
        tokio::task::spawn_blocking(move || {
            prepare(&mirror_path, &url, &base, &head, last.as_deref(), &token)
        })
        .await
        .map_err(|e| JobError::Retryable(e.to_string()))?
    }

    /// The settings of this job: the repository's file at the base commit (as the Action
    /// reads it), the `/redline` command's strategy, bounded by the server's settings.
    fn repository_settings(
        &self,
        job: &Job,
        prepared: &Prepared,
        base_sha: &str,
    ) -> Result<Settings, ConfigError> {
        let repository =
            ConfigSource::read_at_commit(&prepared.root, base_sha, Path::new(CONFIG_FILE))?;
        if let Some(source) = &repository {
            for warning in source.warnings() {
                tracing::warn!(job = %job.id, "{warning}");
            }
        }
        let flags = SettingFlags {
            strategy: job.kind.strategy().map(str::to_string),
            ..SettingFlags::default()
        };
        settings::resolve(SettingsInput {
            flags,
            flags_origin: "/redline command",
            env: &|_| None,
            user: None,
            repository,
            scope: Scope::Server {
                model: self.settings.clone(),
                ceilings: self.ceilings,
            },
        })
    }
}

/// Whether the job may run: a `/redline review` comment needs a commenter with write access.
async fn may_request(
    job: &Job,
    client: &GitHubClient,
    owner: &str,
    repo: &str,
) -> Result<bool, JobError> {
    let Ok(ReviewTrigger::Command { commenter, .. }) = job.trigger() else {
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

/// Where a review goes.
struct Published<'a> {
    owner: &'a str,
    repo: &'a str,
    pr_number: u64,
    head_sha: &'a str,
}

async fn publish(
    client: &GitHubClient,
    target: Published<'_>,
    prepared: &Prepared,
    report: &ReviewReport,
    config: &PublishConfig,
) -> Result<RunOutcome, JobError> {
    let view = prepared.view.clone();
    let head_line_text = move |path: &str, line: u32| {
        view.read_text(path).ok().and_then(|t| {
            t.lines()
                .nth(line.checked_sub(1)? as usize)
                .map(str::to_string)
        })
    };
    let request = PublishRequest {
        owner: target.owner,
        repo: target.repo,
        pr_number: target.pr_number,
        head_sha: target.head_sha,
        findings: &report.findings,
        summary: &report.summary,
        stats: Some(&report.stats),
        changes: &prepared.pr_changes,
        head_line_text: &head_line_text,
        config,
        reviewed_range: Some((prepared.from.clone(), target.head_sha.to_string())),
    };
    match publish_review(client, request).await {
        Ok(_) => Ok(RunOutcome::Completed),
        Err(PublishError::Forbidden { message }) => Err(JobError::Permanent(format!(
            "GitHub refused the review: {message}"
        ))),
        Err(PublishError::GitHub(e)) => Err(github_error(e)),
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
        settings: &Settings,
        prepared: &Prepared,
        cancel: CancellationToken,
    ) -> Result<ReviewReport, AgentError> {
        if prepared.changes.files.is_empty() {
            return Ok(ReviewReport {
                summary: "No reviewable changes since the last review.".into(),
                ..ReviewReport::default()
            });
        }
        let workspace = Workspace {
            repo: Arc::new(prepared.view.clone()),
            changes: Arc::new(prepared.changes.clone()),
        };
        Orchestrator::new(
            (self.model)(&settings.model),
            workspace,
            settings.agent.clone(),
        )
        .with_cancel(cancel)
        .review()
        .await
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

/// Posts the usage reply to a malformed `/redline` command, in the background, when the
/// commenter has write access (as a review request needs); once per text and pull request.
pub fn command_reply_hook(auth: AppAuth) -> crate::server::CommandReplyHook {
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
