//! `redline serve`: the webhook server of the GitHub App and of GitLab (either or both;
//! [`super::serve_forges`]) with its durable queue and workers.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;

use super::review::model_client;
use super::serve_forges::{
    Forges, GitHubForge, GitLabForge, gitlab_username, learn_gitlab_username_later,
};
use super::{EXIT_ERROR, EXIT_OK, ServeArgs};
use crate::agent::events::EventSink;
use crate::config::limits::{self, LimitCeilings};
use crate::config::{self, FileConfig, ModelSettings};
use crate::forge::PublishConfig;
use crate::github::AppAuth;
use crate::gitlab::project_path::ProjectPaths;
use crate::llm::Secret;
use crate::llm::pricing::builtin_price;
use crate::queue::{Queue, WorkerConfig, WorkerPool};
use crate::server::ForgeRunner;
use crate::server::check_status::{Checks, START_SWEEP_TIMEOUT, SWEEP_INTERVAL};
use crate::server::github::answers::thread_comment_hook;
use crate::server::github::runner::{GitHubSteps, ReviewRunner, command_reply_hook};
use crate::server::gitlab::runner::{GitLabRunner, GitLabSteps};
use crate::server::limits::{
    descriptor_warning, parse_count, parse_duration, parse_rate, parse_size,
};
use crate::server::pipeline::{ModelFactory, Pipeline, RunnerSettings};
use crate::server::retention::{PRUNE_INTERVAL, spawn_pruner};
use crate::server::{
    AppState, ConnectionLimits, GitLabHooks, Metrics, RequestLimits, gitlab_note_hook, memory,
    serve_with_limits,
};

/// Limits of `redline serve` on what peers may hold: connections, time and unverified bytes;
/// and how long deliveries are kept.
#[derive(Debug, Clone, Args)]
pub struct ServeLimitArgs {
    /// Time a peer has to send a request's head, from connecting or from the request's first byte.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub header_timeout: Duration,
    /// Slowest accepted request body, averaged from its start (after a 2 s grace).
    #[arg(long, default_value = "64KiB/s", value_parser = parse_rate, value_name = "RATE")]
    pub body_min_rate: u64,
    /// Longest a request body may take, however fast it arrives.
    #[arg(long, default_value = "60s", value_parser = parse_duration, value_name = "DURATION")]
    pub body_timeout: Duration,
    /// Time a kept-alive connection may wait for its next request (or take to read a response).
    #[arg(long, default_value = "75s", value_parser = parse_duration, value_name = "DURATION")]
    pub idle_timeout: Duration,
    /// Connections served at once; more wait in the listen backlog (keep below the file limit).
    #[arg(long, default_value = "512", value_parser = parse_count, value_name = "N")]
    pub max_connections: usize,
    /// Bytes that requests not yet verified may buffer at once; more wait up to 5 s, then get 503.
    #[arg(long, default_value = "64MiB", value_parser = parse_size, value_name = "SIZE")]
    pub max_unverified_bytes: usize,
    /// How long deliveries (for redelivery detection) and finished jobs are kept.
    #[arg(long, default_value = "7d", value_parser = parse_duration, value_name = "DURATION")]
    pub delivery_retention: Duration,
}

impl ServeLimitArgs {
    /// The connection limits these flags set.
    pub(crate) fn connection_limits(&self) -> ConnectionLimits {
        ConnectionLimits {
            header_timeout: self.header_timeout,
            idle_timeout: self.idle_timeout,
            max_connections: self.max_connections,
        }
    }

    /// The request limits these flags set (other fields at their defaults).
    pub(crate) fn request_limits(&self) -> RequestLimits {
        RequestLimits {
            body_min_rate: self.body_min_rate,
            body_timeout: self.body_timeout,
            max_unverified_bytes: self.max_unverified_bytes,
            ..RequestLimits::default()
        }
    }
}

/// Runs `redline serve` until SIGTERM or Ctrl-C, and returns the exit code.
pub async fn run(args: ServeArgs) -> i32 {
    match serve_app(args).await {
        Ok(()) => EXIT_OK,
        Err(error) => {
            eprintln!("error: {}", super::error_message(&error));
            EXIT_ERROR
        }
    }
}

/// `REDLINE_DATABASE_URL`, else the SQLite file `redline.db` in the working directory.
pub(super) fn database_url() -> String {
    config::env_var("REDLINE_DATABASE_URL").unwrap_or_else(|| "sqlite://redline.db".into())
}

