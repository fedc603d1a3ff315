//! Stage 2: prune tool observations before every model call.
//!
//! Tool results older than the most recent few become a one-line stub that
//! says what the result was and how to get it again; a single oversized result
//! is cut to its head and tail (before it is first sent). Old results are
//! elided in batches, not one per call: every elision changes the
//! conversation's prefix and so breaks the provider's prompt cache, and a batch
//! breaks it once for several results. Error observations and the results of the
//! findings tools are never touched: the model must not lose what went wrong
//! or what it already reported.

use std::collections::{HashMap, HashSet};

use crate::llm::tokens::TokenCounter;
use crate::llm::{Message, ToolCall};

use super::thousands;

/// The end of every elision stub; also how a stub is recognised.
pub(crate) const STUB_SUFFIX: &str = "elided: call again if needed]";

/// The start of the note left where an oversized observation was cut.
pub(crate) const CUT_MARKER: &str = "[… cut ";

/// Tokens set aside for the cut note.
const CUT_NOTE_TOKENS: usize = 48;

/// Tool results kept whole by default.
pub const DEFAULT_KEEP_RECENT: usize = 3;

/// Old results elided at once by default.
pub const DEFAULT_PRUNE_BATCH: usize = 3;

/// Default cap on one observation, in tokens (about the tool output cap).
pub const DEFAULT_MAX_OBSERVATION_TOKENS: usize = 6_000;

/// Tools whose results are findings and are never elided.
pub(crate) const FINDINGS_TOOLS: &[&str] = &[
    "submit_review",
    "submit_finding",
    "submit_findings",
    "report_finding",
];

/// Elides old tool results and cuts oversized ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pruner {
    /// Most recent tool results kept whole.
    pub keep_recent: usize,
    /// Longest observation kept in full, in tokens; longer ones are cut to head and tail.
    pub max_observation_tokens: usize,
    /// Tools whose results are never elided or cut (the findings tools by default).
    pub protected_tools: Vec<String>,
    /// Old results are elided only once at least this many are due, all at once.
    pub batch: usize,
}

impl Default for Pruner {
    fn default() -> Self {
        Pruner::new(DEFAULT_KEEP_RECENT, DEFAULT_MAX_OBSERVATION_TOKENS)
    }
}

/// Tokens of the history before and after a prune.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneStats {
    /// Before.
    pub before_tokens: usize,
    /// After.
    pub after_tokens: usize,
}

impl Pruner {
    /// A pruner keeping `keep_recent` results whole and cutting any above `max_observation_tokens`.
    pub fn new(keep_recent: usize, max_observation_tokens: usize) -> Self {
        Pruner {
            keep_recent,
            max_observation_tokens,
            protected_tools: FINDINGS_TOOLS.iter().map(|s| s.to_string()).collect(),
            batch: DEFAULT_PRUNE_BATCH,
        }
    }

    /// Prunes `history` in place. Running it again changes nothing more.
    pub fn prune(&self, history: &mut [Message], counter: &TokenCounter) -> PruneStats {
        let before_tokens = counter.count_messages(history);
        let descriptions: HashMap<String, String> = calls_by_id(history)
            .into_iter()
            .map(|(id, call)| (id.to_string(), describe_call(call)))
            .collect();
        let tool_positions: Vec<usize> = history
            .iter()
            .enumerate()
            .filter(|(_, m)| matches!(m, Message::Tool { .. }))
            .map(|(i, _)| i)
            .collect();
        let recent_from = tool_positions.len().saturating_sub(self.keep_recent);
        // A recent pointer promises the model that the result it names is still in view.
        let pointed_to: HashSet<String> = tool_positions[recent_from..]
            .iter()
            .filter_map(|&i| super::reads::pointer_target(history[i].text()))
            .map(str::to_string)
            .collect();
        let due = tool_positions[..recent_from]
            .iter()
            .filter(|&&i| self.elidable(&history[i], &pointed_to))
            .count();
        let elide_now = due >= self.batch.max(1);
        for (rank, &index) in tool_positions.iter().enumerate() {
            let Some(Message::Tool {
                call_id,
                name,
                content,
                is_error,
            }) = history.get_mut(index)
            else {
                continue;
            };
            if *is_error || self.protected_tools.iter().any(|p| p == name) || is_stub(content) {
                continue;
            }
            if rank < recent_from && elide_now && !pointed_to.contains(call_id.as_str()) {
                let tokens = counter.count(content);
                let what = descriptions.get(call_id.as_str()).unwrap_or(name);
                *content = stub(what, tokens);
            } else if rank >= recent_from {
                let tokens = counter.count(content);
                if tokens > self.max_observation_tokens {
                    *content = cut_head_tail(content, tokens, self.max_observation_tokens, counter);
                }
            }
        }
        PruneStats {
            before_tokens,
            after_tokens: counter.count_messages(history),
        }
    }
}

