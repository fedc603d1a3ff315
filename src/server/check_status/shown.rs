//! What a job's run shows when it ends early or is about to review: the decisions the
//! GitHub and GitLab runners share.

use super::JobStatus;
use crate::config::settings::Settings;
use crate::flow::pull::PullCommits;
use crate::forge::PublishOutcome;
use crate::forge::status::{ReviewStatus, SkipReason, limits_text};
use crate::queue::{Job, ReviewTrigger};
use crate::review::report::ReviewReport;

/// What a job that found the change at `head` shows when it needs no review: a re-run
/// of an older commit, or a commit reviewed already (`reviewed_before`: the queue's
/// [`Since`](crate::server::pipeline::Since) rule found nothing to review). Records
/// `head` as the commit of the job's check.
pub(crate) async fn no_review_needed(
    job: &Job,
    head: &str,
    reviewed_before: bool,
    status: Option<&JobStatus>,
) -> Option<ReviewStatus> {
    if let Some(status) = status {
        status.set_head(head);
    }
    if let Some(skipped) = rerun_of_an_older_head(job, head) {
        return Some(skipped);
    }
    if reviewed_before {
        return Some(already_reviewed_status(status, head).await);
    }
    None
}

/// Shows the review about to run with `settings`.
pub(crate) async fn show_running(status: Option<&JobStatus>, settings: &Settings) {
    if let Some(status) = status {
        status.show(&running(settings), true).await;
    }
}

/// The status of a run that found its commit reviewed already: `neutral`, unless an
/// earlier review of the commit concluded (that conclusion stands).
async fn already_reviewed_status(status: Option<&JobStatus>, head: &str) -> ReviewStatus {
    let carried = match status {
        Some(status) => status.shown_conclusion(head).await,
        None => None,
    };
    ReviewStatus::Skipped {
        reason: SkipReason::AlreadyReviewed,
        carried,
    }
}

/// A re-run of a commit that is no longer the change's `head`: not reviewed (the head's
/// own check shows its review).
pub(crate) fn rerun_of_an_older_head(job: &Job, head: &str) -> Option<ReviewStatus> {
    let is_rerun = matches!(job.trigger(), Ok(ReviewTrigger::Rerun { .. }));
    let asked = job.head_sha.as_deref()?;
    (is_rerun && asked != head).then(|| ReviewStatus::Skipped {
        reason: SkipReason::NotTheHead {
            head: head.to_string(),
        },
        carried: None,
    })
}

/// The status of a run whose repository settings are broken (the change got a notice).
pub(crate) fn broken_settings(error: &crate::config::ConfigError) -> ReviewStatus {
    ReviewStatus::Failed {
        reason: format!("the repository's settings are broken: {error}"),
        timed_out: false,
    }
}

/// The status of a review about to run with `settings`.
pub(crate) fn running(settings: &Settings) -> ReviewStatus {
    ReviewStatus::Running {
        strategy: settings.agent.strategy.config_name().to_string(),
        limits: limits_text(&settings.agent.review_limits),
    }
}

/// The status of a published review: `neutral` when no changed file was one the `include`
/// setting selects, else the verdict under `fail_on`.
pub(crate) fn reviewed(
    commits: &PullCommits,
    report: &ReviewReport,
    outcome: &PublishOutcome,
    settings: &Settings,
) -> ReviewStatus {
    let mut included = commits.changes.clone();
    settings.include.apply(&mut included);
    if included.files.is_empty() && !commits.changes.files.is_empty() {
        return ReviewStatus::Skipped {
            reason: SkipReason::NothingIncluded,
            carried: None,
        };
    }
    let link = outcome
        .review_url
        .clone()
        .or_else(|| outcome.summary_url.clone());
    ReviewStatus::reviewed(report, outcome, settings.fail_on, link)
}
