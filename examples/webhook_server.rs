//! A webhook server with a no-op review runner, for load tests (`benches/webhook_load.sh`).
//!
//! Usage: `webhook_server DATABASE_URL [ADDRESS]` with the secret in `REDLINE_WEBHOOK_SECRET`.
//! Prints `listening on ADDRESS` once ready; stops on Ctrl-C or SIGTERM.

use std::sync::Arc;

use anyhow::{Context, bail};
use async_trait::async_trait;
use redline::llm::Secret;
use redline::queue::{
    Job, JobError, JobRunner, Queue, RunOutcome, ShutdownOutcome, WorkerConfig, WorkerPool,
};
use redline::server::{AppState, serve};
use tokio_util::sync::CancellationToken;

/// Completes every job at once.
struct NoopRunner;

#[async_trait]
impl JobRunner for NoopRunner {
    async fn run(&self, _job: &Job, _cancel: CancellationToken) -> Result<RunOutcome, JobError> {
        Ok(RunOutcome::Completed)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let mut args = std::env::args().skip(1);
    let Some(database_url) = args.next() else {
        bail!("usage: webhook_server DATABASE_URL [ADDRESS]");
    };
    let address = args.next().unwrap_or_else(|| "127.0.0.1:8080".to_string());
    let secret =
        std::env::var("REDLINE_WEBHOOK_SECRET").context("REDLINE_WEBHOOK_SECRET is not set")?;

    let queue = Queue::connect(&database_url).await?;
    let state = AppState::new(queue.clone(), Secret::new(secret));
    let pool = WorkerPool::start(
        queue,
        Arc::new(NoopRunner),
        WorkerConfig::default(),
        Arc::clone(&state.metrics),
    );
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .with_context(|| format!("binding {address}"))?;
    println!("listening on {}", listener.local_addr()?);
    serve(listener, state, shutdown_signal()).await?;
    if let ShutdownOutcome::TimedOut { abandoned } = pool.shutdown().await {
        eprintln!("{abandoned} jobs were still running at exit");
    }
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
