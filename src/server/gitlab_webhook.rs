//! `POST /gitlab/webhook`: GitLab's deliveries, checked, deduplicated, stored, answered.
//!
//! Invariants: `X-Gitlab-Token` is compared with `GITLAB_WEBHOOK_SECRET` in constant time
//! (digests of both, so not even the length leaks) before a byte of the body is read; a
//! missing or wrong token gets 401, and so does every delivery when GitLab is not
//! configured (there is no secret to match). The body is then read within the same
//! request limits and unverified-bytes budget as GitHub's, counted in the same metrics,
//! and deduplicated on `X-Gitlab-Event-UUID` per forge. A review job is committed to the
//! queue before the 202 is sent; a note to answer is handed to the note hook, never
//! queued (an answer is no review and must not replace one).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use ring::digest::{SHA256, digest};
use serde_json::json;
use subtle::ConstantTimeEq;
use tracing::{info, warn};

use super::AppState;
use super::body::{AuthenticatedAlready, read_verified};
use super::events::{command_job, review_job};
use super::metrics::DeliveryOutcome;
use super::webhook::{
    Answer, declared_length, draft_skipped, duplicate_answer, header, ignored_answer, job_queued,
    refuse_body, reply, store,
};
use crate::forge::{ForgeEvent, ForgeKind, ThreadNote};
use crate::gitlab::hook::{HookConfig, classify};
use crate::llm::Secret;
use crate::queue::{Accepted, NewDelivery, NewJob};

const EVENT_HEADER: &str = "x-gitlab-event";
const DELIVERY_HEADER: &str = "x-gitlab-event-uuid";
const TOKEN_HEADER: &str = "x-gitlab-token";

/// Called with a note on a merge request that may get an answer in its discussion (the
/// hook checks, answers and records; it must not block).
pub(crate) type GitLabNoteHook = Arc<dyn Fn(ThreadNote) + Send + Sync>;

/// The GitLab side of the server: its secret, how hooks are read, who answers notes.
#[derive(Clone)]
pub struct GitLabHooks {
    /// `GITLAB_WEBHOOK_SECRET`: the `X-Gitlab-Token` every delivery must carry.
    pub(crate) secret: Secret,
    /// How hooks are read (drafts, the token's own username).
    pub(crate) config: HookConfig,
    /// Answers notes in discussions.
    pub(crate) on_note: Option<GitLabNoteHook>,
}

impl GitLabHooks {
    /// Deliveries must carry `secret`; drafts are reviewed when `review_drafts`;
    /// `own_username` is the token's user (its notes are Redline's own).
    pub fn new(secret: Secret, review_drafts: bool, own_username: Option<String>) -> GitLabHooks {
        GitLabHooks {
            secret,
            config: HookConfig {
                review_drafts,
                own_username,
            },
            on_note: None,
        }
    }

    /// Hands the id of every note that may get an answer to `hook`, instead of answering
    /// it (for embedding and tests: what the server would answer, without a forge).
    pub fn on_note_ids(&mut self, hook: impl Fn(u64) + Send + Sync + 'static) {
        self.on_note = Some(Arc::new(move |note: ThreadNote| hook(note.comment.id)));
    }
}

impl std::fmt::Debug for GitLabHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitLabHooks")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Whether `given` is the secret, compared in constant time.
fn token_matches(secret: &Secret, given: Option<&[u8]>) -> bool {
    let Some(given) = given else {
        return false;
    };
    if secret.is_empty() {
        return false;
    }
    let expected = digest(&SHA256, secret.expose().as_bytes());
    let given = digest(&SHA256, given);
    bool::from(expected.as_ref().ct_eq(given.as_ref()))
}

/// Handles one GitLab delivery. See the module documentation.
pub(crate) async fn receive(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    let event = header(headers, EVENT_HEADER);
    let event_label = event.as_ref().ok().copied().unwrap_or("unknown");
    let token = headers.get(TOKEN_HEADER).map(|value| value.as_bytes());
    let Some(gitlab) = state
        .gitlab
        .clone()
        .filter(|gitlab| token_matches(&gitlab.secret, token))
    else {
        warn!(event = event_label, "GitLab webhook refused: invalid token");
        state
            .metrics
            .record_delivery(event_label, DeliveryOutcome::Unauthorized);
        return reply(StatusCode::UNAUTHORIZED, json!({"error": "invalid token"}));
    };
    let declared = declared_length(headers);
    let read = read_verified(
        body,
        declared,
        &state.limits,
        &state.unverified,
        AuthenticatedAlready,
    )
    .await;
    let body = match read {
        Ok(body) => body,
        Err(err) => return refuse_body(&state, event_label, err),
    };
    let answer = accept(&state, &gitlab, headers, &body).await;
    let (outcome, status, value) = match answer {
        Ok(answer) | Err(answer) => answer,
    };
    state.metrics.record_delivery(event_label, outcome);
    reply(status, value)
}

