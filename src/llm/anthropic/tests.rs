//! Unit tests of the Anthropic client's wire mapping and stream assembly.

use super::*;
use crate::llm::Message;

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        model: "claude-sonnet-4-5".into(),
        messages,
        tools: vec![],
        max_tokens: 100,
        temperature: Some(0.2),
    }
}

fn tool_result(id: &str, is_error: bool) -> Message {
    Message::Tool {
        call_id: id.into(),
        name: "t".into(),
        content: format!("result {id}"),
        is_error,
    }
}

fn build(events: &[&str]) -> ReplyBuilder {
    let mut reply = ReplyBuilder::default();
    for event in events {
        reply.apply(serde_json::from_str(event).unwrap());
    }
    reply
}

#[test]
fn merges_turns_and_hoists_system_text() {
    let calls = vec![
        ToolCall {
            id: "a".into(),
            name: "t".into(),
            arguments: "{\"x\":1}".into(),
        },
        ToolCall {
            id: "b".into(),
            name: "t".into(),
            arguments: "not json".into(),
        },
    ];
    let req = request(vec![
        Message::system("one"),
        Message::user("review"),
        Message::Assistant {
            content: "looking".into(),
            tool_calls: calls,
        },
        tool_result("a", false),
        tool_result("b", true),
        Message::system("two"),
        Message::user("go on"),
    ]);
    let body = serde_json::to_value(WireRequest::from_request(&req)).unwrap();
    assert_eq!(body["system"][0]["text"], "one\n\ntwo");
    let turns = body["messages"].as_array().unwrap();
    assert_eq!(turns.len(), 3);
    assert_eq!(turns[1]["content"][1]["input"], serde_json::json!({"x": 1}));
    assert_eq!(turns[1]["content"][2]["input"], serde_json::json!({}));
    let results = turns[2]["content"].as_array().unwrap();
    assert_eq!(results[0]["tool_use_id"], "a");
    assert_eq!(results[1]["is_error"], true);
    assert_eq!(results[2]["text"], "go on");
    assert!(body.get("tools").is_none());
}

#[test]
fn assembles_blocks_and_usage() {
    let reply = build(&[
        r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"ping"}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{}}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"2}"}}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t2","name":"g","input":{}}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    let response = reply.finish(&request(vec![])).unwrap();
    assert_eq!(response.content, "Hi");
    assert_eq!(response.tool_calls[0].arguments, "{\"a\":2}");
    assert_eq!(response.tool_calls[1].arguments, "{}");
    assert_eq!(response.stop, StopReason::ToolUse);
    assert_eq!(
        response.usage,
        Usage {
            prompt_tokens: 15,
            completion_tokens: 7,
            cached_prompt_tokens: 5,
            ..Usage::default()
        }
    );
}

#[test]
fn prompt_tokens_include_cache_reads_and_writes() {
    let start = r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":300,"cache_creation_input_tokens":40,"output_tokens":1}}}"#;
    let stop = r#"{"type":"message_stop"}"#;
    let reply = build(&[
        start,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#,
        stop,
    ]);
    let usage = reply.finish(&request(vec![])).unwrap().usage;
    assert_eq!(
        usage,
        Usage {
            prompt_tokens: 350,
            completion_tokens: 9,
            cached_prompt_tokens: 300,
            cache_write_tokens: 40,
            estimated: false,
        }
    );
    // A message_delta that reports the prompt again (cumulative usage) replaces it.
    let reply = build(&[
        start,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":12,"cache_read_input_tokens":0,"cache_creation_input_tokens":340,"output_tokens":9}}"#,
        stop,
    ]);
    let usage = reply.finish(&request(vec![])).unwrap().usage;
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.cached_prompt_tokens,
            usage.cache_write_tokens
        ),
        (352, 0, 340)
    );
}

fn with_tools(mut req: ChatRequest) -> ChatRequest {
    req.tools = ["read_file", "search"]
        .into_iter()
        .map(|name| super::super::ToolSpec {
            name: name.into(),
            description: format!("The {name} tool."),
            parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        })
        .collect();
    req
}

