//! Plan-and-execute: one planning call groups the change's files into review
//! tasks (none when the change fits one task conversation, see [`planning`]), the code cuts the stage-1 view of the change into task slices that
//! each fit the task budget ([`crate::context::partition`]), each slice runs as
//! its own bounded ReAct run (several at a time), and the findings of all runs
//! are merged into one review.
//!
//! Invariant: every changed line that stage 1 prints is in exactly one task's
//! first message, whatever the planner answered, so a model that never calls a
//! tool still sees the whole change.

use std::borrow::Cow;
use std::collections::HashSet;

use futures::stream::{self, StreamExt};

use super::AgentError;
use super::events::{Stats, TaskStat};
use super::finish::ReviewFinisher;
use super::other_files;
use super::plan::{Plan, PlanTask};
use super::react::{ReactRun, RunContext};
use crate::context::{Packing, ShapedContext, Slice, partition, stage1_budget};
use crate::llm::Message;
use crate::llm::tokens::TokenCounter;
use crate::prompts::{TASK_FOCUS, fill};
use crate::review::parse::Submission;

/// One review task as it runs: a slice of the change under one plan task.
struct TaskRun {
    /// `t3`, `t3.2` for the second slice of task t3, `t1,t2,t4.1` for a slice of several.
    id: String,
    /// The plan task's title (`Config and SSL (part 1 of 2)` for slices), or the titles of several.
    title: String,
    /// Files (and parts) shown in its first message.
    files: Vec<String>,
    /// Its first user message.
    message: String,
    /// Changed head lines its first message prints, per file.
    lines: Vec<(String, Vec<u32>)>,
}

/// Runs every task (up to `parallel` at once) and merges what they found. A task
/// that fails is reported in the summary and in `stats.tasks`; the others go on.
pub(crate) async fn execute(
    ctx: &RunContext<'_>,
    plan: &Plan,
    parallel: usize,
    packing: Packing,
    stats: &mut Stats,
) -> Result<Submission, AgentError> {
    let runs = task_runs(ctx, plan, packing);
    // Futures are built first: a lazy `map` inside the stream would keep its closure,
    // whose lifetimes stop the whole review from being `Send` in a spawned task.
    let futures: Vec<_> = runs
        .iter()
        .enumerate()
        .map(|(i, run)| run_task(ctx, i, run))
        .collect();
    let mut results = stream::iter(futures)
        .buffer_unordered(parallel.max(1))
        .collect::<Vec<_>>()
        .await;
    results.sort_by_key(|(i, ..)| *i);
    let mut merged = Submission::default();
    let mut failures = 0;
    for (i, task_stats, result) in results {
        stats.absorb(&task_stats);
        let run = &runs[i];
        match result {
            Err(AgentError::Cancelled) => return Err(AgentError::Cancelled),
            Err(AgentError::LimitReached(kind)) => {
                let why = format!("not reviewed: {} before this task finished", kind.reason());
                merge_unreviewed(run, &why, "limit_reached", None, &mut merged, stats);
            }
            Ok(submission) => merge_success(run, submission, &mut merged, stats),
            Err(error) => {
                failures += 1;
                merge_failure(run, &error, &mut merged, stats);
            }
        }
    }
    if failures > 0 && failures == runs.len() {
        return Err(AgentError::Tool(format!(
            "all {failures} review tasks failed; see the summary of each task in the event log"
        )));
    }
    merged.summary = merged.summary.trim_end().to_string();
    Ok(merged)
}

fn merge_success(
    run: &TaskRun,
    submission: Submission,
    merged: &mut Submission,
    stats: &mut Stats,
) {
    stats.tasks.push(TaskStat {
        id: run.id.clone(),
        title: run.title.clone(),
        outcome: "ok".into(),
        findings: submission.findings.len(),
        error: None,
    });
    if !submission.summary.trim().is_empty() {
        merged.summary.push_str(&format!(
            "**{}** ({}): {}\n\n",
            run.title,
            run.files.join(", "),
            submission.summary.trim()
        ));
    }
    merged.findings.extend(submission.findings);
    merged.rejected.extend(submission.rejected);
    // Each task describes its own areas; the orchestrator merges areas of one name.
    merged.walkthrough.extend(submission.walkthrough);
}

fn merge_failure(run: &TaskRun, error: &AgentError, merged: &mut Submission, stats: &mut Stats) {
    let why = format!("this task failed and was not reviewed: {error}");
    merge_unreviewed(run, &why, "failed", Some(error.to_string()), merged, stats);
}

/// A task that handed in nothing: named in the summary with why, and in `stats.tasks`.
fn merge_unreviewed(
    run: &TaskRun,
    why: &str,
    outcome: &str,
    error: Option<String>,
    merged: &mut Submission,
    stats: &mut Stats,
) {
    merged.summary.push_str(&format!(
        "**{}** ({}): {why}\n\n",
        run.title,
        run.files.join(", ")
    ));
    stats.tasks.push(TaskStat {
        id: run.id.clone(),
        title: run.title.clone(),
        outcome: outcome.into(),
        findings: 0,
        error,
    });
}

