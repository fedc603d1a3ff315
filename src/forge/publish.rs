//! Publishing one run's review on any forge: the plan (which findings are new, which go
//! inline, which to the summary), the order of the writes and the rerun rules are here;
//! the forge ([`super::Forge`]) lists its earlier work and makes the writes.
//!
//! Invariants: a fingerprint found in Redline's own earlier comments (inline or in the
//! summary) is never posted again; dismissed findings (the caller's, the summary's
//! dismissal marker, resolved threads) are not raised again even when their line changed
//! (their concern key matches); findings less severe than `inline_at` are never inline
//! comments (they are listed, collapsed, in the summary); a rerun on the head already
//! recorded with nothing new writes nothing; the summary is created once and edited in place (not when unchanged),
//! carrying over its earlier entries and dismissal marker; inline comments are capped,
//! most severe first.

use std::collections::HashSet;
use std::time::Duration;

use serde::Serialize;

use super::anchor::{anchor_line_text, anchor_problem};
use super::api_error::ForgeApiError;
use super::dismissed::{Dismissals, ReviewThread, parse_dismissed, resolved_keys, with_dismissed};
use super::fingerprint::{concern_key, fingerprint, parse_markers};
use super::summary::{SummaryEntry, SummaryInput, parse_last_sha, render_summary};
use super::{Earlier, Forge, SummaryComment};
use crate::review::diff::ChangeSet;
use crate::review::finding::{Finding, Severity};
use crate::review::stats::Stats;
use crate::review::walkthrough::Area;

/// How a review is published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishConfig {
    /// Most inline comments per run; the rest go in the summary (default 25).
    pub max_comments: usize,
    /// Request changes when a new finding is at least this severe (default: never).
    pub request_changes_at: Option<Severity>,
    /// The least severe finding posted inline; less severe ones are listed, collapsed, in
    /// the summary (default minor: nits are not inline comments).
    pub inline_at: Severity,
    /// Least time between two of this run's writes (default one second).
    pub min_write_interval: Duration,
}

impl Default for PublishConfig {
    fn default() -> Self {
        PublishConfig {
            max_comments: 25,
            request_changes_at: None,
            inline_at: Severity::Minor,
            min_write_interval: Duration::from_secs(1),
        }
    }
}

/// One run's review, to publish on the change request the forge ([`Forge`]) names.
pub struct PublishRequest<'a> {
    /// The head commit the findings were made on.
    pub head_sha: &'a str,
    /// The findings, in any order.
    pub findings: &'a [Finding],
    /// The review engine's summary (Markdown).
    pub summary: &'a str,
    /// What the change does, per area: opens the summary comment (empty: no section).
    pub walkthrough: &'a [Area],
    /// The run's counters (cost, tokens, a limit reached), shown in the summary comment.
    pub stats: Option<&'a Stats>,
    /// The pull request's diff (base..head), to validate anchors.
    pub changes: &'a ChangeSet,
    /// The text of line `n` of `path` at head, for fingerprints.
    pub head_line_text: &'a (dyn Fn(&str, u32) -> Option<String> + Sync),
    /// Limits and thresholds.
    pub config: &'a PublishConfig,
    /// `(from_sha, to_sha)` when only the changes since an earlier review were reviewed.
    pub reviewed_range: Option<(String, String)>,
    /// Dismissal keys known from elsewhere (the App's database).
    pub dismissed: &'a Dismissals,
    /// Resolve Redline's outdated threads whose finding this run did not raise again.
    pub resolve_outdated: bool,
}

/// What a run posted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PublishOutcome {
    /// The review's page, when a review was posted.
    pub review_url: Option<String>,
    /// Inline comments posted.
    pub inline_posted: usize,
    /// Findings not posted because an earlier run already did.
    pub skipped_duplicates: usize,
    /// Findings not posted because they were dismissed (or their thread resolved).
    pub skipped_dismissed: usize,
    /// Redline's outdated threads resolved by this run.
    pub threads_resolved: usize,
    /// This run's findings listed in the summary comment instead of inline.
    pub in_summary: usize,
    /// GitHub refused the inline comments, so everything went to the summary.
    pub fell_back_to_summary_only: bool,
    /// The summary comment's page, when the forge gave one (an earlier run's summary).
    pub summary_url: Option<String>,
    /// Which of the request's findings (their indices) were dismissed, not raised.
    #[serde(skip)]
    pub dismissed_findings: Vec<usize>,
    /// Which of the request's findings (their indices) this run listed in the summary
    /// comment instead of posting them inline.
    #[serde(skip)]
    pub summary_findings: Vec<usize>,
}

