//! The transcript of a run: one JSON line per record, written as the run goes,
//! holding what is needed to continue the run after a crash or to re-run it
//! offline.
//!
//! Invariants:
//! - The first line is the [`Header`]; every later line is one [`Record`].
//! - Each line is written with one `write` and ends with `\n`; a line without its
//!   `\n` is a write cut by a crash and is ignored (with everything after it).
//! - A model call stores the request's messages as a delta against the previous
//!   call of the same conversation *in file order* ([`MessageOp`]); readers decode
//!   the file front to back, so interleaved conversations stay unambiguous.
//! - Every line goes through the API key's redaction before it is written.
//! - One process writes a transcript at a time (see [`lock`]); a transcript is
//!   created 0600 and read back only up to its size limits.

mod lock;
mod read;
mod write;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::events::EventKind;
use crate::llm::{ChatRequest, ChatResponse, LlmError, Message, StopReason, ToolCall, Usage};

pub(crate) use lock::create_private_dir;
pub(crate) use read::{
    DecodedCall, LockedTranscript, MAX_RECORD_BYTES, Transcript, TranscriptError,
};
pub(crate) use write::{Recorder, RecordingModel};

/// The transcript format this build writes and reads.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// The first record: what run this is and what it reviews.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Transcript format ([`FORMAT_VERSION`]).
    pub format: u32,
    /// The Redline version that wrote it.
    pub redline: String,
    /// The run's id (the file's name without `.jsonl`).
    pub run_id: String,
    /// When the run started (RFC 3339).
    pub created: String,
    /// The strategy as configured (`auto`, `react`, …).
    pub strategy: String,
    /// A digest of every setting that shapes the review (prompts, limits, strategy, model).
    pub settings_digest: String,
    /// The repository reviewed.
    pub repository: RepositoryIdentity,
    /// The base commit id.
    pub base: String,
    /// The head commit id.
    pub head: String,
    /// Whether work-tree changes were reviewed too.
    #[serde(default)]
    pub uncommitted: bool,
    /// The model name.
    pub model: String,
    /// The provider (`openai`, `anthropic`).
    pub provider: String,
    /// The command-line arguments that reproduce the run's settings (no secrets).
    #[serde(default)]
    pub invocation: Vec<String>,
    /// What the author said the change does, as the model was shown it (empty: nothing),
    /// so that replay and resume send the same requests without the original sources.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub intent: String,
}

impl Header {
    /// What differs between this transcript's header and a run about to resume it;
    /// empty when the run may continue the transcript.
    pub fn differences(&self, current: &Header) -> Vec<String> {
        let mut differs = Vec::new();
        if self.format != current.format {
            differs.push(format!(
                "transcript format {} (this Redline reads format {})",
                self.format, current.format
            ));
        }
        if self.head != current.head {
            differs.push(format!("head commit {} (now {})", self.head, current.head));
        }
        if self.base != current.base {
            differs.push(format!("base commit {} (now {})", self.base, current.base));
        }
        if self.uncommitted || current.uncommitted {
            differs.push("work-tree changes (--uncommitted) cannot be resumed".into());
        }
        if self.settings_digest != current.settings_digest {
            differs.push(format!(
                "settings digest {} (now {}: a flag, config file, prompt or model differs)",
                self.settings_digest, current.settings_digest
            ));
        }
        differs
    }
}

