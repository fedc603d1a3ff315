//! `redline review`: review a change in a local repository.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};

use super::output::OutputTarget;
use super::progress::{Verbosity, spawn_event_consumers};
use super::signals::StopSignals;
use super::{EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, ReviewArgs};
use crate::agent::events::{EventKind, EventSink, Stats};
use crate::agent::plan::Plan;
use crate::agent::strategy::Strategy;
use crate::agent::{AgentConfig, AgentError, Orchestrator};
use crate::config::{self, CONFIG_FILE, ConfigSource, FileConfig, ModelSettings, Owner};
use crate::llm::{
    ChatModel, ClientHooks, ProviderSettings, RetryHook, WaitHook, build_client_with_hooks,
};
use crate::prompts::Prompts;
use crate::review::diff::ChangeSet;
use crate::review::render::{Format, render};
use crate::review::report::{FailOn, ReviewReport};
use crate::tools::Workspace;

/// Runs `redline review` and returns the exit code.
pub async fn run(args: ReviewArgs) -> i32 {
    match review(args).await {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            EXIT_ERROR
        }
    }
}

/// Everything resolved from flags, environment, config and git before any model call.
struct Prepared {
    format: Format,
    fail_on: FailOn,
    settings: ModelSettings,
    agent: AgentConfig,
    workspace: Workspace,
    base_label: String,
    skipped: Vec<String>,
}

