//! `POST /webhook`: GitHub's side of the intake ([`crate::server::intake`]).
//!
//! The signature header is checked before the body is read (a missing or malformed one is
//! refused at once); the body is then read within the request limits and hashed as it
//! arrives ([`crate::server::body`]). Nothing of the body is parsed before the signature matches.
//! Deliveries are read by the App's classifier ([`super::events::classify_app_delivery`]); a thread
//! comment goes to the thread hook, a malformed command's usage to the command-reply hook.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::json;
use tracing::info;

use super::events::{Classified, CommandReply, PayloadError, classify_app_delivery};
use crate::forge::thread::ThreadComment;
use crate::forge::{ForgeEvent, IgnoreReason, ThreadNote, UsageReply};
use crate::queue::ForgeKind;
use crate::server::AppState;
use crate::server::body::BodyError;
use crate::server::intake::{
    Answer, Headers, Refused, WebhookForge, ignored_answer, receive as intake, refuse_body,
};
use crate::server::metrics::DeliveryOutcome;
use crate::server::signature::SignatureCheck;

const SIGNATURE_HEADER: &str = "x-hub-signature-256";

/// GitHub's deliveries: signed with the App's webhook secret.
struct GitHub;

/// Handles one GitHub delivery. The signature is checked on the raw body before anything
/// is parsed; a review job is committed to the queue before the 202 is sent.
pub(crate) async fn receive(State(state): State<AppState>, request: Request) -> Response {
    intake(&state, &GitHub, request).await
}

impl WebhookForge for GitHub {
    const KIND: ForgeKind = ForgeKind::GitHub;
    const HEADERS: Headers = Headers {
        event: "x-github-event",
        event_name: "X-GitHub-Event",
        delivery: "x-github-delivery",
        delivery_name: "X-GitHub-Delivery",
    };
    type Check = SignatureCheck;
    type Unreadable = PayloadError;

    fn begin(
        &self,
        state: &AppState,
        headers: &HeaderMap,
        event: &str,
    ) -> Result<SignatureCheck, Refused> {
        let signature = headers
            .get(SIGNATURE_HEADER)
            .map(|value| value.to_str().unwrap_or_default());
        SignatureCheck::begin(&state.webhook_secret, signature)
            .map_err(|err| Box::new(refuse_body(state, event, BodyError::Signature(err))))
    }

    fn verify(&self, _: &AppState, _: &HeaderMap, _: &[u8], _: &str) -> Result<(), Refused> {
        // The signature was checked as the body streamed in.
        Ok(())
    }

    fn classify(
        &self,
        state: &AppState,
        event: &str,
        body: &[u8],
    ) -> Result<Classified, PayloadError> {
        classify_app_delivery(event, body, &state.config)
    }

    async fn admit(&self, _: &ForgeEvent, _: &str) -> Result<(), Answer> {
        // The signature covers the whole body: the change is the one the App was sent.
        Ok(())
    }

    fn hand_thread(&self, state: &AppState, note: ThreadNote) -> Answer {
        let Some(comment) = ThreadComment::from_note(note) else {
            return ignored_answer(IgnoreReason::RepositoryWithoutOwner.to_string());
        };
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

    fn hand_usage(&self, state: &AppState, usage: UsageReply) -> Answer {
        let Some(installation_id) = usage.change.ids.installation else {
            // The App's classifier lets no request without an installation through.
            return ignored_answer(IgnoreReason::NoInstallation.to_string());
        };
        let reply = CommandReply {
            installation_id,
            repo_full_name: usage.change.repository,
            pr_number: usage.change.number,
            commenter: usage.comment.author,
            text: usage.text,
        };
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
}
