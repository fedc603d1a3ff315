//! The verification stage: after any strategy, before anything is reported, the checked
//! findings go in batches of at most [`BATCH_SIZE`] to a separate verifier conversation
//! (its own system prompt, `read_file` and `search` only, [`VERIFY_MAX_STEPS`] steps and
//! the final turns of any run), which answers per finding `keep` or `drop` with a reason.
//!
//! Invariants:
//! - a finding is dropped only by a readable `drop` verdict on its own id; every other
//!   finding is kept, and one without a readable verdict (an unreadable answer, a failed
//!   call, a limit, a tool failure) is marked `unverified`: a failed verification never
//!   loses a finding and never fails the review (only a cancellation ends it);
//! - the verifier's calls go through the review's model client (so a transcript records
//!   and replays them) and its budget (so they count against `max_tokens`, `max_cost` and
//!   `timeout`); the review leaves [`VERIFY_RESERVE`] of each set limit to them (see
//!   [`super::budget::Budget::reserve_share`]);
//! - every verdict is an event; the verifier's tokens and cost are counted apart
//!   ([`VerificationStats`]) and in the review's totals.

mod prompt;
mod verdict;

use std::time::Instant;

use super::events::{EventKind, Stats};
use super::react::{ReactRun, RunContext};
use super::{AgentConfig, AgentError};
use crate::llm::Message;
use crate::llm::pricing::Price;
use crate::review::anchor::{Checked, Note};
use crate::review::finding::Finding;
use crate::review::stats::VerificationStats;
use crate::review::verification::DroppedFinding;
use crate::tools::ToolRegistry;
use verdict::{Decision, VerdictFinisher, Verdicts};

/// Findings in one verifier conversation at most.
pub(crate) const BATCH_SIZE: usize = 20;
/// Model turns of one verifier conversation before its final turn.
pub(crate) const VERIFY_MAX_STEPS: u32 = 4;
/// Share of each set limit (tokens, cost, time) the review leaves to verification.
pub(crate) const VERIFY_RESERVE: f64 = 0.2;
/// Cap on one verifier reply's tokens: verdicts are short lines.
const MAX_VERDICT_REPLY_TOKENS: u32 = 4096;

/// Sent when the verifier's steps are spent.
const FINAL_TURN: &str = "You have used all the steps available for verification. Do not call any more tools. Answer now with one line per finding id, `F1: keep - reason` or `F1: drop - reason`.";
/// Sent after a reply with neither a tool call nor verdicts that could be read.
const CORRECTIVE: &str = "Your last reply had neither a tool call nor verdicts I could read. Call `submit_verdicts` with one verdict per finding id (or reply with one line per id: `F1: keep - reason` / `F2: drop - reason`).";

/// Whether and how findings are verified (`verify`, `verify_model`).
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyConfig {
    /// Verify the findings before they are reported (`verify`, default true).
    pub enabled: bool,
    /// The verifier's model (`verify_model`; `None`: the review's), same provider.
    pub model: Option<String>,
    /// The verifier model's price, when known (the review's when it is the same model).
    pub price: Option<Price>,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            enabled: true,
            model: None,
            price: None,
        }
    }
}

/// What verification made of the checked findings.
#[derive(Debug, Default)]
pub(crate) struct Verified {
    /// Anchored findings kept (`unverified` set on those without a verdict).
    pub findings: Vec<Finding>,
    /// Findings that could not be anchored, kept.
    pub notes: Vec<Note>,
    /// Findings dropped, with the verifier's reasons.
    pub dropped: Vec<DroppedFinding>,
    /// The stage's counters; `None` when it did not run.
    pub stats: Option<VerificationStats>,
}

impl Verified {
    /// Everything kept as it was: verification is off or there is nothing to verify.
    pub(crate) fn unchecked(checked: Checked) -> Self {
        Verified {
            findings: checked.findings,
            notes: checked.notes,
            ..Verified::default()
        }
    }
}

/// The verifier's settings, derived from the review's: its model and price, its step
/// budget and turn prompts, a short reply allowance.
pub(crate) fn verifier_config(review: &AgentConfig) -> AgentConfig {
    let mut config = review.clone();
    if let Some(model) = &review.verification.model {
        config.model = model.clone();
        config.price = review.verification.price;
    }
    config.max_steps = VERIFY_MAX_STEPS;
    config.max_reply_tokens = review.max_reply_tokens.min(MAX_VERDICT_REPLY_TOKENS);
    config.prompts.final_turn = FINAL_TURN.into();
    config.prompts.corrective = CORRECTIVE.into();
    config
}

/// The tools the verifier may call: `read_file` and `search`.
pub(crate) fn verifier_tools() -> ToolRegistry {
    ToolRegistry::read_and_search()
}

/// One finding on its way through verification: anchored or a note.
enum Item {
    Anchored(Finding),
    Note(Note),
}

