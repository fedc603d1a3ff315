//! `POST /webhook`: verify, dedupe, store, answer.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Value, json};
use tracing::{error, info, warn};

use super::AppState;
use super::events::{Classified, Decision, InstallationChange, classify};
use super::metrics::DeliveryOutcome;
use super::signature::verify;
use crate::queue::{Accepted, NewDelivery};

const EVENT_HEADER: &str = "x-github-event";
const DELIVERY_HEADER: &str = "x-github-delivery";
const SIGNATURE_HEADER: &str = "x-hub-signature-256";
/// GitHub sends UUIDs; anything much longer is not GitHub.
const MAX_HEADER_VALUE_LEN: usize = 128;

/// Handles one delivery. The signature is checked on the raw body before anything is parsed;
/// a review job is committed to the queue before the 202 is sent.
pub(crate) async fn receive(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let event = header(&headers, EVENT_HEADER);
    let event_label = event.unwrap_or("unknown");
    if let Err(err) = verify(
        &state.webhook_secret,
        header(&headers, SIGNATURE_HEADER),
        &body,
    ) {
        warn!(event = event_label, reason = %err, "webhook refused");
        state
            .metrics
            .record_delivery(event_label, DeliveryOutcome::Unauthorized);
        return reply(
            StatusCode::UNAUTHORIZED,
            json!({"error": "invalid signature"}),
        );
    }
    match accept(&state, event, header(&headers, DELIVERY_HEADER), &body).await {
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

type Answer = (DeliveryOutcome, StatusCode, Value);
type Refusal = (DeliveryOutcome, StatusCode, String);

/// Everything after the signature check.
async fn accept(
    state: &AppState,
    event: Option<&str>,
    delivery_id: Option<&str>,
    body: &[u8],
) -> Result<Answer, Refusal> {
    let bad_request = |message: String| {
        (
            DeliveryOutcome::BadRequest,
            StatusCode::BAD_REQUEST,
            message,
        )
    };
    let event = event.ok_or_else(|| bad_request("missing X-GitHub-Event header".into()))?;
    let delivery_id =
        delivery_id.ok_or_else(|| bad_request("missing X-GitHub-Delivery header".into()))?;
    let Classified { action, decision } = classify(event, body, &state.config).map_err(|err| {
        // The parser's message may quote payload text, so it goes back to the sender only.
        warn!(delivery = delivery_id, event, "webhook payload refused");
        bad_request(err.to_string())
    })?;
    let delivery = NewDelivery {
        delivery_id: delivery_id.to_string(),
        event: event.to_string(),
        action: action.clone(),
        received_at: Utc::now(),
    };
    let (job, decision) = match decision {
        Decision::Review(job) => (Some(job), None),
        other => (None, Some(other)),
    };
    let accepted = state
        .queue
        .accept_delivery(delivery, job)
        .await
        .map_err(|err| {
            error!(delivery = delivery_id, event, error = %err, "could not store the delivery");
            (
                DeliveryOutcome::Error,
                StatusCode::SERVICE_UNAVAILABLE,
                "the queue is unavailable; retry the delivery".to_string(),
            )
        })?;
    let answer = match (accepted, decision) {
        (Accepted::Duplicate, _) => (
            DeliveryOutcome::Duplicate,
            StatusCode::OK,
            json!({"status": "duplicate"}),
        ),
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
            (
                DeliveryOutcome::Queued,
                StatusCode::ACCEPTED,
                json!({"status": "queued", "job_id": job_id.0}),
            )
        }
        (Accepted::Recorded, Some(Decision::Installation(change))) => {
            acknowledge_installation(state, event, &change);
            (
                DeliveryOutcome::Acknowledged,
                StatusCode::OK,
                json!({"status": "acknowledged"}),
            )
        }
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
            (
                DeliveryOutcome::Ignored,
                StatusCode::ACCEPTED,
                json!({"status": "ignored", "reason": reason}),
            )
        }
    };
    Ok(answer)
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

/// A header's value when present, printable ASCII, and of sane length.
fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .filter(|value| !value.is_empty() && value.len() <= MAX_HEADER_VALUE_LEN)
}

fn reply(status: StatusCode, body: Value) -> Response {
    (status, Json(body)).into_response()
}
