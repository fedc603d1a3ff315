//! Model clients against the scripted model server, over both wire formats.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redline::llm::{
    CallTimeouts, ChatModel, ChatRequest, LlmError, Message, ProviderSettings, RetryHook,
    RetryInfo, RetryPolicy, Secret, Stall, StopReason, ToolCall, ToolSpec, build_client,
};
use serde_json::json;

use crate::common::model_server::{ModelServer, Reply, SCRIPT_EXHAUSTED, ScriptedCall, Wire};

const KEY: &str = "sk-test-0123456789abcdefXYZ";

fn fast_retry(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    }
}

fn settings(server: &ModelServer) -> ProviderSettings {
    ProviderSettings {
        provider: server.wire().provider(),
        base_url: server.base_url(),
        api_key: Some(Secret::new(KEY)),
        timeouts: CallTimeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(10),
            stream_idle: Duration::from_secs(10),
            request: Duration::from_secs(10),
        },
        retry: fast_retry(2),
    }
}

type Retries = Arc<Mutex<Vec<RetryInfo>>>;

fn client_with(settings: ProviderSettings) -> (Arc<dyn ChatModel>, Retries) {
    let retries: Retries = Arc::default();
    let sink = retries.clone();
    let hook: RetryHook = Arc::new(move |info| sink.lock().unwrap().push(info));
    (build_client(settings, Some(hook)), retries)
}

fn client(server: &ModelServer) -> (Arc<dyn ChatModel>, Retries) {
    client_with(settings(server))
}

fn model_for(wire: Wire) -> &'static str {
    match wire {
        Wire::OpenAi => "gpt-4o",
        Wire::Anthropic => "claude-sonnet-4-5",
    }
}

fn read_file_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Reads a file of the repository.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }
}

fn ask(wire: Wire, text: &str) -> ChatRequest {
    ChatRequest {
        model: model_for(wire).into(),
        messages: vec![Message::system("You review code."), Message::user(text)],
        tools: vec![read_file_tool()],
        max_tokens: 256,
        temperature: None,
    }
}

async fn call(server: &ModelServer) -> Result<redline::llm::ChatResponse, LlmError> {
    let (model, _) = client(server);
    model.complete(&ask(server.wire(), "Review this.")).await
}

#[tokio::test]
async fn text_reply_with_reported_usage() {
    for wire in Wire::ALL {
        let answer = "No issues found in this change; the new function is covered by tests.";
        let server = ModelServer::start(wire, vec![Reply::text(answer)]).await;
        let response = call(&server).await.unwrap();
        assert_eq!(response.content, answer, "{wire:?}");
        assert!(response.tool_calls.is_empty());
        assert_eq!(response.stop, StopReason::EndTurn);
        let sent = &server.requests()[0];
        assert_eq!(response.usage.prompt_tokens, (sent.body_len / 4) as u64);
        assert_eq!(response.usage.completion_tokens, (answer.len() / 4) as u64);
    }
}

#[tokio::test]
async fn several_tool_calls_in_one_reply_arrive_intact() {
    for wire in Wire::ALL {
        let calls = vec![
            ScriptedCall {
                id: "call_a1".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"src/lib.rs","start":1}"#.into(),
            },
            ScriptedCall {
                id: "call_b2".into(),
                name: "search".into(),
                arguments: r#"{"pattern":"fn main"}"#.into(),
            },
            ScriptedCall {
                id: "call_c3".into(),
                name: "no_such_tool".into(),
                arguments: r#"{"path": "unterminated"#.into(),
            },
        ];
        let reply = Reply::Tools {
            text: "Let me look around.".into(),
            calls: calls.clone(),
        };
        let server = ModelServer::start(wire, vec![reply]).await;
        let response = call(&server).await.unwrap();
        assert_eq!(response.content, "Let me look around.", "{wire:?}");
        assert_eq!(response.stop, StopReason::ToolUse);
        let got: Vec<ToolCall> = response.tool_calls;
        let want: Vec<ToolCall> = calls
            .into_iter()
            .map(|c| ToolCall {
                id: c.id,
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        assert_eq!(got, want, "{wire:?}");
    }
}

fn conversation(wire: Wire) -> ChatRequest {
    let calls = vec![
        ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a.rs"}"#.into(),
        },
        ToolCall {
            id: "call_2".into(),
            name: "read_file".into(),
            arguments: "{broken".into(),
        },
    ];
    ChatRequest {
        model: model_for(wire).into(),
        messages: vec![
            Message::system("You review code."),
            Message::user("Review the diff."),
            Message::Assistant {
                content: String::new(),
                tool_calls: calls,
            },
            Message::Tool {
                call_id: "call_1".into(),
                name: "read_file".into(),
                content: "fn a() {}".into(),
                is_error: false,
            },
            Message::Tool {
                call_id: "call_2".into(),
                name: "read_file".into(),
                content: "error: arguments are not valid JSON".into(),
                is_error: true,
            },
            Message::system("Two steps left."),
        ],
        tools: vec![read_file_tool()],
        max_tokens: 512,
        temperature: Some(0.0),
    }
}

