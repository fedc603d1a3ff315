//! `redline review`: review a change in a local repository.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;

use super::color::ColorWhen;
use super::output::OutputTarget;
use super::progress::{Verbosity, spawn_event_consumers};
use super::runs::RunTranscript;
use super::signals::StopSignals;
use super::steps::Live;
use super::{EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, ReviewArgs, error_message};
use crate::agent::events::{EventKind, EventSink, Stats};
use crate::agent::plan::Plan;
use crate::agent::strategy::Strategy;
use crate::agent::{AgentConfig, AgentError, Orchestrator};
use crate::config::settings::{self, Scope, SettingFlags, Settings, SettingsInput};
use crate::config::{CONFIG_FILE, ConfigSource, ModelSettings, Owner};
use crate::guidelines::GuidelineSource;
use crate::llm::{
    ChatModel, ClientHooks, ProviderSettings, RetryHook, WaitHook, build_client_with_hooks,
};
use crate::review::render::{Format, RenderOptions, RepoSources, render_with};
use crate::review::report::{FailOn, ReviewReport};
use crate::tools::Workspace;
use tokio_util::sync::CancellationToken;

/// Runs `redline review` and returns the exit code.
pub async fn run(args: ReviewArgs) -> i32 {
    match review(args).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", error_message(&error));
            EXIT_ERROR
        }
    }
}

/// Everything resolved from flags, environment, config and git before any model call.
pub(crate) struct Prepared {
    format: Format,
    fail_on: FailOn,
    pub(crate) settings: ModelSettings,
    pub(crate) agent: AgentConfig,
    pub(crate) workspace: Workspace,
    base_label: String,
    skipped: Vec<String>,
    /// Nothing to review, but `--uncommitted` would find changes in the work tree.
    uncommitted_would_review: bool,
}

pub(crate) fn prepare(args: &ReviewArgs) -> anyhow::Result<Prepared> {
    let start = match &args.repo {
        Some(path) => path.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let root = crate::repo::discover(&start)?;
    let range = crate::repo::resolve_range(&root, args.base.as_deref(), &args.head)?;
    let format: Format = args.format.parse().context("--format")?;
    if let (Some(events), Some(output)) = (args.events.as_deref(), args.output.as_deref())
        && super::output::same_file(events, output)
    {
        anyhow::bail!(
            "--events and --output name the same file ({}); give each its own",
            events.display()
        );
    }
    let choice = ConfigChoice {
        config: args.config.as_deref(),
        uncommitted: args.uncommitted,
        quiet: args.quiet,
    };
    let repository = repository_config(&root, &choice, &range.base)?;
    let mut settings = local_settings(review_flags(args), "flag", repository)?;
    let intent = super::intent::local_intent(&args.intent, &root, &range)?;
    settings.agent.set_intent(&intent);

    let (view, mut changes) = crate::repo::load_change(&root, &range, args.uncommitted)?;
    let uncommitted_would_review = !args.uncommitted
        && changes.files.is_empty()
        && crate::repo::load_change(&root, &range, true).is_ok_and(|(_, c)| !c.files.is_empty());
    // `exclude` keeps files in the change but lists them as noise (stage 1); `include` narrows the change.
    let skipped = settings.include.apply(&mut changes);
    // Guidelines come from where `.redline.toml` does: the base revision, unless `--uncommitted`.
    let source = GuidelineSource::of_review(&root, &range.base, args.uncommitted);
    let rules =
        crate::guidelines::apply(&settings.guidelines, source, &changes, &mut settings.agent);
    if !args.quiet {
        rules.omitted.iter().for_each(|o| eprintln!("note: {o}"));
    }
    Ok(Prepared {
        format,
        fail_on: settings.fail_on,
        settings: settings.model,
        agent: settings.agent,
        workspace: Workspace::new(view, changes),
        base_label: range.base_label,
        skipped,
        uncommitted_would_review,
    })
}

fn review_flags(args: &ReviewArgs) -> SettingFlags {
    SettingFlags {
        model: args.model.flags(),
        limits: args.limits.flags(),
        max_steps: args.max_steps,
        strategy: args.strategy.clone(),
        tool_mode: args.tool_mode.clone(),
        parallel: args.parallel,
        fail_on: args.fail_on.clone(),
        max_comments: None,
    }
}

/// The settings of a run on this machine (`review`, `action`): the flags, the user's
/// config file and the repository's; warns on stderr about every key the repository's
/// file may not set.
pub(crate) fn local_settings(
    flags: SettingFlags,
    flags_origin: &str,
    repository: Option<ConfigSource>,
) -> anyhow::Result<Settings> {
    settings_in_scope(flags, flags_origin, repository, Scope::Local)
}

/// [`local_settings`] in `scope` (`Local`, or `Offline` for a command that calls no model).
pub(crate) fn settings_in_scope(
    flags: SettingFlags,
    flags_origin: &str,
    repository: Option<ConfigSource>,
    scope: Scope,
) -> anyhow::Result<Settings> {
    let user = ConfigSource::read_user(&crate::config::env_var)?;
    settings_from_sources(flags, flags_origin, repository, user, scope)
}

/// [`settings_in_scope`] with the user's config file already read (`redline config show`
/// keeps both files to name the origin of each value).
pub(crate) fn settings_from_sources(
    flags: SettingFlags,
    flags_origin: &str,
    repository: Option<ConfigSource>,
    user: Option<ConfigSource>,
    scope: Scope,
) -> anyhow::Result<Settings> {
    if let Some(source) = &repository {
        for warning in source.warnings() {
            eprintln!("warning: {warning}");
        }
    }
    let env = crate::config::env_var;
    Ok(settings::resolve(SettingsInput {
        flags,
        flags_origin,
        env: &env,
        user,
        repository,
        scope,
    })?)
}

/// Which repository config file a local command reads (`--config`, `--uncommitted`).
pub(crate) struct ConfigChoice<'a> {
    /// `--config FILE`.
    pub(crate) config: Option<&'a Path>,
    /// `--uncommitted`: the work tree's file (and changes).
    pub(crate) uncommitted: bool,
    /// `--quiet`: no notes on stderr.
    pub(crate) quiet: bool,
}