async fn serve_app(args: ServeArgs) -> anyhow::Result<()> {
    // Before anything large is allocated (see server::memory).
    memory::keep_large_buffers_mapped();
    let Startup {
        forges,
        settings,
        ceilings,
        queue,
        listener,
    } = start_up(&args).await?;
    let metrics = Arc::new(Metrics::new());
    let checks = checks_of(&forges, &queue);
    let mut shared = runner_settings(&args, settings, ceilings, &metrics, &queue);
    shared.checks = Some(checks.clone());
    let pipelines = ForgePipelines::new(forges, &shared);
    let runner = Arc::new(pipelines.runner());
    let sweeper = settle_checks(&checks).await;
    let pool = WorkerPool::start(queue.clone(), runner, worker_config(&args), metrics.clone());
    let pruner = spawn_pruner(
        queue.clone(),
        args.limits.delivery_retention,
        PRUNE_INTERVAL,
    );
    let mut state = app_state(&args, pipelines, queue, metrics).await;
    state.on_job_queued = Some(checks.queued_hook());
    state.on_draft = Some(checks.draft_hook());
    tracing::info!(listen = %args.listen, "redline serve listening");
    eprintln!("redline serve listening on {}", args.listen);
    serve_with_limits(
        listener,
        state.with_limits(args.limits.request_limits()),
        args.limits.connection_limits(),
        shutdown_signal(),
    )
    .await?;
    pruner.abort();
    sweeper.abort();
    // Stop taking jobs; running ones reach a safe point or finish.
    pool.shutdown().await;
    Ok(())
}

/// What `redline serve` sets up before it builds anything that runs: the forges, the
/// server's model settings and ceilings, the queue and the bound listener.
struct Startup {
    forges: Forges,
    settings: ModelSettings,
    ceilings: LimitCeilings,
    queue: Queue,
    listener: tokio::net::TcpListener,
}

/// Reads the forges and the model settings, connects the queue and binds `--listen`, in
/// that order: a mistake in the environment or the flags is reported before the database
/// is touched.
async fn start_up(args: &ServeArgs) -> anyhow::Result<Startup> {
    let forges = Forges::from_env()?;
    let database_url = database_url();
    let settings = config::resolve_model(
        &args.model.flags(),
        &FileConfig::default(),
        &config::env_var,
    )?;
    let ceilings = ceilings(args, &settings.model)?;
    let queue = Queue::connect(&database_url)
        .await
        .context("REDLINE_DATABASE_URL")?;
    if let Ok(limits) = std::fs::read_to_string("/proc/self/limits")
        && let Some(warning) = descriptor_warning(&limits, args.limits.max_connections)
    {
        tracing::warn!("{warning}");
    }
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("--listen {}", args.listen))?;
    Ok(Startup {
        forges,
        settings,
        ceilings,
        queue,
        listener,
    })
}

/// Each configured forge with the pipeline that runs its jobs.
struct ForgePipelines {
    github: Option<(GitHubForge, Arc<ReviewRunner>)>,
    gitlab: Option<(GitLabForge, Arc<GitLabRunner>)>,
}

impl ForgePipelines {
    /// A pipeline per configured forge, each on the `shared` settings.
    fn new(forges: Forges, shared: &RunnerSettings) -> Self {
        let github = forges.github.map(|forge| {
            let steps = GitHubSteps {
                auth: forge.auth.clone(),
            };
            let runner = Arc::new(Pipeline {
                steps,
                shared: shared.clone(),
            });
            (forge, runner)
        });
        let gitlab = forges.gitlab.map(|forge| {
            let steps = GitLabSteps {
                client: forge.client.clone(),
                token: forge.token.clone(),
            };
            let runner = Arc::new(Pipeline {
                steps,
                shared: shared.clone(),
            });
            (forge, runner)
        });
        ForgePipelines { github, gitlab }
    }

    /// What the workers run: each job on its forge's pipeline.
    fn runner(&self) -> ForgeRunner {
        ForgeRunner {
            github: self.github.as_ref().map(|(_, runner)| runner.clone()),
            gitlab: self.gitlab.as_ref().map(|(_, runner)| runner.clone()),
        }
    }
}

/// `--workers`, `--lease-secs` and `--heartbeat-secs`.
fn worker_config(args: &ServeArgs) -> WorkerConfig {
    WorkerConfig {
        workers: args.workers,
        lease: std::time::Duration::from_secs(args.lease_secs),
        heartbeat_interval: std::time::Duration::from_secs(args.heartbeat_secs),
        ..WorkerConfig::default()
    }
}

