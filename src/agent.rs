//! The orchestrator that runs a review with one of three strategies (ReAct,
//! plan-and-execute, reflection), and the events it emits.
//!
//! Every strategy shares the model client, the tools, the budgets, the event log
//! and the finding checks; every budget is enforced here, in code. Whatever the
//! strategy and the entry point, [`Orchestrator::run`] then anchors the findings on the
//! diff, merges duplicates and verifies them ([`verify`]) before anything is reported:
//! no finding leaves a review unverified unless verification is off or gave no verdict.

pub mod budget;
pub mod chat;
mod config;
pub mod coverage;
pub mod events;
mod finish;
mod other_files;
pub mod plan;
mod plan_execute;
mod plan_overview;
mod react;
pub mod reflection;
pub mod strategy;
pub mod text_mode;
mod tool_mode;
pub mod transcript;
pub mod verify;

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use std::sync::Mutex;

use crate::context::{
    Packing, ShapeOptions, ShapeStatus, ShapedContext, shape_with_moves, stage1_budget,
};
use crate::llm::tokens::TokenCounter;
use crate::llm::{ChatModel, LlmError, Message};
use crate::review::anchor::{Checked, check_findings, summary_with_notes};
use crate::review::diff::ChangeSet;
use crate::review::parse::Submission;
use crate::review::report::ReviewReport;
use crate::review::verification::MergedFinding;
use crate::review::walkthrough::{self, Area};
use crate::tools::{ToolRegistry, Workspace};
use budget::{Budget, LimitKind};
use coverage::Coverage;
use events::{CompressionStats, EventKind, EventSink, Stats};
use finish::ReviewFinisher;
use plan::Plan;
use react::{ReactRun, RunContext};
use strategy::Fit;
use strategy::{Decision, Strategy, StrategyChoice};
use tool_mode::ModeState;
use verify::Verified;

pub use config::AgentConfig;
pub(crate) use tool_mode::ToolMode;

/// Model turns of one ReAct run before its final turn, unless configured.
pub(crate) const DEFAULT_MAX_STEPS: u32 = 10;

/// Why a review could not finish.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model call failed for good (after retries).
    #[error("model call failed: {0}")]
    Model(#[from] LlmError),
    /// A tool failed in a way the model cannot fix.
    #[error("{0}")]
    Tool(String),
    /// The model's replies could not be read, too many times in a row.
    #[error(
        "the model gave {attempts} consecutive replies without a tool call or a readable result; last reply began: {excerpt:?}"
    )]
    Unparseable {
        /// How many in a row.
        attempts: u32,
        /// The start of the last reply.
        excerpt: String,
    },
    /// The run was cancelled (a newer push, a shutdown).
    #[error("the review was cancelled")]
    Cancelled,
    /// A limit of the review (cost, tokens, time) was reached; no more model calls.
    #[error("the review's {0} limit was reached")]
    LimitReached(LimitKind),
}

/// Everything one review needs. One orchestrator runs one review.
pub struct Orchestrator {
    model: Arc<dyn ChatModel>,
    tools: ToolRegistry,
    workspace: Workspace,
    events: EventSink,
    config: AgentConfig,
    cancel: CancellationToken,
    counter: TokenCounter,
    mode: ModeState,
    coverage: Coverage,
    shaped: ShapedContext,
    reviewable: ChangeSet,
    compression: Mutex<CompressionStats>,
    budget: Budget,
    recorder: Option<Arc<transcript::Recorder>>,
}

impl Orchestrator {
    /// A review of `workspace` with `model`, using the repository tools.
    pub fn new(model: Arc<dyn ChatModel>, workspace: Workspace, config: AgentConfig) -> Self {
        let counter = TokenCounter::for_model(&config.model);
        let shaped = shape_first_message(&workspace, &config, &counter);
        // Noise (lockfiles, generated, vendored…) is listed for the model but is not under review.
        let mut reviewable = (*workspace.changes).clone();
        reviewable.files.retain(|f| {
            shaped
                .files
                .iter()
                .any(|e| e.path == f.path && e.status != ShapeStatus::Excluded)
        });
        let coverage = Coverage::new(&reviewable);
        let compression = CompressionStats {
            naive_tokens: shaped.naive_tokens as u64,
            shaped_tokens: shaped.shaped_tokens as u64,
            ..CompressionStats::default()
        };
        Orchestrator {
            counter,
            mode: ModeState::new(config.tool_mode),
            coverage,
            shaped,
            reviewable,
            compression: Mutex::new(compression),
            budget: review_budget(&config),
            model,
            tools: ToolRegistry::repository_tools(),
            workspace,
            events: EventSink::discard(),
            config,
            cancel: CancellationToken::new(),
            recorder: None,
        }
    }