fn prepare(args: &ReviewArgs) -> Result<Prepared, String> {
    let start = match &args.repo {
        Some(path) => path.clone(),
        None => std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let root = crate::repo::discover(&start).map_err(|e| e.to_string())?;
    let range = crate::repo::resolve_range(&root, args.base.as_deref(), &args.head)
        .map_err(|e| e.to_string())?;
    let repository = repository_config(&root, args, &range.base)?;
    let file = combine_config(repository)?;
    let format: Format = args.format.parse().map_err(|e| format!("--format: {e}"))?;
    let fail_on: FailOn = pick(&args.fail_on, &file.fail_on, "never")
        .parse()
        .map_err(|e| format!("--fail-on: {e}"))?;
    // Issue 13 hook: with no key and no endpoint chosen, a local model server is looked for.
    let settings = crate::llm::discovery::resolve_or_discover(&args.model.flags(), &file, &|k| {
        std::env::var(k).ok()
    })
    .map_err(|e| e.to_string())?;
    let mut agent = agent_config(&AgentOverrides::from(args), &file, &settings)?;
    config::limits::apply_to_agent(&mut agent, &args.limits.flags(), &file)
        .map_err(|e| e.to_string())?;

    let (view, mut changes) =
        crate::repo::load_change(&root, &range, args.uncommitted).map_err(|e| e.to_string())?;
    // `exclude` keeps files in the change but lists them as noise (stage 1); `include` narrows the change.
    let skipped = apply_path_filters(&mut changes, &file.include, &[])?;
    Ok(Prepared {
        format,
        fail_on,
        settings,
        agent,
        workspace: Workspace {
            repo: Arc::new(view),
            changes: Arc::new(changes),
        },
        base_label: range.base_label,
        skipped,
    })
}

/// The repository's config for a local review: `--config FILE`, else `.redline.toml` of the
/// work tree with `--uncommitted`, else `.redline.toml` as it is at the base revision (so a
/// checked-out branch cannot change its own review rules). Says on stderr which was used.
fn repository_config(
    root: &Path,
    args: &ReviewArgs,
    base: &str,
) -> Result<Option<ConfigSource>, String> {
    let quiet = args.quiet;
    let note = |text: String| {
        if !quiet {
            eprintln!("note: {text}");
        }
    };
    if let Some(path) = &args.config {
        note(format!(
            "using the config file {} (--config)",
            path.display()
        ));
        return ConfigSource::read_file(path, Owner::Repository)
            .map(Some)
            .map_err(|e| e.to_string());
    }
    let worktree = ConfigSource::read_worktree(root);
    if args.uncommitted {
        let worktree = worktree.map_err(|e| e.to_string())?;
        if worktree.is_some() {
            note(format!(
                "using {CONFIG_FILE} from the work tree (--uncommitted)"
            ));
        }
        return Ok(worktree);
    }
    let at_base = ConfigSource::read_at_commit(root, base, Path::new(CONFIG_FILE))
        .map_err(|e| e.to_string())?;
    let differs = match &worktree {
        Ok(Some(w)) => at_base.as_ref().is_none_or(|b| !b.same_settings(w)),
        Ok(None) => false,
        Err(_) => true,
    };
    if differs {
        note(format!(
            "{CONFIG_FILE} in the work tree differs from the base revision's, which is used (pass --uncommitted or --config {CONFIG_FILE} to use the work tree's)"
        ));
    }
    Ok(at_base)
}

/// The user's config file under the repository's; warns on stderr about every key the
/// repository's file may not set.
pub(crate) fn combine_config(repository: Option<ConfigSource>) -> Result<FileConfig, String> {
    if let Some(source) = &repository {
        for warning in source.warnings() {
            eprintln!("warning: {warning}");
        }
    }
    let user = ConfigSource::read_user(&|k| std::env::var(k).ok()).map_err(|e| e.to_string())?;
    config::merge_sources(user.as_ref(), repository.as_ref()).map_err(|e| e.to_string())
}

pub(crate) fn pick(flag: &Option<String>, file: &Option<String>, default: &str) -> String {
    flag.clone()
        .or_else(|| file.clone())
        .unwrap_or_else(|| default.to_string())
}

/// The agent settings a command line can override.
#[derive(Debug, Clone, Default)]
pub(crate) struct AgentOverrides {
    pub max_steps: Option<u32>,
    pub strategy: Option<String>,
    pub tool_mode: Option<String>,
    pub parallel: Option<usize>,
}

impl From<&ReviewArgs> for AgentOverrides {
    fn from(args: &ReviewArgs) -> Self {
        AgentOverrides {
            max_steps: args.max_steps,
            strategy: args.strategy.clone(),
            tool_mode: args.tool_mode.clone(),
            parallel: args.parallel,
        }
    }
}

/// The agent's settings: flags > file > defaults.
pub(crate) fn agent_config(
    args: &AgentOverrides,
    file: &FileConfig,
    settings: &ModelSettings,
) -> Result<AgentConfig, String> {
    let mut agent = AgentConfig::new(settings.model.clone());
    agent.max_steps = config::check_max_steps(
        args.max_steps
            .or(file.max_steps)
            .unwrap_or(config::DEFAULT_MAX_STEPS),
    )
    .map_err(|e| e.to_string())?;
    agent.temperature = file.temperature;
    agent.instructions = file.instructions.clone();
    agent.prompts = Prompts::with_overrides(&file.prompts);
    agent.strategy = pick(&args.strategy, &file.strategy, "auto")
        .parse()
        .map_err(|e: String| format!("--strategy: {e}"))?;
    agent.tool_mode = pick(&args.tool_mode, &file.tool_mode, "auto")
        .parse()
        .map_err(|e: String| format!("--tool-mode: {e}"))?;
    agent.auto = file.auto.clone();
    agent.exclude = file.exclude.clone();
    let table = crate::llm::tokens::ModelLimits::for_model(&settings.model);
    agent.limits = crate::llm::tokens::ModelLimits {
        context_window: file.context_window.unwrap_or(table.context_window),
        max_output_tokens: file.max_output_tokens.unwrap_or(table.max_output_tokens),
    };
    config::check_limits(agent.limits).map_err(|e| e.to_string())?;
    agent.max_reply_tokens = agent.limits.max_output_tokens.min(8192);
    if let Some(keep) = file.keep_tool_results {
        agent.keep_tool_results = keep;
    }
    if let Some(threshold) = file.summary_threshold {
        if !(0.1..=0.95).contains(&threshold) {
            return Err(format!(
                "summary_threshold: {threshold} is not between 0.1 and 0.95"
            ));
        }
        agent.summary_threshold = threshold;
    }
    if let Some(budget) = file.task_budget {
        if budget < crate::context::STAGE1_MIN_BUDGET {
            return Err(format!(
                "task_budget: {budget} is below the smallest first-message budget ({})",
                crate::context::STAGE1_MIN_BUDGET
            ));
        }
        agent.task_budget = Some(budget);
    }
    agent.reflection = file.reflection.clone();
    agent.parallel = args.parallel.or(file.parallel).unwrap_or(4);
    if !(1..=32).contains(&agent.parallel) {
        return Err(format!(
            "--parallel: {} is not between 1 and 32",
            agent.parallel
        ));
    }
    if !(1..=10).contains(&agent.reflection.max_rounds) {
        return Err(format!(
            "reflection.max_rounds: {} is not between 1 and 10",
            agent.reflection.max_rounds
        ));
    }
    Ok(agent)
}

async fn review(args: ReviewArgs) -> Result<i32, String> {
    let prepared = prepare(&args)?;
    let plan_file = read_plan(args.plan.as_deref())?;
    let verbosity = match (args.quiet, args.verbose) {
        (true, _) => Verbosity::Quiet,
        (_, true) => Verbosity::Verbose,
        _ => Verbosity::Normal,
    };
    // Both files are opened before any model call: a bad path must not cost a review.
    let output = OutputTarget::open(args.output.as_deref())?;
    let (events, rx) = EventSink::channel();
    let consumer = spawn_event_consumers(rx, verbosity, args.events.as_deref()).map_err(|e| {
        format!(
            "cannot write --events {}: {e}",
            args.events.as_deref().unwrap_or(Path::new("")).display()
        )
    })?;
    let mut signals = StopSignals::install();

    let run = async {
        if prepared.workspace.changes.files.is_empty() {
            return Ok(Outcome::report(empty_report(
                &prepared.base_label,
                &prepared.skipped,
            )));
        }
        let model = model_client(&prepared.settings, &events);
        let orchestrator =
            Orchestrator::new(model, prepared.workspace.clone(), prepared.agent.clone())
                .with_events(events.clone());
        drive(&orchestrator, &args, plan_file).await
    };
    let outcome = tokio::select! {
        outcome = run => outcome,
        stop = signals.recv() => {
            if let Some(mut log) = consumer.finish().await {
                log.cancelled(stop.name());
            }
            output.abandon();
            return Ok(stop.exit_code());
        }
    };
    drop(events);
    // Every event is in the log before the process reports.
    let _ = consumer.finish().await;
    match outcome {
        Ok(outcome) => deliver(outcome, &prepared, output),
        Err(error) => {
            output.abandon();
            Err(error.to_string())
        }
    }
}

fn read_plan(path: Option<&Path>) -> Result<Option<Plan>, String> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the plan {}: {e}", path.display()))?;
    Plan::from_json(&text)
        .map(Some)
        .map_err(|e| format!("--plan {}: {e}", path.display()))
}

