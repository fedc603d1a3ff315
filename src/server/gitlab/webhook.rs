//! `POST /gitlab/webhook`: GitLab's side of the intake ([`crate::server::intake`]).
//!
//! Invariants: every project has its own token ([`crate::gitlab::project_hook_token`],
//! derived from `GITLAB_WEBHOOK_SECRET` and the project's id): a delivery is taken only
//! when `X-Gitlab-Token` is the token of the project id its body names, compared in
//! constant time; the master secret itself opens nothing. Without a token, or when GitLab
//! is not configured, the answer is 401 before a byte of the body is read; the body is read
//! within the same request limits and unverified-bytes budget as GitHub's, and a body
//! naming no project id gets 401 too. A delivery whose project path is not its id's (as
//! GitLab says, when the server has a client) is refused before it is stored, so it
//! supersedes no other project's job. The rest is the intake's, as for GitHub: the same
//! metrics, deduplication on `X-Gitlab-Event-UUID` per forge, the job committed before the
//! 202; a note to answer is handed to the note hook, never queued (an answer is no review
//! and must not replace one).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;
use tracing::{info, warn};

use crate::forge::{Classified, ForgeEvent, ForgeKind, ThreadNote, UsageReply};
use crate::gitlab::hook::{HookConfig, HookError, classify_gitlab_hook};
use crate::gitlab::is_project_token;
use crate::gitlab::own_user::OwnUser;
use crate::gitlab::project_path::ProjectPaths;
use crate::llm::Secret;
use crate::server::AppState;
use crate::server::body::CheckedByCaller;
use crate::server::intake::{
    Answer, Headers, Refused, WebhookForge, bad_request, event_label, ignored_answer,
    receive as intake, reply,
};
use crate::server::metrics::DeliveryOutcome;
use crate::text::logged;

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

/// GitLab's deliveries, when GitLab is configured (a master secret to derive the projects'
/// tokens from).
struct GitLab(GitLabHooks);

/// Handles one GitLab delivery. See the module documentation.
pub(crate) async fn receive(State(state): State<AppState>, request: Request) -> Response {
    let configured = state
        .gitlab
        .clone()
        .filter(|gitlab| !gitlab.secret.is_empty());
    match configured {
        Some(gitlab) => intake(&state, &GitLab(gitlab), request).await,
        None => {
            let event = event_label(request.headers(), GitLab::HEADERS.event);
            unauthorized(&state, event)
        }
    }
}

impl WebhookForge for GitLab {
    const KIND: ForgeKind = ForgeKind::GitLab;
    const HEADERS: Headers = Headers {
        event: "x-gitlab-event",
        event_name: "X-Gitlab-Event",
        delivery: "x-gitlab-event-uuid",
        delivery_name: "X-Gitlab-Event-UUID",
    };
    type Check = CheckedByCaller;
    type Unreadable = HookError;

    fn begin(
        &self,
        state: &AppState,
        headers: &HeaderMap,
        event: &str,
    ) -> Result<CheckedByCaller, Refused> {
        match headers.get(TOKEN_HEADER) {
            Some(_) => Ok(CheckedByCaller),
            None => Err(Box::new(unauthorized(state, event))),
        }
    }

    fn verify(
        &self,
        state: &AppState,
        headers: &HeaderMap,
        body: &[u8],
        event: &str,
    ) -> Result<(), Refused> {
        let project = match project_id(body) {
            Ok(Some(project)) => project,
            Ok(None) => return Err(Box::new(unauthorized(state, event))),
            Err(err) => {
                let (outcome, status, value) = bad_request(err.to_string());
                state.metrics.record_delivery(event, outcome);
                return Err(Box::new(reply(status, value)));
            }
        };
        let token = headers.get(TOKEN_HEADER).map(|value| value.as_bytes());
        match token {
            Some(token) if is_project_token(&self.0.secret, project, token) => Ok(()),
            _ => Err(Box::new(unauthorized(state, event))),
        }
    }

    fn classify(&self, _: &AppState, event: &str, body: &[u8]) -> Result<Classified, HookError> {
        classify_gitlab_hook(event, body, &self.0.config)
    }

    /// Refuses a change whose project path is not its project id's (when the server can
    /// ask GitLab): a token opens its own project only, whatever path the body names.
    async fn admit(&self, asked: &ForgeEvent, delivery_id: &str) -> Result<(), Answer> {
        let Some(change) = asked.change() else {
            return Ok(());
        };
        let (Some(projects), Some(id)) = (&self.0.projects, change.ids.project) else {
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

    fn hand_thread(&self, _: &AppState, note: ThreadNote) -> Answer {
        info!(project = %logged(&note.change.repository), mr = note.change.number,
            note = note.comment.id, "GitLab note for Redline");
        if let Some(hook) = &self.0.on_note {
            hook(note);
        }
        (
            DeliveryOutcome::Acknowledged,
            StatusCode::ACCEPTED,
            json!({"status": "accepted", "reason": "note for Redline; an answer may follow"}),
        )
    }

    fn hand_usage(&self, _: &AppState, _: UsageReply) -> Answer {
        // GitLab's malformed commands come as notes in their discussion (`Ask::Usage`).
        ignored_answer("nothing to do".to_string())
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