fn breakpoints(body: &serde_json::Value) -> Vec<String> {
    let mut marked = Vec::new();
    let mut visit = |path: String, value: &serde_json::Value| {
        if value.get("cache_control") == Some(&serde_json::json!({"type": "ephemeral"})) {
            marked.push(path);
        }
    };
    for (i, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
        visit(format!("tools/{i}"), tool);
    }
    for (i, block) in body["system"].as_array().into_iter().flatten().enumerate() {
        visit(format!("system/{i}"), block);
    }
    for (i, turn) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (j, block) in turn["content"].as_array().into_iter().flatten().enumerate() {
            visit(format!("messages/{i}/{j}"), block);
        }
    }
    marked
}

#[test]
fn cache_breakpoints_end_the_stable_prefixes() {
    let history = vec![
        Message::system("rules"),
        Message::user("the task"),
        Message::user("the diff"),
        Message::Assistant {
            content: "looking".into(),
            tool_calls: vec![],
        },
        Message::user("go on"),
    ];
    let body = |req: &ChatRequest| serde_json::to_value(WireRequest::from_request(req)).unwrap();
    let full = body(&with_tools(request(history.clone())));
    assert_eq!(breakpoints(&full), ["system/0", "messages/0/1"]);

    let no_system: Vec<Message> = history[1..].to_vec();
    let tools_only = body(&with_tools(request(no_system.clone())));
    assert_eq!(breakpoints(&tools_only), ["tools/1", "messages/0/1"]);

    assert_eq!(breakpoints(&body(&request(no_system))), ["messages/0/1"]);
    assert!(breakpoints(&body(&request(vec![]))).is_empty());
    assert!(breakpoints(&full).len() <= MAX_CACHE_BREAKPOINTS);
}

#[test]
fn the_same_prefix_serialises_to_the_same_bytes() {
    let prefix = vec![Message::system("rules"), Message::user("the task and diff")];
    let mut first = with_tools(request(prefix.clone()));
    first.max_tokens = 4000;
    let mut later = with_tools(request(prefix));
    later.max_tokens = 900;
    later.temperature = None;
    later.messages.extend([
        Message::Assistant {
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: "{\"path\":\"a\"}".into(),
            }],
        },
        tool_result("c1", false),
    ]);
    let first_body = WireRequest::from_request(&first);
    let first_turn = serde_json::to_string(&first_body.messages[0]).unwrap();
    let first_text = serde_json::to_string(&first_body).unwrap();
    let later_text = serde_json::to_string(&WireRequest::from_request(&later)).unwrap();
    let turn_at = first_text.find(&first_turn).unwrap();
    let prefix_end = turn_at + first_turn.len();
    assert_eq!(first_text[..prefix_end], later_text[..prefix_end]);
    assert!(first_text[..prefix_end].contains("\"tools\""));
    assert!(first_text[..prefix_end].contains("\"system\""));
    // And it is deterministic: the same request gives the same bytes.
    assert_eq!(
        later_text,
        serde_json::to_string(&WireRequest::from_request(&later)).unwrap()
    );
}

#[test]
fn no_message_stop_is_a_cut() {
    let reply = build(&[r#"{"type":"message_start","message":{}}"#]);
    assert!(matches!(
        reply.finish(&request(vec![])),
        Err(LlmError::StreamCut(_))
    ));
}

#[test]
fn error_events_map_to_provider_errors() {
    let settings = ProviderSettings::new(super::super::Provider::Anthropic);
    let endpoint = Endpoint::new(String::new(), vec![], &settings);
    let overloaded = serde_json::json!({"type":"overloaded_error","message":"Overloaded"});
    let err = stream_error(&overloaded, &request(vec![]), &endpoint);
    assert!(matches!(err, LlmError::Server { status: 529, .. }));
    assert!(err.is_retryable());
    let invalid =
        serde_json::json!({"type":"invalid_request_error","message":"prompt is too long"});
    let err = stream_error(&invalid, &request(vec![]), &endpoint);
    assert!(matches!(err, LlmError::ContextLengthExceeded { .. }));
}
