//! The GitHub App's (and GitLab's) HTTP server: webhook intake, health and metrics.
//!
//! `POST /webhook` verifies `X-Hub-Signature-256` on the raw body, dedupes on
//! `X-GitHub-Delivery`, and stores review jobs in the [`Queue`] before answering.
//! `POST /gitlab/webhook` does the same for GitLab ([`gitlab`]: `X-Gitlab-Token`,
//! `X-Gitlab-Event-UUID`), within the same limits and budget.
//! `GET /healthz` answers 200 while the database does; `GET /metrics` serves Prometheus text.
//!
//! Invariants: nothing a peer sends is held without a bound. Connections are capped and
//! each phase of a connection has a deadline ([`ConnectionLimits`]); bodies are read at a
//! minimum rate, within a deadline and within a shared budget of unverified bytes
//! ([`RequestLimits`]), and are hashed while they stream in, so a bad signature is refused
//! as soon as the body ends.

//! Layering: [`intake`], [`pipeline`] and [`delivery_job`] are forge-neutral: each forge
//! supplies its part from its own folder, [`github`] (the App: its webhook, its reading
//! of events, its job and answer steps) and [`gitlab`] (the same for GitLab), and only
//! those two import a forge's module (checked by `tests/layering.rs`), but for the check
//! statuses' forge per job ([`check_status`]).

mod answer_pool;
mod body;
mod budget;
pub mod cache;
pub mod check_status;
mod connection;
mod delivery_job;
mod forge_runner;
pub use forge_runner::ForgeRunner;
pub mod github;
pub(crate) use github::events::CommandReply;
pub mod gitlab;
mod intake;
pub(crate) use gitlab::notes::gitlab_note_hook;
pub use gitlab::webhook::GitLabHooks;
pub(crate) use gitlab::webhook::GitLabNoteHook;
mod job_transcript;
pub(crate) mod limits;
mod listen;
pub(crate) mod memory;
pub mod metrics;
pub mod pipeline;
pub mod retention;
pub mod signature;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::time::timeout;
use tracing::warn;

pub use limits::{ConnectionLimits, RequestLimits};
pub use metrics::Metrics;
pub(crate) use metrics::QueueSnapshot;

use budget::UnverifiedBudget;

use crate::llm::Secret;
use crate::queue::Queue;

/// Largest accepted webhook body (GitHub caps payloads at 25 MB).
pub const WEBHOOK_BODY_LIMIT: usize = 25 * 1024 * 1024;

/// How long `/healthz` and `/metrics` wait for the database.
const DATABASE_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Called with an installation id when the App is uninstalled or suspended there.
pub(crate) type InstallationHook = Arc<dyn Fn(u64) + Send + Sync>;

/// Called with the usage reply to a malformed `/redline` command (posting it is up to the hook).
pub(crate) type CommandReplyHook = Arc<dyn Fn(CommandReply) + Send + Sync>;
/// Called with the id of each review job the intake stored (the hook shows it queued in
/// the background; it must not block).
pub(crate) type JobQueuedHook = Arc<dyn Fn(crate::queue::JobId) + Send + Sync>;
/// Called with a draft change a delivery named (the hook shows its commit skipped in the
/// background; it must not block).
pub(crate) type DraftHook =
    Arc<dyn Fn(crate::forge::ForgeKind, crate::forge::ReviewRequest) + Send + Sync>;
/// Called with a review comment that may get an answer in its thread (the hook checks,
/// answers and records; it must not block).
pub(crate) type ThreadCommentHook = Arc<dyn Fn(crate::forge::thread::ThreadComment) + Send + Sync>;

