//! `POST /webhook`: verify, dedupe, store, answer.
//!
//! The signature header is checked before the body is read (a missing or malformed one is
//! refused at once); the body is then read within the request limits and hashed as it
//! arrives ([`super::body`]). Nothing of the body is parsed before the signature matches.

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Value, json};
use tracing::{error, info, warn};

use super::AppState;
use super::body::{BodyError, read_verified};
use super::events::{Classified, CommandReply, Decision, InstallationChange, classify};
use super::metrics::DeliveryOutcome;
use super::signature::SignatureCheck;
use crate::forge::{IgnoreReason, ReviewRequest};
use crate::queue::{Accepted, ForgeKind, JobId, NewDelivery, NewJob, QueueError};

const EVENT_HEADER: &str = "x-github-event";
const DELIVERY_HEADER: &str = "x-github-delivery";
const SIGNATURE_HEADER: &str = "x-hub-signature-256";
/// GitHub sends UUIDs; anything much longer is not GitHub.
const MAX_HEADER_VALUE_LEN: usize = 128;

/// Handles one delivery. The signature is checked on the raw body before anything is parsed;
/// a review job is committed to the queue before the 202 is sent.
pub(crate) async fn receive(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    let event = header(headers, EVENT_HEADER);
    let event_label = event.as_ref().ok().copied().unwrap_or("unknown");
    let signature = headers
        .get(SIGNATURE_HEADER)
        .map(|value| value.to_str().unwrap_or_default());
    let verified = match SignatureCheck::begin(&state.webhook_secret, signature) {
        Ok(check) => {
            let declared = declared_length(headers);
            read_verified(body, declared, &state.limits, &state.unverified, check).await
        }
        Err(err) => Err(BodyError::Signature(err)),
    };
    let body = match verified {
        Ok(body) => body,
        Err(err) => return refuse_body(&state, event_label, err),
    };
    match accept(&state, event, header(headers, DELIVERY_HEADER), &body).await {
        Ok((outcome, status, answer)) => {
            state.metrics.record_delivery(event_label, outcome);
            reply(status, answer)
        }
        Err((outcome, status, message)) => {
            state.metrics.record_delivery(event_label, outcome);
            reply(status, json!({"error": message}))
        }
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
    warn!(event, reason = %err, "webhook refused");
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
pub(super) fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse().ok())
}

pub(super) type Answer = (DeliveryOutcome, StatusCode, Value);

/// A redelivery: acknowledged, not queued again.
pub(super) fn duplicate_answer() -> Answer {
    (
        DeliveryOutcome::Duplicate,
        StatusCode::OK,
        json!({"status": "duplicate"}),
    )
}

/// A delivery whose review was queued as `job_id`: the check hook hears of it (it works in
/// the background).
pub(super) fn job_queued(state: &AppState, job_id: JobId) -> Answer {
    if let Some(hook) = &state.on_job_queued {
        hook(job_id);
    }
    queued_answer(job_id)
}

/// A delivery whose review was queued as `job_id`.
fn queued_answer(job_id: JobId) -> Answer {
    (
        DeliveryOutcome::Queued,
        StatusCode::ACCEPTED,
        json!({"status": "queued", "job_id": job_id.0}),
    )
}

/// A draft change's delivery: not reviewed; the check hook shows it skipped (in the
/// background).
pub(super) fn draft_skipped(state: &AppState, forge: ForgeKind, review: ReviewRequest) -> Answer {
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
/// A delivery refused: its outcome, status and the message for the sender.
pub(super) type Refusal = (DeliveryOutcome, StatusCode, String);

/// Stores a delivery and its job, if any, durably (deduplicated per forge). A value the
/// database cannot hold (a number past i64) is the sender's mistake, which no retry
/// mends (400); any other failure asks for a redelivery (503).
pub(super) async fn store(
    state: &AppState,
    delivery: NewDelivery,
    job: Option<NewJob>,
) -> Result<Accepted, Refusal> {
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
                warn!(%forge, delivery = delivery_id, event, %reason, "webhook payload refused");
                (
                    DeliveryOutcome::BadRequest,
                    StatusCode::BAD_REQUEST,
                    format!("unexpected payload: {reason}"),
                )
            }
            err => {
                error!(%forge, delivery = delivery_id, event, error = %err, "could not store the delivery");
                (
                    DeliveryOutcome::Error,
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the queue is unavailable; retry the delivery".to_string(),
                )
            }
        })
}