fn bad_request(message: String) -> Answer {
    (
        DeliveryOutcome::BadRequest,
        StatusCode::BAD_REQUEST,
        json!({ "error": message }),
    )
}

/// Everything after the token check and the body read.
async fn accept(
    state: &AppState,
    gitlab: &GitLabHooks,
    headers: &axum::http::HeaderMap,
    body: &[u8],
) -> Result<Answer, Answer> {
    let event = header(headers, EVENT_HEADER)
        .map_err(|problem| bad_request(problem.describe("X-Gitlab-Event")))?;
    let delivery_id = header(headers, DELIVERY_HEADER)
        .map_err(|problem| bad_request(problem.describe("X-Gitlab-Event-UUID")))?;
    let (action, request) = classify(event, body, &gitlab.config).map_err(|err| {
        // The parser's message may quote payload text, so it goes back to the sender only.
        warn!(
            delivery = delivery_id,
            event, "GitLab webhook payload refused"
        );
        bad_request(err.to_string())
    })?;
    let delivery = NewDelivery {
        forge: ForgeKind::GitLab,
        delivery_id: delivery_id.to_string(),
        event: event.to_string(),
        action: action.clone(),
        received_at: Utc::now(),
    };
    let job = job_of(&request).map_err(|err| bad_request(err.to_string()))?;
    let accepted = store(state, delivery, job)
        .await
        .map_err(|(outcome, status, message)| (outcome, status, json!({ "error": message })))?;
    Ok(answer(state, gitlab, event, delivery_id, accepted, request))
}

/// The job a request queues, if any: the same job a GitHub request gets, on GitLab.
fn job_of(request: &ForgeEvent) -> Result<Option<NewJob>, serde_json::Error> {
    Ok(match request {
        ForgeEvent::Review(review) => {
            let mut job = review_job((**review).clone(), ForgeKind::GitLab)?;
            // A hook without its last commit names no head; the worker reads it anyway.
            job.head_sha = job.head_sha.filter(|sha| !sha.is_empty());
            Some(job)
        }
        ForgeEvent::Command(command) => Some(command_job(command.clone(), ForgeKind::GitLab)?),
        _ => None,
    })
}

/// The answer to a stored delivery, by what the queue did with it and what it asked for.
fn answer(
    state: &AppState,
    gitlab: &GitLabHooks,
    event: &str,
    delivery_id: &str,
    accepted: Accepted,
    request: ForgeEvent,
) -> Answer {
    match (accepted, request) {
        (Accepted::Duplicate, _) => duplicate_answer(),
        (
            Accepted::Queued {
                job_id,
                superseded,
                cancel_requested,
            },
            _,
        ) => {
            info!(delivery = delivery_id, event, job = %job_id, superseded, cancel_requested,
                "GitLab review queued");
            job_queued(state, job_id)
        }
        (Accepted::Recorded, ForgeEvent::Thread(note)) => {
            info!(project = %note.change.repository, mr = note.change.number,
                note = note.comment.id, "GitLab note for Redline");
            if let Some(hook) = &gitlab.on_note {
                hook(*note);
            }
            (
                DeliveryOutcome::Acknowledged,
                StatusCode::ACCEPTED,
                json!({"status": "accepted", "reason": "note for Redline; an answer may follow"}),
            )
        }
        (Accepted::Recorded, ForgeEvent::Draft(review)) => {
            info!(
                delivery = delivery_id,
                event, "draft merge request; not reviewed"
            );
            draft_skipped(state, ForgeKind::GitLab, *review)
        }
        (Accepted::Recorded, request) => {
            let reason = match request {
                ForgeEvent::Ignore(reason) => reason.to_string(),
                _ => "nothing to do".to_string(),
            };
            info!(
                delivery = delivery_id,
                event, reason, "GitLab delivery ignored"
            );
            ignored_answer(reason)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_must_be_the_secret() {
        let secret = Secret::new("s3cret");
        assert!(token_matches(&secret, Some(b"s3cret")));
        assert!(!token_matches(&secret, Some(b"s3cret ")));
        assert!(!token_matches(&secret, Some(b"")));
        assert!(!token_matches(&secret, None));
        assert!(
            !token_matches(&Secret::new(""), Some(b"")),
            "no secret, no entry"
        );
    }
}
