//! A webhook server with a no-op review runner, for load tests (`benches/webhook_load.sh`).
//!
//! Usage: `webhook_server DATABASE_URL [ADDRESS]` with the secret in `REDLINE_WEBHOOK_SECRET`;
//! `REDLINE_BENCH_JOB_MS` makes each job take that long (default 0: the workers drain the
//! queue as fast as the database lets them).
//! Prints `listening on ADDRESS` once ready; stops on Ctrl-C or SIGTERM, and then prints the
//! intake's group-commit figures (`intake: deliveries=N worker_members=N commits=N ...`).

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use async_trait::async_trait;
use redline::llm::Secret;
use redline::queue::{
    Job, JobError, JobRunner, Queue, RunOutcome, ShutdownOutcome, WorkerConfig, WorkerPool,
};
use redline::server::{AppState, serve};
use tokio_util::sync::CancellationToken;

/// Completes every job after `job_time` (zero by default), or at once when cancelled.
struct NoopRunner {
    job_time: Duration,
}

#[async_trait]
impl JobRunner for NoopRunner {
    async fn run(&self, _job: &Job, cancel: CancellationToken) -> Result<RunOutcome, JobError> {
        if self.job_time.is_zero() {
            return Ok(RunOutcome::Completed);
        }
        tokio::select! {
            _ = tokio::time::sleep(self.job_time) => Ok(RunOutcome::Completed),
            _ = cancel.cancelled() => Ok(RunOutcome::Cancelled),
        }
    }
}

fn main() -> anyhow::Result<()> {
    // Before the runtime, so that its start (one thread or many) is logged too.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // The load test redirects the log to a file: plain text there, as `redline serve`.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    // The runtime `redline serve` runs on (one thread when pinned to one core).
    redline::runtime()
        .context("starting the async runtime")?
        .block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(database_url) = args.next() else {
        bail!("usage: webhook_server DATABASE_URL [ADDRESS]");
    };
    let address = args.next().unwrap_or_else(|| "127.0.0.1:8080".to_string());
    let secret =
        std::env::var("REDLINE_WEBHOOK_SECRET").context("REDLINE_WEBHOOK_SECRET is not set")?;

    let job_time = match std::env::var("REDLINE_BENCH_JOB_MS") {
        Ok(ms) => Duration::from_millis(ms.parse().context("REDLINE_BENCH_JOB_MS")?),
        Err(_) => Duration::ZERO,
    };
    let queue = Queue::connect(&database_url).await?;
    let intake = queue.clone();
    let state = AppState::new(queue.clone(), Secret::new(secret));
    let pool = WorkerPool::start(
        queue,
        Arc::new(NoopRunner { job_time }),
        WorkerConfig {
            // Slow jobs are abandoned at exit rather than waited for.
            shutdown_timeout: Duration::from_secs(2),
            ..WorkerConfig::default()
        },
        state.metrics.clone(),
    );
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .with_context(|| format!("binding {address}"))?;
    println!("listening on {}", listener.local_addr()?);
    serve(listener, state, shutdown_signal()).await?;
    if let ShutdownOutcome::TimedOut { abandoned } = pool.shutdown().await {
        eprintln!("{abandoned} jobs were still running at exit");
    }
    let stats = intake.intake_stats();
    println!(
        "intake: deliveries={} worker_members={} commits={} largest_group={} groups_retried={}",
        stats.deliveries,
        stats.worker_members,
        stats.commits,
        stats.largest_group,
        stats.groups_retried
    );
    Ok(())
}

async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}