/// Writes what the run produced and picks the exit code.
fn deliver(outcome: Outcome, prepared: &Prepared, output: OutputTarget) -> Result<i32, String> {
    match outcome {
        Outcome::Plan(plan) => {
            let text = if prepared.format == Format::Json {
                plan.to_json() + "\n"
            } else {
                plan.render_text()
            };
            output.write(&text)?;
            Ok(EXIT_OK)
        }
        Outcome::Declined => {
            output.abandon();
            eprintln!("review cancelled at the plan");
            Ok(EXIT_OK)
        }
        Outcome::Report(report) => {
            output.write(&render(&report, prepared.format))?;
            Ok(if report.fails(prepared.fail_on) {
                EXIT_FINDINGS
            } else {
                EXIT_OK
            })
        }
    }
}

enum Outcome {
    Report(Box<ReviewReport>),
    Plan(Plan),
    Declined,
}

impl Outcome {
    fn report(report: ReviewReport) -> Self {
        Outcome::Report(Box::new(report))
    }
}

/// Chooses between a plain review, `--plan-only`, a given plan, and a plan confirmed on a terminal.
async fn drive(
    orchestrator: &Orchestrator,
    args: &ReviewArgs,
    plan_file: Option<Plan>,
) -> Result<Outcome, AgentError> {
    if let Some(plan) = plan_file {
        return orchestrator
            .review_with_plan(plan, Stats::default())
            .await
            .map(Outcome::report);
    }
    if args.plan_only {
        return orchestrator
            .plan()
            .await
            .map(|(plan, _)| Outcome::Plan(plan));
    }
    let interactive =
        !args.yes && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if interactive && orchestrator.decide().strategy == Strategy::PlanExecute {
        let (plan, planning) = orchestrator.plan().await?;
        eprintln!("{}", plan.render_text());
        if !confirm("Run this plan? [Y/n] ").await {
            return Ok(Outcome::Declined);
        }
        return orchestrator
            .review_with_plan(plan, planning)
            .await
            .map(Outcome::report);
    }
    orchestrator.review().await.map(Outcome::report)
}

