//! Rendering scripted replies as the providers' real SSE streams.

use serde_json::{Value, json};

use super::ScriptedCall;

/// What the stream rendering needs to know about the request.
pub(super) struct StreamContext {
    /// The model name of the request.
    pub model: String,
    /// Reported prompt tokens.
    pub prompt_tokens: u64,
    /// Cached prompt tokens, reported when the prompt cache is simulated.
    pub cached_tokens: Option<u64>,
    /// Whether usage is reported.
    pub report_usage: bool,
    /// The request's number, for message ids.
    pub index: usize,
}

/// A rendered stream: the reply's body events, then the events that end it.
pub(super) struct Events {
    body: Vec<String>,
    ending: Vec<String>,
}

impl Events {
    /// The first half of the body (at least one event), and everything after it.
    pub(super) fn halves(mut self) -> (Vec<String>, Vec<String>) {
        let rest = self.body.split_off(self.body.len().div_ceil(2).max(1));
        (self.body, rest.into_iter().chain(self.ending).collect())
    }
}

pub(super) fn completion_tokens(text: &str, calls: &[ScriptedCall]) -> u64 {
    let chars = text.chars().count()
        + calls
            .iter()
            .map(|c| c.name.chars().count() + c.arguments.chars().count())
            .sum::<usize>();
    (chars / 4) as u64
}

/// `text` in up to `parts` non-empty pieces of similar length (never splitting a character).
fn pieces(text: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(parts).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn data_line(value: &Value) -> String {
    format!("data: {value}\n\n")
}

pub(super) fn openai_events(text: &str, calls: &[ScriptedCall], context: &StreamContext) -> Events {
    let chunk = |delta: Value, finish: Value| {
        let mut chunk = json!({
            "id": format!("chatcmpl-scripted-{}", context.index),
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": context.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if context.report_usage {
            chunk["usage"] = Value::Null;
        }
        data_line(&chunk)
    };
    let mut body = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for piece in pieces(text, 3) {
        body.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (index, call) in calls.iter().enumerate() {
        let start = json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
            "function": {"name": call.name, "arguments": ""}}]});
        body.push(chunk(start, Value::Null));
        for fragment in pieces(&call.arguments, 3) {
            let more =
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]});
            body.push(chunk(more, Value::Null));
        }
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let mut ending = vec![chunk(json!({}), json!(finish))];
    if context.report_usage {
        let completion = completion_tokens(text, calls);
        let mut usage = json!({"prompt_tokens": context.prompt_tokens, "completion_tokens": completion,
            "total_tokens": context.prompt_tokens + completion});
        if let Some(cached) = context.cached_tokens {
            usage["prompt_tokens_details"] = json!({"cached_tokens": cached});
        }
        ending.push(data_line(&json!({
            "id": format!("chatcmpl-scripted-{}", context.index),
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": context.model,
            "choices": [],
            "usage": usage,
        })));
    }
    ending.push("data: [DONE]\n\n".to_string());
    Events { body, ending }
}

fn anthropic_event(name: &str, data: Value) -> String {
    format!("event: {name}\n{}", data_line(&data))
}

pub(super) fn anthropic_events(
    text: &str,
    calls: &[ScriptedCall],
    context: &StreamContext,
) -> Events {
    let mut message = json!({
        "id": format!("msg_scripted_{}", context.index), "type": "message", "role": "assistant",
        "content": [], "model": context.model, "stop_reason": null, "stop_sequence": null,
    });
    if context.report_usage {
        message["usage"] = json!({"input_tokens": context.prompt_tokens, "output_tokens": 1});
    }
    let mut body = vec![
        anthropic_event(
            "message_start",
            json!({"type": "message_start", "message": message}),
        ),
        anthropic_event("ping", json!({"type": "ping"})),
    ];
    let mut index = 0;
    if !text.is_empty() || calls.is_empty() {
        body.push(anthropic_event(
            "content_block_start",
            json!({"type": "content_block_start",
            "index": index, "content_block": {"type": "text", "text": ""}}),
        ));
        for piece in pieces(text, 3) {
            body.push(anthropic_event(
                "content_block_delta",
                json!({"type": "content_block_delta",
                "index": index, "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        body.push(anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for call in calls {
        body.push(anthropic_event("content_block_start", json!({"type": "content_block_start",
            "index": index, "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}})));
        for fragment in pieces(&call.arguments, 3) {
            body.push(anthropic_event(
                "content_block_delta",
                json!({"type": "content_block_delta",
                "index": index, "delta": {"type": "input_json_delta", "partial_json": fragment}}),
            ));
        }
        body.push(anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    let stop_reason = if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    let mut delta = json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}});
    if context.report_usage {
        delta["usage"] = json!({"output_tokens": completion_tokens(text, calls)});
    }
    let ending = vec![
        anthropic_event("message_delta", delta),
        anthropic_event("message_stop", json!({"type": "message_stop"})),
    ];
    Events { body, ending }
}
