//! Requests of Redline's verifier: how they are told apart (their system prompt's first
//! words), the findings they list, and the answer the server gives when it does not
//! script the verifier (every finding kept).

use serde_json::Value;

use std::sync::atomic::Ordering;

use super::{ModelServer, RecordedRequest, Reply};

/// How the system prompt of a verifier request begins.
pub const VERIFIER_PROMPT_START: &str = "You verify review findings";

/// What the server answers to a verifier request it is not scripting: every listed
/// finding (`## F<n> ·` headings of the first user message) kept.
pub const KEEP_REASON: &str = "kept by the scripted verifier";

impl RecordedRequest {
    /// The system prompt on either wire (OpenAI: the first message; Anthropic: `system`).
    pub fn system_prompt(&self) -> String {
        match &self.body["system"] {
            Value::String(text) => text.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|block| block["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => self.message_text(0),
        }
    }

    /// Whether this is a request of Redline's verifier (by its system prompt).
    pub fn is_verifier(&self) -> bool {
        self.system_prompt().starts_with(VERIFIER_PROMPT_START)
    }

    /// The first user message's text on either wire (plain or in content blocks).
    pub fn user_text(&self) -> String {
        self.body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["role"] == "user")
            .map(|m| match &m["content"] {
                Value::String(text) => text.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .filter_map(|block| block["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            })
            .unwrap_or_default()
    }

    /// The finding ids (`F1`, `F2`, ...) a verifier request lists, in order.
    pub fn verifier_ids(&self) -> Vec<String> {
        self.user_text()
            .lines()
            .filter_map(|line| line.strip_prefix("## "))
            .filter_map(|rest| rest.split_once(" · ").map(|(id, _)| id.to_string()))
            .filter(|id| id.starts_with('F'))
            .collect()
    }

    /// The first user message (OpenAI wire): the task a conversation starts from.
    pub fn first_user_text(&self) -> String {
        self.message_text(1)
    }
}

/// The answer to a verifier request the script does not cover: every listed finding kept.
pub(super) fn keep_every_finding(request: &RecordedRequest) -> Reply {
    let lines: Vec<String> = request
        .verifier_ids()
        .iter()
        .map(|id| format!("{id}: keep - {KEEP_REASON}"))
        .collect();
    Reply::text(lines.join("\n"))
}

impl ModelServer {
    /// Verifier requests go to the script (or responder) and are numbered like any other,
    /// instead of being answered "keep" apart from it.
    pub fn scripting_verifier(self) -> ModelServer {
        self.state.script_verifier.store(true, Ordering::SeqCst);
        self
    }

    /// The requests that are not the verifier's, in order.
    pub fn review_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| !r.is_verifier())
            .collect()
    }

    /// The verifier's requests, in order.
    pub fn verifier_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(RecordedRequest::is_verifier)
            .collect()
    }
}
