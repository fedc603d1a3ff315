//! OpenAI Chat Completions client, streamed.
//!
//! The same wire format is served by DeepSeek, OpenRouter, Ollama, vLLM and
//! llama.cpp, so the client only sends fields those servers accept
//! (`max_tokens` rather than `max_completion_tokens`, `tools` only when there are any).

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::budget::OutputBudget;
use super::http::{Endpoint, ErrorDetail, HeaderSpec, error_from_stream};
use super::sse::SseStream;
use super::{
    ChatModel, ChatRequest, ChatResponse, LlmError, Message, ProviderSettings, StopReason,
    ToolCall, Usage, count_usage_locally, usage_of_cut_reply,
};

/// A client for `{base_url}/chat/completions`.
pub(crate) struct OpenAiClient {
    endpoint: Endpoint,
}

impl OpenAiClient {
    /// A client for the settings' base URL and key (the retry policy is not applied here).
    pub fn new(settings: &ProviderSettings) -> Self {
        let mut headers = Vec::new();
        if let Some(key) = settings.api_key.as_ref().filter(|k| !k.is_empty()) {
            headers.push(HeaderSpec {
                name: "authorization",
                value: format!("Bearer {}", key.expose().trim()),
                sensitive: true,
            });
        }
        let url = format!("{}/chat/completions", settings.trimmed_base_url());
        OpenAiClient {
            endpoint: Endpoint::new(url, headers, settings),
        }
    }
}

#[async_trait]
impl ChatModel for OpenAiClient {
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
        let data = event.data.trim();
        if data.is_empty() {
            continue; // keep-alive
        }
        if data == "[DONE]" {
            reply.done = true;
            break;
        }
        let chunk: WireChunk = serde_json::from_str(data)
            .map_err(|err| LlmError::Malformed(format!("unreadable stream chunk ({err})")))?;
        if let Some(error) = &chunk.error {
            return Err(stream_error(error, request, endpoint));
        }
        for fragment in chunk.fragments() {
            budget.spend(fragment);
        }
        reply.apply(chunk);
        if budget.exceeded() {
            // The server ignores `max_tokens`: stop reading (dropping the stream closes it).
            return reply.finish_at_limit(request, budget.counted());
        }
    }
    reply.finish(request)
}

/// An `{"error": ...}` chunk, which OpenRouter and vLLM send mid-stream.
fn stream_error(error: &serde_json::Value, request: &ChatRequest, endpoint: &Endpoint) -> LlmError {
    let wrapped = serde_json::json!({ "error": error });
    let detail = ErrorDetail::from_json(&wrapped);
    let status = detail
        .code
        .as_deref()
        .and_then(|c| c.parse::<u16>().ok())
        .filter(|s| (400..600).contains(s))
        .unwrap_or(500);
    error_from_stream(status, &detail, &request.model, endpoint.key())
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a serde_json::Value,
}

impl<'a> WireRequest<'a> {
    fn from_request(request: &'a ChatRequest) -> Self {
        let tools: Vec<WireTool<'a>> = request
            .tools
            .iter()
            .map(|t| WireTool {
                kind: "function",
                function: WireFunction {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                },
            })
            .collect();
        WireRequest {
            model: &request.model,
            messages: request
                .messages
                .iter()
                .map(WireMessage::from_message)
                .collect(),
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            tool_choice: (!tools.is_empty()).then_some("auto"),
            tools,
        }
    }
}

impl<'a> WireMessage<'a> {
    fn from_message(message: &'a Message) -> Self {
        match message {
            Message::System { content } => WireMessage::System { content },
            Message::User { content } => WireMessage::User { content },
            Message::Assistant {
                content,
                tool_calls,
            } => WireMessage::Assistant {
                // OpenAI wants `null`, not "", beside tool calls.
                content: (!content.is_empty() || tool_calls.is_empty()).then_some(content),
                tool_calls: tool_calls
                    .iter()
                    .map(|c| WireToolCall {
                        id: &c.id,
                        kind: "function",
                        function: WireFunctionCall {
                            name: &c.name,
                            arguments: &c.arguments,
                        },
                    })
                    .collect(),
            },
            Message::Tool {
                call_id, content, ..
            } => WireMessage::Tool {
                tool_call_id: call_id,
                content,
            },
        }
    }
}

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