/// Which repository a run reviewed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepositoryIdentity {
    /// The work tree's root directory.
    pub root: String,
    /// The `origin` remote's URL, when there is one (credentials removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// One line of a transcript after the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    /// The header (first line only).
    Header(Header),
    /// One answered model call.
    ModelCall(ModelCallRecord),
    /// A model call that failed in a way the orchestrator answers (it drops old
    /// turns after a context-length error, or falls back to text mode).
    ModelError {
        /// The conversation.
        conversation: String,
        /// The call's number within it.
        seq: u32,
        /// Digest of the request.
        key: String,
        /// The error.
        error: RecordedError,
    },
    /// One tool call the orchestrator ran, with its observation.
    ToolResult(ToolResultRecord),
    /// An event worth keeping: compression, plan, evaluation, finding, limit, error, start, finish.
    Event {
        /// The event.
        event: EventKind,
    },
    /// A later process continued the run from here.
    Resumed {
        /// When (RFC 3339).
        at: String,
        /// Model calls in the transcript before this point.
        recorded_calls: usize,
    },
    /// The run ended.
    End {
        /// How.
        status: EndStatus,
        /// Why it failed, when it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndStatus {
    /// It produced its report.
    Finished,
    /// It failed (a model or tool error); it may be resumed.
    Failed,
    /// A signal stopped it; it may be resumed.
    Cancelled,
}

/// One model call: the request as a delta, and the reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCallRecord {
    /// The conversation (a digest of its first user message).
    pub conversation: String,
    /// The call's number within its conversation (1-based).
    pub seq: u32,
    /// Digest of the whole request (messages and offered tools), to match replays.
    pub key: String,
    /// The request's messages, as a delta against the conversation's previous call.
    pub messages: Vec<MessageOp>,
    /// Names of the tools offered natively.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// The reply.
    pub reply: RecordedReply,
}

/// One step of rebuilding a request's messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageOp {
    /// `[start, count]`: messages of the previous request of the conversation, unchanged.
    Keep([usize; 2]),
    /// A message that is new or changed.
    New(Message),
}

/// A model reply as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedReply {
    /// The reply text.
    pub content: String,
    /// Its tool calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Token usage.
    pub usage: Usage,
    /// Why it ended.
    pub stop: StopReason,
}

impl RecordedReply {
    /// The recorded form of a reply.
    pub fn of(reply: &ChatResponse) -> Self {
        RecordedReply {
            content: reply.content.clone(),
            tool_calls: reply.tool_calls.clone(),
            usage: reply.usage,
            stop: reply.stop,
        }
    }

    /// The reply as the model client returns it.
    pub(crate) fn to_response(&self) -> ChatResponse {
        ChatResponse {
            content: self.content.clone(),
            tool_calls: self.tool_calls.clone(),
            usage: self.usage,
            stop: self.stop,
        }
    }
}

/// A model error the orchestrator reacts to, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RecordedError {
    /// The request did not fit the model's window.
    ContextLengthExceeded {
        /// The provider's message.
        message: String,
    },
    /// The endpoint rejected native tool calling.
    ToolsUnsupported {
        /// The provider's message.
        message: String,
    },
}

impl RecordedError {
    /// The recorded form of `error`, when the orchestrator reacts to it (other errors end a run).
    pub fn of(error: &LlmError) -> Option<Self> {
        match error {
            LlmError::ContextLengthExceeded { message } => {
                Some(RecordedError::ContextLengthExceeded {
                    message: message.clone(),
                })
            }
            LlmError::ToolsUnsupported { message } => Some(RecordedError::ToolsUnsupported {
                message: message.clone(),
            }),
            _ => None,
        }
    }

    /// The error as the model client returns it.
    pub(crate) fn to_error(&self) -> LlmError {
        match self {
            RecordedError::ContextLengthExceeded { message } => LlmError::ContextLengthExceeded {
                message: message.clone(),
            },
            RecordedError::ToolsUnsupported { message } => LlmError::ToolsUnsupported {
                message: message.clone(),
            },
        }
    }
}

/// A tool call and what it returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultRecord {
    /// Digest of the call (id, name, arguments), to match replays.
    pub key: String,
    /// The call id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// The raw arguments.
    pub arguments: String,
    /// The observation.
    pub content: String,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
}

/// A short hex digest.
fn short_digest(hasher: Sha256) -> String {
    hex::encode(&hasher.finalize()[..12])
}

/// Feeds one length-prefixed field, so that field boundaries are part of the digest.
fn feed(hasher: &mut Sha256, field: &str) {
    hasher.update((field.len() as u64).to_le_bytes());
    hasher.update(field.as_bytes());
}

