//! The review's state beside the change, as a branch rule can require it: GitHub shows it
//! as a check run named [`CHECK_NAME`], GitLab as a commit status (see `gitlab`). The
//! state is defined here once, for every forge and entry point; each forge only maps it
//! to its API ([`super::Forge::show_status`]).
//!
//! Invariants: the conclusion of a published review is decided in one place
//! ([`ReviewStatus::reviewed`]): `failure` when a finding at or above `fail_on` stands (a
//! finding dismissed on the change does not count; one posted by an earlier run and found
//! again does), else `success`; a review that stopped at a limit before any finding fails
//! (`timed_out` for the time limit). A skipped review is `neutral` unless an earlier review
//! of the same commit concluded, whose conclusion then stands (so asking again never turns
//! a failing commit into a passing one). Texts carry no model-written Markdown: counts,
//! settings and Redline's own sentences, and a failure's reason escaped
//! ([`crate::text::escape_inline`]); finding titles only as annotations, which forges show
//! as plain text.

mod text;

use super::PublishOutcome;
use super::api_error::ForgeApiError;
use crate::review::finding::{Finding, Severity};
use crate::review::report::{FailOn, ReviewReport};
use crate::review::stats::LimitKind;

/// The name of Redline's check run on GitHub (what a branch rule requires).
pub const CHECK_NAME: &str = "Redline";

/// How a finished review concluded, in the words GitHub's checks use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conclusion {
    /// Reviewed; no finding at or above `fail_on`.
    Success,
    /// A finding at or above `fail_on`, or the review failed.
    Failure,
    /// Not reviewed (skipped).
    Neutral,
    /// Replaced by a newer review.
    Cancelled,
    /// The review's time limit ended it before any finding.
    TimedOut,
}

impl Conclusion {
    /// GitHub's name of the conclusion.
    pub fn as_str(self) -> &'static str {
        match self {
            Conclusion::Success => "success",
            Conclusion::Failure => "failure",
            Conclusion::Neutral => "neutral",
            Conclusion::Cancelled => "cancelled",
            Conclusion::TimedOut => "timed_out",
        }
    }

    /// Whether the conclusion says something of the commit (it passed or it failed), so
    /// that it stands when the same commit is asked for again.
    pub fn is_decisive(self) -> bool {
        matches!(
            self,
            Conclusion::Success | Conclusion::Failure | Conclusion::TimedOut
        )
    }
}

/// Why a review was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// A draft: reviewed once it is marked ready (unless drafts are reviewed).
    Draft,
    /// The commit was reviewed already (a re-run, a command, a reopened change).
    AlreadyReviewed,
    /// No changed file is one the `include` setting selects.
    NothingIncluded,
    /// A re-run of a commit that is no longer the change's head (`head`: the head now).
    NotTheHead {
        /// The change's head now.
        head: String,
    },
    /// Reviewed, but Redline stopped before it showed the result here (the review on the
    /// change has it).
    ResultNotShown,
}

/// The counters a published review's status shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunCost {
    /// USD at the price table, when the model's price is known.
    pub cost_usd: Option<f64>,
    /// Whether some usage was counted locally.
    pub estimated: bool,
    /// Prompt tokens over all calls.
    pub prompt_tokens: u64,
    /// Completion tokens over all calls.
    pub completion_tokens: u64,
}

/// A published review's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// [`Conclusion::Success`] or [`Conclusion::Failure`].
    pub conclusion: Conclusion,
    /// The threshold that decided it.
    pub fail_on: FailOn,
    /// Standing findings per severity, most severe first (as [`Severity::ALL`]).
    pub counts: [usize; 4],
    /// What the run cost.
    pub cost: RunCost,
    /// The limit that stopped the review early (a partial review).
    pub partial: Option<LimitKind>,
    /// The review's page (or the summary's), when the forge gave one.
    pub link: Option<String>,
    /// Standing findings not placed inline on the diff (shown as annotations).
    pub unanchored: Vec<Finding>,
}

impl Verdict {
    /// How many findings stand.
    pub fn total(&self) -> usize {
        self.counts.iter().sum()
    }
}

/// Where a review is, as the forge shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum ReviewStatus {
    /// Waiting for a worker; `note` says why it waits again (a retry, a restart).
    Queued {
        /// Why it is queued again, if it is.
        note: Option<String>,
    },
    /// A worker reviews it.
    Running {
        /// The `strategy` setting (`auto`, `react`, ...).
        strategy: String,
        /// The review's limits, as text (`cost ≤ $0.50 · time ≤ 600s`).
        limits: String,
    },
    /// Reviewed and published.
    Done(Box<Verdict>),
    /// Not reviewed; `carried` is the conclusion of an earlier review of the same commit,
    /// which stands.
    Skipped {
        /// Why.
        reason: SkipReason,
        /// The earlier review's decisive conclusion, if there is one.
        carried: Option<Conclusion>,
    },
    /// The review failed; `reason` in one plain paragraph.
    Failed {
        /// Why, for the people reading the check.
        reason: String,
        /// The time limit ended it.
        timed_out: bool,
    },
    /// Replaced by the review of a newer commit.
    Cancelled {
        /// The newer commit, when known.
        newer_head: Option<String>,
    },
}