/// How long an interrupted review may take to end as at a limit (its calls in flight end at
/// once; what remains is checking the findings) before it is dropped as it stands.
const INTERRUPT_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// The repository's config for a local review: `--config FILE`, else `.redline.toml` of the
/// work tree with `--uncommitted`, else `.redline.toml` as it is at the base revision (so a
/// checked-out branch cannot change its own review rules). Says on stderr which was used.
pub(crate) fn repository_config(
    root: &Path,
    args: &ConfigChoice<'_>,
    base: &str,
) -> anyhow::Result<Option<ConfigSource>> {
    let quiet = args.quiet;
    let note = |text: String| {
        if !quiet {
            eprintln!("note: {text}");
        }
    };
    if let Some(path) = args.config {
        note(format!(
            "using the config file {} (--config)",
            path.display()
        ));
        return Ok(ConfigSource::read_file(path, Owner::Repository).map(Some)?);
    }
    let worktree = ConfigSource::read_worktree(root);
    if args.uncommitted {
        let worktree = worktree?;
        if worktree.is_some() {
            note(format!(
                "using {CONFIG_FILE} from the work tree (--uncommitted)"
            ));
        }
        return Ok(worktree);
    }
    let at_base = ConfigSource::read_at_commit(root, base, Path::new(CONFIG_FILE))?;
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

async fn review(args: ReviewArgs) -> anyhow::Result<i32> {
    let mut prepared = prepare(&args)?;
    let plan_file = read_plan(args.plan.as_deref())?;
    let verbosity = match (args.quiet, args.verbose) {
        (true, _) => Verbosity::Quiet,
        (_, true) => Verbosity::Verbose,
        _ => Verbosity::Normal,
    };
    // The run's transcript (`--runs-dir`, `--resume`): see `runs.rs`. A refused resume
    // stops here, before any output file is created.
    let has_changes = !prepared.workspace.changes.files.is_empty();
    let transcript = RunTranscript::open(&args, &prepared.settings, &prepared.agent, has_changes)?;
    if let Some(recorded) = transcript.recorded_intent() {
        prepared.agent.intent = recorded.to_string();
    }
    let prepared = prepared;
    // Both files are opened before any model call: a bad path must not cost a review.
    let output = OutputTarget::open(args.output.as_deref())?;
    let (events, rx) = EventSink::channel();
    let events = transcript.events(events);
    let consumer =
        spawn_event_consumers(rx, verbosity, args.events.as_deref()).with_context(|| {
            format!(
                "cannot write --events {}",
                args.events.as_deref().unwrap_or(Path::new("")).display()
            )
        })?;
    let mut signals = StopSignals::install();
    let interrupt = CancellationToken::new();
    let live = consumer.live();

    let mut run = Box::pin(async {
        if prepared.workspace.changes.files.is_empty() {
            if prepared.uncommitted_would_review && !args.quiet {
                eprintln!(
                    "note: nothing committed to review; the work tree has uncommitted changes, which `redline review --uncommitted` reviews"
                );
            }
            return Ok(Outcome::report(empty_report(
                &prepared.base_label,
                &prepared.skipped,
                prepared.uncommitted_would_review,
            )));
        }
        let model = transcript.model(model_client(&prepared.settings, &events));
        let orchestrator = transcript
            .orchestrator(Orchestrator::new(
                model,
                prepared.workspace.clone(),
                prepared.agent.clone(),
            ))
            .with_events(events.clone())
            .with_interrupt(interrupt.clone());
        drive(&orchestrator, &args, plan_file, &interrupt, &live).await
    });
    let outcome = tokio::select! {
        // A run that has ended wins over a signal in the same instant: its report stands.
        biased;
        outcome = &mut run => outcome,
        stop = signals.recv() => {
            consumer.hold_run_finished();
            interrupt.cancel();
            wind_down(&mut run, &mut signals).await;
            transcript.cancelled(stop.name());
            if let Some(mut log) = consumer.finish().await {
                log.cancelled(stop.name());
            }
            output.abandon();
            return Ok(stop.exit_code());
        }
    };
    drop(run);
    drop(events);
    // Every event is in the log before the process reports.
    let _ = consumer.finish().await;
    transcript.end(outcome.as_ref().err());
    match outcome {
        Ok(outcome) => deliver(outcome, &prepared, output, args.color),
        Err(error) => {
            output.abandon();
            Err(error.into())
        }
    }
}

/// Lets an interrupted run end as at a limit, keeping what finished, so that the cancelled
/// record carries its findings and counters; a second signal, or a run that does not wind
/// down within [`INTERRUPT_GRACE`], leaves it as it stands.
async fn wind_down<F: std::future::Future + Unpin>(run: &mut F, signals: &mut StopSignals) {
    tokio::select! {
        _ = run => {}
        _ = signals.recv() => {}
        _ = tokio::time::sleep(INTERRUPT_GRACE) => {}
    }
}

pub(crate) fn read_plan(path: Option<&Path>) -> anyhow::Result<Option<Plan>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the plan {}", path.display()))?;
    Plan::from_json(&text)
        .map(Some)
        .with_context(|| format!("--plan {}", path.display()))
}

