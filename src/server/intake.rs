//! The one webhook intake step, for every forge: read the body within the request limits,
//! verify it, classify it, store it (deduplicated), queue its job and answer.
//!
//! Layering: this module knows no forge. Each forge supplies a [`WebhookForge`]: its
//! headers, how its deliveries are authenticated (GitHub: the `X-Hub-Signature-256` HMAC
//! of the body, [`super::github::webhook`]; GitLab: the project's `X-Gitlab-Token`,
//! [`super::gitlab::webhook`]), its classifier, a check of the change before anything is
//! stored, and who hears of what is not queued. What a delivery asks for is a
//! [`ForgeEvent`] from the classifier to the job ([`super::delivery_job::job_of`]), with no
//! other type in between.
//!
//! Invariants: nothing of the body is read before [`WebhookForge::begin`] admits the
//! request, and nothing of it is parsed before it is authenticated; the event and delivery
//! headers are checked only then. A review job is committed to the queue before the 202
//! is sent; a delivery is deduplicated on its delivery id per forge. Every answer is
//! counted in the delivery metrics under the event's name. Payload values in log lines are
//! escaped ([`crate::text::logged`]).

use std::future::Future;

use axum::Json;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Value, json};
use tracing::{error, info, warn};

use super::AppState;
use super::body::{BodyCheck, BodyError, read_verified};
use super::delivery_job::job_of;
use super::metrics::DeliveryOutcome;
use crate::forge::{
    AccessChange, Classified, ForgeEvent, IgnoreReason, ReviewRequest, ThreadNote, UsageReply,
};
use crate::queue::{Accepted, ForgeKind, JobId, NewDelivery, NewJob, QueueError};
use crate::text::logged;

/// A forge's names of the headers every delivery carries.
#[derive(Debug, Clone, Copy)]
pub(super) struct Headers {
    /// The event's name (lowercase, as looked up).
    pub(super) event: &'static str,
    /// The event header as the sender is told of it.
    pub(super) event_name: &'static str,
    /// The delivery's id, deduplicated on (lowercase).
    pub(super) delivery: &'static str,
    /// The delivery header as the sender is told of it.
    pub(super) delivery_name: &'static str,
}

/// One forge's part of the intake. See the module documentation.
pub(super) trait WebhookForge: Sync {
    /// The forge (deliveries are deduplicated and jobs queued per forge).
    const KIND: ForgeKind;
    /// Its headers.
    const HEADERS: Headers;
    /// What checks the body as it streams in.
    type Check: BodyCheck + Send;

    /// Before a byte of the body is read: the body's check, or the answer that refuses the
    /// request (counted under `event`).
    fn begin(
        &self,
        state: &AppState,
        headers: &HeaderMap,
        event: &str,
    ) -> Result<Self::Check, Refused>;

    /// Once the body is read and its check passed: the forge's own check of the body
    /// (GitLab: the token is the project's), or the answer that refuses it.
    fn verify(
        &self,
        state: &AppState,
        headers: &HeaderMap,
        body: &[u8],
        event: &str,
    ) -> Result<(), Refused>;

    /// Why the forge's classifier refuses a body (its message goes back to the sender
    /// only: it may quote payload text).
    type Unreadable: std::error::Error;

    /// The payload's action (for the delivery record) and what the authenticated `body` of
    /// `event` asks for, or why it cannot be read.
    fn classify(
        &self,
        state: &AppState,
        event: &str,
        body: &[u8],
    ) -> Result<Classified, Self::Unreadable>;

    /// Checks the change `asked` names before anything is stored (GitLab: the project path
    /// is its id's); the answer that refuses it otherwise.
    fn admit(
        &self,
        asked: &ForgeEvent,
        delivery_id: &str,
    ) -> impl Future<Output = Result<(), Answer>> + Send;

    /// Hands a comment in a review thread to whoever may answer it (never queued: an
    /// answer is no review and must not replace one).
    fn hand_thread(&self, state: &AppState, note: ThreadNote) -> Answer;

    /// Hands a malformed command's usage reply to whoever posts it (never queued).
    fn hand_usage(&self, state: &AppState, usage: UsageReply) -> Answer;
}

/// The answer that refuses a request before it is classified (boxed: a response is large).
pub(super) type Refused = Box<Response>;

/// An answer: its outcome (for the metrics), its status and its JSON body.
pub(super) type Answer = (DeliveryOutcome, StatusCode, Value);

/// Handles one delivery for `forge`. See the module documentation.
pub(super) async fn receive<F: WebhookForge>(
    state: &AppState,
    forge: &F,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    let event = header(headers, F::HEADERS.event);
    let label = event.as_ref().ok().copied().unwrap_or("unknown");
    let check = match forge.begin(state, headers, label) {
        Ok(check) => check,
        Err(refused) => return *refused,
    };
    let declared = declared_length(headers);
    let read = read_verified(body, declared, &state.limits, &state.unverified, check).await;
    let body = match read {
        Ok(body) => body,
        Err(err) => return refuse_body(state, label, err),
    };
    if let Err(refused) = forge.verify(state, headers, &body, label) {
        return *refused;
    }
    let delivery_id = header(headers, F::HEADERS.delivery);
    let (outcome, status, value) = match accept(state, forge, event, delivery_id, &body).await {
        Ok(answer) | Err(answer) => answer,
    };
    state.metrics.record_delivery(label, outcome);
    reply(status, value)
}