/// Where the reviews' states go: the pull requests' checks and the merge requests' commit
/// statuses of the forges set up, recorded in `queue`.
fn checks_of(forges: &Forges, queue: &Queue) -> Checks {
    Checks::new(
        forges.github.as_ref().map(|forge| forge.auth.clone()),
        forges.gitlab.as_ref().map(|forge| forge.client.clone()),
        Some(queue.clone()),
    )
}

/// Before any worker takes a job: the checks left in progress by jobs that ended, or whose
/// worker died, are settled (the latter shown queued again); then now and again, by the
/// task returned.
async fn settle_checks(checks: &Checks) -> tokio::task::JoinHandle<()> {
    if tokio::time::timeout(START_SWEEP_TIMEOUT, checks.settle())
        .await
        .is_err()
    {
        tracing::warn!("settling the checks left open took too long; the sweeper goes on later");
    }
    checks.clone().spawn_sweeper(SWEEP_INTERVAL)
}

/// The server's state: each configured forge's secret and hooks (an unconfigured forge's
/// deliveries are all refused).
async fn app_state(
    args: &ServeArgs,
    pipelines: ForgePipelines,
    queue: Queue,
    metrics: Arc<Metrics>,
) -> AppState {
    let mut state = AppState {
        metrics,
        ..AppState::new(queue.clone(), Secret::new(""))
    };
    if let Some((forge, runner)) = pipelines.github {
        let invalidate = forge.auth.clone();
        state.config.app_slug = app_slug(&forge.auth).await;
        state.on_installation_removed = Some(Arc::new(move |id| invalidate.invalidate(id)));
        state.on_command_reply = Some(command_reply_hook(forge.auth.clone()));
        state.on_thread_comment = Some(thread_comment_hook(runner, queue.clone()));
        state.webhook_secret = forge.secret;
    }
    if let Some((forge, runner)) = pipelines.gitlab {
        if gitlab_username(&forge.client).await.is_none() {
            learn_gitlab_username_later(forge.client.clone());
        }
        let own = forge.client.own_user();
        let mut hooks = GitLabHooks::with_own_user(forge.secret, args.review_drafts, own);
        hooks.on_note = Some(gitlab_note_hook(runner, queue));
        hooks.projects = Some(Arc::new(ProjectPaths::new(forge.client.clone())));
        state.gitlab = Some(hooks);
    }
    state.config.review_drafts = args.review_drafts;
    state
}

/// What review jobs run with on every forge: the server's model settings and ceilings,
/// the cache, publishing, and the database for dismissals.
fn runner_settings(
    args: &ServeArgs,
    settings: ModelSettings,
    ceilings: LimitCeilings,
    metrics: &Arc<Metrics>,
    queue: &Queue,
) -> RunnerSettings {
    let model: ModelFactory = Arc::new(|settings| model_client(settings, &EventSink::discard()));
    RunnerSettings {
        cache_dir: args
            .cache_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("redline-cache")),
        cache_budget_bytes: args.cache_budget_mb.saturating_mul(1024 * 1024),
        model,
        settings,
        ceilings,
        publish: PublishConfig::default(),
        metrics: metrics.clone(),
        failure_notice: args.failure_notice,
        dismissals: Some(queue.clone()),
        checks: None,
    }
}

/// The App's slug (`GET /app`), so that `@slug` mentions in review comments are answered;
/// `None`, with a warning, when GitHub does not say within a few seconds.
async fn app_slug(auth: &AppAuth) -> Option<String> {
    let client = auth.app_client();
    let answer = tokio::time::timeout(Duration::from_secs(10), client.get_json("/app")).await;
    match answer {
        Ok(Ok(app)) => app["slug"].as_str().map(str::to_string),
        Ok(Err(error)) => {
            tracing::warn!(%error, "the App's slug is unknown; @mentions in review comments are not answered");
            None
        }
        Err(_) => {
            tracing::warn!("GET /app timed out; @mentions in review comments are not answered");
            None
        }
    }
}