    /// Keeps a transcript with `recorder` (and answers from it what it already holds).
    pub(crate) fn with_recorder(mut self, recorder: Arc<transcript::Recorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Sends events to `events`.
    pub(crate) fn with_events(mut self, events: EventSink) -> Self {
        self.events = events;
        self
    }

    /// Stops the run at its next safe point when `cancel` fires.
    pub(crate) fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Ends the run as at a limit when `interrupt` fires: calls in flight end, the parts
    /// that finished are kept and the review is reported ([`LimitKind::Interrupted`]).
    pub(crate) fn with_interrupt(mut self, interrupt: CancellationToken) -> Self {
        self.budget = self.budget.with_interrupt(interrupt);
        self
    }

    /// The strategy this review would use, and why.
    pub(crate) fn decide(&self) -> Decision {
        strategy::decide(
            self.config.strategy,
            &self.workspace.changes,
            &self.config.auto,
            Fit {
                whole: self.shaped.fits_whole(),
                tokens: self.shaped.shaped_tokens,
                budget: stage1_budget(self.config.limits),
            },
        )
    }

    /// Runs the review with the decided strategy and returns checked findings.
    pub async fn review(&self) -> Result<ReviewReport, AgentError> {
        let decision = self.decide();
        self.run(decision, None).await
    }

    /// Plan-and-execute's first step alone (`--plan-only`, or a plan to confirm).
    pub async fn plan(&self) -> Result<(Plan, Stats), AgentError> {
        self.budget.start();
        let mut stats = Stats::default();
        let ctx = self.context();
        let conversations = plan_execute::conversations(&ctx);
        let plan =
            plan_execute::make_plan(&ctx, &self.overview(), conversations, &mut stats).await?;
        self.events.emit(EventKind::Plan {
            tasks: plan.tasks.clone(),
        });
        Ok((plan, stats))
    }

    /// Runs plan-and-execute with a given plan (confirmed or edited by a person).
    pub(crate) async fn review_with_plan(
        &self,
        mut plan: Plan,
        planning: Stats,
    ) -> Result<ReviewReport, AgentError> {
        plan.cover(&self.reviewable);
        let decision = Decision {
            strategy: Strategy::PlanExecute,
            reason: format!(
                "{} from a given plan",
                crate::text::count(plan.tasks.len(), "task", "tasks")
            ),
        };
        self.run(decision, Some((plan, planning))).await
    }

    async fn run(
        &self,
        decision: Decision,
        plan: Option<(Plan, Stats)>,
    ) -> Result<ReviewReport, AgentError> {
        let started = Instant::now();
        self.budget.start();
        let mut stats = Stats {
            strategy: decision.strategy.name().into(),
            ..Stats::default()
        };
        self.events.emit(EventKind::RunStarted {
            run_id: self.recorder.as_ref().map(|r| r.run_id().to_string()),
            strategy: stats.strategy.clone(),
            reason: Some(decision.reason),
        });
        self.events.emit(EventKind::Compression {
            stage: 1,
            before_tokens: self.shaped.naive_tokens as u64,
            after_tokens: self.shaped.shaped_tokens as u64,
            removed: Vec::new(),
        });
        let result = match self.run_strategy(decision.strategy, plan, &mut stats).await {
            Err(AgentError::LimitReached(_)) => Ok(self.nothing_finished()),
            other => other,
        };
        stats.limit_reached = self.budget.reached();
        stats.cost_usd = self.config.price.map(|p| p.cost(&stats.usage()));
        stats.coverage = self.coverage.ratio();
        stats.compression = self
            .compression
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default();
        let outcome = match result {
            Ok(mut submission) => {
                if let Some(kind) = stats.limit_reached {
                    submission.summary = limit_summary(&submission.summary, kind);
                }
                let findings = std::mem::take(&mut submission.findings);
                let checked = check_findings(findings, &self.workspace.changes);
                self.verify(checked, &mut stats)
                    .await
                    .map(|verified| (submission, verified))
            }
            Err(error) => Err(error),
        };
        stats.duration_ms = started.elapsed().as_millis() as u64;
        match outcome {
            Ok((submission, verified)) => Ok(self.finish(submission, verified, stats)),
            Err(error) => {
                self.events.emit(EventKind::Error {
                    message: error.to_string(),
                    fatal: true,
                });
                Err(error)
            }
        }
    }

    /// The verification stage over the checked findings (see [`verify`]), its counters
    /// added to `stats`; everything kept as it is when it is off or there is nothing to
    /// verify. Fails only when the review is cancelled.
    async fn verify(
        &self,
        mut checked: Checked,
        stats: &mut Stats,
    ) -> Result<(Verified, Vec<MergedFinding>), AgentError> {
        let merged = std::mem::take(&mut checked.merged);
        let nothing = checked.findings.is_empty() && checked.notes.is_empty();
        if !self.config.verification.enabled || nothing {
            return Ok((Verified::unchecked(checked), merged));
        }
        let config = verify::verifier_config(&self.config);
        self.budget.open_reserve(config.price);
        let tools = verify::verifier_tools();
        // The verifier's reads are not the review's: they count for no coverage.
        let coverage = Coverage::new(&self.reviewable);
        let ctx = RunContext {
            tools: &tools,
            config: &config,
            coverage: &coverage,
            ..self.context()
        };
        let mut verified = verify::verify(&ctx, &self.overview(), checked).await?;
        if let Some(verification) = &mut verified.stats {
            verification.merged = merged.len();
            stats.add_verification(verification);
        }
        Ok((verified, merged))
    }

    async fn run_strategy(
        &self,
        strategy: Strategy,
        plan: Option<(Plan, Stats)>,
        stats: &mut Stats,
    ) -> Result<Submission, AgentError> {
        let ctx = self.context();
        match strategy {
            Strategy::React => {
                let run = ReactRun {
                    ctx: &ctx,
                    finisher: &ReviewFinisher::of(ctx.config),
                    use_tools: true,
                    max_steps: self.config.max_steps,
                };
                let history = vec![
                    Message::system(self.config.prompts.system.clone()),
                    Message::user(self.task_message()),
                ];
                let result = run.run(history, stats).await;
                self.mark_first_message_seen(stats);
                result
            }
            Strategy::Reflection => {
                let result =
                    reflection::run(&ctx, &self.config.reflection, &self.task_message(), stats)
                        .await;
                self.mark_first_message_seen(stats);
                result
            }
            Strategy::PlanExecute => {
                let overview = self.overview();
                // Chosen by `auto` for size: tasks are packed for cost. A plan a person
                // gave, or a strategy the user chose, runs with its grouping as it is.
                let packing = match (&plan, self.config.strategy) {
                    (None, StrategyChoice::Auto) => Packing::Shared,
                    _ => Packing::PerGroup,
                };
                let plan = match plan {
                    Some((plan, planning)) => {
                        stats.absorb(&planning);
                        plan
                    }
                    None => {
                        let plan = plan_execute::plan_for(&ctx, &overview, packing, stats).await?;
                        self.events.emit(EventKind::Plan {
                            tasks: plan.tasks.clone(),
                        });
                        plan
                    }
                };
                plan_execute::execute(&ctx, &plan, self.config.parallel, packing, stats).await
            }
        }
    }

    fn context(&self) -> RunContext<'_> {
        RunContext {
            model: self.model.as_ref(),
            tools: &self.tools,
            workspace: &self.workspace,
            events: &self.events,
            config: &self.config,
            cancel: &self.cancel,
            counter: &self.counter,
            mode: &self.mode,
            coverage: &self.coverage,
            reviewable: &self.reviewable,
            compression: &self.compression,
            shaped: &self.shaped,
            budget: &self.budget,
            recorder: self.recorder.as_deref(),
        }
    }

