//! Anthropic Messages client, streamed.
//!
//! The Messages API differs from Chat Completions in three ways that matter
//! here: system text is a top-level field, turns must alternate between `user`
//! and `assistant` (so tool results travel as `tool_result` blocks of one user
//! turn), and tool-call arguments are JSON objects rather than text.
//!
//! Prompt caching: the request marks at most [`MAX_CACHE_BREAKPOINTS`] prefix
//! ends with `cache_control` (the system block, or the last tool when there is
//! no system text; and the first user turn). The API allows four. The request
//! body is serialised with the stable prefix first (`model`, `tools`, `system`,
//! `messages`) and the per-call fields (`max_tokens`, `temperature`) last, and
//! holds no timestamps or generated ids, so the same prefix serialises to the
//! same bytes from call to call.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::Deserialize;

use self::request::WireRequest;
use super::budget::OutputBudget;
use super::http::{Endpoint, ErrorDetail, HeaderSpec, error_from_stream};
use super::sse::SseStream;
use super::{
    ChatModel, ChatRequest, ChatResponse, LlmError, ProviderSettings, StopReason, ToolCall, Usage,
    count_usage_locally, usage_of_cut_reply,
};

/// The API version this client speaks.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `cache_control` markers one request carries at most (the API's limit is 4).
pub const MAX_CACHE_BREAKPOINTS: usize = 2;

/// A client for `{base_url}/v1/messages`.
pub(crate) struct AnthropicClient {
    endpoint: Endpoint,
}

impl AnthropicClient {
    /// A client for the settings' base URL and key (the retry policy is not applied here).
    pub fn new(settings: &ProviderSettings) -> Self {
        let mut headers = vec![HeaderSpec {
            name: "anthropic-version",
            value: ANTHROPIC_VERSION.to_string(),
            sensitive: false,
        }];
        if let Some(key) = settings.api_key.as_ref().filter(|k| !k.is_empty()) {
            headers.push(HeaderSpec {
                name: "x-api-key",
                value: key.expose().to_string(),
                sensitive: true,
            });
        }
        let url = format!("{}/v1/messages", settings.trimmed_base_url());
        AnthropicClient {
            endpoint: Endpoint::new(url, headers, settings),
        }
    }
}

#[async_trait]
impl ChatModel for AnthropicClient {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = WireRequest::from_request(request);
        self.endpoint
            .with_deadline(async {
                let stream = self.endpoint.open_stream(&body, &request.model).await?;
                read_reply(stream, request, &self.endpoint).await
            })
            .await
    }
}

async fn read_reply(
    mut stream: SseStream,
    request: &ChatRequest,
    endpoint: &Endpoint,
) -> Result<ChatResponse, LlmError> {
    let mut reply = ReplyBuilder::default();
    let mut budget = OutputBudget::new(&request.model, request.max_tokens);
    while let Some(event) = stream.next_event().await? {
        if event.data.trim().is_empty() {
            continue; // keep-alive
        }
        let parsed: WireEvent = serde_json::from_str(&event.data)
            .map_err(|err| LlmError::Malformed(format!("unreadable stream event ({err})")))?;
        if let WireEvent::Error { error } = &parsed {
            return Err(stream_error(error, request, endpoint));
        }
        if let Some(fragment) = parsed.fragment() {
            budget.spend(fragment);
        }
        if reply.apply(parsed) {
            break;
        }
        if budget.exceeded() {
            // The server ignores `max_tokens`: stop reading (dropping the stream closes it).
            reply.stop_at_limit(budget.counted());
            break;
        }
    }
    reply.finish(request)
}