/// `--max-cost-ceiling`, `--max-tokens-ceiling` and `--timeout-ceiling`, with the
/// defaults where not given ([`LimitCeilings::with_defaults`]); a cost ceiling needs
/// the model's built-in price.
fn ceilings(args: &ServeArgs, model: &str) -> anyhow::Result<LimitCeilings> {
    let max_cost_usd = args
        .max_cost_ceiling
        .as_deref()
        .map(|text| limits::parse_cost(text).context("--max-cost-ceiling"))
        .transpose()?;
    let timeout = args
        .timeout_ceiling
        .as_deref()
        .map(|text| limits::parse_duration(text).context("--timeout-ceiling"))
        .transpose()?;
    let max_tokens = args
        .max_tokens_ceiling
        .as_deref()
        .map(|text| limits::parse_tokens(text).context("--max-tokens-ceiling"))
        .transpose()?;
    let priced = builtin_price(model).is_some();
    if max_cost_usd.is_some() && !priced {
        bail!(
            "--max-cost-ceiling: the built-in price table has no price for model `{model}`, so a cost ceiling cannot be kept"
        );
    }
    let given = LimitCeilings {
        max_cost_usd,
        timeout,
        max_tokens,
    };
    Ok(given.with_defaults(priced))
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        limits: ServeLimitArgs,
    }

    #[test]
    fn flag_defaults_are_the_library_defaults() {
        let flags = Flags::parse_from(["redline"]).limits;
        assert_eq!(flags.connection_limits(), ConnectionLimits::default());
        assert_eq!(flags.request_limits(), RequestLimits::default());
        assert_eq!(
            flags.delivery_retention,
            crate::server::retention::DEFAULT_RETENTION
        );
    }

    #[test]
    fn flags_take_units() {
        let flags = Flags::parse_from([
            "redline",
            "--header-timeout",
            "500ms",
            "--body-min-rate",
            "1KiB/s",
            "--max-unverified-bytes",
            "8MiB",
            "--delivery-retention",
            "3d",
        ])
        .limits;
        assert_eq!(flags.header_timeout, Duration::from_millis(500));
        assert_eq!(flags.request_limits().body_min_rate, 1024);
        assert_eq!(flags.request_limits().max_unverified_bytes, 8 << 20);
        assert_eq!(flags.delivery_retention, Duration::from_secs(3 * 86_400));
        assert!(Flags::try_parse_from(["redline", "--idle-timeout", "0s"]).is_err());
    }

    #[test]
    fn zero_and_huge_values_are_refused_naming_the_flag() {
        for flag in ["--workers", "--lease-secs", "--heartbeat-secs"] {
            let error = super::super::Cli::try_parse_from(["redline", "serve", flag, "0"])
                .unwrap_err()
                .to_string();
            assert!(error.contains(flag), "{error}");
        }
        for flag in ["--lease-secs", "--heartbeat-secs"] {
            let huge = super::super::Cli::try_parse_from([
                "redline",
                "serve",
                flag,
                "18446744073709551615",
            ]);
            assert!(huge.is_err(), "{flag}");
        }
        for flag in [
            "--header-timeout",
            "--idle-timeout",
            "--body-timeout",
            "--delivery-retention",
        ] {
            let error = Flags::try_parse_from(["redline", flag, "18446744073709551615s"])
                .unwrap_err()
                .to_string();
            assert!(error.contains(flag) && error.contains("366d"), "{error}");
        }
        let defaults = serve_args(&[]);
        assert_eq!(
            (
                defaults.workers,
                defaults.lease_secs,
                defaults.heartbeat_secs
            ),
            (4, 60, 15)
        );
    }

    fn serve_args(extra: &[&str]) -> ServeArgs {
        let mut argv = vec!["redline", "serve"];
        argv.extend_from_slice(extra);
        match super::super::Cli::try_parse_from(argv).unwrap().command {
            super::super::Command::Serve(args) => args,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_review_has_a_ceiling_by_default() {
        let priced = ceilings(&serve_args(&[]), "gpt-4.1").unwrap();
        assert_eq!(priced.max_cost_usd, Some(limits::DEFAULT_COST_CEILING_USD));
        let unpriced = ceilings(&serve_args(&[]), "local-llama").unwrap();
        assert_eq!(unpriced.max_cost_usd, None);
        assert_eq!(unpriced.max_tokens, Some(limits::DEFAULT_TOKEN_CEILING));
        let raised = ceilings(
            &serve_args(&["--max-cost-ceiling", "10", "--max-tokens-ceiling", "5_000"]),
            "gpt-4.1",
        )
        .unwrap();
        assert_eq!(raised.max_cost_usd, Some(10.0));
        assert_eq!(raised.max_tokens, Some(5_000));
        let error = ceilings(&serve_args(&["--max-tokens-ceiling", "0"]), "gpt-4.1").unwrap_err();
        assert!(
            format!("{error:#}").contains("--max-tokens-ceiling"),
            "{error:#}"
        );
    }
}