    /// The outcome of a run stopped at a limit before any part of it handed in a result.
    fn nothing_finished(&self) -> Submission {
        let files: Vec<&str> = self
            .reviewable
            .files
            .iter()
            .map(|f| f.path.as_str())
            .collect();
        Submission {
            summary: format!(
                "No part of the review finished before the limit. Not reviewed: {}.",
                files.join(", ")
            ),
            ..Submission::default()
        }
    }

    fn finish(
        &self,
        submission: Submission,
        (verified, merged): (Verified, Vec<MergedFinding>),
        stats: Stats,
    ) -> ReviewReport {
        let mut summary = summary_with_notes(&submission.summary, &verified.notes);
        if !submission.rejected.is_empty() {
            summary
                .push_str("\n\nFindings the model submitted in a form that could not be read:\n");
            for item in &submission.rejected {
                summary.push_str(&format!("- {item}\n"));
            }
        }
        for finding in &verified.findings {
            self.events.emit(EventKind::Finding(finding.clone()));
        }
        self.events.emit(EventKind::RunFinished {
            stats: stats.clone(),
        });
        ReviewReport {
            findings: verified.findings,
            summary,
            stats,
            unanchored: verified.notes.into_iter().map(|n| n.finding).collect(),
            walkthrough: self.walkthrough(submission.walkthrough),
            dropped: verified.dropped,
            merged,
        }
    }

