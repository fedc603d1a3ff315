//! Model clients behind one trait, over normalised message types.
//!
//! Each provider keeps its wire types private to its own module; the rest of
//! Redline only sees [`ChatRequest`], [`ChatResponse`] and [`LlmError`].

pub mod anthropic;
mod budget;

mod http;
pub mod openai;
pub mod pricing;
pub mod retry;
mod scrub;
mod secret;
mod sse;
mod timeouts;
pub mod tokens;

pub use retry::{RetryHook, RetryInfo, RetryPolicy, WaitHook, WaitInfo};
pub(crate) use retry::{RetryingModel, WAIT_NOTICE_INTERVAL};
pub use secret::Secret;
pub use timeouts::{CallTimeouts, Stall};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// One tool call the model asked for, with its arguments exactly as the model wrote them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id; the result must be answered with the same id.
    pub id: String,
    /// The tool's name as the model wrote it (it may name no known tool).
    pub name: String,
    /// The raw JSON text of the arguments; it may be malformed.
    pub arguments: String,
}

/// A message of the conversation, in provider-neutral form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System {
        /// The text.
        content: String,
    },
    /// Input from the user (or from the orchestrator on the user's behalf).
    User {
        /// The text.
        content: String,
    },
    /// A reply from the model, kept verbatim so that the history stays valid.
    Assistant {
        /// The text part of the reply (may be empty).
        content: String,
        /// The tool calls of the reply, in order.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The id of the call this answers.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The observation the model reads.
        content: String,
        /// Whether the call failed (the content then explains why).
        is_error: bool,
    },
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }

    /// The text content of the message, whatever its role.
    pub fn text(&self) -> &str {
        match self {
            Message::System { content }
            | Message::User { content }
            | Message::Assistant { content, .. }
            | Message::Tool { content, .. } => content,
        }
    }
}

/// A tool the model may call: its name, what it does, and a JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema (an object schema) of the arguments.
    pub parameters: serde_json::Value,
}

/// One request to a chat model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The model name as the provider knows it.
    pub model: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools offered for native tool calling; empty for none.
    pub tools: Vec<ToolSpec>,
    /// Upper bound on the reply's tokens.
    pub max_tokens: u32,
    /// Sampling temperature, where the user set one.
    pub temperature: Option<f32>,
}

/// Token usage of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// All tokens of the prompt, including those read from or written to the
    /// provider's prompt cache, so that it means the same for every provider
    /// (Anthropic's `input_tokens` leaves cache reads and writes out; the client
    /// adds `cache_read_input_tokens` and `cache_creation_input_tokens` back in).
    pub prompt_tokens: u64,
    /// Tokens of the reply.
    pub completion_tokens: u64,
    /// Of the prompt tokens, those read from the provider's prompt cache
    /// (OpenAI `prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`).
    #[serde(default)]
    pub cached_prompt_tokens: u64,
    /// Of the prompt tokens, those written to the provider's prompt cache
    /// (Anthropic `cache_creation_input_tokens`; 0 for providers that do not bill writes).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Whether the provider reported no usage and the counts come from the local tokenizer.
    #[serde(default)]
    pub estimated: bool,
}

/// Usage of several calls: the counts add up, and the total is estimated when any call's was.
impl std::ops::AddAssign<&Usage> for Usage {
    fn add_assign(&mut self, call: &Usage) {
        self.prompt_tokens += call.prompt_tokens;
        self.completion_tokens += call.completion_tokens;
        self.cached_prompt_tokens += call.cached_prompt_tokens;
        self.cache_write_tokens += call.cache_write_tokens;
        self.estimated |= call.estimated;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its turn.
    EndTurn,
    /// The model asked for tools.
    ToolUse,
    /// The reply hit `max_tokens`.
    MaxTokens,
    /// Anything else the provider reported.
    Other,
}

/// A complete reply of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The reply text (may be empty when the model only called tools).
    pub content: String,
    /// Tool calls, in the order the model made them.
    pub tool_calls: Vec<ToolCall>,
    /// Token usage, from the API's usage fields or counted locally.
    pub usage: Usage,
    /// Why the reply ended.
    pub stop: StopReason,
}