async fn run_task(
    ctx: &RunContext<'_>,
    index: usize,
    task: &TaskRun,
) -> (usize, Stats, Result<Submission, AgentError>) {
    let mut stats = Stats::default();
    let run = ReactRun {
        ctx,
        finisher: &ReviewFinisher::of(ctx.config),
        use_tools: true,
        max_steps: ctx.config.max_steps,
    };
    let history = vec![
        Message::system(ctx.config.prompts.system.clone()),
        Message::user(task.message.clone()),
    ];
    let result = run.run(history, &mut stats).await;
    // The first message counts as shown once a model call carried it.
    if stats.model_calls > 0 {
        for (path, lines) in &task.lines {
            ctx.coverage.show_lines(path, lines);
        }
    }
    (index, stats, result)
}

/// The token budget of one task's first message.
fn task_budget(ctx: &RunContext<'_>) -> usize {
    ctx.config
        .task_budget
        .unwrap_or_else(|| stage1_budget(ctx.config.limits))
}

/// Files named one by one in a task's "Files of this task" line.
const FILES_NAMED: usize = 20;

/// Tokens set aside for that line.
const FILES_LINE_TOKENS: usize = 600;

/// What every task message of a review shares.
struct TaskFrame<'a> {
    intent: &'a str,
    instructions: String,
    shaped: &'a ShapedContext,
    budget: usize,
    counter: &'a TokenCounter,
}

/// The plan's tasks cut into slices of the stage-1 sections, each with its first
/// message of at most the task budget (the room for the diff shrinks until every
/// message fits, the planner's words included).
fn task_runs(ctx: &RunContext<'_>, plan: &Plan, packing: Packing) -> Vec<TaskRun> {
    let frame = task_frame(ctx);
    let budget = frame.budget;
    let groups: Vec<Vec<String>> = plan.tasks.iter().map(|t| t.files.clone()).collect();
    let mut room = diff_room(ctx, &frame);
    loop {
        let slices = partition(&groups, &ctx.shaped.sections, room, ctx.counter, packing);
        let runs = name_runs(plan, slices, &frame);
        let over = runs
            .iter()
            .map(|r| ctx.counter.count(&r.message).saturating_sub(budget))
            .max()
            .unwrap_or(0);
        if over == 0 || room <= MIN_ROOM {
            return runs;
        }
        room = room.saturating_sub(over + 64).max(MIN_ROOM);
    }
}

/// What every task message of `ctx`'s review shares.
fn task_frame<'a>(ctx: &'a RunContext<'_>) -> TaskFrame<'a> {
    TaskFrame {
        intent: &ctx.config.intent,
        shaped: ctx.shaped,
        budget: task_budget(ctx),
        counter: ctx.counter,
        instructions: ctx
            .config
            .instructions
            .as_deref()
            .map(|i| {
                format!("Additional review instructions from the repository's maintainers:\n{i}")
            })
            .unwrap_or_default(),
    }
}

/// The room for the diff in a task's first message, before the planner's words.
fn diff_room(ctx: &RunContext<'_>, frame: &TaskFrame<'_>) -> usize {
    let fixed = ctx.counter.count(&fill(
        TASK_FOCUS,
        &[
            ("{intent}", frame.intent),
            ("{overview}", ""),
            ("{instructions}", &frame.instructions),
        ],
    )) + frame.budget / other_files::SHARE
        + OTHER_FILES_TAIL_TOKENS;
    frame.budget.saturating_sub(fixed + FILES_LINE_TOKENS)
}

/// Tokens of the lines that may end the other-files list beyond its share.
const OTHER_FILES_TAIL_TOKENS: usize = 60;

/// The least room a task's diff gets, however much the planner wrote.
const MIN_ROOM: usize = 1_000;

/// Ids, titles and first messages of the slices.
fn name_runs(plan: &Plan, slices: Vec<Slice>, frame: &TaskFrame<'_>) -> Vec<TaskRun> {
    let names = slice_names(plan, &slices);
    slices
        .into_iter()
        .zip(names)
        .map(|(slice, (id, title, focus))| {
            let message = task_message(&id, &title, &focus, &slice, frame);
            TaskRun {
                id,
                title,
                files: slice.files,
                message,
                lines: slice.lines,
            }
        })
        .collect()
}

/// One planned task's share of a slice: the task, and which of its slices this is.
struct Share<'a> {
    task: &'a PlanTask,
    /// 1-based.
    part: usize,
    /// Slices holding some of the task.
    parts: usize,
}

impl Share<'_> {
    /// The planner's title, with `(part k of n)` when the task is spread over slices.
    fn label(&self) -> String {
        match self.parts {
            1 => title_of(self.task).to_string(),
            n => format!("{} (part {} of {n})", title_of(self.task), self.part),
        }
    }

    /// `t3`, or `t3.2` for its second slice.
    fn id(&self) -> String {
        match self.parts {
            1 => self.task.id.clone(),
            _ => format!("{}.{}", self.task.id, self.part),
        }
    }
}

