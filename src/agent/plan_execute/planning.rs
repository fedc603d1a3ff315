//! Plan-and-execute's first step: the plan, from the planner or, for a change
//! that fits one task conversation, without a planning call.

use super::super::AgentError;
use super::super::events::Stats;
use super::super::finish::PlanFinisher;
use super::super::plan::{Plan, PlanTask};
use super::super::react::{ReactRun, RunContext};
use super::{FOCUS_ROOM, diff_room, task_budget, task_frame};
use crate::context::{Packing, partition};
use crate::llm::Message;
use crate::prompts::{PLANNER, fill};
use crate::review::diff::ChangeSet;

/// The plan a review runs. A change whose diff fits one task conversation
/// under shared packing gets one task without a planning call (the planner's
/// grouping would run as that one conversation anyway, so the call is only
/// overhead); any other asks the planner ([`make_plan`]).
pub(crate) async fn plan_for(
    ctx: &RunContext<'_>,
    overview: &str,
    packing: Packing,
    stats: &mut Stats,
) -> Result<Plan, AgentError> {
    let conversations = conversations(ctx);
    if packing == Packing::Shared && conversations <= 1 {
        return Ok(whole_change_plan(ctx.reviewable));
    }
    make_plan(ctx, overview, conversations, stats).await
}

/// How many task conversations the change's diff fills: its sections cut as
/// one group into slices of a task's room for the diff.
pub(crate) fn conversations(ctx: &RunContext<'_>) -> usize {
    let frame = task_frame(ctx);
    let all: Vec<String> = ctx.shaped.sections.iter().map(|s| s.path.clone()).collect();
    partition(
        &[all],
        &ctx.shaped.sections,
        diff_room(ctx, &frame),
        ctx.counter,
        Packing::Shared,
    )
    .len()
}

/// The plan of a change reviewed as one task.
fn whole_change_plan(changes: &ChangeSet) -> Plan {
    let mut plan = Plan {
        version: 1,
        tasks: vec![PlanTask {
            id: "t1".into(),
            title: "The whole change".into(),
            files: changes
                .files
                .iter()
                .filter(|f| !f.binary)
                .map(|f| f.path.clone())
                .collect(),
            focus: String::new(),
        }],
    };
    plan.cover(changes);
    plan
}

/// Asks the model for a plan (telling it how many conversations the diff
/// fills and the room of each focus), merges tasks that ask for the same
/// check, then makes sure it covers every reviewable file. A planner that
/// cannot produce a plan gets one task per top-level directory.
pub(crate) async fn make_plan(
    ctx: &RunContext<'_>,
    overview: &str,
    conversations: usize,
    stats: &mut Stats,
) -> Result<Plan, AgentError> {
    let planner = ReactRun {
        ctx,
        finisher: &PlanFinisher,
        use_tools: false,
        max_steps: 1,
    };
    let budget = task_budget(ctx);
    let overview = bounded_overview(overview, budget, ctx);
    let history = vec![
        Message::system(planner_system(ctx)),
        Message::user(planner_message(
            &ctx.config.intent,
            &overview,
            conversations,
        )),
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
    plan.merge_same_checks();
    plan.cover(ctx.reviewable);
    Ok(plan)
}

/// The planner's first message: the room it plans for, what the author says
/// the change does, then the files.
fn planner_message(intent: &str, overview: &str, conversations: usize) -> String {
    let room = format!(
        "The diff fills about {} of one task budget each; tasks small enough share one. \
         Plan at most {conversations} task{}, and give each check to one task only. \
         Each focus has room for {FOCUS_ROOM} characters; a longer one is shortened.",
        crate::text::count(conversations, "review conversation", "review conversations"),
        if conversations == 1 { "" } else { "s" },
    );
    fill(
        "Plan the review of this change. {room}\n\n{intent}\n\n{overview}",
        &[
            ("{room}", &room),
            ("{intent}", intent),
            ("{overview}", overview),
        ],
    )
}

/// The planner's instructions, with the project guidelines' section (the one every review
/// run's system prompt carries, within the same budget) so tasks can be grouped and
/// focused by the repository's own rules.
fn planner_system(ctx: &RunContext<'_>) -> String {
    match &ctx.config.guidelines {
        Some(section) => format!(
            "{}\n\nWhere a project guideline below covers some of the files, say in the focus of \
             their task which guideline to check them against (by its path).\n\n{section}",
            PLANNER.trim_end()
        ),
        None => PLANNER.to_string(),
    }
}

/// One task per top-level directory: the plan used when the planner fails.
pub(crate) fn plan_by_directory(changes: &ChangeSet) -> Plan {
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

/// The change's overview for the planner, within a quarter of the budget:
/// every file named (or, for thousands, counted by directory), and no tool
/// named, since the planner is offered only `submit_plan`.
fn bounded_overview(overview: &str, budget: usize, ctx: &RunContext<'_>) -> String {
    super::super::plan_overview::planner_overview(
        overview,
        &ctx.workspace.changes,
        ctx.shaped,
        budget / super::super::plan_overview::SHARE,
        ctx.counter,
    )
}
