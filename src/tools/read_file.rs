//! The `read_file` tool: a window of a file's lines, numbered so the model can cite them.

use async_trait::async_trait;
use serde::Deserialize;

use super::page::{NOT_SHOWN, Page, Room, elide_long};
use super::revision::{self, Side};
use super::{Tool, ToolError, Workspace, parse_args};
use crate::llm::ToolSpec;

/// Lines shown to the reviewer when it gives no `end_line`: enough to read a module.
pub(crate) const REVIEW_WINDOW: u32 = 400;
/// Lines shown to a checker (the verifier, the eval's grader) when it gives no `end_line`:
/// it looks up one guard or caller, and each line it reads is paid again on every later
/// step of its short conversation.
pub(crate) const VERIFY_WINDOW: u32 = 120;

/// The `read_file` tool.
pub(crate) struct ReadFile {
    /// Lines shown when the model gives no `end_line`.
    window: u32,
}

impl ReadFile {
    /// The tool showing `window` lines (at least one) when no `end_line` is given.
    pub(crate) fn new(window: u32) -> Self {
        ReadFile {
            window: window.max(1),
        }
    }
}

/// The lines a call asks for, and how many to show when it names no end.
#[derive(Debug, Clone, Copy)]
struct Window {
    start_line: Option<u32>,
    end_line: Option<u32>,
    default_lines: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    start_line: Option<u32>,
    end_line: Option<u32>,
    #[serde(default)]
    revision: Side,
}

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: format!(
                "Read a text file of the repository as it is at the reviewed revision. \
                 Lines are numbered (`  42 | text`); cite these numbers in findings. \
                 Without end_line, shows {} lines from start_line and says where to continue. \
                 With revision \"base\", reads the file as it was before the change (moved or removed code), numbered in base lines.",
                self.window
            ),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "File path relative to the repository root, e.g. `src/main.rs`."
                    },
                    "start_line": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "First line to show (1-based). Default 1."
                    },
                    "end_line": {
                        "type": "integer",
                        "minimum": 1,
                        "description": format!(
                            "Last line to show, inclusive. Default: start_line + {}, or the end of the file.",
                            self.window - 1
                        )
                    },
                    "revision": revision::schema()
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(
        &self,
        args: serde_json::Value,
        workspace: &Workspace,
    ) -> Result<String, ToolError> {
        let args: Args = parse_args("read_file", args)?;
        let path = args.path.clone();
        let view = revision::view(workspace, args.revision).await?;
        let text = view.blocking(move |repo| repo.read_text(&path)).await?;
        let label = match args.revision {
            Side::Head => args.path.clone(),
            Side::Base => format!("{} at base", args.path),
        };
        let window = Window {
            start_line: args.start_line,
            end_line: args.end_line,
            default_lines: self.window,
        };
        render_window(&label, &text, window, Room::DEFAULT)
    }
}

