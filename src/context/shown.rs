//! No paying twice: what the conversation's first message already shows.
//!
//! The first user message of a review conversation holds stage-1 sections
//! (`+++ b/PATH`, then numbered head lines). When the model asks the `diff`
//! tool for a file whose section is there whole and verbatim (every hunk, no
//! removed lines summarised, not cut into parts), or `read_file` for head lines
//! whose text is all printed there, it gets a short pointer instead of a second copy.
//! A request for more than was shown (lines outside the printed windows, a read
//! to the end of the file, the diff of a file shown only in part) is answered
//! normally.
//!
//! Invariant: a `read_file` pointer is given only for lines whose text the first
//! message printed. The head lines of a moved block are stood for by its one
//! move line: they count as shown for coverage ([`FirstMessageIndex::printed_lines`])
//! but a read of them returns their text.

use std::collections::{BTreeSet, HashMap};

use crate::llm::{Message, ToolCall};

/// The end of every first-message pointer.
const SUFFIX: &str = "in the first message above]";

/// What the first message prints of each file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct FirstMessageIndex {
    files: HashMap<String, Printed>,
}

/// One file's head lines in the first message, and whether its section shows its diff whole and verbatim.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Printed {
    /// Head lines whose text is printed (context and added lines).
    text: BTreeSet<u32>,
    /// Those, and the head lines a move line stands for.
    covered: BTreeSet<u32>,
    whole: bool,
}

impl FirstMessageIndex {
    /// Indexes the first user message of `history` (empty when there is none).
    pub fn of(history: &[Message]) -> Self {
        let first = history.iter().find_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        });
        first.map(Self::parse).unwrap_or_default()
    }

    /// Indexes a message made of stage-1 sections.
    pub fn parse(message: &str) -> Self {
        let mut files: HashMap<String, Printed> = HashMap::new();
        let mut current: Option<&mut Printed> = None;
        for line in message.lines() {
            if let Some(path) = line.strip_prefix("+++ b/") {
                let entry = files.entry(path.to_string()).or_default();
                entry.whole = true;
                current = Some(entry);
                continue;
            }
            if line.starts_with('#') {
                // A heading ends the diffs (no diff line starts with `#`).
                current = None;
            }
            if let Some(printed) = current.as_deref_mut() {
                if line.trim_start().starts_with('[') {
                    // A note instead of diff lines: a part of the file, or removed
                    // lines summarised. The section is not the diff verbatim.
                    printed.whole = false;
                } else if let Some(n) = head_number(line) {
                    printed.text.insert(n);
                    printed.covered.insert(n);
                } else if let Some((first, last)) = super::moves::span_of(line) {
                    // A move line stands for the lines of its block without printing them.
                    printed.covered.extend(first..=last);
                }
            }
        }
        files.retain(|_, p| !p.covered.is_empty());
        FirstMessageIndex { files }
    }

    /// Every file's head lines shown: printed (context and added) or stood for by a move line.
    pub(crate) fn printed_lines(&self) -> impl Iterator<Item = (&str, &BTreeSet<u32>)> {
        self.files
            .iter()
            .map(|(path, p)| (path.as_str(), &p.covered))
    }

    /// A pointer answering `call` when what it asks for is all in the first message.
    pub fn pointer_for_call(&self, call: &ToolCall) -> Option<String> {
        let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
        let path = args.get("path")?.as_str()?.trim().trim_start_matches("./");
        let printed = self.files.get(path)?;
        match call.name.as_str() {
            // The first message shows head lines only, and moved code as moves.
            "read_file" if crate::tools::reads_base(&args) => None,
            "diff" if args.get("raw").and_then(|r| r.as_bool()) == Some(true) => None,
            "diff" if printed.whole => Some(format!(
                "[the diff of {path} is shown whole, numbered with its context, {SUFFIX} \
                 (use read_file with start_line and end_line for more context)"
            )),
            "read_file" => {
                let number = |key: &str| args.get(key).and_then(|v| v.as_u64());
                let start = number("start_line").unwrap_or(1).max(1);
                let end = number("end_line")?;
                let all_printed = (start..=end)
                    .all(|n| u32::try_from(n).is_ok_and(|n| printed.text.contains(&n)));
                (end >= start && all_printed)
                    .then(|| format!("[lines {start}-{end} of {path} are shown {SUFFIX}"))
            }
            _ => None,
        }
    }
}

/// Whether a tool result is a pointer into the first message.
pub(crate) fn is_first_message_pointer(content: &str) -> bool {
    content.starts_with('[') && content.contains(SUFFIX)
}