/// Behaviour switches of the server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerConfig {
    /// Review draft pull requests too (default: skip them until ready for review).
    pub review_drafts: bool,
    /// The App's slug: a review comment mentioning `@slug` gets an answer (unknown: only
    /// replies in Redline's threads and `/redline` commands do).
    pub app_slug: Option<String>,
}

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    /// Where deliveries and jobs are stored.
    pub queue: Queue,
    /// The App's webhook secret. Empty means every delivery is refused.
    pub webhook_secret: Secret,
    /// Process metrics (share the same `Arc` with the [`crate::queue::WorkerPool`]).
    pub metrics: Arc<Metrics>,
    /// Behaviour switches.
    pub config: ServerConfig,
    /// Invalidates cached App tokens of an installation that was deleted or suspended.
    pub on_installation_removed: Option<InstallationHook>,
    /// Answers malformed `/redline` commands.
    pub on_command_reply: Option<CommandReplyHook>,
    /// Answers comments in review threads.
    pub on_thread_comment: Option<ThreadCommentHook>,
    /// Shows each stored review job in the change's checks (GitHub and GitLab alike).
    pub on_job_queued: Option<JobQueuedHook>,
    /// Shows a draft's commit skipped in the change's checks.
    pub on_draft: Option<DraftHook>,
    /// GitLab's deliveries (`POST /gitlab/webhook`); `None`: every one is refused.
    pub gitlab: Option<GitLabHooks>,
    /// Bounds on reading request bodies (set with [`AppState::with_limits`]).
    pub(crate) limits: RequestLimits,
    /// Bytes unverified bodies may hold at once, shared by all requests.
    pub(crate) unverified: UnverifiedBudget,
}

impl AppState {
    /// State with fresh metrics, default config and limits, and no installation hook.
    pub fn new(queue: Queue, webhook_secret: Secret) -> AppState {
        let limits = RequestLimits::default();
        AppState {
            queue,
            webhook_secret,
            metrics: Arc::new(Metrics::new()),
            config: ServerConfig::default(),
            on_installation_removed: None,
            on_command_reply: None,
            on_thread_comment: None,
            on_job_queued: None,
            on_draft: None,
            gitlab: None,
            unverified: UnverifiedBudget::new(limits.max_unverified_bytes, limits.unverified_wait),
            limits,
        }
    }

    /// This state with other request limits (and a fresh unverified budget of their size).
    pub fn with_limits(mut self, limits: RequestLimits) -> AppState {
        self.unverified =
            UnverifiedBudget::new(limits.max_unverified_bytes, limits.unverified_wait);
        self.limits = limits;
        self
    }
}

impl fmt::Debug for AppState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppState")
            .field("queue", &self.queue)
            .field("webhook_secret", &self.webhook_secret)
            .field("config", &self.config)
            .field("limits", &self.limits)
            .field("gitlab", &self.gitlab)
            .field(
                "on_installation_removed",
                &self.on_installation_removed.is_some(),
            )
            .finish_non_exhaustive()
    }
}

/// The router: `POST /webhook`, `POST /gitlab/webhook`, `GET /healthz`, `GET /metrics`.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/webhook", post(github::webhook::receive))
        .route("/gitlab/webhook", post(gitlab::webhook::receive))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        // No `DefaultBodyLimit`: the webhook handler reads the raw body itself, within
        // `RequestLimits` and the unverified-bytes budget (an extractor limit would be inert).
        .with_state(state)
}

/// Serves [`app`] on `listener` with default [`ConnectionLimits`] until `shutdown`
/// resolves, then finishes in-flight requests.
pub async fn serve<F>(listener: TcpListener, state: AppState, shutdown: F) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    serve_with_limits(listener, state, ConnectionLimits::default(), shutdown).await
}

/// Serves [`app`] on `listener` over HTTP/1.1 under `limits` until `shutdown` resolves,
/// then finishes in-flight requests and closes every connection.
pub async fn serve_with_limits<F>(
    listener: TcpListener,
    state: AppState,
    limits: ConnectionLimits,
    shutdown: F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    listen::run(listener, app(state), limits, shutdown).await
}

async fn healthz(State(state): State<AppState>) -> Response {
    match timeout(DATABASE_CHECK_TIMEOUT, state.queue.ping()).await {
        Ok(Ok(())) => (StatusCode::OK, "ok\n").into_response(),
        Ok(Err(err)) => {
            warn!(error = %err, "health check: database error");
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable\n").into_response()
        }
        Err(_) => {
            warn!("health check: database timed out");
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable\n").into_response()
        }
    }
}

async fn metrics(State(state): State<AppState>) -> Response {
    let snapshot = timeout(DATABASE_CHECK_TIMEOUT, queue_snapshot(&state.queue))
        .await
        .ok()
        .flatten();
    let body = state.metrics.render(snapshot.as_ref());
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

async fn queue_snapshot(queue: &Queue) -> Option<QueueSnapshot> {
    let by_state = queue.counts_by_state().await.ok()?;
    let depth = by_state
        .get(&crate::queue::JobState::Queued)
        .copied()
        .unwrap_or(0);
    Some(QueueSnapshot { depth, by_state })
}
