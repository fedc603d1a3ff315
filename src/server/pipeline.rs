//! The job pipeline of `redline serve`, written once for every forge: one queued review
//! becomes the change as its forge has it now, a fetch of its commits into a bare
//! mirror, the repository's settings (its `.redline.toml` at the base commit, bounded by
//! the server's: [`checkout::repository_settings`]), the author's intent, a review by the
//! engine, and one idempotent publication through the forge seam ([`crate::forge::Forge`])
//! with the change's dismissals; tokens and cost go into `/metrics` labelled by forge. A
//! broken repository config is not reviewed: the change gets one notice naming the key
//! and the error. The review's state is shown beside the change as the job goes
//! ([`super::check_status`]). The thread-answer pipeline is [`answer`].
//!
//! Each forge supplies only its own steps through [`JobSteps`] (GitHub:
//! [`super::github::runner`], GitLab: [`super::gitlab::runner`]): reading the change and
//! whether its requester may ask, where its mirror is and with which token it is fetched,
//! where dismissals are kept, and how a failure is told.
//!
//! Invariants: a cancelled job publishes nothing (the last safe point is just before
//! publishing); a retryable failure keeps the job's transcript for the next attempt,
//! anything else removes it; the failure notice goes out once, on the last attempt or a
//! permanent failure.

pub(crate) mod answer;
pub(crate) mod checkout;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::check_status::{
    Checks, Ended, JobStatus, broken_settings, no_review_needed, reviewed, show_running,
};
use crate::config::ModelSettings;
use crate::config::limits::LimitCeilings;
use crate::config::settings::Settings;
use crate::flow;
use crate::flow::pull::PullCommits;
use crate::forge::command::already_reviewed;
use crate::forge::dismissed::Dismissals;
use crate::forge::notice::notice_once;
use crate::forge::publish::last_reviewed_sha;
use crate::forge::{Forge, ForgeKind};
use crate::forge::{PublishConfig, PublishError};
use crate::llm::ChatModel;
use crate::queue::{Job, JobError, JobRunner, Queue, ReviewTrigger, RunOutcome};
use crate::review::report::ReviewReport;
use crate::text::short_sha;
pub(crate) use checkout::MirrorSource;
use checkout::{fetch_source, repository_settings, review_recorded};

/// Builds the model client for a job's settings (one per job, so retries are reported per job).
pub type ModelFactory = Arc<dyn Fn(&ModelSettings) -> Arc<dyn ChatModel> + Send + Sync>;

/// What a review job runs with besides its forge: the same on every forge.
#[derive(Clone)]
pub struct RunnerSettings {
    /// Where the bare mirrors live.
    pub cache_dir: PathBuf,
    /// Disk budget of the mirror cache, in bytes.
    pub cache_budget_bytes: u64,
    /// The model to use.
    pub model: ModelFactory,
    /// The server's model settings: they win over every repository's file.
    pub settings: ModelSettings,
    /// What a repository's `max_cost` and `timeout` may be at most.
    pub ceilings: LimitCeilings,
    /// Publishing settings (a repository's `max_comments` and `request_changes` replace those).
    pub publish: PublishConfig,
    /// Metrics for model tokens and costs.
    pub metrics: Arc<crate::server::Metrics>,
    /// Post a short notice on the change when a review fails for good.
    pub failure_notice: bool,
    /// Where dismissed findings, claimed comments and answer counts are kept (the queue's
    /// database); `None`: no dismissals are kept.
    pub dismissals: Option<Queue>,
    /// Where the review's state is shown (the change's checks); `None`: nowhere.
    pub checks: Option<Checks>,
}

impl RunnerSettings {
    /// Counts a review's or an answer's `tokens` (input, output) in `/metrics`, and its
    /// cost when known, labelled with `forge`.
    pub(crate) fn count_usage(
        &self,
        forge: ForgeKind,
        repository: &str,
        (input, output): (u64, u64),
        cost: Option<f64>,
    ) {
        self.metrics.add_model_tokens(forge, input, output);
        if let Some(cost) = cost {
            self.metrics.add_review_cost(forge, repository, cost);
        }
    }
}

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