#[tokio::test]
async fn openai_request_maps_the_history() {
    let server = ModelServer::start(Wire::OpenAi, vec![Reply::text("ok")]).await;
    let (model, _) = client(&server);
    model.complete(&conversation(Wire::OpenAi)).await.unwrap();
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = &sent.body;
    assert_eq!(body["model"], "gpt-4o");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 512);
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "read_file");
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "tool", "system"]
    );
    let assistant = &messages[2];
    assert!(assistant["content"].is_null());
    assert_eq!(assistant["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        assistant["tool_calls"][1]["function"]["arguments"],
        "{broken"
    );
    assert_eq!(messages[3]["tool_call_id"], "call_1");
    assert_eq!(messages[4]["tool_call_id"], "call_2");
    assert_eq!(
        messages[4]["content"],
        "error: arguments are not valid JSON"
    );
}

#[tokio::test]
async fn anthropic_request_maps_the_history() {
    let server = ModelServer::start(Wire::Anthropic, vec![Reply::text("ok")]).await;
    let (model, _) = client(&server);
    model
        .complete(&conversation(Wire::Anthropic))
        .await
        .unwrap();
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert!(sent.header("authorization").is_none());
    let body = &sent.body;
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You review code.\n\nTwo steps left.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 512);
    assert_eq!(
        body["tools"][0]["input_schema"]["required"],
        json!(["path"])
    );
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    let uses = messages[1]["content"].as_array().unwrap();
    assert_eq!(uses[0]["type"], "tool_use");
    assert_eq!(uses[0]["input"], json!({"path": "a.rs"}));
    assert_eq!(
        uses[1]["input"],
        json!({}),
        "malformed arguments become an empty object"
    );
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(
        results.len(),
        2,
        "consecutive tool results merge into one turn"
    );
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(results[0]["tool_use_id"], "call_1");
    assert_eq!(results[0]["is_error"], false);
    assert_eq!(results[1]["tool_use_id"], "call_2");
    assert_eq!(results[1]["is_error"], true);
    assert_eq!(
        messages[0]["content"][0]["cache_control"],
        json!({"type": "ephemeral"}),
        "the first user turn ends a cached prefix"
    );
    let breakpoints = sent.body.to_string().matches("cache_control").count();
    assert_eq!(breakpoints, 2, "system block and first user turn only");
}

#[tokio::test]
async fn rate_limit_waits_as_asked_then_succeeds() {
    for wire in Wire::ALL {
        let limited = Reply::api_error(wire, 429, "rate_limit_error", "slow down")
            .with_header("Retry-After", "1");
        let server = ModelServer::start(wire, vec![limited, Reply::text("done")]).await;
        let (model, retries) = client(&server);
        let response = model.complete(&ask(wire, "hi")).await.unwrap();
        assert_eq!(response.content, "done");
        assert_eq!(server.requests().len(), 2);
        let retries = retries.lock().unwrap();
        assert_eq!(retries.len(), 1, "{wire:?}");
        assert_eq!(retries[0].attempt, 1);
        assert_eq!(retries[0].delay, Duration::from_secs(1));
        assert!(retries[0].reason.contains("429"), "{}", retries[0].reason);
    }
}

#[tokio::test]
async fn server_errors_and_cut_streams_are_retried() {
    for wire in Wire::ALL {
        let server_error = Reply::api_error(wire, 500, "api_error", "internal error");
        let cut = Reply::text("This answer will be cut off somewhere in the middle.").cut();
        let server = ModelServer::start(wire, vec![server_error, cut, Reply::text("whole")]).await;
        let (model, retries) = client(&server);
        let response = model.complete(&ask(wire, "hi")).await.unwrap();
        assert_eq!(response.content, "whole", "{wire:?}");
        let reasons: Vec<String> = retries
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.reason.clone())
            .collect();
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(reasons[0].contains("HTTP 500"), "{reasons:?}");
        assert!(reasons[1].contains("cut off"), "{reasons:?}");
    }
}

