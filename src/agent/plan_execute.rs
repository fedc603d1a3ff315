//! Plan-and-execute: one planning call splits the change into review tasks,
//! each task runs as its own bounded ReAct run with a focused context (several at
//! a time), and the findings of all tasks are merged into one review.

use futures::stream::{self, StreamExt};

use super::AgentError;
use super::events::{Stats, TaskStat};
use super::finish::{PlanFinisher, ReviewFinisher};
use super::plan::{Plan, PlanTask};
use super::react::{ReactRun, RunContext};
use crate::llm::Message;
use crate::prompts::{PLANNER, TASK_FOCUS, fill};
use crate::review::diff::ChangeSet;
use crate::review::parse::Submission;

/// Asks the model for a plan, then makes sure it covers every reviewable file.
/// A planner that cannot produce a plan gets one task per top-level directory.
pub(crate) async fn make_plan(
    ctx: &RunContext<'_>,
    overview: &str,
    stats: &mut Stats,
) -> Result<Plan, AgentError> {
    let planner = ReactRun {
        ctx,
        finisher: &PlanFinisher,
        use_tools: false,
        max_steps: 1,
    };
    let history = vec![
        Message::system(PLANNER),
        Message::user(format!("Plan the review of this change.\n\n{overview}")),
    ];
    let mut plan = match planner.run(history, stats).await {
        Ok(plan) => plan,
        Err(AgentError::Unparseable { .. }) => Plan {
            version: 1,
            tasks: Vec::new(),
        },
        Err(other) => return Err(other),
    };
    if plan.tasks.is_empty() {
        plan = plan_by_directory(ctx.reviewable);
    }
    plan.cover(ctx.reviewable);
    Ok(plan)
}

/// One task per top-level directory: the plan used when the planner fails.
pub fn plan_by_directory(changes: &ChangeSet) -> Plan {
    let mut tasks: Vec<PlanTask> = Vec::new();
    for file in changes.files.iter().filter(|f| !f.binary) {
        let dir = file.path.split_once('/').map(|(d, _)| d).unwrap_or(".");
        match tasks.iter_mut().find(|t| t.title == dir) {
            Some(task) => task.files.push(file.path.clone()),
            None => tasks.push(PlanTask {
                id: String::new(),
                title: dir.to_string(),
                files: vec![file.path.clone()],
                focus: "Review these files for correctness, security and tests.".into(),
            }),
        }
    }
    let mut plan = Plan { version: 1, tasks };
    plan.cover(changes);
    plan
}