/// What one forge does in a review job; the [`Pipeline`] does the rest, the same way for
/// every forge.
#[async_trait]
pub(crate) trait JobSteps: Send + Sync {
    /// The change request as the forge has it when the job runs.
    type Change: Send + Sync;

    /// Which forge: the label of its metrics.
    const FORGE: ForgeKind;
    /// What the forge calls a change request, in notices ("pull request").
    const NOUN: &'static str;

    /// The job's change as the forge has it now; `None` when the job asks on behalf of
    /// someone who may not ask for a review (nothing is shown or said).
    async fn open(&self, job: &Job) -> Result<Option<Self::Change>, JobError>;

    /// The change's base and head commits.
    fn revisions(change: &Self::Change) -> (&str, &str);

    /// The change as the forge seam publishes on it.
    fn seam<'a>(&'a self, job: &'a Job, change: &'a Self::Change) -> Box<dyn Forge + 'a>;

    /// Where the change's mirror is, and the URL and token it is fetched with.
    async fn mirror(&self, job: &Job, change: &Self::Change) -> Result<MirrorSource, JobError>;

    /// The key the change's dismissals are kept under.
    fn key(job: &Job) -> String;

    /// Tells the job's change that its review failed (`text` says why; a failure to post
    /// it is logged).
    async fn post_failure(&self, job: &Job, text: &str, publish: &PublishConfig);
}

/// Runs review jobs of one forge: its [`JobSteps`] and the [`RunnerSettings`] every forge has.
pub struct Pipeline<S> {
    /// The forge's steps.
    pub steps: S,
    /// The cache, model, limits and publishing settings.
    pub shared: RunnerSettings,
}

#[async_trait]
impl<S: JobSteps> JobRunner for Pipeline<S> {
    async fn run(&self, job: &Job, cancel: CancellationToken) -> Result<RunOutcome, JobError> {
        let checks = self.shared.checks.as_ref();
        let status = checks.and_then(|checks| checks.for_job(job));
        // The one boxing point: it proves the whole job `Send` for `async_trait`.
        let result = send(run_job(self, job, cancel.clone(), status.as_ref())).await;
        // A retryable failure is tried again from the job's transcript; otherwise the job is done.
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
            let text = format!("Redline could not review this {}: {error}", S::NOUN);
            let publish = &self.shared.publish;
            self.steps.post_failure(job, &text, publish).await;
        }
        result.map(|ended| ended.outcome)
    }
}

async fn run_job<S: JobSteps>(
    pipeline: &Pipeline<S>,
    job: &Job,
    cancel: CancellationToken,
    status: Option<&JobStatus>,
) -> Result<Ended, JobError> {
    let Some(change) = pipeline.steps.open(job).await? else {
        return Ok(Ended::quietly());
    };
    let forge = pipeline.steps.seam(job, &change);
    let head = S::revisions(&change).1;
    let last = match review_from(job, forge.as_ref(), head, S::NOUN, status).await {
        Ok(last) => last,
        Err(ended) => return ended,
    };
    let commits = checkout(pipeline, job, &change, last).await?;
    if cancel.is_cancelled() {
        return Ok(Ended::cancelled());
    }
    let shared = &pipeline.shared;
    let (label, strategy) = (job.id.to_string(), job.kind.strategy());
    let settings = repository_settings(
        &shared.settings,
        shared.ceilings,
        &label,
        strategy,
        &commits,
    );
    let mut settings = match settings {
        Ok(settings) => settings,
        Err(error) => {
            let text = format!("Redline did not review this {}: {error}", S::NOUN);
            notice_once(forge.as_ref(), &text)
                .await
                .map_err(publish_error)?;
            return Ok(Ended::showing(broken_settings(&error)));
        }
    };
    let intent = flow::pull::pull_intent(forge.as_ref(), &commits).await;
    settings.agent.set_intent(&intent);
    show_running(status, &settings).await;
    let reviewed = review_recorded(shared, job, &settings, &commits, &cancel);
    let Some(report) = reviewed.await? else {
        return Ok(Ended::cancelled());
    };
    // The last safe point: a cancelled review publishes nothing.
    if cancel.is_cancelled() {
        return Ok(Ended::cancelled());
    }
    let (_, head) = S::revisions(&change);
    let published = publish_report(
        pipeline,
        job,
        forge.as_ref(),
        head,
        &commits,
        &report,
        &settings,
    );
    published.await
}

