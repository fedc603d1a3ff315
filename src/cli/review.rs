//! `redline review`: review a change in a local repository.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;

use super::color::ColorWhen;
use super::output::OutputTarget;
use super::progress::{Verbosity, spawn_event_consumers};
use super::signals::StopSignals;
use super::steps::Live;
use super::transcripts::RunTranscript;
use super::{EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, ReviewArgs, error_message};
use crate::agent::events::{EventKind, EventSink};
use crate::agent::plan::Plan;
use crate::agent::strategy::Strategy;
use crate::agent::{AgentError, Orchestrator};
use crate::config::settings::{Scope, SettingFlags, Settings};
use crate::config::{ConfigSource, ModelSettings};
use crate::flow::local::{
    self, ChangeSelection, LocalOutcome, LocalRequest, LocalReview, Notice, OutputWants, Overrides,
    PlanChoice, Purpose, SettingsChoice,
};
use crate::llm::{
    ChatModel, ClientHooks, ProviderSettings, RetryHook, WaitHook, build_client_with_hooks,
};
use crate::review::render::{Format, RenderOptions, RepoSources, render_with};
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

/// The typed local request of `redline review`'s flags (also of a recorded invocation,
/// for `redline replay`): the one place they are converted. The format and the plan
/// file are checked here.
pub(crate) fn local_request(args: &ReviewArgs) -> anyhow::Result<LocalRequest> {
    let format: Format = args.format.parse().context("--format")?;
    let plan = match (read_plan(args.plan.as_deref())?, args.plan_only) {
        (Some(plan), _) => PlanChoice::Given(plan),
        (None, true) => PlanChoice::PlanOnly,
        (None, false) => PlanChoice::Review,
    };
    Ok(LocalRequest {
        repository: args.repo.clone(),
        change: ChangeSelection {
            base: args.base.clone(),
            head: args.head.clone(),
            uncommitted: args.uncommitted,
        },
        settings: SettingsChoice {
            overrides: Overrides {
                model: args.model.flags(),
                limits: args.limits.flags(),
                max_steps: args.max_steps,
                strategy: args.strategy.clone(),
                tool_mode: args.tool_mode.clone(),
                parallel: args.parallel,
                fail_on: args.fail_on.clone(),
                verify: args.no_verify.then_some(false),
            },
            config_file: args.config.clone(),
            user_file: true,
        },
        intent: (&args.intent).into(),
        purpose: Purpose::Review,
        output: OutputWants { format, plan },
    })
}