impl Pruner {
    /// Whether an old result would become a stub now.
    fn elidable(&self, message: &Message, pointed_to: &HashSet<String>) -> bool {
        match message {
            Message::Tool {
                call_id,
                name,
                content,
                is_error,
            } => {
                !*is_error
                    && !self.protected_tools.iter().any(|p| p == name)
                    && !is_stub(content)
                    && !pointed_to.contains(call_id.as_str())
            }
            _ => false,
        }
    }
}

/// Whether an observation is already an elision stub.
pub(crate) fn is_stub(content: &str) -> bool {
    content.starts_with('[') && content.ends_with(STUB_SUFFIX)
}

/// Every tool call of the history by id.
pub(crate) fn calls_by_id(history: &[Message]) -> HashMap<&str, &ToolCall> {
    history
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { tool_calls, .. } => Some(tool_calls),
            _ => None,
        })
        .flatten()
        .map(|call| (call.id.as_str(), call))
        .collect()
}

/// `[read_file src/a.rs:1-200, 1,840 tokens, elided: call again if needed]`.
fn stub(what: &str, tokens: usize) -> String {
    format!("[{what}, {} tokens, {STUB_SUFFIX}", thousands(tokens))
}

/// A short description of a call: the tool and its main arguments.
pub(crate) fn describe_call(call: &ToolCall) -> String {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
    let text = |key: &str| args.get(key).and_then(|v| v.as_str()).map(str::to_string);
    let number = |key: &str| args.get(key).and_then(|v| v.as_u64());
    let main = match call.name.as_str() {
        "read_file" => text("path").map(|path| match (number("start_line"), number("end_line")) {
            (None, None) => path,
            (start, end) => format!(
                "{path}:{}-{}",
                start.unwrap_or(1),
                end.map(|e| e.to_string()).unwrap_or_default()
            ),
        }),
        "search" => text("pattern").map(|pattern| {
            let scope = text("path").or_else(|| text("glob"));
            match scope {
                Some(scope) => format!("{pattern:?} in {scope}"),
                None => format!("{pattern:?}"),
            }
        }),
        _ => ["path", "dir", "glob", "pattern"]
            .iter()
            .find_map(|k| text(k)),
    };
    let main = main.unwrap_or_else(|| {
        let compact = args.to_string();
        if compact == "null" || compact == "{}" {
            String::new()
        } else {
            compact.chars().take(80).collect()
        }
    });
    if main.is_empty() {
        call.name.clone()
    } else {
        format!("{} {main}", call.name)
    }
}