#[tokio::test]
async fn cut_tool_call_stream_is_retried() {
    for wire in Wire::ALL {
        let call = Reply::tool("call_1", "read_file", json!({"path": "src/main.rs"}));
        let server = ModelServer::start(wire, vec![call.clone().cut(), call]).await;
        let (model, retries) = client(&server);
        let response = model.complete(&ask(wire, "hi")).await.unwrap();
        assert_eq!(
            response.tool_calls[0].arguments,
            r#"{"path":"src/main.rs"}"#
        );
        assert_eq!(retries.lock().unwrap().len(), 1, "{wire:?}");
    }
}

#[tokio::test]
async fn refused_key_is_never_shown() {
    for wire in Wire::ALL {
        let echo = format!("Incorrect API key provided: {KEY}. Also seen as sk-test-0123****XYZ.");
        let code = match wire {
            Wire::OpenAi => "invalid_api_key",
            Wire::Anthropic => "authentication_error",
        };
        let server = ModelServer::start(wire, vec![Reply::api_error(wire, 401, code, &echo)]).await;
        let err = call(&server).await.unwrap_err();
        assert!(matches!(err, LlmError::Auth { status: 401, .. }), "{err:?}");
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(KEY), "{shown}");
        assert!(!shown.contains("0123456789abcdef"), "{shown}");
        assert!(shown.contains("Incorrect API key provided"), "{shown}");
        assert_eq!(server.requests().len(), 1, "auth errors are not retried");
    }
}

#[tokio::test]
async fn unknown_model_is_reported() {
    for (wire, code, message) in [
        (
            Wire::OpenAi,
            "model_not_found",
            "The model `gpt-9` does not exist or you do not have access to it.",
        ),
        (Wire::Anthropic, "not_found_error", "model: claude-9"),
    ] {
        let server =
            ModelServer::start(wire, vec![Reply::api_error(wire, 404, code, message)]).await;
        let err = call(&server).await.unwrap_err();
        match err {
            LlmError::ModelNotFound { model, .. } => assert_eq!(model, model_for(wire)),
            other => panic!("{wire:?}: {other:?}"),
        }
    }
    let ollama = Reply::error(
        404,
        r#"{"error":"model \"llama9\" not found, try pulling it first"}"#,
    );
    let server = ModelServer::start(Wire::OpenAi, vec![ollama]).await;
    assert!(matches!(
        call(&server).await,
        Err(LlmError::ModelNotFound { .. })
    ));
}

#[tokio::test]
async fn context_overflow_is_reported() {
    for (wire, code, message) in [
        (
            Wire::OpenAi,
            "context_length_exceeded",
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130012 tokens.",
        ),
        (
            Wire::Anthropic,
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
        ),
    ] {
        let server =
            ModelServer::start(wire, vec![Reply::api_error(wire, 400, code, message)]).await;
        let err = call(&server).await.unwrap_err();
        assert!(
            matches!(err, LlmError::ContextLengthExceeded { .. }),
            "{wire:?}: {err:?}"
        );
        assert!(!err.is_retryable());
    }
}

#[tokio::test]
async fn servers_without_tool_calling_are_recognised() {
    let refusals = [
        Reply::error(
            400,
            r#"{"error":"registry.ollama.ai/library/gemma:2b does not support tools"}"#,
        ),
        Reply::error(
            500,
            r#"{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}"#,
        ),
        Reply::error(
            400,
            r#"{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}"#,
        ),
    ];
    for refusal in refusals {
        let server = ModelServer::start(Wire::OpenAi, vec![refusal.clone()]).await;
        let err = call(&server).await.unwrap_err();
        assert!(
            matches!(err, LlmError::ToolsUnsupported { .. }),
            "{refusal:?}: {err:?}"
        );
        assert_eq!(server.requests().len(), 1, "not retried");
    }
}

#[tokio::test]
async fn slow_server_times_out_after_retries() {
    for wire in Wire::ALL {
        let server = ModelServer::start_with(wire, |_, _| {
            Reply::text("late").delayed(Duration::from_millis(500))
        })
        .await;
        let mut settings = settings(&server);
        settings.timeouts.request = Duration::from_millis(50);
        let (model, retries) = client_with(settings);
        let err = model.complete(&ask(wire, "hi")).await.unwrap_err();
        assert!(err.to_string().contains("`request_timeout`"), "{err}");
        assert_eq!(
            err,
            LlmError::Timeout(Duration::from_millis(50)),
            "{wire:?}"
        );
        assert_eq!(retries.lock().unwrap().len(), 2);
        assert_eq!(server.requests().len(), 3);
    }
}