impl WireChunk {
    /// The reply text and tool-argument fragments this chunk adds.
    fn fragments(&self) -> impl Iterator<Item = &str> {
        let delta = self
            .choices
            .iter()
            .flatten()
            .next()
            .and_then(|c| c.delta.as_ref());
        let text = delta.and_then(|d| d.content.as_deref());
        let arguments = delta
            .and_then(|d| d.tool_calls.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|c| c.function.as_ref()?.arguments.as_deref());
        text.into_iter().chain(arguments)
    }
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireDeltaCall>>,
}

#[derive(Deserialize)]
struct WireDeltaCall {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireDeltaFunction>,
}

#[derive(Deserialize)]
struct WireDeltaFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// The reply as the chunks arrive.
#[derive(Default)]
struct ReplyBuilder {
    content: String,
    calls: BTreeMap<usize, ToolCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl ReplyBuilder {
    fn apply(&mut self, chunk: WireChunk) {
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                cached_prompt_tokens: usage
                    .prompt_tokens_details
                    .and_then(|d| d.cached_tokens)
                    .unwrap_or(0),
                ..Usage::default()
            });
        }
        // Only one choice is requested; the usage chunk has none.
        let Some(choice) = chunk.choices.into_iter().flatten().next() else {
            return;
        };
        if let Some(reason) = choice.finish_reason {
            self.finish_reason = Some(reason);
        }
        let Some(delta) = choice.delta else { return };
        if let Some(text) = delta.content {
            self.content.push_str(&text);
        }
        for call in delta.tool_calls.into_iter().flatten() {
            self.apply_call(call);
        }
    }

    /// The first delta of a call carries its id and name, later ones argument fragments.
    fn apply_call(&mut self, call: WireDeltaCall) {
        let index = match call.index {
            Some(index) => index,
            // Servers that omit `index` start each call with an id.
            None if call.id.is_some() || self.calls.is_empty() => self.calls.len(),
            None => self.calls.len() - 1,
        };
        let entry = self.calls.entry(index).or_insert_with(|| ToolCall {
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
        });
        if let Some(id) = call.id.filter(|id| !id.is_empty())
            && entry.id.is_empty()
        {
            entry.id = id;
        }
        if let Some(function) = call.function {
            if let Some(name) = function.name.filter(|n| !n.is_empty())
                && entry.name.is_empty()
            {
                entry.name = name;
            }
            if let Some(fragment) = function.arguments {
                entry.arguments.push_str(&fragment);
            }
        }
    }

    /// The reply so far, ended at the output limit the server did not enforce;
    /// `completion_tokens` is what the client counted.
    fn finish_at_limit(
        mut self,
        request: &ChatRequest,
        completion_tokens: u64,
    ) -> Result<ChatResponse, LlmError> {
        self.finish_reason = Some("length".to_string());
        let reported_prompt = self.usage.map(|u| u.prompt_tokens);
        self.usage = Some(usage_of_cut_reply(
            request,
            reported_prompt,
            completion_tokens,
        ));
        self.finish(request)
    }

    fn finish(self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(LlmError::StreamCut(
                "the stream ended without a finish reason or [DONE]".to_string(),
            ));
        }
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .map(|(index, mut call)| {
                if call.id.is_empty() {
                    // Some local servers send no ids; the history still needs one per call.
                    call.id = format!("call_{index}");
                }
                call
            })
            .collect();
        let stop = match self.finish_reason.as_deref() {
            Some("length") => StopReason::MaxTokens,
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            // Some servers (older Ollama) say "stop" even when the reply calls tools.
            _ if !tool_calls.is_empty() => StopReason::ToolUse,
            Some("stop") => StopReason::EndTurn,
            _ => StopReason::Other,
        };
        let usage = self
            .usage
            .unwrap_or_else(|| count_usage_locally(request, &self.content, &tool_calls));
        Ok(ChatResponse {
            content: self.content,
            tool_calls,
            usage,
            stop,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;

    fn request(messages: Vec<Message>, tools: Vec<ToolSpec>) -> ChatRequest {
        ChatRequest {
            model: "gpt-4o".into(),
            messages,
            tools,
            max_tokens: 100,
            temperature: None,
        }
    }

    fn build(chunks: &[&str]) -> ReplyBuilder {
        let mut reply = ReplyBuilder::default();
        for chunk in chunks {
            reply.apply(serde_json::from_str(chunk).unwrap());
        }
        reply
    }

    #[test]
    fn maps_history_to_the_wire() {
        let call = ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: "{\"path\":\"a\"}".into(),
        };
        let messages = vec![
            Message::system("s"),
            Message::user("u"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![call],
            },
            Message::Tool {
                call_id: "c1".into(),
                name: "read_file".into(),
                content: "text".into(),
                is_error: false,
            },
        ];
        let req = request(messages, vec![]);
        let body = serde_json::to_value(WireRequest::from_request(&req)).unwrap();
        assert_eq!(body["messages"][2]["content"], serde_json::Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["name"],
            "read_file"
        );
        assert_eq!(body["messages"][3]["tool_call_id"], "c1");
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
        assert!(body.get("temperature").is_none());
        assert_eq!(body["stream_options"]["include_usage"], true);
    }

    #[test]
    fn accumulates_text_calls_and_usage() {
        let reply = build(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"He"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"llo","tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}"#,
        ]);
        let response = reply.finish(&request(vec![], vec![])).unwrap();
        assert_eq!(response.content, "Hello");
        assert_eq!(response.tool_calls[0].arguments, "{\"x\":1}");
        assert_eq!(response.tool_calls[1].id, "b");
        assert_eq!(response.tool_calls[1].arguments, "");
        assert_eq!(response.stop, StopReason::ToolUse);
        assert_eq!(response.usage.prompt_tokens, 9);
    }

    #[test]
    fn reads_cached_prompt_tokens() {
        let reply = build(&[
            r#"{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":300,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0}}}"#,
        ]);
        let usage = reply.finish(&request(vec![], vec![])).unwrap().usage;
        assert_eq!(
            usage,
            Usage {
                prompt_tokens: 2006,
                completion_tokens: 300,
                cached_prompt_tokens: 1920,
                ..Usage::default()
            }
        );
        let without_details = build(&[
            r#"{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":3,"prompt_tokens_details":null}}"#,
        ]);
        let usage = without_details
            .finish(&request(vec![], vec![]))
            .unwrap()
            .usage;
        assert_eq!((usage.prompt_tokens, usage.cached_prompt_tokens), (20, 0));
    }

    #[test]
    fn a_stream_without_an_end_is_cut() {
        let reply = build(&[r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#]);
        assert!(matches!(
            reply.finish(&request(vec![], vec![])),
            Err(LlmError::StreamCut(_))
        ));
    }

    #[test]
    fn error_chunks_map_to_provider_errors() {
        let endpoint = Endpoint::new(String::new(), vec![], &ProviderSettings::default());
        let req = request(vec![], vec![]);
        let overloaded = serde_json::json!({"message": "Provider returned error", "code": 502});
        let err = stream_error(&overloaded, &req, &endpoint);
        assert!(
            matches!(err, LlmError::Server { status: 502, .. }),
            "{err:?}"
        );
        let limited = serde_json::json!({"message": "Rate limit exceeded", "code": 429});
        let err = stream_error(&limited, &req, &endpoint);
        assert!(matches!(err, LlmError::RateLimited { .. }), "{err:?}");
        let unknown = serde_json::json!({"message": "something odd", "code": "weird"});
        let err = stream_error(&unknown, &req, &endpoint);
        assert!(
            matches!(err, LlmError::Server { status: 500, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn missing_ids_and_usage_are_filled_in() {
        let reply = build(&[
            r#"{"choices":[{"delta":{"content":"hi","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}]}"#,
        ]);
        let response = reply
            .finish(&request(vec![Message::user("hello")], vec![]))
            .unwrap();
        assert_eq!(response.tool_calls[0].id, "call_0");
        assert_eq!(response.stop, StopReason::ToolUse);
        assert!(response.usage.prompt_tokens > 0 && response.usage.completion_tokens > 0);
    }
}