impl ReviewStatus {
    /// The status of a published review: the verdict under `fail_on`, or a failure when
    /// a limit stopped it before any finding. `outcome` says which of `report.findings`
    /// were dismissed and which went to the summary instead of inline.
    pub(crate) fn reviewed(
        report: &ReviewReport,
        outcome: &PublishOutcome,
        fail_on: FailOn,
        link: Option<String>,
    ) -> ReviewStatus {
        let found_nothing = report.findings.is_empty() && report.unanchored.is_empty();
        if let Some(limit) = report.stats.limit_reached.filter(|_| found_nothing) {
            return ReviewStatus::Failed {
                reason: format!("{} before the review found anything.", limit.reason()),
                timed_out: limit == LimitKind::Time,
            };
        }
        let standing = |index: &usize| !outcome.dismissed_findings.contains(index);
        let anchored = (0..report.findings.len())
            .filter(standing)
            .map(|index| &report.findings[index]);
        let all: Vec<&Finding> = anchored.chain(&report.unanchored).collect();
        let mut counts = [0; 4];
        for finding in &all {
            if let Some(slot) = Severity::ALL.iter().position(|s| *s == finding.severity) {
                counts[slot] += 1;
            }
        }
        let fails = match fail_on {
            FailOn::Never => false,
            FailOn::At(threshold) => all.iter().any(|f| f.severity >= threshold),
        };
        let not_inline = outcome
            .summary_findings
            .iter()
            .filter(|index| standing(index))
            .filter_map(|&index| report.findings.get(index));
        let stats = &report.stats;
        ReviewStatus::Done(Box::new(Verdict {
            conclusion: if fails {
                Conclusion::Failure
            } else {
                Conclusion::Success
            },
            fail_on,
            counts,
            cost: RunCost {
                cost_usd: stats.cost_usd,
                estimated: stats.cost_estimated,
                prompt_tokens: stats.prompt_tokens,
                completion_tokens: stats.completion_tokens,
            },
            partial: stats.limit_reached,
            link,
            unanchored: not_inline.chain(&report.unanchored).cloned().collect(),
        }))
    }

    /// The conclusion of a final status; `None` while queued or running.
    pub fn conclusion(&self) -> Option<Conclusion> {
        match self {
            ReviewStatus::Queued { .. } | ReviewStatus::Running { .. } => None,
            ReviewStatus::Done(verdict) => Some(verdict.conclusion),
            ReviewStatus::Skipped { carried, .. } => Some(carried.unwrap_or(Conclusion::Neutral)),
            ReviewStatus::Failed {
                timed_out: true, ..
            } => Some(Conclusion::TimedOut),
            ReviewStatus::Failed { .. } => Some(Conclusion::Failure),
            ReviewStatus::Cancelled { .. } => Some(Conclusion::Cancelled),
        }
    }

    /// Findings to annotate (a published review's findings not placed inline).
    pub fn annotations(&self) -> &[Finding] {
        match self {
            ReviewStatus::Done(verdict) => &verdict.unanchored,
            _ => &[],
        }
    }

    /// A short title (GitHub's check title).
    pub fn title(&self) -> String {
        text::title(self)
    }

    /// The Markdown summary (GitHub's check summary).
    pub fn summary(&self) -> String {
        text::summary(self)
    }

    /// One plain line of at most [`DESCRIPTION_MAX`] characters (GitLab's description).
    pub fn description(&self) -> String {
        text::description(self)
    }
}

/// The longest [`ReviewStatus::description`], in characters.
pub const DESCRIPTION_MAX: usize = 255;

/// The limits of a review, as the running status shows them (`none` without any).
pub(crate) fn limits_text(limits: &crate::agent::budget::ReviewLimits) -> String {
    let mut parts = Vec::new();
    if let Some(cost) = limits.max_cost_usd {
        parts.push(format!("cost ≤ ${cost:.2}"));
    }
    if let Some(tokens) = limits.max_tokens {
        parts.push(format!("tokens ≤ {tokens}"));
    }
    if let Some(timeout) = limits.timeout {
        parts.push(format!("time ≤ {}s", timeout.as_secs()));
    }
    if parts.is_empty() {
        return "none".into();
    }
    parts.join(" · ")
}

/// Why a status could not be shown: the forge refused or failed. Its
/// [`ForgeApiError::is_denied`] says the forge refused for want of a permission (GitHub:
/// `checks: write`; GitLab: a role that may set commit statuses): no retry mends it.
pub(crate) type StatusError = ForgeApiError;

/// Where a status is shown: the commit, the job that shows it (GitHub's `external_id`)
/// and the forge's id of what was shown before, if any.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StatusTarget<'a> {
    /// The commit.
    pub(crate) head: &'a str,
    /// The job's id, as text.
    pub(crate) job: &'a str,
    /// What [`super::Forge::show_status`] returned before for this job.
    pub(crate) id: Option<u64>,
}

#[cfg(test)]
mod tests;