/// The digest a request is matched by: its messages and offered tool names (not
/// `max_tokens`, which the budget lowers as the review spends).
pub(crate) fn request_key(request: &ChatRequest) -> String {
    let mut hasher = Sha256::new();
    feed(&mut hasher, &request.model);
    for message in &request.messages {
        match message {
            Message::System { content } => {
                feed(&mut hasher, "system");
                feed(&mut hasher, content);
            }
            Message::User { content } => {
                feed(&mut hasher, "user");
                feed(&mut hasher, content);
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                feed(&mut hasher, "assistant");
                feed(&mut hasher, content);
                for call in tool_calls {
                    feed(&mut hasher, &call.id);
                    feed(&mut hasher, &call.name);
                    feed(&mut hasher, &call.arguments);
                }
            }
            Message::Tool {
                call_id,
                name,
                content,
                is_error,
            } => {
                feed(&mut hasher, if *is_error { "tool_error" } else { "tool" });
                feed(&mut hasher, call_id);
                feed(&mut hasher, name);
                feed(&mut hasher, content);
            }
        }
    }
    for tool in &request.tools {
        feed(&mut hasher, "spec");
        feed(&mut hasher, &tool.name);
    }
    short_digest(hasher)
}

/// The conversation a request belongs to: a digest of its first user message
/// (the task a run was given), which every later call of that run repeats.
pub(crate) fn conversation_of(messages: &[Message]) -> String {
    let mut hasher = Sha256::new();
    if let Some(first) = messages.iter().find(|m| matches!(m, Message::User { .. })) {
        feed(&mut hasher, first.text());
    }
    hex::encode(&hasher.finalize()[..6])
}

/// The digest a tool call is matched by.
pub(crate) fn tool_key(call: &ToolCall) -> String {
    let mut hasher = Sha256::new();
    feed(&mut hasher, &call.id);
    feed(&mut hasher, &call.name);
    feed(&mut hasher, &call.arguments);
    short_digest(hasher)
}

/// A digest of a settings description (the caller renders every setting that shapes a review).
pub(crate) fn settings_digest(description: &str) -> String {
    let mut hasher = Sha256::new();
    feed(&mut hasher, description);
    short_digest(hasher)
}

/// A new run id: the UTC time (sortable) and a random suffix.
pub(crate) fn new_run_id() -> String {
    let time = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let suffix: u32 = rand::random();
    format!("{time}-{suffix:08x}")
}

/// Whether `id` has the shape of a run id (so that it is safe as a file name).
pub(crate) fn is_run_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The delta of `current` against `previous`: runs of unchanged messages and new ones.
pub(crate) fn delta(previous: &[Message], current: &[Message]) -> Vec<MessageOp> {
    let mut ops: Vec<MessageOp> = Vec::new();
    let mut hint = 0usize;
    for message in current {
        let found = match previous.get(hint) {
            Some(p) if p == message => Some(hint),
            _ => previous.iter().position(|p| p == message),
        };
        match found {
            Some(index) => {
                hint = index + 1;
                match ops.last_mut() {
                    Some(MessageOp::Keep([start, count])) if *start + *count == index => {
                        *count += 1
                    }
                    _ => ops.push(MessageOp::Keep([index, 1])),
                }
            }
            None => ops.push(MessageOp::New(message.clone())),
        }
    }
    ops
}

/// The messages `ops` describe against `previous`; `None` when a range is out of bounds.
pub(crate) fn apply_delta(previous: &[Message], ops: &[MessageOp]) -> Option<Vec<Message>> {
    let mut messages = Vec::new();
    for op in ops {
        match op {
            MessageOp::Keep([start, count]) => {
                messages.extend_from_slice(previous.get(*start..start.checked_add(*count)?)?)
            }
            MessageOp::New(message) => messages.push(message.clone()),
        }
    }
    Some(messages)
}

#[cfg(test)]
mod tests;