/// The name of the event a request names, for the metrics (`unknown` when it names none).
pub(super) fn event_label<'h>(headers: &'h HeaderMap, name: &str) -> &'h str {
    header(headers, name).unwrap_or("unknown")
}

/// Everything after the body is authenticated.
async fn accept<F: WebhookForge>(
    state: &AppState,
    forge: &F,
    event: Result<&str, HeaderProblem>,
    delivery_id: Result<&str, HeaderProblem>,
    body: &[u8],
) -> Result<Answer, Answer> {
    let names = F::HEADERS;
    let event = event.map_err(|problem| bad_request(problem.describe(names.event_name)))?;
    let delivery_id =
        delivery_id.map_err(|problem| bad_request(problem.describe(names.delivery_name)))?;
    let Classified {
        action,
        event: asked,
    } = forge.classify(state, event, body).map_err(|unreadable| {
        // The parser's message may quote payload text, so it goes back to the sender only.
        warn!(forge = %F::KIND, delivery = %logged(delivery_id), event = %logged(event),
                "webhook payload refused");
        bad_request(unreadable.to_string())
    })?;
    forge.admit(&asked, delivery_id).await?;
    let delivery = NewDelivery {
        forge: F::KIND,
        delivery_id: delivery_id.to_string(),
        event: event.to_string(),
        action: action.clone(),
        received_at: Utc::now(),
    };
    let job =
        job_of(&asked, F::KIND).map_err(|err| bad_request(format!("unexpected payload: {err}")))?;
    let accepted = store(state, delivery, job).await?;
    let delivery = Delivered {
        event,
        delivery_id,
        action: action.as_deref(),
    };
    Ok(match accepted {
        Accepted::Duplicate => duplicate_answer(),
        Accepted::Queued {
            job_id,
            superseded,
            cancel_requested,
        } => {
            info!(forge = %F::KIND, delivery = %logged(delivery_id), event = %logged(event),
                action = delivery.action.map(logged).map(tracing::field::display),
                job = %job_id, superseded, cancel_requested, "review queued");
            job_queued(state, job_id)
        }
        Accepted::Recorded => recorded(state, forge, &delivery, asked),
    })
}

/// A stored delivery, as its log lines name it.
struct Delivered<'a> {
    event: &'a str,
    delivery_id: &'a str,
    action: Option<&'a str>,
}

/// The answer to a delivery stored without a job, by what it asked for.
fn recorded<F: WebhookForge>(
    state: &AppState,
    forge: &F,
    delivery: &Delivered<'_>,
    asked: ForgeEvent,
) -> Answer {
    let Delivered {
        event, delivery_id, ..
    } = *delivery;
    let action = delivery.action.map(logged).map(tracing::field::display);
    match asked {
        ForgeEvent::Thread(note) => forge.hand_thread(state, *note),
        ForgeEvent::Usage(usage) => forge.hand_usage(state, usage),
        ForgeEvent::Draft(review) => {
            info!(forge = %F::KIND, delivery = %logged(delivery_id), event = %logged(event),
                action, "draft change; not reviewed");
            draft_skipped(state, F::KIND, *review)
        }
        ForgeEvent::Access(change) => {
            acknowledge_access(state, event, &change);
            (
                DeliveryOutcome::Acknowledged,
                StatusCode::OK,
                json!({"status": "acknowledged"}),
            )
        }
        ForgeEvent::Ping => {
            info!(forge = %F::KIND, delivery = %logged(delivery_id), "ping");
            (
                DeliveryOutcome::Pong,
                StatusCode::OK,
                json!({"status": "pong"}),
            )
        }
        asked => {
            let reason = match asked {
                ForgeEvent::Ignore(reason) => reason.to_string(),
                // A request that names a job is queued or a duplicate, never recorded alone.
                _ => "nothing to do".to_string(),
            };
            info!(forge = %F::KIND, delivery = %logged(delivery_id), event = %logged(event),
                action, reason = %logged(&reason), "delivery ignored");
            ignored_answer(reason)
        }
    }
}

/// Logs an access change, and tells the hook when access was removed (its cached tokens
/// must go).
fn acknowledge_access(state: &AppState, event: &str, change: &AccessChange) {
    info!(
        event = %logged(event),
        installation = change.account,
        action = %logged(&change.action),
        access_removed = change.access_removed,
        "installation changed"
    );
    if change.access_removed
        && let Some(hook) = &state.on_installation_removed
    {
        hook(change.account);
    }
}

