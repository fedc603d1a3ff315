//! `redline serve`: the GitHub App webhook server with its durable queue and workers.

use std::path::PathBuf;
use std::sync::Arc;

use super::review::model_client;
use super::{EXIT_ERROR, EXIT_OK, ServeArgs};
use crate::agent::events::EventSink;
use crate::config::limits::{self, LimitCeilings};
use crate::config::{self, FileConfig};
use crate::github::{AppAuth, PublishConfig, api_url_from_env};
use crate::llm::Secret;
use crate::llm::pricing::builtin_price;
use crate::queue::{Queue, WorkerConfig, WorkerPool};
use crate::server::review_runner::{ModelFactory, ReviewRunner};
use crate::server::{AppState, Metrics, ServerConfig, serve};

/// Runs `redline serve` until SIGTERM or Ctrl-C, and returns the exit code.
pub async fn run(args: ServeArgs) -> i32 {
    match serve_app(args).await {
        Ok(()) => EXIT_OK,
        Err(message) => {
            eprintln!("error: {message}");
            EXIT_ERROR
        }
    }
}

/// A required setting from the environment; the error names it.
fn required(name: &str) -> Result<String, String> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| format!("{name} is not set"))
}

/// The App's private key, from `GITHUB_APP_PRIVATE_KEY` or the file named by `GITHUB_APP_PRIVATE_KEY_PATH`.
fn private_key() -> Result<Secret, String> {
    if let Ok(pem) = required("GITHUB_APP_PRIVATE_KEY") {
        // Platforms that cannot hold newlines in variables pass them escaped.
        return Ok(Secret::new(pem.replace("\\n", "\n")));
    }
    let path = required("GITHUB_APP_PRIVATE_KEY_PATH").map_err(|_| {
        "neither GITHUB_APP_PRIVATE_KEY nor GITHUB_APP_PRIVATE_KEY_PATH is set".to_string()
    })?;
    std::fs::read_to_string(&path)
        .map(Secret::new)
        .map_err(|e| format!("GITHUB_APP_PRIVATE_KEY_PATH: cannot read {path}: {e}"))
}

async fn serve_app(args: ServeArgs) -> Result<(), String> {
    let app_id = required("GITHUB_APP_ID")
        .or_else(|_| required("GITHUB_APP_CLIENT_ID"))
        .map_err(|_| "GITHUB_APP_ID (or GITHUB_APP_CLIENT_ID) is not set".to_string())?;
    let key = private_key()?;
    let secret = Secret::new(required("GITHUB_WEBHOOK_SECRET")?);
    let database_url =
        std::env::var("REDLINE_DATABASE_URL").unwrap_or_else(|_| "sqlite://redline.db".into());
    let settings = config::resolve_model(&args.model.flags(), &FileConfig::default(), &|k| {
        std::env::var(k).ok()
    })
    .map_err(|e| e.to_string())?;
    let ceilings = ceilings(&args, &settings.model)?;
    let auth = AppAuth::new(&api_url_from_env(), &app_id, key)
        .map_err(|e| format!("GITHUB_APP_PRIVATE_KEY: {e}"))?;
    let queue = Queue::connect(&database_url)
        .await
        .map_err(|e| format!("REDLINE_DATABASE_URL: {e}"))?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| format!("--listen {}: {e}", args.listen))?;

    let metrics = Arc::new(Metrics::new());
    let model: ModelFactory = Arc::new(|settings| model_client(settings, &EventSink::discard()));
    let runner = ReviewRunner {
        auth: auth.clone(),
        cache_dir: args
            .cache_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("redline-cache")),
        model,
        settings,
        publish: PublishConfig::default(),
        metrics: metrics.clone(),
        cache_budget_bytes: args.cache_budget_mb.saturating_mul(1024 * 1024),
        failure_notice: args.failure_notice,
        ceilings,
    };
    let workers = WorkerConfig {
        workers: args.workers.max(1),
        lease: std::time::Duration::from_secs(args.lease_secs.max(1)),
        heartbeat_interval: std::time::Duration::from_secs(args.heartbeat_secs.max(1)),
        ..WorkerConfig::default()
    };
    let pool = WorkerPool::start(queue.clone(), Arc::new(runner), workers, metrics.clone());
    let invalidate = auth.clone();
    let state = AppState {
        metrics,
        config: ServerConfig {
            review_drafts: args.review_drafts,
        },
        on_installation_removed: Some(Arc::new(move |id| invalidate.invalidate(id))),
        ..AppState::new(queue, secret)
    };
    tracing::info!(listen = %args.listen, "redline serve listening");
    eprintln!("redline serve listening on {}", args.listen);
    serve(listener, state, shutdown_signal())
        .await
        .map_err(|e| e.to_string())?;
    // Stop taking jobs; running ones reach a safe point or finish.
    pool.shutdown().await;
    Ok(())
}

/// `--max-cost-ceiling` and `--timeout-ceiling`; a cost ceiling needs the model's built-in price.
fn ceilings(args: &ServeArgs, model: &str) -> Result<LimitCeilings, String> {
    let max_cost_usd = args
        .max_cost_ceiling
        .as_deref()
        .map(|text| {
            limits::parse_cost(text)
                .map_err(|e| format!("invalid value for `--max-cost-ceiling`: {e}"))
        })
        .transpose()?;
    let timeout = args
        .timeout_ceiling
        .as_deref()
        .map(|text| {
            limits::parse_duration(text)
                .map_err(|e| format!("invalid value for `--timeout-ceiling`: {e}"))
        })
        .transpose()?;
    if max_cost_usd.is_some() && builtin_price(model).is_none() {
        return Err(format!(
            "--max-cost-ceiling: the built-in price table has no price for model `{model}`, so a cost ceiling cannot be kept"
        ));
    }
    Ok(LimitCeilings {
        max_cost_usd,
        timeout,
    })
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
