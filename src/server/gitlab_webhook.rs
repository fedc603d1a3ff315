//! `POST /gitlab/webhook`: GitLab's deliveries, checked, deduplicated, stored, answered.
//!
//! Invariants: every project has its own token ([`crate::gitlab::project_hook_token`],
//! derived from `GITLAB_WEBHOOK_SECRET` and the project's id): a delivery is taken only
//! when `X-Gitlab-Token` is the token of the project id its body names, compared in
//! constant time; the master secret itself opens nothing. Without a token, or when GitLab
//! is not configured, the answer is 401 before a byte of the body is read; the body is read
//! within the same request limits and unverified-bytes budget as GitHub's, and a body
//! naming no project id gets 401 too. A delivery whose project path is not its id's (as
//! GitLab says, when the server has a client) is refused before it is stored, so it
//! supersedes no other project's job. Then deliveries are counted in the same metrics and
//! deduplicated on `X-Gitlab-Event-UUID` per forge. A review job is committed to the queue
//! before the 202 is sent; a note to answer is handed to the note hook, never queued (an
//! answer is no review and must not replace one). Payload values in log lines are escaped
//! ([`crate::text::logged`]).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde::Deserialize;
use serde_json::json;
use tracing::{info, warn};

use super::AppState;
use super::body::{CheckedByCaller, read_verified};
use super::events::{command_job, review_job};
use super::metrics::DeliveryOutcome;
use super::webhook::{
    Answer, declared_length, draft_skipped, duplicate_answer, header, ignored_answer, job_queued,
    refuse_body, reply, store,
};
use crate::forge::{ChangeRef, ForgeEvent, ForgeKind, ThreadNote};
use crate::gitlab::hook::{HookConfig, HookError, classify};
use crate::gitlab::is_project_token;
use crate::gitlab::own_user::OwnUser;
use crate::gitlab::project_path::ProjectPaths;
use crate::llm::Secret;
use crate::queue::{Accepted, NewDelivery, NewJob};
use crate::text::logged;

const EVENT_HEADER: &str = "x-gitlab-event";
const DELIVERY_HEADER: &str = "x-gitlab-event-uuid";
const TOKEN_HEADER: &str = "x-gitlab-token";

/// Called with a note on a merge request that may get an answer in its discussion (the
/// hook checks, answers and records; it must not block).
pub(crate) type GitLabNoteHook = Arc<dyn Fn(ThreadNote) + Send + Sync>;

/// The GitLab side of the server: its secret, how hooks are read, who answers notes.
#[derive(Clone)]
pub struct GitLabHooks {
    /// `GITLAB_WEBHOOK_SECRET`: the master secret each project's token is derived from.
    pub(crate) secret: Secret,
    /// How hooks are read (drafts, the token's own username).
    pub(crate) config: HookConfig,
    /// Answers notes in discussions.
    pub(crate) on_note: Option<GitLabNoteHook>,
    /// Checks a delivery's project path against its id (the server's; `None`: unchecked,
    /// for embedding without a GitLab client).
    pub(crate) projects: Option<Arc<ProjectPaths>>,
}

impl GitLabHooks {
    /// Deliveries must carry their project's token derived from `secret`; drafts are
    /// reviewed when `review_drafts`; `own_username` is the token's user (its notes are
    /// Redline's own).
    pub fn new(secret: Secret, review_drafts: bool, own_username: Option<String>) -> GitLabHooks {
        let own = own_username.map(OwnUser::known).unwrap_or_default();
        GitLabHooks::with_own_user(secret, review_drafts, own)
    }