/// Writes what the run produced and picks the exit code.
fn deliver(
    outcome: Outcome,
    prepared: &Prepared,
    output: OutputTarget,
    color: ColorWhen,
) -> anyhow::Result<i32> {
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
            let options = RenderOptions {
                color: output.color(color),
                sources: &RepoSources::new(&prepared.workspace),
            };
            output.write(&render_with(&report, prepared.format, &options))?;
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
    interrupt: &CancellationToken,
    live: &Live,
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
    // A description read from standard input leaves nothing there to answer with.
    let interactive = !args.yes
        && !args.intent.reads_stdin()
        && std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal();
    if interactive && orchestrator.decide().strategy == Strategy::PlanExecute {
        let (plan, planning) = orchestrator.plan().await?;
        // The question must not be drawn over: progress goes on in plain lines.
        live.stop();
        eprintln!("{}", plan.render_text());
        // A signal at the prompt declines the plan (the read itself cannot be cancelled).
        let confirmed = tokio::select! {
            answer = confirm("Run this plan? [Y/n] ") => answer,
            _ = interrupt.cancelled() => false,
        };
        if !confirmed {
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

fn empty_report(
    base_label: &str,
    skipped: &[String],
    uncommitted_would_review: bool,
) -> ReviewReport {
    let mut summary = format!("No changes to review against {base_label}.");
    if uncommitted_would_review {
        summary.push_str(
            " The work tree has uncommitted changes: `redline review --uncommitted` reviews them.",
        );
    }
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
        walkthrough: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::error_message;

    #[test]
    fn a_bad_plan_file_is_named_with_its_cause_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.json");
        std::fs::write(&path, "{\"version\":2,\"tasks\":[]}").unwrap();
        let error = read_plan(Some(&path)).err().unwrap();
        assert_eq!(
            error_message(&error),
            format!("--plan {}: unsupported plan version 2", path.display())
        );
        std::fs::write(&path, "nope").unwrap();
        let message = error_message(&read_plan(Some(&path)).err().unwrap());
        let prefix = format!("--plan {}: not a Redline plan: ", path.display());
        assert!(message.starts_with(&prefix), "{message}");
        // The JSON error is shown once, not repeated as its own cause.
        let cause = &message[prefix.len()..];
        assert!(
            !cause.is_empty() && !cause.contains(": not a Redline plan"),
            "{message}"
        );
        assert_eq!(message.matches(cause).count(), 1, "{message}");
    }
}