/// The head line number of a numbered context or added line (`   12 +x`, `   12  x`).
fn head_number(line: &str) -> Option<u32> {
    let rest = line.trim_start_matches(' ');
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let mut after = rest[digits..].chars();
    match (after.next(), after.next()) {
        // A bare number is a blank context line of the compact layout.
        (Some(' '), Some('+' | ' ') | None) | (None, None) => rest[..digits].parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MESSAGE: &str = "# Change under review\n\
        ## Diffs\n\
        --- a/src/a.rs\n\
        +++ b/src/a.rs\n\
        @@ -8,3 +8,4 @@ fn a()\n\
        \x20   8  fn a() {\n\
        \x20   9 +    let x = 1;\n\
        \x20   4 -    old();\n\
        \x20  10      x\n\
        \x20  11  }\n\
        --- a/src/big.rs\n\
        +++ b/src/big.rs\n\
        [part 1 of 2 of src/big.rs: head lines 1-3; the other parts (2 (lines 90-99)) are reviewed in other tasks]\n\
        @@ -0,0 +1,3 @@\n\
        \x20   1 +a\n\
        \x20   2 +b\n\
        \x20   3 +c\n\
        --- a/src/cut.rs\n\
        +++ b/src/cut.rs\n\
        @@ -4,6 +4,2 @@\n\
        \x20   4  fn kept() {}\n\
        \x20       [lines 5-8 of base removed (4 lines): fn old()]\n\
        \x20   5 +fn new() {}\n\
        # Files listed without their diff\n\
        [over budget] src/late.rs\n";

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn a_whole_section_answers_diff_with_a_pointer() {
        let index = FirstMessageIndex::parse(MESSAGE);
        let pointer = index.pointer_for_call(&call("diff", r#"{"path":"./src/a.rs"}"#));
        assert!(
            pointer.as_deref().is_some_and(is_first_message_pointer),
            "{pointer:?}"
        );
        // A file shown in part: the other parts are new to this conversation.
        assert_eq!(
            index.pointer_for_call(&call("diff", r#"{"path":"src/big.rs"}"#)),
            None
        );
        assert_eq!(index.pointer_for_call(&call("diff", "{}")), None);
        // Removed lines summarised: the raw hunk is new to this conversation.
        assert_eq!(
            index.pointer_for_call(&call("diff", r#"{"path":"src/cut.rs"}"#)),
            None
        );
        // A list after the diffs belongs to no section.
        assert!(
            index
                .pointer_for_call(&call("diff", r#"{"path":"src/a.rs"}"#))
                .is_some()
        );
    }

    #[test]
    fn a_move_line_counts_as_shown_but_its_lines_are_read_for_real() {
        let message = "+++ b/pkg/core.py\n\
            \x20  11  \n\
            12-35 ~ moved from `pkg/util.py:11-34`, edited (- original, + now):\n\
            \x20  20 -    scaled = total * factor\n\
            \x20  21 +    scaled = total + factor\n";
        let index = FirstMessageIndex::parse(message);
        let printed: Vec<u32> = index
            .printed_lines()
            .flat_map(|(_, lines)| lines.iter().copied())
            .collect();
        assert_eq!(printed, (11..=35).collect::<Vec<u32>>());
        let read = |args: &str| index.pointer_for_call(&call("read_file", args));
        // Only the marker and two edits were printed: the block's lines are read for real.
        assert_eq!(
            read(r#"{"path":"pkg/core.py","start_line":12,"end_line":35}"#),
            None
        );
        assert_eq!(
            read(r#"{"path":"pkg/core.py","start_line":20,"end_line":21}"#),
            None
        );
        // A line printed with its text still gets the pointer.
        assert!(read(r#"{"path":"pkg/core.py","start_line":11,"end_line":11}"#).is_some());
        let diff = |args: &str| index.pointer_for_call(&call("diff", args));
        assert!(diff(r#"{"path":"pkg/core.py"}"#).is_some());
        assert_eq!(diff(r#"{"path":"pkg/core.py","raw":true}"#), None);
        assert_eq!(
            read(r#"{"path":"pkg/core.py","start_line":12,"end_line":35,"revision":"base"}"#),
            None
        );
    }

    #[test]
    fn reads_within_printed_lines_get_a_pointer_and_wider_reads_do_not() {
        let index = FirstMessageIndex::parse(MESSAGE);
        let read = |args: &str| index.pointer_for_call(&call("read_file", args));
        assert!(read(r#"{"path":"src/a.rs","start_line":8,"end_line":11}"#).is_some());
        assert!(read(r#"{"path":"src/big.rs","start_line":2,"end_line":3}"#).is_some());
        assert_eq!(
            read(r#"{"path":"src/a.rs","start_line":5,"end_line":11}"#),
            None
        );
        assert_eq!(read(r#"{"path":"src/a.rs","start_line":8}"#), None);
        assert_eq!(
            read(r#"{"path":"src/a.rs","start_line":4,"end_line":4}"#),
            None
        );
        assert_eq!(
            read(r#"{"path":"src/other.rs","start_line":1,"end_line":2}"#),
            None
        );
    }
}