/// Asks on the terminal; the read runs off the async threads so a signal still ends the run.
async fn confirm(question: &str) -> bool {
    eprint!("{question}");
    let answer = tokio::task::spawn_blocking(|| {
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer).map(|_| answer)
    })
    .await;
    match answer {
        Ok(Ok(answer)) => matches!(
            answer.trim().to_ascii_lowercase().as_str(),
            "" | "y" | "yes"
        ),
        _ => false,
    }
}

/// The client for the resolved settings, reporting retries and long waits as events.
pub(crate) fn model_client(settings: &ModelSettings, events: &EventSink) -> Arc<dyn ChatModel> {
    let retry_events = events.clone();
    let on_retry: RetryHook = Arc::new(move |info| {
        retry_events.emit(EventKind::ModelRetry {
            attempt: info.attempt,
            delay_ms: info.delay.as_millis() as u64,
            reason: info.reason.clone(),
        })
    });
    let wait_events = events.clone();
    let on_wait: WaitHook = Arc::new(move |info| {
        wait_events.emit(EventKind::ModelWaiting {
            attempt: info.attempt,
            elapsed_s: info.elapsed.as_secs(),
        })
    });
    build_client_with_hooks(
        ProviderSettings {
            provider: settings.provider,
            base_url: settings.base_url.clone(),
            api_key: settings.api_key.clone(),
            timeouts: settings.timeouts,
            ..ProviderSettings::default()
        },
        ClientHooks {
            on_retry: Some(on_retry),
            on_wait: Some(on_wait),
        },
    )
}

/// Keeps only the files the config's `include`/`exclude` globs select; returns the others' paths.
pub fn apply_path_filters(
    changes: &mut ChangeSet,
    include: &[String],
    exclude: &[String],
) -> Result<Vec<String>, String> {
    let include = glob_set(include, "include")?;
    let exclude = glob_set(exclude, "exclude")?;
    let mut skipped = Vec::new();
    changes.files.retain(|f| {
        let keep = (include.is_empty() || include.is_match(&f.path)) && !exclude.is_match(&f.path);
        if !keep {
            skipped.push(f.path.clone());
        }
        keep
    });
    Ok(skipped)
}

fn glob_set(patterns: &[String], key: &str) -> Result<GlobSet, String> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        builder.add(
            Glob::new(pattern).map_err(|e| format!("config `{key}`: bad glob `{pattern}`: {e}"))?,
        );
    }
    builder.build().map_err(|e| format!("config `{key}`: {e}"))
}

fn empty_report(base_label: &str, skipped: &[String]) -> ReviewReport {
    let mut summary = format!("No changes to review against {base_label}.");
    if !skipped.is_empty() {
        summary.push_str(&format!(
            " Files left out by the config's path filters: {}.",
            skipped.join(", ")
        ));
    }
    ReviewReport {
        findings: Vec::new(),
        summary,
        stats: Stats {
            strategy: "react".into(),
            coverage: 1.0,
            ..Stats::default()
        },
        unanchored: Vec::new(),
    }
}
