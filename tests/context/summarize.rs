//! Stage 3: summary requests, compaction and dropping turns, never orphaning tool results.

use std::collections::HashSet;

use redline::agent::events::EventKind;
use redline::context::{SUMMARY_PROMPT, compact, drop_oldest_turns, summary_request};
use redline::llm::{Message, ToolCall};

/// An assistant turn with `calls` tool calls and their results.
fn turn(n: usize, calls: usize) -> Vec<Message> {
    let ids: Vec<String> = (0..calls).map(|k| format!("t{n}c{k}")).collect();
    let mut messages = vec![Message::Assistant {
        content: format!("turn {n}"),
        tool_calls: ids
            .iter()
            .map(|id| ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                arguments: r#"{"path":"src/a.rs"}"#.into(),
            })
            .collect(),
    }];
    messages.extend(ids.iter().map(|id| Message::Tool {
        call_id: id.clone(),
        name: "read_file".into(),
        content: format!("result of {id}"),
        is_error: false,
    }));
    messages
}

fn history(turns: usize) -> Vec<Message> {
    let mut history = vec![
        Message::system("you review code"),
        Message::user("TASK: the change"),
    ];
    for n in 1..=turns {
        history.extend(turn(n, 1 + n % 3));
    }
    history
}

/// Every tool result answers a call made earlier in the same history, and every call is answered.
fn assert_well_formed(history: &[Message]) {
    let mut open: HashSet<String> = HashSet::new();
    let mut called: HashSet<String> = HashSet::new();
    for message in history {
        match message {
            Message::Assistant { tool_calls, .. } => {
                assert!(open.is_empty(), "calls left unanswered: {open:?}");
                for call in tool_calls {
                    open.insert(call.id.clone());
                    called.insert(call.id.clone());
                }
            }
            Message::Tool { call_id, .. } => {
                assert!(called.contains(call_id), "orphaned result {call_id}");
                open.remove(call_id);
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "calls left unanswered: {open:?}");
}

fn assistant_texts(history: &[Message]) -> Vec<&str> {
    history
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .map(|m| m.text())
        .collect()
}

#[test]
fn compact_keeps_system_task_summary_and_the_latest_turns() {
    let history = history(6);
    let compacted = compact(&history, "Reviewed src/a.rs; remaining: src/b.rs", 2);
    assert_eq!(compacted[0], Message::system("you review code"));
    assert_eq!(compacted[1], Message::user("TASK: the change"));
    assert!(
        matches!(&compacted[2], Message::User { content } if content.contains("remaining: src/b.rs"))
    );
    assert_eq!(assistant_texts(&compacted), ["turn 5", "turn 6"]);
    assert_well_formed(&compacted);
    let tail_len = turn(5, 1 + 5 % 3).len() + turn(6, 1).len();
    assert_eq!(compacted.len(), 3 + tail_len);
    assert!(compacted.len() < history.len());
    // Compacting again replaces the old summary rather than stacking summaries.
    let twice = compact(&compacted, "newer summary", 1);
    assert_eq!(
        twice
            .iter()
            .filter(|m| m.text().contains("summary"))
            .count(),
        1
    );
    assert_eq!(assistant_texts(&twice), ["turn 6"]);
    // Asking for more turns than exist keeps them all.
    assert_eq!(assistant_texts(&compact(&history, "s", 50)).len(), 6);
}

#[test]
fn summary_request_ends_with_the_prompt_and_no_unanswered_call() {
    let mut history = history(3);
    history.push(Message::Assistant {
        content: String::new(),
        tool_calls: vec![ToolCall {
            id: "pending".into(),
            name: "search".into(),
            arguments: "{}".into(),
        }],
    });
    let request = summary_request(&history);
    assert_eq!(request.last(), Some(&Message::user(SUMMARY_PROMPT)));
    assert_eq!(request.len(), history.len());
    assert_well_formed(&request[..request.len() - 1]);
    let complete = history[..history.len() - 1].to_vec();
    assert_eq!(summary_request(&complete).len(), complete.len() + 1);
}

#[test]
fn dropping_turns_keeps_the_preamble_and_the_latest_turn() {
    let history = history(4);
    let dropped = drop_oldest_turns(&history).expect("turns to drop");
    assert_eq!(dropped[1], Message::user("TASK: the change"));
    assert!(dropped[2].text().starts_with("[Context note:"));
    assert_eq!(assistant_texts(&dropped), ["turn 3", "turn 4"]);
    assert_well_formed(&dropped);
    let again = drop_oldest_turns(&dropped).expect("one more");
    assert_eq!(assistant_texts(&again), ["turn 4"]);
    assert_eq!(
        again
            .iter()
            .filter(|m| m.text().starts_with("[Context note:"))
            .count(),
        1
    );
    assert_eq!(drop_oldest_turns(&again), None);
    assert_eq!(drop_oldest_turns(&[Message::system("s")]), None);
}

#[test]
fn compression_events_serialise_with_their_type() {
    let kind = EventKind::Compression {
        stage: 2,
        before_tokens: 9_000,
        after_tokens: 3_000,
        removed: Vec::new(),
    };
    let json = serde_json::to_value(&kind).expect("serialise");
    assert_eq!(
        json,
        serde_json::json!({"type": "compression", "stage": 2, "before_tokens": 9000, "after_tokens": 3000})
    );
}