    /// The walkthrough handed in, checked against the change; none when not asked for.
    fn walkthrough(&self, areas: Vec<Area>) -> Vec<Area> {
        if !self.config.walkthrough {
            return Vec::new();
        }
        let changed: Vec<&str> = self
            .workspace
            .changes
            .files
            .iter()
            .map(|f| f.path.as_str())
            .collect();
        walkthrough::finalize(areas, &changed)
    }

    /// One line per changed file.
    fn overview(&self) -> String {
        let changes = &self.workspace.changes;
        let mut overview = format!("The change touches {} file(s):\n", changes.files.len());
        for file in &changes.files {
            let renamed = file
                .old_path
                .as_deref()
                .map(|old| format!(" (from {old})"))
                .unwrap_or_default();
            let binary = if file.binary { ", binary" } else { "" };
            let left_out = self
                .shaped
                .files
                .iter()
                .find(|e| e.path == file.path && e.status == ShapeStatus::Excluded)
                .map(|e| {
                    format!(
                        " (not under review: {})",
                        e.reason.as_deref().unwrap_or("noise")
                    )
                })
                .unwrap_or_default();
            overview.push_str(&format!(
                "- {} [{:?}{binary}] +{} -{}{renamed}{left_out}\n",
                file.path,
                file.status,
                file.additions(),
                file.deletions()
            ));
        }
        overview
    }

    /// Counts the files of the stage-1 message as shown once a model call has carried it.
    fn mark_first_message_seen(&self, stats: &Stats) {
        if stats.model_calls == 0 {
            return;
        }
        for entry in self
            .shaped
            .files
            .iter()
            .filter(|e| e.status == ShapeStatus::Shown)
        {
            self.coverage.show_file(&entry.path);
        }
    }

    /// The first user message of a whole-change run: the shaped change (stage 1).
    fn task_message(&self) -> String {
        self.config.prompts.render_task(
            &self.config.intent,
            "",
            self.config.instructions.as_deref(),
            &self.shaped.message,
        )
    }
}

/// The shared budget of a review under `config`: with verification on, the review leaves
/// [`verify::VERIFY_RESERVE`] of each set limit to it.
fn review_budget(config: &AgentConfig) -> Budget {
    let budget = Budget::new(config.review_limits, config.price);
    match config.verification.enabled {
        true => budget.reserve_share(verify::VERIFY_RESERVE),
        false => budget,
    }
}

/// The summary of a review stopped at a limit: what was kept, and why it is partial.
fn limit_summary(summary: &str, kind: LimitKind) -> String {
    let what = match kind {
        LimitKind::Cost => "the cost limit (`max_cost`) was reached",
        LimitKind::Tokens => "the token limit (`max_tokens`) was reached",
        LimitKind::Time => "the time limit (`timeout`) was reached",
        LimitKind::Interrupted => "the review was interrupted",
    };
    let note = format!(
        "**Partial review:** {what}; the findings of the parts that finished are kept, the rest was not reviewed."
    );
    match summary.trim() {
        "" => note,
        text => format!("{note}\n\n{text}"),
    }
}

/// Stage 1: the change shaped into the first message within the model's budget; what
/// [`Orchestrator::new`] starts from, and what `redline context` shows.
pub(crate) fn shape_first_message(
    workspace: &Workspace,
    config: &AgentConfig,
    counter: &TokenCounter,
) -> ShapedContext {
    let options = ShapeOptions {
        budget_tokens: stage1_budget(config.limits),
        exclude: config.exclude.clone(),
        context_after: config.context_after.lines(),
        context_after_block: config.context_after.block_cap(),
        ..ShapeOptions::default()
    };
    let repo = workspace.repo.clone();
    let head_text = move |path: &str| repo.read_text(path).ok();
    // The workspace's moves: detected once per review, for this message and the `diff` tool.
    shape_with_moves(
        &workspace.changes,
        workspace.moves(),
        &head_text,
        &options,
        counter,
    )
}