/// The answer to a delivery whose body was not read or did not match its signature.
pub(super) fn refuse_body(state: &AppState, event: &str, err: BodyError) -> Response {
    let (outcome, status) = match err {
        BodyError::Signature(_) => (DeliveryOutcome::Unauthorized, StatusCode::UNAUTHORIZED),
        BodyError::TooLarge { .. } => (DeliveryOutcome::TooLarge, StatusCode::PAYLOAD_TOO_LARGE),
        BodyError::TooSlow { .. } | BodyError::TimedOut => {
            (DeliveryOutcome::Timeout, StatusCode::REQUEST_TIMEOUT)
        }
        BodyError::Busy => (DeliveryOutcome::Busy, StatusCode::SERVICE_UNAVAILABLE),
        BodyError::Incomplete => (DeliveryOutcome::BadRequest, StatusCode::BAD_REQUEST),
    };
    warn!(event = %logged(event), reason = %err, "webhook refused");
    state.metrics.record_delivery(event, outcome);
    let message = match err {
        BodyError::Signature(_) => "invalid signature".to_string(),
        other => other.to_string(),
    };
    let mut response = reply(status, json!({"error": message}));
    if matches!(err, BodyError::Busy) {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    }
    // Part of the body may still be unread, so the connection cannot carry another
    // request; and a refused peer gets no kept-alive connection to hold.
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The `Content-Length` the peer announced, when there is a valid one.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse().ok())
}

/// A refusal of what the sender sent (400), with the message for it.
pub(super) fn bad_request(message: String) -> Answer {
    (
        DeliveryOutcome::BadRequest,
        StatusCode::BAD_REQUEST,
        json!({ "error": message }),
    )
}

/// A redelivery: acknowledged, not queued again.
fn duplicate_answer() -> Answer {
    (
        DeliveryOutcome::Duplicate,
        StatusCode::OK,
        json!({"status": "duplicate"}),
    )
}

/// A delivery whose review was queued as `job_id`: the check hook hears of it (it works in
/// the background).
fn job_queued(state: &AppState, job_id: JobId) -> Answer {
    if let Some(hook) = &state.on_job_queued {
        hook(job_id);
    }
    (
        DeliveryOutcome::Queued,
        StatusCode::ACCEPTED,
        json!({"status": "queued", "job_id": job_id.0}),
    )
}

/// A draft change's delivery: not reviewed; the check hook shows it skipped (in the
/// background).
fn draft_skipped(state: &AppState, forge: ForgeKind, review: ReviewRequest) -> Answer {
    if let Some(hook) = &state.on_draft {
        hook(forge, review);
    }
    ignored_answer(IgnoreReason::Draft.to_string())
}

/// A delivery stored and ignored, for `reason`.
pub(super) fn ignored_answer(reason: String) -> Answer {
    (
        DeliveryOutcome::Ignored,
        StatusCode::ACCEPTED,
        json!({"status": "ignored", "reason": reason}),
    )
}

/// Stores a delivery and its job, if any, durably (deduplicated per forge). A value the
/// database cannot hold (a number past i64) is the sender's mistake, which no retry
/// mends (400); any other failure asks for a redelivery (503).
async fn store(
    state: &AppState,
    delivery: NewDelivery,
    job: Option<NewJob>,
) -> Result<Accepted, Answer> {
    let (forge, delivery_id, event) = (
        delivery.forge,
        delivery.delivery_id.clone(),
        delivery.event.clone(),
    );
    state
        .queue
        .accept_delivery(delivery, job)
        .await
        .map_err(|err| match err {
            QueueError::InvalidJob { reason } => {
                warn!(%forge, delivery = %logged(&delivery_id), event = %logged(&event),
                    %reason, "webhook payload refused");
                bad_request(format!("unexpected payload: {reason}"))
            }
            err => {
                error!(%forge, delivery = %logged(&delivery_id), event = %logged(&event),
                    error = %err, "could not store the delivery");
                (
                    DeliveryOutcome::Error,
                    StatusCode::SERVICE_UNAVAILABLE,
                    json!({"error": "the queue is unavailable; retry the delivery"}),
                )
            }
        })
}

/// GitHub sends UUIDs; anything much longer is no forge's.
const MAX_HEADER_VALUE_LEN: usize = 128;

/// Why a required header's value cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HeaderProblem {
    Missing,
    TooLong(usize),
    NotText,
}

impl HeaderProblem {
    /// The message for the sender, naming the header.
    fn describe(self, name: &str) -> String {
        match self {
            HeaderProblem::Missing => format!("missing {name} header"),
            HeaderProblem::TooLong(len) => format!(
                "the {name} header is too long ({len} bytes; at most {MAX_HEADER_VALUE_LEN})"
            ),
            HeaderProblem::NotText => format!("the {name} header is not printable ASCII"),
        }
    }
}

/// A header's value when present, non-empty, printable ASCII, and of sane length.
fn header<'h>(headers: &'h HeaderMap, name: &str) -> Result<&'h str, HeaderProblem> {
    let value = headers.get(name).ok_or(HeaderProblem::Missing)?;
    if value.len() > MAX_HEADER_VALUE_LEN {
        return Err(HeaderProblem::TooLong(value.len()));
    }
    let text = value.to_str().map_err(|_| HeaderProblem::NotText)?;
    if text.is_empty() {
        return Err(HeaderProblem::Missing);
    }
    Ok(text)
}

/// A JSON answer.
pub(super) fn reply(status: StatusCode, body: Value) -> Response {
    (status, Json(body)).into_response()
}