impl Item {
    fn finding(&self) -> &Finding {
        match self {
            Item::Anchored(finding) => finding,
            Item::Note(note) => &note.finding,
        }
    }
}

/// Verifies `checked` with the verifier's `ctx` (its tools, config and coverage);
/// `overview` lists the changed files. Fails only when the review is cancelled.
pub(crate) async fn verify(
    ctx: &RunContext<'_>,
    overview: &str,
    checked: Checked,
) -> Result<Verified, AgentError> {
    let started = Instant::now();
    let items: Vec<Item> = checked
        .findings
        .into_iter()
        .map(Item::Anchored)
        .chain(checked.notes.into_iter().map(Item::Note))
        .collect();
    let mut stats = VerificationStats {
        model: ctx.config.model.clone(),
        findings: items.len(),
        cost_usd: ctx.config.price.map(|_| 0.0),
        ..VerificationStats::default()
    };
    ctx.events.emit(EventKind::VerificationStarted {
        findings: items.len(),
        batches: items.len().div_ceil(BATCH_SIZE),
        model: ctx.config.model.clone(),
    });
    let mut verified = Verified::default();
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        let batch: Vec<Item> = items.by_ref().take(BATCH_SIZE).collect();
        let findings: Vec<Finding> = batch.iter().map(|i| i.finding().clone()).collect();
        let mut run_stats = Stats::default();
        let answer = run_batch(ctx, overview, &findings, &mut run_stats).await;
        count_calls(&mut stats, &run_stats, ctx.config.price);
        let verdicts = match answer {
            Ok(verdicts) => verdicts,
            Err(AgentError::Cancelled) => return Err(AgentError::Cancelled),
            Err(error) => {
                stats.incomplete.get_or_insert_with(|| error.to_string());
                Verdicts::default()
            }
        };
        for (offset, item) in batch.into_iter().enumerate() {
            apply(ctx, offset + 1, item, &verdicts, &mut verified, &mut stats);
        }
    }
    stats.duration_ms = started.elapsed().as_millis() as u64;
    verified.stats = Some(stats);
    Ok(verified)
}

/// One verifier conversation over `findings`.
async fn run_batch(
    ctx: &RunContext<'_>,
    overview: &str,
    findings: &[Finding],
    stats: &mut Stats,
) -> Result<Verdicts, AgentError> {
    let sources = prompt::read_sources(ctx.workspace, findings).await;
    let message = prompt::batch_message(
        &ctx.config.intent,
        overview,
        findings,
        &ctx.workspace.changes,
        &sources,
    );
    let history = vec![
        Message::system(prompt::system_prompt(ctx.config.guidelines.as_deref())),
        Message::user(message),
    ];
    let run = ReactRun {
        ctx,
        finisher: &VerdictFinisher {
            count: findings.len(),
        },
        use_tools: true,
        max_steps: ctx.config.max_steps,
    };
    run.run(history, stats).await
}

/// Adds one conversation's counters to the stage's.
fn count_calls(stats: &mut VerificationStats, run: &Stats, price: Option<Price>) {
    stats.batches += 1;
    stats.model_calls += run.model_calls;
    stats.tool_calls += run.tool_calls;
    stats.prompt_tokens += run.prompt_tokens;
    stats.completion_tokens += run.completion_tokens;
    stats.cached_prompt_tokens += run.cached_prompt_tokens;
    stats.cost_usd = stats
        .cost_usd
        .zip(price)
        .map(|(sum, price)| sum + price.cost(&run.usage()));
}

/// Keeps, drops or marks finding `F{number}` of its batch by its verdict, and emits the verdict.
fn apply(
    ctx: &RunContext<'_>,
    number: usize,
    item: Item,
    verdicts: &Verdicts,
    verified: &mut Verified,
    stats: &mut VerificationStats,
) {
    let verdict = verdicts.get(number);
    let finding = item.finding();
    ctx.events.emit(EventKind::Verdict {
        id: format!("F{number}"),
        path: finding.path.clone(),
        line: finding.line,
        title: finding.title.clone(),
        verdict: verdict
            .map_or("unverified", |v| v.decision.as_str())
            .to_string(),
        reason: verdict.map(|v| v.reason.clone()),
    });
    match verdict {
        Some(v) if v.decision == Decision::Drop => {
            stats.dropped += 1;
            verified.dropped.push(DroppedFinding {
                finding: finding.clone(),
                reason: v.reason.clone(),
            });
        }
        Some(_) => {
            stats.kept += 1;
            keep(item, false, verified);
        }
        None => {
            stats.unverified += 1;
            keep(item, true, verified);
        }
    }
}

fn keep(item: Item, unverified: bool, verified: &mut Verified) {
    match item {
        Item::Anchored(mut finding) => {
            finding.unverified = unverified;
            verified.findings.push(finding);
        }
        Item::Note(mut note) => {
            note.finding.unverified = unverified;
            verified.notes.push(note);
        }
    }
}
