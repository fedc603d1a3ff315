//! Stage 2: old observations become stubs, oversized ones are cut, repeated reads point back.

use redline::context::{
    DEFAULT_KEEP_RECENT, DEFAULT_MAX_OBSERVATION_TOKENS, LOW_WATER, Pruner, ReadTracker,
};
use redline::llm::tokens::{Encoding, TokenCounter};
use redline::llm::{Message, ToolCall};

use super::support::thousands;

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::Cl100kBase)
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

/// One assistant turn calling `name` and its result.
fn turn(id: &str, name: &str, arguments: &str, content: &str, is_error: bool) -> [Message; 2] {
    [
        Message::Assistant {
            content: String::new(),
            tool_calls: vec![call(id, name, arguments)],
        },
        Message::Tool {
            call_id: id.into(),
            name: name.into(),
            content: content.into(),
            is_error,
        },
    ]
}

fn read(id: &str, path: &str, start: u32, end: u32) -> [Message; 2] {
    let body: String = (start..=end)
        .map(|n| format!("{n:>5} let x{n} = {n};\n"))
        .collect();
    turn(
        id,
        "read_file",
        &format!(r#"{{"path":"{path}","start_line":{start},"end_line":{end}}}"#),
        &body,
        false,
    )
}

/// A pruner always under pressure: it elides every seen result it may.
fn immediate(keep_recent: usize, max_observation_tokens: usize) -> Pruner {
    Pruner::new(keep_recent, max_observation_tokens).with_threshold(0)
}

fn history(turns: Vec<[Message; 2]>) -> Vec<Message> {
    let mut history = vec![Message::system("review"), Message::user("the change")];
    history.extend(turns.into_iter().flatten());
    history
}

fn tool_content(history: &[Message], id: &str) -> String {
    history
        .iter()
        .find_map(|m| match m {
            Message::Tool {
                call_id, content, ..
            } if call_id == id => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn old_results_become_stubs_and_the_recent_ones_stay() {
    let mut history = history(vec![
        read("c1", "src/a.rs", 1, 200),
        read("c2", "src/b.rs", 10, 20),
        read("c3", "src/c.rs", 1, 50),
        read("c4", "src/d.rs", 1, 50),
        read("c5", "src/e.rs", 1, 50),
    ]);
    let original = history.clone();
    let counter = counter();
    let c1_tokens = counter.count(&tool_content(&history, "c1"));
    let stats = immediate(DEFAULT_KEEP_RECENT, DEFAULT_MAX_OBSERVATION_TOKENS)
        .prune(&mut history, &counter);
    assert_eq!(
        tool_content(&history, "c1"),
        format!(
            "[read_file src/a.rs:1-200, {} tokens, elided: call again if needed]",
            thousands(c1_tokens)
        )
    );
    assert!(tool_content(&history, "c2").starts_with("[read_file src/b.rs:10-20, "));
    for id in ["c3", "c4", "c5"] {
        assert_eq!(
            tool_content(&history, id),
            tool_content(&original, id),
            "{id} is recent"
        );
    }
    assert!(stats.after_tokens < stats.before_tokens / 2, "{stats:?}");
    assert_eq!(stats.before_tokens, counter.count_messages(&original));
    // Pruning again changes nothing.
    let again = history.clone();
    let stats = immediate(DEFAULT_KEEP_RECENT, DEFAULT_MAX_OBSERVATION_TOKENS)
        .prune(&mut history, &counter);
    assert_eq!(history, again);
    assert_eq!(stats.before_tokens, stats.after_tokens);
}

/// The texts one whole count of `history` asks a counter for.
fn one_pass(history: &[Message]) -> usize {
    let counter = counter();
    counter.count_messages(history);
    counter.texts_counted()
}

#[test]
fn a_prune_counts_the_history_once() {
    let mut history = history(vec![
        read("c1", "src/a.rs", 1, 200),
        read("c2", "src/b.rs", 1, 50),
        read("c3", "src/c.rs", 1, 50),
    ]);
    let once = one_pass(&history);
    // Below the threshold: nothing changes, every text is counted once.
    let quiet = counter();
    let stats = Pruner::new(DEFAULT_KEEP_RECENT, DEFAULT_MAX_OBSERVATION_TOKENS)
        .prune(&mut history, &quiet);
    assert!(stats.removed.is_empty());
    assert_eq!(quiet.texts_counted(), once);
    // Under pressure: once, and then each stub it wrote.
    let pressed = counter();
    let stats = immediate(0, DEFAULT_MAX_OBSERVATION_TOKENS).prune(&mut history, &pressed);
    assert_eq!(stats.removed.len(), 2, "{stats:?}");
    assert_eq!(pressed.texts_counted(), once + stats.removed.len());
    // The total kept along the way is the pruned history's.
    assert_eq!(stats.after_tokens, counter().count_messages(&history));
}

#[test]
fn errors_and_findings_are_never_elided() {
    let mut history = history(vec![
        turn(
            "e1",
            "read_file",
            r#"{"path":"nope.rs"}"#,
            "ERROR: no such file `nope.rs`",
            true,
        ),
        turn(
            "s1",
            "submit_review",
            r#"{"findings":[]}"#,
            "accepted 2 findings: F1 src/a.rs:3, F2 src/b.rs:9",
            false,
        ),
        read("c1", "src/a.rs", 1, 100),
        read("c2", "src/a.rs", 100, 200),
    ]);
    let pruner = immediate(1, DEFAULT_MAX_OBSERVATION_TOKENS);
    pruner.prune(&mut history, &counter());
    assert_eq!(
        tool_content(&history, "e1"),
        "ERROR: no such file `nope.rs`"
    );
    assert!(tool_content(&history, "s1").starts_with("accepted 2 findings"));
    assert!(tool_content(&history, "c1").ends_with("elided: call again if needed]"));
    assert!(tool_content(&history, "c2").starts_with("  100 let x100"));
}

#[test]
fn an_oversized_observation_keeps_its_head_and_tail() {
    let mut history = history(vec![read("c1", "src/big.rs", 1, 5_000)]);
    let counter = counter();
    let pruner = immediate(3, 1_000);
    pruner.prune(&mut history, &counter);
    let content = tool_content(&history, "c1");
    assert!(
        counter.count(&content) <= 1_000,
        "{}",
        counter.count(&content)
    );
    assert!(content.starts_with("    1 let x1 = 1;\n"));
    assert!(content.ends_with(" 5000 let x5000 = 5000;\n"));
    assert!(
        content.contains("cut from the middle of this output"),
        "{content}"
    );
}

#[test]
fn a_repeated_read_points_to_the_result_still_in_view() {
    let history = history(vec![
        read("c1", "src/a.rs", 1, 80),
        read("c2", "src/b.rs", 1, 10),
        read("c3", "src/a.rs", 100, 150),
    ]);
    let tracker = ReadTracker::default();
    assert_eq!(
        tracker
            .pointer("src/a.rs", Some(100), Some(150), &history)
            .as_deref(),
        Some("[same as the result of call c3 above, still in view]")
    );
    assert_eq!(
        tracker
            .pointer("./src/a.rs", Some(10), Some(20), &history)
            .as_deref(),
        Some("[lines 10-20 of src/a.rs are in the result of call c1 above, still in view]")
    );
    assert_eq!(
        tracker.pointer("src/a.rs", Some(70), Some(120), &history),
        None
    );
    assert_eq!(tracker.pointer("src/c.rs", None, None, &history), None);
    let new_call = call(
        "c4",
        "read_file",
        r#"{"path":"src/b.rs","start_line":1,"end_line":10}"#,
    );
    assert_eq!(
        tracker.pointer_for_call(&new_call, &history).as_deref(),
        Some("[same as the result of call c2 above, still in view]")
    );
}

#[test]
fn no_pointer_once_the_earlier_result_was_elided_or_failed() {
    let mut history = history(vec![
        read("c1", "src/a.rs", 1, 80),
        read("c2", "src/b.rs", 1, 10),
        read("c3", "src/c.rs", 1, 10),
        turn(
            "c4",
            "read_file",
            r#"{"path":"src/d.rs"}"#,
            "ERROR: no such file",
            true,
        ),
    ]);
    let tracker = ReadTracker::default();
    assert!(
        tracker
            .pointer("src/a.rs", Some(1), Some(80), &history)
            .is_some()
    );
    immediate(2, 6_000).prune(&mut history, &counter());
    assert_eq!(
        tracker.pointer("src/a.rs", Some(1), Some(80), &history),
        None
    );
    assert_eq!(tracker.pointer("src/d.rs", None, None, &history), None);
    assert!(
        tracker
            .pointer("src/c.rs", Some(1), Some(10), &history)
            .is_some()
    );
}

#[test]
fn a_result_a_recent_pointer_names_is_kept() {
    let mut history = history(vec![
        read("c1", "src/a.rs", 1, 80),
        read("c2", "src/b.rs", 1, 10),
        read("c3", "src/c.rs", 1, 10),
    ]);
    let pointer = ReadTracker::default()
        .pointer("src/a.rs", Some(1), Some(80), &history)
        .expect("pointer");
    history.extend(turn(
        "c4",
        "read_file",
        r#"{"path":"src/a.rs","start_line":1,"end_line":80}"#,
        &pointer,
        false,
    ));
    let original = tool_content(&history, "c1");
    immediate(2, 6_000).prune(&mut history, &counter());
    assert_eq!(
        tool_content(&history, "c1"),
        original,
        "c4 still points at it"
    );
    assert!(tool_content(&history, "c2").ends_with("elided: call again if needed]"));
}

fn is_stub(content: &str) -> bool {
    content.ends_with("elided: call again if needed]")
}

#[test]
fn nothing_is_elided_below_the_threshold() {
    let mut history = history(vec![
        read("c1", "src/a.rs", 1, 200),
        read("c2", "src/b.rs", 1, 200),
        read("c3", "src/c.rs", 1, 200),
        read("c4", "src/d.rs", 1, 200),
        read("c5", "src/e.rs", 1, 200),
    ]);
    let counter = counter();
    let original = history.clone();
    let tokens = counter.count_messages(&history);
    let stats = Pruner::new(1, DEFAULT_MAX_OBSERVATION_TOKENS)
        .with_threshold(tokens)
        .prune(&mut history, &counter);
    assert_eq!(history, original, "no pressure, no pruning");
    assert!(stats.removed.is_empty());
    // One token over: the oldest go, enough to reach the low-water mark.
    let stats = Pruner::new(1, DEFAULT_MAX_OBSERVATION_TOKENS)
        .with_threshold(tokens - 1)
        .prune(&mut history, &counter);
    assert!(is_stub(&tool_content(&history, "c1")));
    assert!(
        stats.after_tokens <= ((tokens - 1) as f64 * LOW_WATER) as usize,
        "{stats:?}"
    );
    assert_eq!(tool_content(&history, "c5"), tool_content(&original, "c5"));
}

#[test]
fn a_result_not_yet_seen_is_never_elided() {
    // Three turns the model has seen, then one turn of four parallel reads.
    let mut history = history(vec![
        read("c1", "src/a.rs", 1, 100),
        read("c2", "src/b.rs", 1, 100),
        read("c3", "src/c.rs", 1, 100),
    ]);
    let parallel = ["p1", "p2", "p3", "p4"];
    history.push(Message::Assistant {
        content: String::new(),
        tool_calls: parallel
            .iter()
            .map(|id| call(id, "read_file", &format!(r#"{{"path":"src/{id}.rs"}}"#)))
            .collect(),
    });
    for id in parallel {
        history.push(Message::Tool {
            call_id: id.into(),
            name: "read_file".into(),
            content: format!("{id}: {}", "fn x() {}\n".repeat(300)),
            is_error: false,
        });
    }
    let original = history.clone();
    let stats = immediate(1, DEFAULT_MAX_OBSERVATION_TOKENS).prune(&mut history, &counter());
    for id in parallel {
        assert_eq!(
            tool_content(&history, id),
            tool_content(&original, id),
            "{id}"
        );
    }
    for id in ["c1", "c2", "c3"] {
        assert!(is_stub(&tool_content(&history, id)), "{id} was seen");
    }
    assert_eq!(
        stats.removed.len(),
        3,
        "each elision is named: {:?}",
        stats.removed
    );
    assert!(stats.removed[0].starts_with("read_file src/a.rs:1-100, "));
}

#[test]
fn the_oldest_and_largest_go_first() {
    let mut history = history(vec![
        read("small", "src/a.rs", 1, 5),
        read("large", "src/b.rs", 1, 400),
        read("mid", "src/c.rs", 1, 100),
        read("newer", "src/d.rs", 1, 400),
        read("last", "src/e.rs", 1, 10),
    ]);
    let counter = counter();
    let original = history.clone();
    let tokens = counter.count_messages(&history);
    // Just over the threshold: freeing the oldest large result is enough.
    let threshold = tokens - 1;
    let stats = Pruner::new(1, DEFAULT_MAX_OBSERVATION_TOKENS)
        .with_threshold(threshold)
        .prune(&mut history, &counter);
    assert!(is_stub(&tool_content(&history, "large")), "{stats:?}");
    for id in ["small", "mid", "newer", "last"] {
        assert_eq!(
            tool_content(&history, id),
            tool_content(&original, id),
            "{id}"
        );
    }
    assert_eq!(stats.removed.len(), 1, "{stats:?}");
}

#[test]
fn under_pressure_results_are_elided_in_batches_so_the_prefix_changes_rarely() {
    let counter = counter();
    let pruner =
        Pruner::new(DEFAULT_KEEP_RECENT, DEFAULT_MAX_OBSERVATION_TOKENS).with_threshold(4_000);
    let mut history = history(Vec::new());
    let mut prefix_changes = 0;
    let mut previous: Vec<Message> = history.clone();
    let calls = 40;
    for i in 0..calls {
        let first = i as u32 * 40 + 1;
        history.extend(read(&format!("c{i}"), "src/a.rs", first, first + 39));
        let stats = pruner.prune(&mut history, &counter);
        // What was sent before must still be the start of what is sent now.
        if history[..previous.len()] != previous[..] {
            prefix_changes += 1;
            assert!(!stats.removed.is_empty());
        }
        assert!(
            !is_stub(&tool_content(&history, &format!("c{i}"))),
            "the new result c{i} is whole"
        );
        assert!(stats.after_tokens <= 4_000, "{stats:?}");
        previous = history.clone();
    }
    assert!(prefix_changes >= 2, "{prefix_changes}");
    // Each prune frees a quarter of the threshold: several calls between two.
    assert!(
        prefix_changes <= calls / 3,
        "{prefix_changes} prunes in {calls} calls"
    );
}