/// Everything after the signature check.
async fn accept(
    state: &AppState,
    event: Result<&str, HeaderProblem>,
    delivery_id: Result<&str, HeaderProblem>,
    body: &[u8],
) -> Result<Answer, Refusal> {
    let bad_request = |message: String| {
        (
            DeliveryOutcome::BadRequest,
            StatusCode::BAD_REQUEST,
            message,
        )
    };
    let event = event.map_err(|problem| bad_request(problem.describe("X-GitHub-Event")))?;
    let delivery_id =
        delivery_id.map_err(|problem| bad_request(problem.describe("X-GitHub-Delivery")))?;
    let Classified { action, decision } = classify(event, body, &state.config).map_err(|err| {
        // The parser's message may quote payload text, so it goes back to the sender only.
        warn!(delivery = delivery_id, event, "webhook payload refused");
        bad_request(err.to_string())
    })?;
    let delivery = NewDelivery {
        forge: ForgeKind::GitHub,
        delivery_id: delivery_id.to_string(),
        event: event.to_string(),
        action: action.clone(),
        received_at: Utc::now(),
    };
    let (job, decision) = match decision {
        Decision::Review(job) => (Some(job), None),
        other => (None, Some(other)),
    };
    let accepted = store(state, delivery, job).await?;
    Ok(answer(
        state,
        event,
        delivery_id,
        &action,
        accepted,
        decision,
    ))
}

/// The answer to a stored delivery, by what the queue did with it and what it asked for.
fn answer(
    state: &AppState,
    event: &str,
    delivery_id: &str,
    action: &Option<String>,
    accepted: Accepted,
    decision: Option<Decision>,
) -> Answer {
    match (accepted, decision) {
        (Accepted::Duplicate, _) => duplicate_answer(),
        (
            Accepted::Queued {
                job_id,
                superseded,
                cancel_requested,
            },
            _,
        ) => {
            info!(delivery = delivery_id, event, action, job = %job_id, superseded,
                cancel_requested, "review queued");
            job_queued(state, job_id)
        }
        (Accepted::Recorded, Some(Decision::Installation(change))) => {
            acknowledge_installation(state, event, &change);
            (
                DeliveryOutcome::Acknowledged,
                StatusCode::OK,
                json!({"status": "acknowledged"}),
            )
        }
        (Accepted::Recorded, Some(Decision::Reply(reply))) => answer_command(state, reply),
        (Accepted::Recorded, Some(Decision::Draft(review))) => {
            info!(
                delivery = delivery_id,
                event, action, "draft pull request; not reviewed"
            );
            draft_skipped(state, ForgeKind::GitHub, *review)
        }
        (Accepted::Recorded, Some(Decision::Thread(comment))) => answer_thread(state, comment),
        (Accepted::Recorded, Some(Decision::Pong)) => {
            info!(delivery = delivery_id, "ping");
            (
                DeliveryOutcome::Pong,
                StatusCode::OK,
                json!({"status": "pong"}),
            )
        }
        (Accepted::Recorded, decision) => {
            let reason = match decision {
                Some(Decision::Ignore(reason)) => reason,
                _ => "nothing to do".to_string(),
            };
            info!(
                delivery = delivery_id,
                event, action, reason, "delivery ignored"
            );
            ignored_answer(reason)
        }
    }
}

/// Hands a malformed command's usage reply to the hook that posts it (not queued: it is
/// no review and must not replace one).
fn answer_command(state: &AppState, reply: CommandReply) -> Answer {
    info!(repository = %reply.repo_full_name, pr = reply.pr_number, "malformed /redline command");
    if let Some(hook) = &state.on_command_reply {
        hook(reply);
    }
    (
        DeliveryOutcome::Ignored,
        StatusCode::ACCEPTED,
        json!({"status": "ignored", "reason": "malformed /redline command; usage replied"}),
    )
}

/// Hands a review comment to the hook that may answer it in its thread (not queued: an
/// answer is no review and must not replace one).
fn answer_thread(state: &AppState, comment: crate::github::thread::ThreadComment) -> Answer {
    info!(repository = %format!("{}/{}", comment.owner, comment.repo), pr = comment.pr_number,
        comment = comment.comment_id, "review comment for Redline");
    if let Some(hook) = &state.on_thread_comment {
        hook(comment);
    }
    (
        DeliveryOutcome::Acknowledged,
        StatusCode::ACCEPTED,
        json!({"status": "accepted", "reason": "review comment; an answer may follow"}),
    )
}

fn acknowledge_installation(state: &AppState, event: &str, change: &InstallationChange) {
    info!(
        event,
        installation = change.id,
        action = %change.action,
        access_removed = change.access_removed,
        "installation changed"
    );
    if change.access_removed
        && let Some(hook) = &state.on_installation_removed
    {
        hook(change.id);
    }
}

/// Why a required header's value cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HeaderProblem {
    Missing,
    TooLong(usize),
    NotText,
}

impl HeaderProblem {
    /// The message for the sender, naming the header.
    pub(super) fn describe(self, name: &str) -> String {
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
pub(super) fn header<'h>(headers: &'h HeaderMap, name: &str) -> Result<&'h str, HeaderProblem> {
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

pub(super) fn reply(status: StatusCode, body: Value) -> Response {
    (status, Json(body)).into_response()
}
