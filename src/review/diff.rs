//! The change under review: files, hunks and lines, as GitHub shows them
//! (three lines of context, line numbers on both sides).

use serde::{Deserialize, Serialize};

use super::finding::Side;

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    /// New file.
    Added,
    /// Changed in place.
    Modified,
    /// Removed.
    Deleted,
    /// Moved, maybe with changes.
    Renamed,
    /// Mode or type change only.
    TypeChange,
}

/// The kind of one diff line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LineKind {
    /// Unchanged, shown for context.
    Context,
    /// Added in head.
    Added,
    /// Removed from base.
    Removed,
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffLine {
    /// Context, added or removed.
    pub kind: LineKind,
    /// Line number in the base version (context and removed lines).
    pub old_line: Option<u32>,
    /// Line number in the head version (context and added lines).
    pub new_line: Option<u32>,
    /// The text, without the trailing newline.
    pub text: String,
}

/// One hunk of a file's diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hunk {
    /// First base line covered.
    pub old_start: u32,
    /// Number of base lines covered.
    pub old_lines: u32,
    /// First head line covered.
    pub new_start: u32,
    /// Number of head lines covered.
    pub new_lines: u32,
    /// The text after the `@@ ... @@` marker (often the enclosing function).
    pub header: String,
    /// The lines, in order.
    pub lines: Vec<DiffLine>,
}

impl Hunk {
    /// The range of lines this hunk covers on `side`, or `None` when it covers none there.
    pub fn range(&self, side: Side) -> Option<std::ops::RangeInclusive<u32>> {
        let (start, count) = match side {
            Side::Right => (self.new_start, self.new_lines),
            Side::Left => (self.old_start, self.old_lines),
        };
        (count > 0).then(|| start..=start + count - 1)
    }

    /// Whether `line` on `side` is a line of this hunk.
    pub fn contains(&self, side: Side, line: u32) -> bool {
        self.range(side).is_some_and(|r| r.contains(&line))
    }
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Path in head (for deletions, the path in base).
    pub path: String,
    /// Path in base, when renamed.
    pub old_path: Option<String>,
    /// How it changed.
    pub status: FileStatus,
    /// Binary files have no hunks.
    pub binary: bool,
    /// The hunks, in order.
    pub hunks: Vec<Hunk>,
}

impl FileChange {
    /// Added lines count.
    pub fn additions(&self) -> usize {
        self.count(LineKind::Added)
    }

    /// Removed lines count.
    pub fn deletions(&self) -> usize {
        self.count(LineKind::Removed)
    }

    fn count(&self, kind: LineKind) -> usize {
        self.hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| l.kind == kind)
            .count()
    }

    /// The hunk containing `line` on `side`.
    pub fn hunk_at(&self, side: Side, line: u32) -> Option<&Hunk> {
        self.hunks.iter().find(|h| h.contains(side, line))
    }

    /// This file's diff in unified format, each line prefixed with its head-side
    /// line number (base-side for removed lines), so the model can cite lines.
    pub fn render_numbered(&self) -> String {
        let mut out = String::new();
        let old = self.old_path.as_deref().unwrap_or(&self.path);
        out.push_str(&format!("--- a/{old}\n+++ b/{}\n", self.path));
        if self.binary {
            out.push_str("(binary file changed)\n");
            return out;
        }
        for hunk in &self.hunks {
            out.push_str(&format!(
                "@@ -{},{} +{},{} @@{}{}\n",
                hunk.old_start,
                hunk.old_lines,
                hunk.new_start,
                hunk.new_lines,
                if hunk.header.is_empty() { "" } else { " " },
                hunk.header
            ));
            for line in &hunk.lines {
                let (mark, number) = match line.kind {
                    LineKind::Context => (' ', line.new_line),
                    LineKind::Added => ('+', line.new_line),
                    LineKind::Removed => ('-', line.old_line),
                };
                let number = number.map(|n| n.to_string()).unwrap_or_default();
                out.push_str(&format!("{number:>5} {mark}{}\n", line.text));
            }
        }
        out
    }
}

/// The whole change under review.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSet {
    /// Base commit id.
    pub base: String,
    /// Head commit id, or `None` when the work tree is reviewed.
    pub head: Option<String>,
    /// The changed files, in path order.
    pub files: Vec<FileChange>,
}

impl ChangeSet {
    /// The changed file at `path` (head path, or base path for deletions and renames).
    pub fn file(&self, path: &str) -> Option<&FileChange> {
        self.files.iter().find(|f| f.path == path).or_else(|| {
            self.files
                .iter()
                .find(|f| f.old_path.as_deref() == Some(path))
        })
    }

    /// Total added plus removed lines.
    pub fn changed_lines(&self) -> usize {
        self.files
            .iter()
            .map(|f| f.additions() + f.deletions())
            .sum()
    }
}

/// Diffs written by hand, for unit tests.
#[cfg(test)]
impl DiffLine {
    /// A `kind` line at base line `old_line` and head line `new_line`, reading `text`.
    pub(crate) fn at(
        kind: LineKind,
        old_line: Option<u32>,
        new_line: Option<u32>,
        text: &str,
    ) -> DiffLine {
        DiffLine {
            kind,
            old_line,
            new_line,
            text: text.into(),
        }
    }
}

#[cfg(test)]
impl Hunk {
    /// The hunk of `lines` from base line `old_start` and head line `new_start`, its line
    /// counts read from the lines.
    pub(crate) fn of(old_start: u32, new_start: u32, lines: Vec<DiffLine>) -> Hunk {
        let count = |side: LineKind| {
            let n = lines
                .iter()
                .filter(|line| line.kind == LineKind::Context || line.kind == side)
                .count();
            u32::try_from(n).unwrap_or(u32::MAX)
        };
        Hunk {
            old_start,
            old_lines: count(LineKind::Removed),
            new_start,
            new_lines: count(LineKind::Added),
            header: String::new(),
            lines,
        }
    }
}

#[cfg(test)]
impl ChangeSet {
    /// The change `b..h` that modifies the one file `path` in `hunks`.
    pub(crate) fn modifying(path: &str, hunks: Vec<Hunk>) -> ChangeSet {
        ChangeSet {
            base: "b".into(),
            head: Some("h".into()),
            files: vec![FileChange {
                path: path.into(),
                old_path: None,
                status: FileStatus::Modified,
                binary: false,
                hunks,
            }],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunk() -> Hunk {
        Hunk {
            old_start: 10,
            old_lines: 3,
            new_start: 12,
            new_lines: 4,
            header: String::new(),
            lines: vec![],
        }
    }

    #[test]
    fn hunk_ranges_per_side() {
        let h = hunk();
        assert!(h.contains(Side::Right, 12) && h.contains(Side::Right, 15));
        assert!(!h.contains(Side::Right, 16) && !h.contains(Side::Right, 11));
        assert!(h.contains(Side::Left, 10) && !h.contains(Side::Left, 13));
        let empty = Hunk {
            new_lines: 0,
            ..hunk()
        };
        assert_eq!(empty.range(Side::Right), None);
    }
}
