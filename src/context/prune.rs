//! Stage 2: prune tool observations before every model call.
//!
//! Invariants:
//! - a result the model has not seen yet is never elided or replaced: a result
//!   is seen once an assistant message follows it (the reply to a request that
//!   carried it), so every result after the last assistant message is new and
//!   goes out whole (a single oversized one is cut to head and tail, with a note
//!   saying how to get the rest, before it is first sent);
//! - seen results are elided only under real pressure: when the history passes
//!   [`Pruner::threshold_tokens`] (a share of the usable window, `prune_threshold`),
//!   and never the latest [`Pruner::keep_recent`] results (`keep_tool_results`);
//! - a prune takes the oldest results first and, among those, the largest, and
//!   frees enough at once to bring the history down to [`LOW_WATER`] of the
//!   threshold: every elision changes the conversation's prefix and so breaks the
//!   provider's prompt cache from that point on, and one batch breaks it once
//!   for several turns;
//! - each elided result becomes a stub that names the call, its size and how to
//!   get it again, and [`PruneStats::removed`] names them for the `compression`
//!   event; a pointer to an elided result is elided with it, so no pointer
//!   points at nothing;
//! - error observations and the results of the findings tools are never
//!   touched: the model must not lose what went wrong or what it already reported;
//! - each message's tokens are counted once per prune; only a result the prune
//!   changes (cut or stubbed) is counted again, alone.

use std::collections::{HashMap, HashSet};

use crate::llm::tokens::{ModelLimits, TokenCounter};
use crate::llm::{Message, ToolCall};

use super::marks::{CUT_MARKER, STUB_SUFFIX, is_stub, pointer_target};
use super::thousands;

/// Tokens set aside for the cut note.
const CUT_NOTE_TOKENS: usize = 48;

/// Tool results kept whole by default, however full the window.
pub const DEFAULT_KEEP_RECENT: usize = 3;

/// Default share of the usable window past which seen results are elided.
///
/// Measured with `benches/history_share.py` on 50 real changes (bytes and
/// marshmallow): a thorough 10-step review ends at a median of 0.42 and a p90 of
/// 0.54 of a 128k window (0.34 and 0.44 of a 200k one), so at 0.55 nine in ten
/// such reviews prune nothing there; and between 0.55 and the summary threshold
/// (0.7) there is room for one more turn of four parallel reads at their p90 size
/// (about 4,300 tokens each) before stage 3 summarises.
pub const DEFAULT_PRUNE_THRESHOLD: f32 = 0.55;

/// A prune brings the history down to this share of the threshold, so that
/// the next turns fit without another prune (one cache break for several turns).
pub const LOW_WATER: f64 = 0.75;

/// Default cap on one observation, in tokens (about the tool output cap).
pub const DEFAULT_MAX_OBSERVATION_TOKENS: usize = 6_000;

/// Tools whose results are findings and are never elided.
pub(crate) const FINDINGS_TOOLS: &[&str] = &[
    "submit_review",
    "submit_finding",
    "submit_findings",
    "report_finding",
];

/// Elides old tool results under pressure and cuts oversized new ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pruner {
    /// Most recent tool results always kept whole (a floor; unseen ones are kept anyway).
    pub keep_recent: usize,
    /// Longest observation kept in full, in tokens; longer new ones are cut to head and tail.
    pub max_observation_tokens: usize,
    /// Tools whose results are never elided or cut (the findings tools by default).
    pub protected_tools: Vec<String>,
    /// Seen results are elided only when the history is larger than this (tokens).
    pub threshold_tokens: usize,
}

impl Default for Pruner {
    fn default() -> Self {
        Pruner::new(DEFAULT_KEEP_RECENT, DEFAULT_MAX_OBSERVATION_TOKENS)
    }
}

/// Tokens of the history before and after a prune, and what it elided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneStats {
    /// Before.
    pub before_tokens: usize,
    /// After.
    pub after_tokens: usize,
    /// The results elided, each described by its call and size
    /// (`read_file src/a.rs:1-200, 1,840 tokens`).
    pub removed: Vec<String>,
}

/// The share `share` of the usable window (context window minus the output reserve), in tokens.
pub fn prune_threshold_tokens(limits: ModelLimits, share: f32) -> usize {
    let usable = limits
        .context_window
        .saturating_sub(limits.max_output_tokens) as f64;
    // Rounded so that an f32 share like 0.5 means exactly 50%.
    (usable * f64::from(share.clamp(0.0, 1.0))).round() as usize
}

/// A tool result of the history that may be elided.
struct Candidate {
    index: usize,
    /// Tokens an elision frees.
    saving: usize,
}

impl Pruner {
    /// A pruner keeping `keep_recent` results whole and cutting any new one above
    /// `max_observation_tokens`; it elides nothing until a threshold is set.
    pub fn new(keep_recent: usize, max_observation_tokens: usize) -> Self {
        Pruner {
            keep_recent,
            max_observation_tokens,
            protected_tools: FINDINGS_TOOLS.iter().map(|s| s.to_string()).collect(),
            threshold_tokens: usize::MAX,
        }
    }

    /// The same pruner, eliding once the history passes `tokens`.
    pub fn with_threshold(mut self, tokens: usize) -> Self {
        self.threshold_tokens = tokens;
        self
    }