/// The header and numbered lines of the requested window, with a note when more
/// follow. Very long lines are elided; lines past the page's room are left out
/// and named, with the call that shows them.
fn render_window(path: &str, text: &str, window: Window, room: Room) -> Result<String, ToolError> {
    let lines: Vec<&str> = text.lines().collect();
    let total = u32::try_from(lines.len()).unwrap_or(u32::MAX);
    if total == 0 {
        return Ok(format!("{path} (empty file)"));
    }
    let start = window.start_line.unwrap_or(1).max(1);
    if start > total {
        return Err(ToolError::Model(format!(
            "start_line {start} is past the end of `{path}`, which has {total} lines"
        )));
    }
    let end = match window.end_line {
        Some(end) if end < start => {
            return Err(ToolError::Model(format!(
                "end_line {end} is before start_line {start}; `{path}` has {total} lines"
            )));
        }
        Some(end) => end.min(total),
        None => start.saturating_add(window.default_lines - 1).min(total),
    };
    let mut page = Page::new(room);
    let mut last_shown = start - 1;
    for (number, line) in (start..=end).zip(&lines[start as usize - 1..end as usize]) {
        let numbered = format!("{number:>5} | {line}");
        let numbered = format!("{}\n", elide_long(&numbered));
        if !page.push(&numbered) {
            break;
        }
        last_shown = number;
    }
    let shown = match last_shown >= start {
        true => format!("{start}-{last_shown}"),
        false => "none".to_string(),
    };
    let mut out = format!("{path} (lines {shown} of {total})\n");
    out.push_str(&page.into_text());
    if last_shown < end {
        out.push_str(&format!(
            "[lines {}-{end} {NOT_SHOWN}: call read_file with start_line {} and end_line {end}]\n",
            last_shown + 1,
            last_shown + 1
        ));
    } else if end < total {
        out.push_str(&format!(
            "[{} more lines; call read_file with start_line {} to continue]\n",
            total - end,
            end + 1
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(start_line: Option<u32>, end_line: Option<u32>) -> Window {
        Window {
            start_line,
            end_line,
            default_lines: REVIEW_WINDOW,
        }
    }

    fn numbered(n: u32) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn shows_the_default_window_and_where_to_continue() {
        let out = render_window("a.txt", &numbered(450), lines(None, None), Room::DEFAULT).unwrap();
        assert!(out.starts_with("a.txt (lines 1-400 of 450)\n    1 | line 1\n"));
        assert!(out.contains("  400 | line 400\n"));
        assert!(!out.contains("| line 401"));
        assert!(out.ends_with("[50 more lines; call read_file with start_line 401 to continue]\n"));
    }

    #[test]
    fn a_checker_sees_a_shorter_default_window_and_is_told_so() {
        let window = Window {
            start_line: Some(10),
            end_line: None,
            default_lines: VERIFY_WINDOW,
        };
        let out = render_window("a.txt", &numbered(450), window, Room::DEFAULT).unwrap();
        assert!(out.starts_with("a.txt (lines 10-129 of 450)\n"), "{out}");
        assert!(
            out.ends_with("[321 more lines; call read_file with start_line 130 to continue]\n")
        );
        let spec = ReadFile::new(VERIFY_WINDOW).spec();
        assert!(spec.description.contains("shows 120 lines from start_line"));
        assert!(
            spec.parameters
                .to_string()
                .contains("Default: start_line + 119")
        );
    }

    #[test]
    fn shows_an_explicit_range_and_clamps_its_end() {
        let out = render_window(
            "a.txt",
            &numbered(10),
            lines(Some(9), Some(50)),
            Room::DEFAULT,
        )
        .unwrap();
        assert_eq!(
            out,
            "a.txt (lines 9-10 of 10)\n    9 | line 9\n   10 | line 10\n"
        );
    }

    #[test]
    fn out_of_range_requests_name_the_file_length() {
        let past = render_window("a.txt", &numbered(10), lines(Some(11), None), Room::DEFAULT)
            .unwrap_err();
        assert_eq!(
            past,
            ToolError::Model("start_line 11 is past the end of `a.txt`, which has 10 lines".into())
        );
        let backwards = render_window(
            "a.txt",
            &numbered(10),
            lines(Some(5), Some(2)),
            Room::DEFAULT,
        )
        .unwrap_err();
        assert!(backwards.to_string().contains("has 10 lines"));
        assert_eq!(
            render_window("e", "", lines(None, None), Room::DEFAULT).unwrap(),
            "e (empty file)"
        );
    }

    #[test]
    fn a_very_long_line_is_elided_and_the_lines_after_it_are_shown() {
        let mut text = numbered(120);
        text = text.replace("line 40\n", &format!("{}\n", "y".repeat(36_000)));
        text.push_str("fn under_review() {}\n");
        let out = render_window("a.js", &text, lines(Some(1), Some(121)), Room::DEFAULT).unwrap();
        assert!(out.starts_with("a.js (lines 1-121 of 121)\n"), "{out}");
        assert!(
            out.contains("   40 | [a line of 36,000 characters, not shown]\n"),
            "{out}"
        );
        assert!(out.contains("  120 | line 120\n  121 | fn under_review() {}\n"));
        assert!(!out.contains(NOT_SHOWN));
    }

    #[test]
    fn a_window_past_the_room_names_the_lines_left_out_and_the_call() {
        let room = Room {
            chars: 200,
            tokens: 1_000,
        };
        let out = render_window("a.txt", &numbered(120), lines(Some(1), Some(120)), room).unwrap();
        // Each numbered line is 15 or 16 characters: 13 fit in 200.
        assert!(out.starts_with("a.txt (lines 1-13 of 120)\n"), "{out}");
        assert!(out.contains("   13 | line 13\n"));
        assert!(out.ends_with(
            "[lines 14-120 not shown (size limit): call read_file with start_line 14 and end_line 120]\n"
        ));
    }
}