impl ChatResponse {
    /// The reply as a history message, verbatim.
    pub(crate) fn to_message(&self) -> Message {
        Message::Assistant {
            content: self.content.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}

/// Errors of a model call. Messages never contain the API key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// 401/403: the key was refused.
    #[error(
        "the model API refused the credentials (HTTP {status}): {message}. Check REDLINE_API_KEY / OPENAI_API_KEY / ANTHROPIC_API_KEY"
    )]
    Auth {
        /// HTTP status.
        status: u16,
        /// The provider's message, redacted.
        message: String,
    },
    /// The model name is unknown to the provider.
    #[error("unknown model `{model}`: {message}")]
    ModelNotFound {
        /// The requested model.
        model: String,
        /// The provider's message.
        message: String,
    },
    /// The request does not fit the model's context window.
    #[error("context length exceeded: {message}")]
    ContextLengthExceeded {
        /// The provider's message.
        message: String,
    },
    /// The server does not accept the `tools` parameter (no native tool calling).
    #[error("the endpoint does not support native tool calling: {message}")]
    ToolsUnsupported {
        /// The provider's message.
        message: String,
    },
    /// 429: rate limited (retryable).
    #[error("rate limited by the model API (HTTP 429){}", retry_after.map(|d| format!(", retry after {}s", d.as_secs())).unwrap_or_default())]
    RateLimited {
        /// How long the server asked us to wait.
        retry_after: Option<Duration>,
    },
    /// 5xx (retryable).
    #[error("model API server error (HTTP {status}): {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
        /// How long the server asked us to wait, if it said.
        retry_after: Option<Duration>,
    },
    /// Any other 4xx.
    #[error("model API rejected the request (HTTP {status}): {message}")]
    BadRequest {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// Connecting failed (retryable).
    #[error("could not reach the model API: {0}")]
    Connect(String),
    /// The call took longer than the per-call timeout (retryable).
    #[error("the model call took longer than {}s (`request_timeout`)", .0.as_secs_f64())]
    Timeout(Duration),
    /// The stream ended before the reply was complete (retryable).
    #[error("the model's response stream was cut off: {0}")]
    StreamCut(String),
    /// The endpoint went silent past one of the [`CallTimeouts`] (retryable).
    #[error("{}", phase.describe(*after))]
    Stalled {
        /// Where the call was when the wait ran out.
        phase: Stall,
        /// The timeout that ran out.
        after: Duration,
    },
    /// The response could not be understood.
    #[error("malformed response from the model API: {0}")]
    Malformed(String),
}

impl LlmError {
    /// Whether trying the same call again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Server { .. }
                | LlmError::Connect(_)
                | LlmError::Timeout(_)
                | LlmError::StreamCut(_)
                | LlmError::Stalled { .. }
        )
    }

    /// The wait the server asked for, if any.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after } | LlmError::Server { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }
}

/// A chat model: one call in, one complete reply out.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Sends the request and returns the whole reply (streamed under the hood where the provider streams).
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;
}

/// The wire protocol a model endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// OpenAI Chat Completions, also spoken by DeepSeek, OpenRouter, Ollama, vLLM and llama.cpp.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl Provider {
    /// The provider's public API base URL.
    pub(crate) fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAi => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The name used in configuration (`openai`, `anthropic`).
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Provider {
    /// A message naming the bad value and the accepted ones.
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(Provider::OpenAi),
            "anthropic" => Ok(Provider::Anthropic),
            _ => Err(match crate::text::closest(s, &["openai", "anthropic"]) {
                Some(name) => format!("unknown model provider `{s}`: did you mean `{name}`?"),
                None => format!(
                    "unknown model provider `{s}`: expected `openai` (also for OpenAI-compatible servers such as Ollama, vLLM, llama.cpp, DeepSeek, OpenRouter) or `anthropic`"
                ),
            }),
        }
    }
}

/// Everything needed to talk to one model endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderSettings {
    /// The wire protocol.
    pub provider: Provider,
    /// Base URL: `https://api.openai.com/v1`-style for OpenAI (the client appends
    /// `/chat/completions`), `https://api.anthropic.com` for Anthropic (it appends `/v1/messages`).
    pub base_url: String,
    /// The API key; `None` for local servers that need none.
    pub api_key: Option<Secret>,
    /// How long each phase of an attempt may stay silent, and the attempt may take.
    pub timeouts: CallTimeouts,
    /// How failed calls are retried.
    pub retry: RetryPolicy,
}

impl Default for ProviderSettings {
    /// OpenAI's public API with default timeouts and retries, no key.
    fn default() -> Self {
        ProviderSettings::new(Provider::OpenAi)
    }
}

impl ProviderSettings {
    /// Settings for the provider's public API with default timeouts and retries, no key.
    pub fn new(provider: Provider) -> Self {
        ProviderSettings {
            provider,
            base_url: provider.default_base_url().to_string(),
            api_key: None,
            timeouts: CallTimeouts::default(),
            retry: RetryPolicy::default(),
        }
    }