/// Id, title and focus of every slice: a slice of one planned task is named by
/// its title (with `(part k of n)` when the task takes several slices); a slice
/// of several by their titles, so a person reads which areas a task covers.
fn slice_names(plan: &Plan, slices: &[Slice]) -> Vec<(String, String, String)> {
    let mut per_group = vec![0usize; plan.tasks.len() + 1];
    for slice in slices {
        for g in &slice.groups {
            per_group[*g] += 1;
        }
    }
    let mut seen = vec![0usize; plan.tasks.len() + 1];
    let task = |g: usize| plan.tasks.get(g).unwrap_or(&LEFTOVER);
    slices
        .iter()
        .map(|slice| {
            let shares: Vec<Share<'_>> = slice
                .groups
                .iter()
                .map(|&g| {
                    seen[g] += 1;
                    Share {
                        task: task(g),
                        part: seen[g],
                        parts: per_group[g],
                    }
                })
                .collect();
            match shares.as_slice() {
                [one] => (one.id(), one.label(), focus_of(one.task).into_owned()),
                many => merged_names(many),
            }
        })
        .collect()
}

/// Id, title and focus of a slice that holds several planned tasks.
fn merged_names(shares: &[Share<'_>]) -> (String, String, String) {
    let id = shares.iter().map(Share::id).collect::<Vec<_>>().join(",");
    let labels: Vec<String> = shares.iter().map(Share::label).collect();
    let title = match labels.len() {
        n if n <= MERGED_TITLES_NAMED => labels.join("; "),
        n => format!(
            "{} and {} more area{}",
            labels[..MERGED_TITLES_NAMED].join("; "),
            n - MERGED_TITLES_NAMED,
            if n - MERGED_TITLES_NAMED == 1 {
                ""
            } else {
                "s"
            }
        ),
    };
    // Planned tasks that ask for the same checks are named together, and their
    // files are not repeated: the task's file line and its diffs name them (and
    // under shared packing a planned task's files may be spread over slices).
    let mut by_focus: Vec<(Cow<'_, str>, Vec<String>)> = Vec::new();
    for (share, label) in shares.iter().zip(labels) {
        let what = focus::fit(&share.task.focus, FOCUS_ROOM);
        match by_focus.iter_mut().find(|(focus, _)| *focus == what) {
            Some((_, titles)) => titles.push(label),
            None => by_focus.push((what, vec![label])),
        }
    }
    let mut focus = String::from("This part of the review covers several planned areas:");
    for (what, titles) in by_focus {
        focus.push_str(&format!("\n- {}: {what}", titles.join("; ")));
    }
    (id, title, focus)
}

/// Areas named in the title of a slice of several; the rest are counted.
const MERGED_TITLES_NAMED: usize = 3;

/// The room of each planned task's focus, in bytes: what a task keeps of it
/// when several share a slice, and what the planner is told it has. A longer
/// focus is shortened at a sentence ([`focus::fit`]).
pub(crate) const FOCUS_ROOM: usize = 400;

/// Longest task title and focus taken from a plan, in bytes (a task of its own
/// keeps more of its focus than [`FOCUS_ROOM`], which a person's plan may use).
const TITLE_BYTES: usize = 200;
const FOCUS_BYTES: usize = 2_000;

fn title_of(task: &PlanTask) -> &str {
    crate::text::prefix_at_char_boundary(task.title.trim(), TITLE_BYTES)
}

fn focus_of(task: &PlanTask) -> Cow<'_, str> {
    focus::fit(&task.focus, FOCUS_BYTES)
}

/// The task for files no plan task named (never reached after `Plan::cover`).
static LEFTOVER: PlanTask = PlanTask {
    id: String::new(),
    title: String::new(),
    files: Vec::new(),
    focus: String::new(),
};

/// The task's first message: what to check, the change in outline, and its slice of the diff.
fn task_message(
    id: &str,
    title: &str,
    focus: &str,
    slice: &Slice,
    frame: &TaskFrame<'_>,
) -> String {
    let mut files = slice
        .files
        .iter()
        .take(FILES_NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if slice.files.len() > FILES_NAMED {
        files.push_str(&format!(
            " and {} more (each diff below names its file)",
            slice.files.len() - FILES_NAMED
        ));
    }
    let focus = match focus {
        "" => "Review these changed files for correctness, security and tests.",
        focus => focus,
    };
    let own: HashSet<&str> = slice.lines.iter().map(|(path, _)| path.as_str()).collect();
    let others = other_files::other_files(frame.shaped, &own, frame.budget, frame.counter);
    fill(
        TASK_FOCUS,
        &[
            ("{task_id}", id),
            ("{title}", title),
            ("{intent}", frame.intent),
            ("{focus}", focus),
            ("{files}", &files),
            ("{overview}", &others),
            ("{instructions}", &frame.instructions),
            ("{diff}", &slice.text),
        ],
    )
}

mod focus;
mod planning;

pub(crate) use planning::{conversations, make_plan, plan_for};
#[cfg(test)]
mod tests;