/// Fetches the change's commits into its mirror (the change since `last`, or whole).
async fn checkout<S: JobSteps>(
    pipeline: &Pipeline<S>,
    job: &Job,
    change: &S::Change,
    last: Option<String>,
) -> Result<PullCommits, JobError> {
    let source = pipeline.steps.mirror(job, change).await?;
    fetch_source(&pipeline.shared, source, S::revisions(change), last).await
}

/// Counts the review in the metrics and publishes it with the change's dismissals.
async fn publish_report<S: JobSteps>(
    pipeline: &Pipeline<S>,
    job: &Job,
    forge: &dyn Forge,
    head_sha: &str,
    commits: &PullCommits,
    report: &ReviewReport,
    settings: &Settings,
) -> Result<Ended, JobError> {
    let stats = &report.stats;
    let tokens = (stats.prompt_tokens, stats.completion_tokens);
    let repository = &job.repo_full_name;
    pipeline
        .shared
        .count_usage(S::FORGE, repository, tokens, stats.cost_usd);
    let dismissed = dismissed(pipeline, job).await?;
    let shared = &pipeline.shared;
    let published = flow::pull::publish(
        forge,
        head_sha,
        commits,
        report,
        settings,
        &shared.publish,
        &dismissed,
    );
    let outcome = published.await.map_err(publish_error)?;
    Ok(Ended::showing(reviewed(
        commits, report, &outcome, settings,
    )))
}

/// The findings dismissed on the change (none without a database).
async fn dismissed<S: JobSteps>(pipeline: &Pipeline<S>, job: &Job) -> Result<Dismissals, JobError> {
    let Some(queue) = &pipeline.shared.dismissals else {
        return Ok(Dismissals::new());
    };
    let keys = queue
        .dismissed(&S::key(job), job.pr_number)
        .await
        .map_err(|e| JobError::Retryable(e.into()))?;
    Ok(keys.into_iter().collect())
}

/// What the job reviews of the change at `head`: the commits after the returned head
/// (`None`: the whole change), or, when there is nothing to review, how the job ends
/// (a `/redline review` of a reviewed head is answered on the change, called `noun`).
async fn review_from(
    job: &Job,
    forge: &dyn Forge,
    head: &str,
    noun: &str,
    status: Option<&JobStatus>,
) -> Result<Option<String>, Result<Ended, JobError>> {
    let last = last_reviewed_sha(forge)
        .await
        .map_err(|e| Err(publish_error(e)))?;
    let since = since(job, last, head);
    if since == Since::AlreadyReviewed {
        let text = already_reviewed(short_sha(head), noun);
        let noticed = notice_once(forge, &text).await;
        noticed.map_err(|e| Err(publish_error(e)))?;
    }
    // `None`: reviewed before, nothing to review (the status says so below).
    let review_from = match since {
        Since::Review(last) => Some(last),
        Since::NothingNew | Since::AlreadyReviewed => None,
    };
    if let Some(skipped) = no_review_needed(job, head, review_from.is_none(), status).await {
        return Err(Ok(Ended::showing(skipped)));
    }
    Ok(review_from.flatten())
}

/// A publication's failure as a job error: what a retry cannot mend is permanent. Only
/// GitHub refuses a review as [`PublishError::Forbidden`] (the App lacks a permission).
pub(crate) fn publish_error(e: PublishError) -> JobError {
    match e {
        PublishError::Forbidden { message } => {
            JobError::Permanent(format!("GitHub refused the review: {message}").into())
        }
        PublishError::Api(e) if e.is_permanent() => JobError::Permanent(e.into()),
        PublishError::Api(e) => JobError::Retryable(e.into()),
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