    /// The base URL without trailing slashes, ready for a path to be appended.
    pub(crate) fn trimmed_base_url(&self) -> &str {
        self.base_url.trim().trim_end_matches('/')
    }
}

/// The client for `settings`, wrapped in the retry layer; `on_retry` hears of each retry.
pub fn build_client(settings: ProviderSettings, on_retry: Option<RetryHook>) -> Arc<dyn ChatModel> {
    build_client_with_hooks(
        settings,
        ClientHooks {
            on_retry,
            ..ClientHooks::default()
        },
    )
}

/// Who hears what the retry layer of a client does.
#[derive(Clone, Default)]
pub struct ClientHooks {
    /// Hears of each retry, before its wait.
    pub on_retry: Option<RetryHook>,
    /// Hears every [`WAIT_NOTICE_INTERVAL`] that an attempt is still waiting for its reply.
    pub on_wait: Option<WaitHook>,
}

/// The client for `settings`, wrapped in the retry layer, reporting to `hooks`.
pub(crate) fn build_client_with_hooks(
    settings: ProviderSettings,
    hooks: ClientHooks,
) -> Arc<dyn ChatModel> {
    build_client_reporting_every(settings, hooks, WAIT_NOTICE_INTERVAL)
}

/// [`build_client_with_hooks`] with waiting attempts reported every `every` instead
/// of every [`WAIT_NOTICE_INTERVAL`] (tests use short intervals).
pub fn build_client_reporting_every(
    settings: ProviderSettings,
    hooks: ClientHooks,
    every: Duration,
) -> Arc<dyn ChatModel> {
    let mut inner: Arc<dyn ChatModel> = match settings.provider {
        Provider::OpenAi => Arc::new(openai::OpenAiClient::new(&settings)),
        Provider::Anthropic => Arc::new(anthropic::AnthropicClient::new(&settings)),
    };
    if let Some(key) = settings.api_key.clone() {
        inner = Arc::new(scrub::ScrubbingModel::new(inner, key));
    }
    let mut model = RetryingModel::new(inner, settings.retry, hooks.on_retry);
    if let Some(on_wait) = hooks.on_wait {
        model = model.with_wait_hook(on_wait, every);
    }
    Arc::new(model)
}

/// Usage counted locally, for replies whose API reported none: the prompt is the
/// messages plus the tool specs, the completion the reply text plus its tool calls.
pub(crate) fn count_usage_locally(
    request: &ChatRequest,
    content: &str,
    tool_calls: &[ToolCall],
) -> Usage {
    let counter = tokens::shared_counter(tokens::Encoding::for_model(&request.model));
    let tools: usize = request
        .tools
        .iter()
        .map(|t| {
            counter.count(&t.name)
                + counter.count(&t.description)
                + counter.count(&t.parameters.to_string())
        })
        .sum();
    let calls: usize = tool_calls
        .iter()
        .map(|c| counter.count(&c.name) + counter.count(&c.arguments))
        .sum();
    Usage {
        prompt_tokens: (counter.count_messages(&request.messages) + tools) as u64,
        completion_tokens: (counter.count(content) + calls) as u64,
        estimated: true,
        ..Usage::default()
    }
}

/// Usage of a reply the client cut at `max_tokens`: the completion as the client
/// counted it, the prompt as the server reported it or else counted locally.
pub(crate) fn usage_of_cut_reply(
    request: &ChatRequest,
    reported_prompt: Option<u64>,
    completion_tokens: u64,
) -> Usage {
    let prompt_tokens =
        reported_prompt.unwrap_or_else(|| count_usage_locally(request, "", &[]).prompt_tokens);
    Usage {
        prompt_tokens,
        completion_tokens,
        estimated: true,
        ..Usage::default()
    }
}

#[cfg(test)]
mod provider_tests {
    use super::*;

    #[test]
    fn parses_provider_names() {
        assert_eq!(" OpenAI ".parse::<Provider>(), Ok(Provider::OpenAi));
        assert_eq!("anthropic".parse::<Provider>(), Ok(Provider::Anthropic));
        let err = "gemini".parse::<Provider>().unwrap_err();
        assert!(err.contains("gemini") && err.contains("openai"), "{err}");
    }

    #[test]
    fn counts_usage_locally() {
        let request = ChatRequest {
            model: "gpt-4o".into(),
            messages: vec![Message::user("hello world")],
            tools: vec![],
            max_tokens: 10,
            temperature: None,
        };
        let usage = count_usage_locally(&request, "hi there", &[]);
        assert!(usage.prompt_tokens > 0 && usage.completion_tokens > 0);
    }
}

#[cfg(test)]
mod usage_tests;
