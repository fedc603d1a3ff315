//! Unit tests of the Anthropic client's wire mapping and stream assembly.

use super::*;

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
    assert_eq!(body["system"], "one\n\ntwo");
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
            ..Usage::default()
        }
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