/// Why a review could not be published.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The token may not comment (fork pull request, read-only token): fall back
    /// to the job summary and annotations.
    #[error("GitHub does not let this token comment on the pull request: {message}")]
    Forbidden {
        /// GitHub's answer, with the request that got it.
        message: String,
    },
    /// Any other failure of the forge's API.
    #[error(transparent)]
    Api(#[from] ForgeApiError),
}

/// This run's new findings, split between inline comments and the summary.
pub(crate) struct Plan<'f> {
    pub(crate) inline: Vec<(&'f Finding, String)>,
    pub(crate) summary: Vec<SummaryEntry<'f>>,
    pub(crate) duplicates: usize,
    /// The request's findings (their indices) dismissed.
    pub(crate) dismissed: Vec<usize>,
    pub(crate) request_changes: bool,
}

/// Publishes one run's review through `forge`. See the module documentation.
pub(crate) async fn publish(
    forge: &dyn Forge,
    req: PublishRequest<'_>,
) -> Result<PublishOutcome, PublishError> {
    let Earlier {
        mut known,
        summary: existing,
        threads,
    } = forge.earlier().await?;
    if let Some(summary) = &existing {
        known.extend(parse_markers(&summary.body));
    }
    let dismissed = all_dismissed(&req, existing.as_ref(), &threads);
    let mut plan = plan(&req, &known, &dismissed);
    let mut outcome = PublishOutcome {
        skipped_duplicates: plan.duplicates,
        skipped_dismissed: plan.dismissed.len(),
        dismissed_findings: plan.dismissed.clone(),
        summary_url: existing.as_ref().and_then(|s| s.url.clone()),
        ..PublishOutcome::default()
    };
    if req.resolve_outdated {
        outcome.threads_resolved = resolve_outdated(forge, &req, &threads).await;
    }
    let nothing_new = plan.inline.is_empty() && plan.summary.is_empty();
    if nothing_new && summarised_head(existing.as_ref(), req.head_sha) {
        return Ok(outcome);
    }
    if !plan.inline.is_empty() || plan.request_changes {
        let summary_url = existing.as_ref().and_then(|s| s.url.as_deref());
        forge
            .post_review(&req, &mut plan, summary_url, &mut outcome)
            .await?;
    }
    outcome.in_summary = plan.summary.len();
    outcome.summary_findings = summary_indices(&req, &plan);
    let body = summary_body(&req, &plan, existing.as_ref());
    if existing.as_ref().is_some_and(|s| s.body == body) {
        return Ok(outcome);
    }
    let interval = req.config.min_write_interval;
    let written = forge
        .write_summary(existing.as_ref(), &body, interval)
        .await?;
    outcome.summary_url = written.or(outcome.summary_url);
    Ok(outcome)
}

/// Every dismissal key that holds for this run: the caller's, the resolved threads', and
/// those in the summary's dismissal marker.
fn all_dismissed(
    req: &PublishRequest<'_>,
    existing: Option<&SummaryComment>,
    threads: &[ReviewThread],
) -> Dismissals {
    let mut dismissed = req.dismissed.clone();
    dismissed.extend(resolved_keys(threads));
    if let Some(summary) = existing {
        dismissed.extend(parse_dismissed(&summary.body));
    }
    dismissed
}

/// Whether the summary already records `head` as the head last reviewed.
fn summarised_head(existing: Option<&SummaryComment>, head: &str) -> bool {
    existing
        .and_then(|s| parse_last_sha(&s.body))
        .is_some_and(|sha| sha == head)
}

/// The request's findings (their indices) that the plan lists in the summary.
fn summary_indices(req: &PublishRequest<'_>, plan: &Plan<'_>) -> Vec<usize> {
    plan.summary
        .iter()
        .filter_map(|entry| {
            req.findings
                .iter()
                .position(|finding| std::ptr::eq(finding, entry.finding))
        })
        .collect()
}

