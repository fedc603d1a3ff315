//! Repeated reads: when the model asks for file lines whose earlier result is
//! still whole in the history, answer with a pointer instead of a second copy.
//! A read of the base revision (`"revision": "base"`) and one of the head are
//! different reads: neither answers the other.

use crate::llm::{Message, ToolCall};

use super::marks::{CUT_MARKER, POINTER_SUFFIX, is_pointer, is_stub};

/// Answers repeated `read_file` calls with a pointer to the earlier result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadTracker {
    /// The name of the file-reading tool.
    pub tool_name: String,
}

impl Default for ReadTracker {
    fn default() -> Self {
        ReadTracker {
            tool_name: "read_file".into(),
        }
    }
}

/// A line range of a file; `None` ends are open.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReadRange {
    path: String,
    start: u32,
    end: u32,
    /// Whether it reads the base revision.
    base: bool,
}

impl ReadRange {
    fn new(path: &str, start: Option<u32>, end: Option<u32>) -> Self {
        ReadRange {
            path: normalise(path),
            start: start.unwrap_or(1).max(1),
            end: end.unwrap_or(u32::MAX),
            base: false,
        }
    }

    fn from_call(call: &ToolCall) -> Option<Self> {
        let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
        let path = args.get("path")?.as_str()?;
        let number = |key: &str| {
            args.get(key)
                .and_then(|v| v.as_u64())
                .map(|n| n.min(u32::MAX as u64) as u32)
        };
        Some(ReadRange {
            base: crate::tools::reads_base(&args),
            ..ReadRange::new(path, number("start_line"), number("end_line"))
        })
    }

    fn covers(&self, other: &ReadRange) -> bool {
        self.path == other.path
            && self.base == other.base
            && self.start <= other.start
            && self.end >= other.end
    }
}

fn normalise(path: &str) -> String {
    path.trim()
        .trim_start_matches("./")
        .trim_end_matches('/')
        .to_string()
}

impl ReadTracker {
    /// A pointer to the latest earlier result that holds lines `start..=end` of
    /// `path` in full and is still in `history` (not elided, not cut, not an
    /// error), or `None` when the file must be read again.
    pub fn pointer(
        &self,
        path: &str,
        start: Option<u32>,
        end: Option<u32>,
        history: &[Message],
    ) -> Option<String> {
        self.pointer_to(ReadRange::new(path, start, end), history)
    }

    fn pointer_to(&self, wanted: ReadRange, history: &[Message]) -> Option<String> {
        let (id, earlier) = history
            .iter()
            .rev()
            .filter_map(|m| match m {
                Message::Assistant { tool_calls, .. } => Some(tool_calls),
                _ => None,
            })
            .flat_map(|calls| calls.iter().rev())
            .filter(|call| call.name == self.tool_name)
            .filter_map(|call| ReadRange::from_call(call).map(|range| (call.id.as_str(), range)))
            .filter(|(_, range)| range.covers(&wanted))
            .find(|(id, _)| result_in_view(history, id))?;
        Some(if earlier == wanted {
            format!("[same as the result of call {id} {POINTER_SUFFIX}")
        } else {
            let end = if wanted.end == u32::MAX {
                "end".to_string()
            } else {
                wanted.end.to_string()
            };
            let at = if wanted.base { " at base" } else { "" };
            format!(
                "[lines {}-{end} of {}{at} are in the result of call {id} {POINTER_SUFFIX}",
                wanted.start, wanted.path
            )
        })
    }

    /// [`ReadTracker::pointer`] for a call the model just made; `None` for other tools or bad arguments.
    pub fn pointer_for_call(&self, call: &ToolCall, history: &[Message]) -> Option<String> {
        if call.name != self.tool_name {
            return None;
        }
        self.pointer_to(ReadRange::from_call(call)?, history)
    }
}

/// Whether the result of call `id` is in the history whole.
fn result_in_view(history: &[Message], id: &str) -> bool {
    history.iter().any(|m| match m {
        Message::Tool {
            call_id,
            content,
            is_error,
            ..
        } => {
            call_id == id
                && !is_error
                && !is_stub(content)
                && !was_cut(content)
                && !is_pointer(content)
                && !super::shown::is_first_message_pointer(content)
        }
        _ => false,
    })
}

/// Whether the tool or the pruner shortened the result.
fn was_cut(content: &str) -> bool {
    content.contains(CUT_MARKER)
        || content.contains("[output truncated")
        || content.contains(crate::tools::NOT_SHOWN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(id: &str, arguments: &str) -> [Message; 2] {
        [
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: id.into(),
                    name: "read_file".into(),
                    arguments: arguments.into(),
                }],
            },
            Message::Tool {
                call_id: id.into(),
                name: "read_file".into(),
                content: "a.py (lines 1-50 of 50)\n    1 | x\n".into(),
                is_error: false,
            },
        ]
    }

    fn call(arguments: &str) -> ToolCall {
        ToolCall {
            id: "new".into(),
            name: "read_file".into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn a_read_of_the_base_is_answered_only_by_an_earlier_read_of_the_base() {
        let head: Vec<Message> =
            read("h1", r#"{"path":"a.py","start_line":1,"end_line":50}"#).into();
        let tracker = ReadTracker::default();
        let base_call = call(r#"{"path":"a.py","start_line":5,"end_line":9,"revision":"base"}"#);
        assert_eq!(tracker.pointer_for_call(&base_call, &head), None);
        let base: Vec<Message> = read(
            "b1",
            r#"{"path":"a.py","start_line":1,"end_line":50,"revision":"base"}"#,
        )
        .into();
        assert_eq!(
            tracker.pointer_for_call(&base_call, &base).as_deref(),
            Some("[lines 5-9 of a.py at base are in the result of call b1 above, still in view]")
        );
        let head_call = call(r#"{"path":"a.py","start_line":5,"end_line":9}"#);
        assert_eq!(tracker.pointer_for_call(&head_call, &base), None);
        assert!(tracker.pointer_for_call(&head_call, &head).is_some());
    }
}