    /// Prunes `history` in place. Running it again changes nothing more.
    pub fn prune(&self, history: &mut [Message], counter: &TokenCounter) -> PruneStats {
        let mut tokens = HistoryTokens::count(history, counter);
        let before_tokens = tokens.total;
        let seen_until = history
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
            .unwrap_or(0);
        self.cut_new(history, seen_until, &mut tokens, counter);
        let mut removed = Vec::new();
        if tokens.total > self.threshold_tokens {
            let target = (self.threshold_tokens as f64 * LOW_WATER) as usize;
            let chosen = self.choose(history, seen_until, tokens.total - target, &tokens);
            removed = elide(history, &chosen, &mut tokens, counter);
        }
        PruneStats {
            before_tokens,
            after_tokens: tokens.total,
            removed,
        }
    }

    /// Cuts every oversized result the model has not seen yet (at or after `seen_until`).
    fn cut_new(
        &self,
        history: &mut [Message],
        seen_until: usize,
        tokens: &mut HistoryTokens,
        counter: &TokenCounter,
    ) {
        for (index, message) in history.iter_mut().enumerate().skip(seen_until) {
            if let Message::Tool {
                name,
                content,
                is_error: false,
                ..
            } = message
                && !self.protected_tools.iter().any(|p| p == name)
                && !is_stub(content)
            {
                let size = tokens.text[index];
                if size > self.max_observation_tokens {
                    *content = cut_head_tail(content, size, self.max_observation_tokens, counter);
                    tokens.recount(index, content, counter);
                }
            }
        }
    }

    /// The results to elide to free `need` tokens: seen, not among the latest
    /// `keep_recent`, not pointed at by a new pointer; the smallest run of the
    /// oldest ones that frees enough, and within it the largest first.
    fn choose(
        &self,
        history: &[Message],
        seen_until: usize,
        need: usize,
        tokens: &HistoryTokens,
    ) -> Vec<usize> {
        let tools: Vec<usize> = history
            .iter()
            .enumerate()
            .filter(|(_, m)| matches!(m, Message::Tool { .. }))
            .map(|(i, _)| i)
            .collect();
        let floor_from = tools.len().saturating_sub(self.keep_recent);
        // A new pointer promises the model that the result it names is in view.
        let pointed_to: HashSet<&str> = history[seen_until..]
            .iter()
            .filter_map(|m| pointer_target(m.text()))
            .collect();
        let candidates: Vec<Candidate> = tools[..floor_from]
            .iter()
            .filter(|&&i| i < seen_until && self.elidable(&history[i], &pointed_to))
            .map(|&i| Candidate {
                index: i,
                saving: tokens.text[i].saturating_sub(STUB_TOKENS),
            })
            .filter(|c| c.saving > 0)
            .collect();
        let mut freed = 0;
        let mut oldest = 0;
        while oldest < candidates.len() && freed < need {
            freed += candidates[oldest].saving;
            oldest += 1;
        }
        let mut run: Vec<&Candidate> = candidates[..oldest].iter().collect();
        run.sort_by(|a, b| b.saving.cmp(&a.saving).then(a.index.cmp(&b.index)));
        let mut chosen = Vec::new();
        let mut freed = 0;
        for candidate in run {
            if freed >= need {
                break;
            }
            freed += candidate.saving;
            chosen.push(candidate.index);
        }
        chosen.sort_unstable();
        chosen
    }

    /// Whether a seen result may become a stub.
    fn elidable(&self, message: &Message, pointed_to: &HashSet<&str>) -> bool {
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

/// The tokens of a history, message by message, counted once: a message the prune
/// changes is counted again alone, and the total follows.
struct HistoryTokens {
    /// Tokens of each message's text.
    text: Vec<usize>,
    /// Tokens of the whole history, with tool calls and per-message overhead.
    total: usize,
}

impl HistoryTokens {
    fn count(history: &[Message], counter: &TokenCounter) -> Self {
        let mut total = 0;
        let text = history
            .iter()
            .map(|message| {
                let text = counter.count(message.text());
                total += text + counter.count_beside_text(message);
                text
            })
            .collect();
        HistoryTokens { text, total }
    }

    /// Counts message `index` again now that its text is `content` (only a tool
    /// result's text changes: its calls and overhead stay what they were).
    fn recount(&mut self, index: usize, content: &str, counter: &TokenCounter) {
        let now = counter.count(content);
        self.total = self.total - self.text[index] + now;
        self.text[index] = now;
    }
}

/// About the tokens of a stub: results smaller than this are not worth eliding.
const STUB_TOKENS: usize = 30;

/// Turns the results at `indexes` into stubs, and every pointer to one of them
/// too; returns what was elided.
fn elide(
    history: &mut [Message],
    indexes: &[usize],
    tokens: &mut HistoryTokens,
    counter: &TokenCounter,
) -> Vec<String> {
    let descriptions: HashMap<String, String> = calls_by_id(history)
        .into_iter()
        .map(|(id, call)| (id.to_string(), describe_call(call)))
        .collect();
    let mut removed = Vec::new();
    let mut gone: HashSet<String> = HashSet::new();
    for &index in indexes {
        if let Some(Message::Tool {
            call_id,
            name,
            content,
            ..
        }) = history.get_mut(index)
        {
            let what = descriptions.get(call_id.as_str()).unwrap_or(name);
            let size = tokens.text[index];
            removed.push(format!("{what}, {} tokens", thousands(size)));
            *content = stub(what, size);
            tokens.recount(index, content, counter);
            gone.insert(call_id.clone());
        }
    }
    // A pointer to an elided result would promise what is no longer there.
    for (index, message) in history.iter_mut().enumerate() {
        if let Message::Tool {
            call_id,
            name,
            content,
            ..
        } = message
            && pointer_target(content).is_some_and(|t| gone.contains(t))
        {
            let what = descriptions.get(call_id.as_str()).unwrap_or(name);
            *content = stub(what, tokens.text[index]);
            tokens.recount(index, content, counter);
        }
    }
    removed
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