/// An `error` event; its type stands for the HTTP status the error would have had.
fn stream_error(error: &serde_json::Value, request: &ChatRequest, endpoint: &Endpoint) -> LlmError {
    let detail = ErrorDetail::from_json(&serde_json::json!({ "error": error }));
    let status = match detail.kind.as_deref() {
        Some("overloaded_error") => 529,
        Some("rate_limit_error") => 429,
        Some("authentication_error") => 401,
        Some("permission_error") => 403,
        Some("not_found_error") => 404,
        Some("request_too_large") => 413,
        Some("invalid_request_error") => 400,
        _ => 500,
    };
    error_from_stream(status, &detail, &request.model, endpoint.key())
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    MessageDelta {
        #[serde(default)]
        delta: Option<MessageDeltaBody>,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop {},
    Error {
        error: serde_json::Value,
    },
    /// `ping`, `content_block_stop` and event types added later.
    #[serde(other)]
    Ignored,
}

impl WireEvent {
    /// The reply text or tool-argument fragment this event adds.
    fn fragment(&self) -> Option<&str> {
        match self {
            WireEvent::ContentBlockDelta { delta, .. } => match delta {
                BlockDelta::TextDelta { text } => Some(text),
                BlockDelta::InputJsonDelta { partial_json } => Some(partial_json),
                BlockDelta::Other => None,
            },
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

impl WireUsage {
    /// All prompt tokens: `input_tokens` leaves out the tokens read from and
    /// written to the cache, which are reported apart.
    fn prompt_tokens(&self) -> Option<u64> {
        self.input_tokens.map(|n| {
            n + self.cache_creation_input_tokens.unwrap_or(0)
                + self.cache_read_input_tokens.unwrap_or(0)
        })
    }
}

/// The prompt side of the usage as last reported (message_start, then message_delta).
#[derive(Default, Clone, Copy)]
struct PromptUsage {
    total: u64,
    cache_read: u64,
    cache_write: u64,
}

impl PromptUsage {
    /// The prompt usage `usage` reports, when it reports `input_tokens`.
    fn reported(usage: &WireUsage) -> Option<PromptUsage> {
        Some(PromptUsage {
            total: usage.prompt_tokens()?,
            cache_read: usage.cache_read_input_tokens.unwrap_or(0),
            cache_write: usage.cache_creation_input_tokens.unwrap_or(0),
        })
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StartBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Option<serde_json::Value>,
    },
    /// Thinking and other blocks that are not part of the reply.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// One content block as its deltas arrive.
enum BlockState {
    Text(String),
    Tool {
        call: ToolCall,
        /// `input` of the start event, used when no `input_json_delta` follows.
        initial_input: Option<serde_json::Value>,
    },
    Ignored,
}

#[derive(Default)]
struct ReplyBuilder {
    blocks: BTreeMap<usize, BlockState>,
    prompt: Option<PromptUsage>,
    completion_tokens: Option<u64>,
    stop_reason: Option<String>,
    stopped: bool,
    /// Set when the client cut the stream at `max_tokens`.
    cut_at_limit: bool,
}

impl ReplyBuilder {
    /// Applies one event; true once the message is complete.
    fn apply(&mut self, event: WireEvent) -> bool {
        match event {
            WireEvent::MessageStart { message } => {
                let usage = message.usage.unwrap_or_default();
                self.prompt = PromptUsage::reported(&usage);
                self.completion_tokens = usage.output_tokens;
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                self.blocks.insert(index, BlockState::start(content_block));
            }
            WireEvent::ContentBlockDelta { index, delta } => {
                if let Some(block) = self.blocks.get_mut(&index) {
                    block.apply(delta);
                }
            }
            WireEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(reason);
                }
                let usage = usage.unwrap_or_default();
                // output_tokens in message_delta is cumulative.
                if usage.output_tokens.is_some() {
                    self.completion_tokens = usage.output_tokens;
                }
                if let Some(prompt) = PromptUsage::reported(&usage) {
                    self.prompt = Some(prompt);
                }
            }
            WireEvent::MessageStop {} => self.stopped = true,
            WireEvent::Error { .. } | WireEvent::Ignored => {}
        }
        self.stopped
    }

    /// Ends the reply at the output limit the server did not enforce;
    /// `completion_tokens` is what the client counted.
    fn stop_at_limit(&mut self, completion_tokens: u64) {
        self.stop_reason = Some("max_tokens".to_string());
        self.completion_tokens = Some(completion_tokens);
        self.stopped = true;
        self.cut_at_limit = true;
    }

    fn finish(self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if !self.stopped {
            return Err(LlmError::StreamCut(
                "the stream ended without message_stop".to_string(),
            ));
        }
        let mut content = String::new();
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                BlockState::Text(text) => content.push_str(&text),
                BlockState::Tool {
                    mut call,
                    initial_input,
                } => {
                    if call.arguments.is_empty() {
                        call.arguments = initial_input
                            .filter(|v| !v.is_null())
                            .map_or_else(|| "{}".to_string(), |v| v.to_string());
                    }
                    tool_calls.push(call);
                }
                BlockState::Ignored => {}
            }
        }
        let stop = match self.stop_reason.as_deref() {
            Some("end_turn") => StopReason::EndTurn,
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") => StopReason::MaxTokens,
            None if !tool_calls.is_empty() => StopReason::ToolUse,
            _ => StopReason::Other,
        };
        let cache = |usage: Usage| match self.prompt {
            Some(prompt) => Usage {
                cached_prompt_tokens: prompt.cache_read,
                cache_write_tokens: prompt.cache_write,
                ..usage
            },
            None => usage,
        };
        let prompt_tokens = self.prompt.map(|p| p.total);
        let usage = match (prompt_tokens, self.completion_tokens) {
            _ if self.cut_at_limit => cache(usage_of_cut_reply(
                request,
                prompt_tokens,
                self.completion_tokens.unwrap_or(0),
            )),
            (Some(prompt_tokens), Some(completion_tokens)) => cache(Usage {
                prompt_tokens,
                completion_tokens,
                ..Usage::default()
            }),
            (prompt, completion) => {
                let counted = count_usage_locally(request, &content, &tool_calls);
                cache(Usage {
                    prompt_tokens: prompt.unwrap_or(counted.prompt_tokens),
                    completion_tokens: completion.unwrap_or(counted.completion_tokens),
                    ..counted
                })
            }
        };
        Ok(ChatResponse {
            content,
            tool_calls,
            usage,
            stop,
        })
    }
}

impl BlockState {
    fn start(block: StartBlock) -> Self {
        match block {
            StartBlock::Text { text } => BlockState::Text(text),
            StartBlock::ToolUse { id, name, input } => BlockState::Tool {
                call: ToolCall {
                    id,
                    name,
                    arguments: String::new(),
                },
                initial_input: input,
            },
            StartBlock::Other => BlockState::Ignored,
        }
    }

    fn apply(&mut self, delta: BlockDelta) {
        match (self, delta) {
            (BlockState::Text(text), BlockDelta::TextDelta { text: more }) => text.push_str(&more),
            (BlockState::Tool { call, .. }, BlockDelta::InputJsonDelta { partial_json }) => {
                call.arguments.push_str(&partial_json);
            }
            _ => {}
        }
    }
}

mod request;

#[cfg(test)]
mod tests;
