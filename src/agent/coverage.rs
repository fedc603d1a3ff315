//! Which reviewable changed lines the model was shown during a review.
//!
//! A changed line is an added, non-blank head line of a non-binary file that the
//! review did not leave out. It counts as shown when it appeared in the model's
//! context under its own file: in the first message, in a `diff` result, or in a
//! `read_file` result that covered its line number. A moved, unchanged line is
//! shown by the move line that stands for it (see [`crate::context::moves`]);
//! a read of the base revision shows no head line.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use crate::review::diff::{ChangeSet, LineKind};

/// Shown versus total changed lines, shared by every run of a review.
#[derive(Debug, Default)]
pub struct Coverage {
    changed: BTreeMap<String, BTreeSet<u32>>,
    shown: Mutex<BTreeMap<String, BTreeSet<u32>>>,
}

impl Coverage {
    /// Coverage over the reviewable changed lines of `changes`.
    pub fn new(changes: &ChangeSet) -> Self {
        let changed = changes
            .files
            .iter()
            .filter(|f| !f.binary)
            .map(|f| {
                let lines = f
                    .hunks
                    .iter()
                    .flat_map(|h| &h.lines)
                    .filter(|l| l.kind == LineKind::Added && !l.text.trim().is_empty())
                    .filter_map(|l| l.new_line)
                    .collect();
                (f.path.clone(), lines)
            })
            .collect();
        Coverage {
            changed,
            shown: Mutex::new(BTreeMap::new()),
        }
    }

    /// Every changed line of `path` was shown.
    pub(crate) fn show_file(&self, path: &str) {
        if let Some(lines) = self.changed.get(path) {
            self.mark(path, lines.iter().copied());
        }
    }

    /// Changed lines of `path` within `start..=end` were shown.
    pub(crate) fn show_range(&self, path: &str, start: u32, end: u32) {
        if let Some(lines) = self.changed.get(path) {
            self.mark(path, lines.range(start..=end).copied());
        }
    }

    /// These head lines of `path` were shown (those that are not changed lines are ignored).
    pub(crate) fn show_lines(&self, path: &str, lines: &[u32]) {
        if let Some(changed) = self.changed.get(path) {
            self.mark(path, lines.iter().copied().filter(|n| changed.contains(n)));
        }
    }

    fn mark(&self, path: &str, lines: impl Iterator<Item = u32>) {
        if let Ok(mut shown) = self.shown.lock() {
            shown.entry(path.to_string()).or_default().extend(lines);
        }
    }

    /// Learns from a successful tool call what it showed.
    pub(crate) fn observe_tool(&self, name: &str, arguments: &str, content: &str) {
        let args: serde_json::Value = serde_json::from_str(arguments).unwrap_or_default();
        let path = args
            .get("path")
            .and_then(|p| p.as_str())
            .map(|p| p.trim_start_matches("./"));
        if crate::tools::reads_base(&args) {
            return;
        }
        match (name, path) {
            // What a diff result prints, file by file: a result cut for size
            // counts only for the lines it still holds.
            ("diff", _) => {
                let printed = crate::context::FirstMessageIndex::parse(content);
                for (path, lines) in printed.printed_lines() {
                    let lines: Vec<u32> = lines.iter().copied().collect();
                    self.show_lines(path, &lines);
                }
            }
            ("read_file", Some(path)) => {
                let numbers: Vec<u32> = content
                    .lines()
                    .filter_map(|l| l.split_once(" | ").and_then(|(n, _)| n.trim().parse().ok()))
                    .collect();
                if let (Some(first), Some(last)) = (numbers.iter().min(), numbers.iter().max()) {
                    self.show_range(path, *first, *last);
                }
            }
            _ => {}
        }
    }

    /// Reviewable changed lines in all.
    pub fn total(&self) -> usize {
        self.changed.values().map(BTreeSet::len).sum()
    }

    /// Of those, the lines shown.
    pub fn shown(&self) -> usize {
        self.shown
            .lock()
            .map(|s| s.values().map(BTreeSet::len).sum())
            .unwrap_or(0)
    }

    /// Shown share in 0..=1 (1 when there is nothing to show).
    pub fn ratio(&self) -> f64 {
        let total = self.total();
        if total == 0 {
            1.0
        } else {
            self.shown() as f64 / total as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::diff::{DiffLine, FileChange, FileStatus, Hunk};

    fn change() -> ChangeSet {
        let lines = (10..14)
            .map(|n| DiffLine {
                kind: LineKind::Added,
                old_line: None,
                new_line: Some(n),
                text: if n == 12 { " ".into() } else { format!("x{n}") },
            })
            .collect();
        ChangeSet {
            base: "b".into(),
            head: None,
            files: vec![FileChange {
                path: "a.rs".into(),
                old_path: None,
                status: FileStatus::Modified,
                binary: false,
                hunks: vec![Hunk {
                    old_start: 9,
                    old_lines: 0,
                    new_start: 10,
                    new_lines: 4,
                    header: String::new(),
                    lines,
                }],
            }],
        }
    }

    #[test]
    fn blank_lines_do_not_count_and_reads_cover_ranges() {
        let c = Coverage::new(&change());
        assert_eq!(c.total(), 3);
        c.observe_tool(
            "read_file",
            r#"{"path":"a.rs","start_line":1,"end_line":10}"#,
            "a.rs (lines 1-10 of 20)\n    1 | x\n   10 | x10\n",
        );
        assert_eq!(c.shown(), 1);
        // A diff cut for size counts only for the lines it still prints.
        let cut = "--- a/a.rs\n+++ b/a.rs\n@@ -9,0 +10,4 @@\n   10 +x10\n   11 +x11\n[output truncated after 4 lines]";
        c.observe_tool("diff", r#"{"path":"a.rs"}"#, cut);
        assert_eq!(c.shown(), 2);
        let whole = format!("{cut}\n   12 + \n   13 +x13\n");
        c.observe_tool("diff", "{}", &whole);
        assert_eq!(c.shown(), 3);
        assert!((c.ratio() - 1.0).abs() < f64::EPSILON);
    }

    #[test]
    fn a_move_line_shows_its_span_and_a_read_of_the_base_shows_nothing() {
        let c = Coverage::new(&change());
        c.observe_tool(
            "read_file",
            r#"{"path":"a.rs","start_line":1,"end_line":20,"revision":"base"}"#,
            "a.rs at base (lines 1-20 of 20)\n   10 | x\n   13 | x\n",
        );
        assert_eq!(c.shown(), 0);
        let moved =
            "--- a/a.rs\n+++ b/a.rs\n@@ -9,0 +10,4 @@\n10-13 ~ moved from `b.rs:1-4`, unchanged\n";
        c.observe_tool("diff", r#"{"path":"a.rs"}"#, moved);
        assert_eq!(c.shown(), 3);
    }
}