#[tokio::test]
async fn missing_usage_is_counted_locally() {
    for wire in Wire::ALL {
        let reply =
            Reply::tool("call_1", "read_file", json!({"path": "README.md"})).with_text("Checking.");
        let server = ModelServer::start(wire, vec![reply]).await.without_usage();
        let response = call(&server).await.unwrap();
        assert!(response.usage.prompt_tokens > 0, "{wire:?}");
        assert!(response.usage.completion_tokens > 0, "{wire:?}");
        assert_eq!(response.tool_calls.len(), 1);
    }
}

#[tokio::test]
async fn keyless_local_server_and_trailing_slash() {
    let server = ModelServer::start(Wire::OpenAi, vec![Reply::text("hi")]).await;
    let mut settings = settings(&server);
    settings.api_key = None;
    settings.base_url = format!("{}/", server.base_url());
    let (model, _) = client_with(settings);
    model.complete(&ask(Wire::OpenAi, "hi")).await.unwrap();
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert!(sent.header("authorization").is_none());
}

#[tokio::test]
async fn exhausted_script_is_a_server_error() {
    for wire in Wire::ALL {
        let server = ModelServer::start(wire, vec![]).await;
        let mut settings = settings(&server);
        settings.retry = fast_retry(0);
        let (model, _) = client_with(settings);
        let err = model.complete(&ask(wire, "hi")).await.unwrap_err();
        assert!(
            matches!(&err, LlmError::Server { status: 500, message, .. } if message.contains(SCRIPT_EXHAUSTED)),
            "{err:?}"
        );
    }
}

#[tokio::test]
async fn unreachable_server_is_a_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut settings = ProviderSettings::new(redline::llm::Provider::OpenAi);
    settings.base_url = format!("http://127.0.0.1:{port}/v1");
    settings.retry = fast_retry(1);
    let (model, retries) = client_with(settings);
    let err = model.complete(&ask(Wire::OpenAi, "hi")).await.unwrap_err();
    assert!(matches!(err, LlmError::Connect(_)), "{err:?}");
    assert_eq!(retries.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn silent_stream_is_stalled() {
    for wire in Wire::ALL {
        let stalled = Reply::text("An answer that pauses for too long in the middle.")
            .stalled(Duration::from_millis(500));
        let server = ModelServer::start_with(wire, move |_, _| stalled.clone()).await;
        let mut settings = settings(&server);
        settings.timeouts.stream_idle = Duration::from_millis(50);
        settings.retry = fast_retry(1);
        let (model, retries) = client_with(settings);
        let err = model.complete(&ask(wire, "hi")).await.unwrap_err();
        assert!(
            matches!(
                &err,
                LlmError::Stalled {
                    phase: Stall::StreamIdle,
                    ..
                }
            ),
            "{wire:?}: {err:?}"
        );
        assert_eq!(retries.lock().unwrap().len(), 1);
    }
}

#[tokio::test]
async fn short_pause_within_the_idle_timeout_is_fine() {
    for wire in Wire::ALL {
        let reply = Reply::text("An answer with a short pause.").stalled(Duration::from_millis(20));
        let server = ModelServer::start(wire, vec![reply]).await;
        let response = call(&server).await.unwrap();
        assert_eq!(
            response.content, "An answer with a short pause.",
            "{wire:?}"
        );
    }
}

/// A 200 whose body holds no event at all (an HTML page behind a wrong base URL) is named as
/// such, for both wire formats, not reported as a stream cut off.
#[tokio::test]
async fn a_body_without_any_event_is_not_called_a_cut_stream() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_bytes(b"\x00\xffthis is not json <html>garbage</html>".to_vec()),
        )
        .mount(&server)
        .await;
    for (provider, wire) in [
        (redline::llm::Provider::OpenAi, Wire::OpenAi),
        (redline::llm::Provider::Anthropic, Wire::Anthropic),
    ] {
        let settings = ProviderSettings {
            provider,
            base_url: server.uri(),
            api_key: Some(Secret::new(KEY)),
            timeouts: CallTimeouts {
                request: Duration::from_secs(10),
                ..CallTimeouts::default()
            },
            retry: fast_retry(0),
        };
        let (model, _) = client_with(settings);
        let err = model
            .complete(&ask(wire, "Review this."))
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("no server-sent events"),
            "{provider:?}: {text}"
        );
        assert!(!text.contains("cut off"), "{text}");
    }
}