/// Shows the flow's notices on stderr: warnings always, notes unless `quiet`.
pub(crate) fn notices_on_stderr(quiet: bool) -> impl FnMut(Notice) {
    move |notice| match notice {
        Notice::Warning(text) => eprintln!("warning: {text}"),
        Notice::Note(text) if !quiet => eprintln!("note: {text}"),
        Notice::Note(_) => {}
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
    let mut notices = notices_on_stderr(false);
    Ok(local::settings_from_sources(
        flags,
        flags_origin,
        repository,
        user,
        scope,
        &mut notices,
    )?)
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

/// The repository's config for a local command ([`local::repository_config`]), saying on
/// stderr which was used.
pub(crate) fn repository_config(
    root: &Path,
    args: &ConfigChoice<'_>,
    base: &str,
) -> anyhow::Result<Option<ConfigSource>> {
    let mut notices = notices_on_stderr(args.quiet);
    Ok(local::repository_config(
        root,
        args.config,
        args.uncommitted,
        base,
        &mut notices,
    )?)
}

async fn review(args: ReviewArgs) -> anyhow::Result<i32> {
    let request = local_request(&args)?;
    refuse_one_file_for_events_and_output(&args)?;
    let (prepared, transcript) = prepare_with_transcript(&request, &args)?;
    // Both files are opened before any model call: a bad path must not cost a review.
    let output = OutputTarget::open(args.output.as_deref(), Some(&prepared.root))?;
    let (events, rx) = EventSink::channel();
    let events = transcript.events(events);
    let events_file = open_events_file(&args, &prepared.root)?;
    let consumer = spawn_event_consumers(
        rx,
        verbosity(&args),
        events_file,
        args.color.for_stream(&std::io::stderr()),
    );
    let mut signals = StopSignals::install();
    let interrupt = CancellationToken::new();
    let live = consumer.live();
    let run = Run {
        args: &args,
        prepared: &prepared,
        transcript: &transcript,
        interrupt: &interrupt,
        live: &live,
    };
    let mut run = Box::pin(run.outcome(&events));
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

/// `--events` and `--output` may not name one file: each would overwrite the other.
fn refuse_one_file_for_events_and_output(args: &ReviewArgs) -> anyhow::Result<()> {
    if let (Some(events), Some(output)) = (args.events.as_deref(), args.output.as_deref())
        && super::output::same_file(events, output)
    {
        anyhow::bail!(
            "--events and --output name the same file ({}); give each its own",
            events.display()
        );
    }
    Ok(())
}

/// The resolved review and the run's transcript (`--runs-dir`, `--resume`: see `runs.rs`),
/// whose recorded intent a resumed run takes. A refused resume stops here, before any
/// output file is created.
fn prepare_with_transcript(
    request: &LocalRequest,
    args: &ReviewArgs,
) -> anyhow::Result<(LocalReview, RunTranscript)> {
    let mut prepared = request.prepare(&mut notices_on_stderr(args.quiet))?;
    let settings = &prepared.settings;
    let transcript = RunTranscript::open(
        args,
        &settings.model,
        &settings.agent,
        prepared.has_changes(),
    )?;
    if let Some(recorded) = transcript.recorded_intent() {
        prepared.settings.agent.intent = recorded.to_string();
    }
    Ok((prepared, transcript))
}

/// The `--events` file, created (or truncated) inside the workspace, when one is asked for.
fn open_events_file(args: &ReviewArgs, root: &Path) -> anyhow::Result<Option<std::fs::File>> {
    let Some(path) = args.events.as_deref() else {
        return Ok(None);
    };
    let file = super::files::open_in_workspace(
        root,
        path,
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true),
    )
    .with_context(|| format!("cannot write --events {}", path.display()))?;
    Ok(Some(file))
}

fn verbosity(args: &ReviewArgs) -> Verbosity {
    match (args.quiet, args.verbose) {
        (true, _) => Verbosity::Quiet,
        (_, true) => Verbosity::Verbose,
        _ => Verbosity::Normal,
    }
}

/// One run of `redline review` after everything is resolved and opened.
struct Run<'a> {
    args: &'a ReviewArgs,
    prepared: &'a LocalReview,
    transcript: &'a RunTranscript,
    interrupt: &'a CancellationToken,
    live: &'a Live,
}

impl Run<'_> {
    /// The report of a change with nothing to review, else the engine's outcome, recorded
    /// in the transcript.
    async fn outcome(self, events: &EventSink) -> Result<Outcome, AgentError> {
        let prepared = self.prepared;
        if !prepared.has_changes() {
            if prepared.uncommitted_would_review && !self.args.quiet {
                eprintln!(
                    "note: nothing committed to review; the work tree has uncommitted changes, which `redline review --uncommitted` reviews"
                );
            }
            return Ok(Outcome::Done(LocalOutcome::report(prepared.empty_report())));
        }
        let model = self
            .transcript
            .model(model_client(&prepared.settings.model, events));
        let orchestrator = self
            .transcript
            .orchestrator(prepared.orchestrator(model))
            .with_events(events.clone())
            .with_interrupt(self.interrupt.clone());
        self.drive(&orchestrator).await
    }

    /// The flow's plan choice, except that a plan-and-execute review on a terminal asks for
    /// its plan's confirmation first (unless `--yes`).
    async fn drive(&self, orchestrator: &Orchestrator) -> Result<Outcome, AgentError> {
        let args = self.args;
        // A description read from standard input leaves nothing there to answer with.
        let interactive = !args.yes
            && !args.intent.reads_stdin()
            && std::io::stdin().is_terminal()
            && std::io::stderr().is_terminal();
        let free = self.prepared.output.plan == PlanChoice::Review;
        if !(interactive && free && orchestrator.decide().strategy == Strategy::PlanExecute) {
            return self.prepared.run(orchestrator).await.map(Outcome::Done);
        }
        let (plan, planning) = orchestrator.plan().await?;
        // The question must not be drawn over: progress goes on in plain lines.
        self.live.stop();
        eprintln!("{}", plan.render_text());
        // A signal at the prompt declines the plan (the read itself cannot be cancelled).
        let confirmed = tokio::select! {
            answer = confirm("Run this plan? [Y/n] ") => answer,
            _ = self.interrupt.cancelled() => false,
        };
        if !confirmed {
            return Ok(Outcome::Declined);
        }
        orchestrator
            .review_with_plan(plan, planning)
            .await
            .map(|report| Outcome::Done(LocalOutcome::report(report)))
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
    prepared: &LocalReview,
    output: OutputTarget,
    color: ColorWhen,
) -> anyhow::Result<i32> {
    match outcome {
        Outcome::Done(LocalOutcome::Plan(plan)) => {
            let text = if prepared.output.format == Format::Json {
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
        Outcome::Done(LocalOutcome::Report(report)) => {
            let options = RenderOptions {
                color: output.color(color),
                sources: &RepoSources::new(&prepared.workspace),
            };
            output.write(&render_with(&report, prepared.output.format, &options))?;
            Ok(if report.fails(prepared.settings.fail_on) {
                EXIT_FINDINGS
            } else {
                EXIT_OK
            })
        }
    }
}

/// What a run of `redline review` came to.
enum Outcome {
    /// The flow's report or plan.
    Done(LocalOutcome),
    /// The plan was not confirmed.
    Declined,
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command, error_message};
    use crate::config::ModelFlags;
    use crate::config::limits::LimitFlags;
    use crate::flow::local::{Description, IntentSources};

    /// `redline review` with the flags of `argv` (split at white space).
    fn review_args(argv: &str) -> ReviewArgs {
        let argv = ["redline", "review"]
            .into_iter()
            .chain(argv.split_whitespace());
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Review(args) => args,
            other => panic!("not a review: {other:?}"),
        }
    }

    /// The overrides of the flags given in [`every_review_flag_lands_in_the_typed_request`].
    fn every_override() -> Overrides {
        Overrides {
            model: ModelFlags {
                provider: Some("anthropic".into()),
                model: Some("m1".into()),
                base_url: Some("http://127.0.0.1:9/v1".into()),
            },
            limits: LimitFlags {
                max_cost: Some("0.5".into()),
                max_tokens: Some("1000".into()),
                timeout: Some("90s".into()),
            },
            max_steps: Some(3),
            strategy: Some("plan".into()),
            tool_mode: Some("text".into()),
            parallel: Some(2),
            fail_on: Some("major".into()),
            verify: Some(false),
        }
    }

    #[test]
    fn every_review_flag_lands_in_the_typed_request() {
        let args = review_args(
            "--repo /src/demo --base main --head feature --uncommitted --provider anthropic \
             --model m1 --base-url http://127.0.0.1:9/v1 --strategy plan --max-steps 3 \
             --parallel 2 --tool-mode text --fail-on major --max-cost 0.5 --max-tokens 1000 \
             --timeout 90s --no-verify --config review.toml --title Ratio --description-file - \
             --format json --plan-only",
        );
        let request = local_request(&args).unwrap();
        assert_eq!(request.repository, Some(PathBuf::from("/src/demo")));
        assert_eq!(
            request.change,
            ChangeSelection {
                base: Some("main".into()),
                head: "feature".into(),
                uncommitted: true,
            }
        );
        assert_eq!(
            request.settings,
            SettingsChoice {
                overrides: every_override(),
                config_file: Some(PathBuf::from("review.toml")),
                user_file: true,
            }
        );
        assert_eq!(
            request.intent,
            IntentSources {
                title: Some("Ratio".into()),
                description: Some(Description::Stdin),
            }
        );
        assert_eq!(request.purpose, Purpose::Review);
        assert_eq!(
            request.output,
            OutputWants {
                format: Format::Json,
                plan: PlanChoice::PlanOnly,
            }
        );
        // The flags the settings resolution reads are the ones given.
        let flags = request.settings.overrides.flags();
        assert_eq!(flags.strategy.as_deref(), Some("plan"));
        assert_eq!(flags.max_comments, None);
    }

    #[test]
    fn a_plan_file_is_read_into_the_request_and_a_bad_format_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.json");
        let plan = r#"{"version":1,"tasks":[{"id":"t1","title":"Ratio","files":["src/calc.rs"]}]}"#;
        std::fs::write(&path, plan).unwrap();
        let args = review_args(&format!("--plan {} --format sarif", path.display()));
        let request = local_request(&args).unwrap();
        assert_eq!(request.output.format, Format::Sarif);
        assert_eq!(
            request.output.plan,
            PlanChoice::Given(Plan::from_json(plan).unwrap())
        );
        assert_eq!(request.change, ChangeSelection::default());
        assert_eq!(request.repository, None);

        let args = review_args("--format yaml");
        let error = local_request(&args).err().unwrap();
        assert!(error_message(&error).starts_with("--format"), "{error:#}");
    }

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