/// Runs every task (up to `parallel` at once) and merges what they found. A task
/// that fails is reported in the summary and in `stats.tasks`; the others go on.
pub(crate) async fn execute(
    ctx: &RunContext<'_>,
    plan: &Plan,
    overview: &str,
    parallel: usize,
    stats: &mut Stats,
) -> Result<Submission, AgentError> {
    // Futures are built first: a lazy `map` inside the stream would keep its closure,
    // whose lifetimes stop the whole review from being `Send` in a spawned task.
    let tasks: Vec<_> = plan
        .tasks
        .iter()
        .map(|task| run_task(ctx, task, overview))
        .collect();
    let runs = stream::iter(tasks)
        .buffer_unordered(parallel.max(1))
        .collect::<Vec<_>>()
        .await;
    let mut merged = Submission {
        findings: Vec::new(),
        summary: String::new(),
        rejected: Vec::new(),
    };
    let mut results: Vec<(&PlanTask, Stats, Result<Submission, AgentError>)> = Vec::new();
    for (id, task_stats, result) in runs {
        if let Some(task) = plan.tasks.iter().find(|t| t.id == id) {
            results.push((task, task_stats, result));
        }
    }
    results.sort_by_key(|(task, ..)| {
        task.id
            .trim_start_matches('t')
            .parse::<u32>()
            .unwrap_or(u32::MAX)
    });
    let mut failures = 0;
    for (task, task_stats, result) in results {
        stats.absorb(&task_stats);
        match result {
            Ok(submission) => {
                stats.tasks.push(TaskStat {
                    id: task.id.clone(),
                    title: task.title.clone(),
                    outcome: "ok".into(),
                    findings: submission.findings.len(),
                    error: None,
                });
                if !submission.summary.trim().is_empty() {
                    merged.summary.push_str(&format!(
                        "**{}** ({}): {}\n\n",
                        task.title,
                        task.files.join(", "),
                        submission.summary.trim()
                    ));
                }
                merged.findings.extend(submission.findings);
                merged.rejected.extend(submission.rejected);
            }
            Err(AgentError::Cancelled) => return Err(AgentError::Cancelled),
            Err(AgentError::LimitReached(kind)) => {
                merged.summary.push_str(&format!(
                    "**{}** ({}): not reviewed: the {kind} limit was reached before this task finished.\n\n",
                    task.title,
                    task.files.join(", ")
                ));
                stats.tasks.push(TaskStat {
                    id: task.id.clone(),
                    title: task.title.clone(),
                    outcome: "limit_reached".into(),
                    findings: 0,
                    error: None,
                });
            }
            Err(error) => {
                failures += 1;
                merged.summary.push_str(&format!(
                    "**{}** ({}): this task failed and was not reviewed: {error}\n\n",
                    task.title,
                    task.files.join(", ")
                ));
                stats.tasks.push(TaskStat {
                    id: task.id.clone(),
                    title: task.title.clone(),
                    outcome: "failed".into(),
                    findings: 0,
                    error: Some(error.to_string()),
                });
            }
        }
    }
    if failures > 0 && failures == plan.tasks.len() {
        return Err(AgentError::Tool(format!(
            "all {failures} review tasks failed; see the summary of each task in the event log"
        )));
    }
    merged.summary = merged.summary.trim_end().to_string();
    Ok(merged)
}

async fn run_task(
    ctx: &RunContext<'_>,
    task: &PlanTask,
    overview: &str,
) -> (String, Stats, Result<Submission, AgentError>) {
    let mut stats = Stats::default();
    let run = ReactRun {
        ctx,
        finisher: &ReviewFinisher,
        use_tools: true,
        max_steps: ctx.config.max_steps,
    };
    let history = vec![
        Message::system(ctx.config.prompts.system.clone()),
        Message::user(task_message(ctx, task, overview)),
    ];
    let result = run.run(history, &mut stats).await;
    (task.id.clone(), stats, result)
}

/// The task's focused context: what to check, and its files' diffs within the budget.
fn task_message(ctx: &RunContext<'_>, task: &PlanTask, overview: &str) -> String {
    let mut diff = String::new();
    let mut left_out = Vec::new();
    for path in &task.files {
        let Some(file) = ctx.workspace.changes.file(path) else {
            continue;
        };
        let rendered = file.render_numbered();
        if diff.len() + rendered.len() <= ctx.config.initial_diff_chars {
            diff.push_str(&rendered);
            ctx.coverage.show_file(&file.path);
        } else {
            left_out.push(path.as_str());
        }
    }
    if !left_out.is_empty() {
        diff.push_str(&format!(
            "\nNot shown above for size (open each with the `diff` tool): {}\n",
            left_out.join(", ")
        ));
    }
    let instructions = ctx
        .config
        .instructions
        .as_deref()
        .map(|i| format!("Additional review instructions from the repository's maintainers:\n{i}"))
        .unwrap_or_default();
    fill(
        TASK_FOCUS,
        &[
            ("{task_id}", &task.id),
            ("{title}", &task.title),
            ("{focus}", &task.focus),
            ("{files}", &task.files.join(", ")),
            ("{overview}", overview),
            ("{instructions}", &instructions),
            ("{diff}", &diff),
        ],
    )
}