/// Keeps about two thirds of `max_tokens` from the start and one third from
/// the end, at line boundaries where there are any, with a note in between.
pub(crate) fn cut_head_tail(
    content: &str,
    tokens: usize,
    max_tokens: usize,
    counter: &TokenCounter,
) -> String {
    let bytes_per_token = content.len() as f64 / tokens.max(1) as f64;
    let mut target = max_tokens.saturating_sub(CUT_NOTE_TOKENS) as f64 * bytes_per_token;
    let mut best = String::new();
    for _ in 0..6 {
        let head_end = head_cut(content, (target * 2.0 / 3.0) as usize);
        let tail_start = tail_cut(content, (target / 3.0) as usize).max(head_end);
        let middle = &content[head_end..tail_start];
        let first_cut_line = content[..head_end].lines().count() + 1;
        let cut_lines = middle.lines().count();
        let note = format!(
            "{CUT_MARKER}{} lines ({first_cut_line}-{}) and {} tokens cut from the middle of this output; ask for a narrower range to see them]\n",
            thousands(cut_lines),
            first_cut_line + cut_lines.saturating_sub(1),
            thousands(counter.count(middle)),
        );
        let head = &content[..head_end];
        let separator = if head.is_empty() || head.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        best = format!("{head}{separator}{note}{}", &content[tail_start..]);
        if counter.count(&best) <= max_tokens {
            break;
        }
        target *= 0.8;
    }
    best
}

/// The end of the head: at most `bytes`, moved back to a line end when one is near.
fn head_cut(content: &str, bytes: usize) -> usize {
    let mut end = bytes.min(content.len());
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    match content[..end].rfind('\n') {
        Some(newline) if newline + 1 >= end / 2 => newline + 1,
        _ => end,
    }
}

/// The start of the tail: the last `bytes` at most, moved on to a line start when one is near.
fn tail_cut(content: &str, bytes: usize) -> usize {
    let mut start = content.len().saturating_sub(bytes);
    while !content.is_char_boundary(start) {
        start += 1;
    }
    let tail = &content[start..];
    match tail.find('\n') {
        Some(newline) if newline <= tail.len() / 2 => start + newline + 1,
        _ => start,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn calls_are_described_by_their_main_arguments() {
        let read = call(
            "read_file",
            r#"{"path":"src/a.rs","start_line":1,"end_line":200}"#,
        );
        assert_eq!(describe_call(&read), "read_file src/a.rs:1-200");
        assert_eq!(
            describe_call(&call("read_file", r#"{"path":"src/a.rs"}"#)),
            "read_file src/a.rs"
        );
        assert_eq!(
            describe_call(&call("search", r#"{"pattern":"fn main","path":"src"}"#)),
            "search \"fn main\" in src"
        );
        assert_eq!(describe_call(&call("diff", "{}")), "diff");
        assert_eq!(
            describe_call(&call("list_files", r#"{"dir":"src"}"#)),
            "list_files src"
        );
        assert_eq!(describe_call(&call("weird", "not json")), "weird");
    }

    #[test]
    fn stubs_name_the_call_and_its_size() {
        let read = call(
            "read_file",
            r#"{"path":"src/a.rs","start_line":1,"end_line":200}"#,
        );
        let text = stub(&describe_call(&read), 1_840);
        assert_eq!(
            text,
            "[read_file src/a.rs:1-200, 1,840 tokens, elided: call again if needed]"
        );
        assert!(is_stub(&text));
        assert!(!is_stub("[not a stub]"));
    }

    #[test]
    fn cuts_keep_head_and_tail_on_line_boundaries() {
        let counter = TokenCounter::new(crate::llm::tokens::Encoding::Cl100kBase);
        let content: String = (1..=2_000)
            .map(|i| format!("line {i} of the file\n"))
            .collect();
        let tokens = counter.count(&content);
        let cut = cut_head_tail(&content, tokens, 500, &counter);
        assert!(counter.count(&cut) <= 500);
        assert!(cut.starts_with("line 1 of the file\n"));
        assert!(cut.ends_with("line 2000 of the file\n"));
        assert!(cut.contains(CUT_MARKER));
        let one_line = "x".repeat(50_000);
        let cut = cut_head_tail(&one_line, counter.count(&one_line), 300, &counter);
        assert!(counter.count(&cut) <= 300);
    }
}