/// The summary comment's new body: this run's summary and entries over the earlier body,
/// keeping its dismissal marker.
fn summary_body(
    req: &PublishRequest<'_>,
    plan: &Plan<'_>,
    existing: Option<&SummaryComment>,
) -> String {
    let mut rendered = render_summary(&SummaryInput {
        summary: req.summary,
        walkthrough: req.walkthrough,
        stats: req.stats,
        head_sha: req.head_sha,
        reviewed_range: req.reviewed_range.as_ref(),
        entries: &plan.summary,
        previous_body: existing.map(|s| s.body.as_str()),
    });
    if let Some(previous) = existing.map(|s| parse_dismissed(&s.body))
        && !previous.is_empty()
    {
        rendered.body = with_dismissed(&rendered.body, &previous);
    }
    if rendered.omitted > 0 {
        tracing::warn!(
            omitted = rendered.omitted,
            "summary comment too long; some findings left out"
        );
    }
    rendered.body
}

/// The head SHA the last published review covered, from the forge's summary.
pub(crate) async fn last_reviewed_sha(forge: &dyn Forge) -> Result<Option<String>, PublishError> {
    let summary = forge.summary().await?;
    Ok(summary.and_then(|s| parse_last_sha(&s.body)))
}

/// The fingerprint and the concern key of a finding.
pub(crate) fn finding_keys(req: &PublishRequest<'_>, finding: &Finding) -> (String, String) {
    let line_text = anchor_line_text(finding, req.changes, req.head_line_text);
    let fp = fingerprint(&finding.path, &line_text, finding.category, &finding.title);
    let concern = concern_key(&finding.path, finding.category.as_str(), &finding.title);
    (fp, concern)
}

/// Resolves Redline's unresolved, outdated threads whose finding this run did not raise
/// again; returns how many were resolved (a failure is logged, not fatal).
async fn resolve_outdated(
    forge: &dyn Forge,
    req: &PublishRequest<'_>,
    threads: &[ReviewThread],
) -> usize {
    let raised: HashSet<String> = req
        .findings
        .iter()
        .flat_map(|finding| {
            let (fp, concern) = finding_keys(req, finding);
            [fp, concern]
        })
        .collect();
    let mut resolved = 0;
    for thread in threads {
        let stale = !thread.is_resolved && thread.is_outdated && !thread.keys.is_empty();
        if !stale || thread.keys.iter().any(|key| raised.contains(key)) {
            continue;
        }
        match forge.resolve(&thread.id).await {
            Ok(()) => resolved += 1,
            Err(error) => tracing::warn!(%error, "could not resolve an outdated thread"),
        }
    }
    resolved
}

/// Fingerprints of the new findings; duplicates and dismissed findings dropped; anchors
/// checked; inline comments capped, most severe first.
pub(crate) fn plan<'f>(
    req: &PublishRequest<'f>,
    known: &HashSet<String>,
    dismissed: &Dismissals,
) -> Plan<'f> {
    let mut seen = known.clone();
    let mut fresh: Vec<(&'f Finding, String)> = Vec::new();
    let (mut duplicates, mut turned_down) = (0, Vec::new());
    for (index, finding) in req.findings.iter().enumerate() {
        let (fp, concern) = finding_keys(req, finding);
        if dismissed.contains(&fp) || dismissed.contains(&concern) {
            turned_down.push(index);
        } else if seen.insert(fp.clone()) {
            fresh.push((finding, fp));
        } else {
            duplicates += 1;
        }
    }
    // Stable: equally severe findings keep the engine's order.
    fresh.sort_by_key(|(finding, _)| std::cmp::Reverse(finding.severity));
    let request_changes = req
        .config
        .request_changes_at
        .is_some_and(|threshold| fresh.iter().any(|(f, _)| f.severity >= threshold));

    let mut plan = Plan {
        inline: Vec::new(),
        summary: Vec::new(),
        duplicates,
        dismissed: turned_down,
        request_changes,
    };
    let inline_at = req.config.inline_at;
    for (finding, fp) in fresh {
        let quiet = finding.severity < inline_at;
        let reason = match anchor_problem(finding, req.changes) {
            Some(problem) => problem,
            None if quiet => format!("less severe than `inline_at` ({inline_at})"),
            None if plan.inline.len() < req.config.max_comments => {
                plan.inline.push((finding, fp));
                continue;
            }
            None => format!(
                "over the limit of {} inline comments",
                req.config.max_comments
            ),
        };
        plan.summary.push(SummaryEntry {
            finding,
            fp,
            reason,
            quiet,
        });
    }
    plan
}
