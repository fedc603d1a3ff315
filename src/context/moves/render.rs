//! How moves are printed: the move line and the edits inside a moved block,
//! the line that stands for the removed original, and a file's numbered diff
//! (as the `diff` tool prints it) with both.

use std::fmt::Write as _;

use crate::review::diff::{DiffLine, FileChange, LineKind};

use super::{Edit, FileMoves, MOVE_MARK, Move};

/// How numbers are printed: right-aligned in five columns (`diff` tool, first
/// message) or unpadded (plan tasks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Numbers {
    Aligned,
    Unpadded,
}

impl Numbers {
    fn write(self, out: &mut String, number: &str, rest: &str) {
        // Writing to a String cannot fail.
        let _ = match self {
            Numbers::Aligned => writeln!(out, "{number:>5} {rest}"),
            Numbers::Unpadded => writeln!(out, "{number} {rest}"),
        };
    }
}

/// The move line, then the edits: `40-46 ~ moved from `pkg/util.py:154-160`, edited (- original, + now):`
/// (with `renamed `old` to `new`, ` before `edited` when the block renames identifiers).
pub(crate) fn move_block(m: &Move, numbers: Numbers, out: &mut String) {
    let (from, to) = (m.from, m.to);
    let what = match m.edits.len() {
        0 => "unchanged",
        _ => "edited (- original, + now):",
    };
    let span = format!("{}-{}", to.0, to.1);
    numbers.write(
        out,
        &span,
        &format!(
            "{}{}:{}-{}`, {}{what}",
            &MOVE_MARK[1..],
            m.from_path,
            from.0,
            from.1,
            renamed(m)
        ),
    );
    for edit in &m.edits {
        match edit {
            Edit::Removed { line, text } => {
                numbers.write(out, &line.to_string(), &format!("-{text}"))
            }
            Edit::Added { line, text } => {
                numbers.write(out, &line.to_string(), &format!("+{text}"))
            }
        }
    }
}

/// `renamed `parse_port` to `read_port`, ` when the block renames identifiers.
fn renamed(m: &Move) -> String {
    if m.renames.is_empty() {
        return String::new();
    }
    let pairs: Vec<String> = m
        .renames
        .iter()
        .map(|(old, new)| format!("`{old}` to `{new}`"))
        .collect();
    format!("renamed {}, ", pairs.join(" and "))
}

/// The line standing for a moved original: `[lines 154-160 of base moved to `pkg/new.py:40-46`]`.
pub(crate) fn moved_away(m: &Move) -> String {
    format!(
        "[lines {}-{} of base moved to `{}:{}-{}`]",
        m.from.0, m.from.1, m.to_file, m.to.0, m.to.1
    )
}

/// A run of removed lines cut where moved originals begin and end.
pub(crate) enum Segment<'a, 'l> {
    /// Lines that are the original of a move.
    Moved(&'a Move),
    /// Lines removed for good.
    Gone(Vec<&'l DiffLine>),
}

/// `lines` (consecutive removed lines) as moved originals and the rest, in order.
pub(crate) fn segments<'a, 'l>(
    lines: &[&'l DiffLine],
    moves: &FileMoves<'a>,
) -> Vec<Segment<'a, 'l>> {
    let mut out: Vec<Segment<'a, 'l>> = Vec::new();
    for line in lines {
        let source = line.old_line.and_then(|n| moves.source_of(n));
        match (source, out.last_mut()) {
            (Some(m), Some(Segment::Moved(last))) if std::ptr::eq(*last, m) => {}
            (Some(m), _) => out.push(Segment::Moved(m)),
            (None, Some(Segment::Gone(gone))) => gone.push(line),
            (None, _) => out.push(Segment::Gone(vec![line])),
        }
    }
    out
}

/// `file`'s diff as [`FileChange::render_numbered`] prints it, with every moved
/// block as its move line and edits, and every moved original as one line.
pub(crate) fn render_numbered(file: &FileChange, moves: &FileMoves<'_>) -> String {
    if moves.is_empty() || file.binary {
        return file.render_numbered();
    }
    let mut out = String::new();
    let old = file.old_path.as_deref().unwrap_or(&file.path);
    out.push_str(&format!("--- a/{old}\n+++ b/{}\n", file.path));
    for hunk in &file.hunks {
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@{}{}\n",
            hunk.old_start,
            hunk.old_lines,
            hunk.new_start,
            hunk.new_lines,
            if hunk.header.is_empty() { "" } else { " " },
            hunk.header
        ));
        let mut skip_to = 0;
        for line in &hunk.lines {
            match (line.kind, line.new_line, line.old_line) {
                (LineKind::Added, Some(n), _) if n <= skip_to => {}
                (LineKind::Added, Some(n), _) if moves.starting_at(n).is_some() => {
                    if let Some(m) = moves.starting_at(n) {
                        move_block(m, Numbers::Aligned, &mut out);
                        skip_to = m.to.1;
                    }
                }
                (LineKind::Removed, _, Some(n)) if moves.source_of(n).is_some() => {
                    if let Some(m) = moves.source_of(n).filter(|m| m.from.0 == n) {
                        out.push_str(&format!("      {}\n", moved_away(m)));
                    }
                }
                _ => {
                    let (mark, number) = match line.kind {
                        LineKind::Context => (' ', line.new_line),
                        LineKind::Added => ('+', line.new_line),
                        LineKind::Removed => ('-', line.old_line),
                    };
                    let number = number.map(|n| n.to_string()).unwrap_or_default();
                    out.push_str(&format!("{number:>5} {mark}{}\n", line.text));
                }
            }
        }
    }
    out
}