    /// As [`GitLabHooks::new`], the token's user as a client learns it.
    pub(crate) fn with_own_user(secret: Secret, review_drafts: bool, own: OwnUser) -> GitLabHooks {
        GitLabHooks {
            secret,
            config: HookConfig {
                review_drafts,
                own_username: own,
            },
            on_note: None,
            projects: None,
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

/// The part of a body that names its project.
#[derive(Deserialize)]
struct Named {
    #[serde(default)]
    project: Option<NamedProject>,
}

#[derive(Deserialize)]
struct NamedProject {
    #[serde(default)]
    id: Option<u64>,
}

/// The project id `body` names (`project.id`); an error when it is no JSON object.
fn project_id(body: &[u8]) -> Result<Option<u64>, HookError> {
    if body.trim_ascii_start().first() != Some(&b'{') {
        serde_json::from_slice::<serde::de::IgnoredAny>(body)?;
        return Err(HookError::NotAnObject);
    }
    let named: Named = serde_json::from_slice(body)?;
    Ok(named.project.and_then(|project| project.id))
}

fn unauthorized(state: &AppState, event: &str) -> Response {
    warn!(event = %logged(event), "GitLab webhook refused: invalid token");
    state
        .metrics
        .record_delivery(event, DeliveryOutcome::Unauthorized);
    reply(StatusCode::UNAUTHORIZED, json!({"error": "invalid token"}))
}

/// Handles one GitLab delivery. See the module documentation.
pub(crate) async fn receive(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    let event = header(headers, EVENT_HEADER);
    let event_label = event.as_ref().ok().copied().unwrap_or("unknown");
    let token = headers.get(TOKEN_HEADER).map(|value| value.as_bytes());
    let (Some(gitlab), Some(token)) = (
        state
            .gitlab
            .clone()
            .filter(|gitlab| !gitlab.secret.is_empty()),
        token,
    ) else {
        return unauthorized(&state, event_label);
    };
    let declared = declared_length(headers);
    let read = read_verified(
        body,
        declared,
        &state.limits,
        &state.unverified,
        CheckedByCaller,
    )
    .await;
    let body = match read {
        Ok(body) => body,
        Err(err) => return refuse_body(&state, event_label, err),
    };
    let project = match project_id(&body) {
        Ok(Some(project)) => project,
        Ok(None) => return unauthorized(&state, event_label),
        Err(err) => {
            let (outcome, status, value) = bad_request(err.to_string());
            state.metrics.record_delivery(event_label, outcome);
            return reply(status, value);
        }
    };
    if !is_project_token(&gitlab.secret, project, token) {
        return unauthorized(&state, event_label);
    }
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
            delivery = %logged(delivery_id),
            event = %logged(event),
            "GitLab webhook payload refused"
        );
        bad_request(err.to_string())
    })?;
    if let Some(change) = change_of(&request) {
        project_matches(gitlab, change, delivery_id).await?;
    }
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

/// The change a request acts on, if it acts on one.
fn change_of(request: &ForgeEvent) -> Option<&ChangeRef> {
    match request {
        ForgeEvent::Review(review) | ForgeEvent::Draft(review) => Some(&review.change),
        ForgeEvent::Command(command) => Some(&command.change),
        ForgeEvent::Thread(note) => Some(&note.change),
        _ => None,
    }
}

/// Refuses a change whose project path is not its project id's (when the server can ask
/// GitLab): a token opens its own project only, whatever path the body names.
async fn project_matches(
    gitlab: &GitLabHooks,
    change: &ChangeRef,
    delivery_id: &str,
) -> Result<(), Answer> {
    let (Some(projects), Some(id)) = (&gitlab.projects, change.ids.project) else {
        return Ok(());
    };
    match projects.is_path_of(id, &change.repository).await {
        Ok(true) => Ok(()),
        Ok(false) => {
            warn!(delivery = %logged(delivery_id), project = id,
                path = %logged(&change.repository), "GitLab delivery refused: the path is not the project's");
            Err(bad_request(format!(
                "the project path is not project {id}'s"
            )))
        }
        Err(error) => {
            warn!(delivery = %logged(delivery_id), project = id, %error,
                "could not read the project's path; the delivery was refused");
            Err((
                DeliveryOutcome::Error,
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": "GitLab did not say which project this is; retry the delivery"}),
            ))
        }
    }
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
            info!(delivery = %logged(delivery_id), event = %logged(event), job = %job_id,
                superseded, cancel_requested, "GitLab review queued");
            job_queued(state, job_id)
        }
        (Accepted::Recorded, ForgeEvent::Thread(note)) => {
            info!(project = %logged(&note.change.repository), mr = note.change.number,
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
                delivery = %logged(delivery_id),
                event = %logged(event),
                "draft merge request; not reviewed"
            );
            draft_skipped(state, ForgeKind::GitLab, *review)
        }
        (Accepted::Recorded, request) => {
            let reason = match request {
                ForgeEvent::Ignore(reason) => reason.to_string(),
                _ => "nothing to do".to_string(),
            };
            info!(
                delivery = %logged(delivery_id),
                event = %logged(event),
                reason = %logged(&reason),
                "GitLab delivery ignored"
            );
            ignored_answer(reason)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_id_is_read_from_the_body() {
        let id = |body: &str| project_id(body.as_bytes());
        assert_eq!(
            id(r#"{"project": {"id": 42, "path_with_namespace": "a/b"}}"#).unwrap(),
            Some(42)
        );
        assert_eq!(
            id(r#"{"project": {"path_with_namespace": "a/b"}}"#).unwrap(),
            None
        );
        assert_eq!(id(r#"{"object_kind": "push"}"#).unwrap(), None);
        assert!(matches!(id("[1]"), Err(HookError::NotAnObject)));
        assert!(id("{not json").is_err());
        assert!(id(r#"{"project": {"id": "42"}}"#).is_err());
    }
}
