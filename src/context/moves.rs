//! Moved code: blocks removed in one place and added in another, shown as one
//! line naming the original plus only what changed inside them.
//!
//! A release that moves a helper from one module to another shows it, in a
//! plain diff, as hundreds of new `+` lines and a summarised removal: the one
//! token that differs is lost in the noise. [`Moves::detect`] finds such blocks
//! the way `git diff --color-moved` and `git blame -C` do, and the renderers
//! ([`render`]) print each as
//!
//! ```text
//! 40-46 ~ moved from `pkg/util.py:154-160`, edited (- original, + now):
//!   157 -    return a + b
//!    43 +    return a - b
//! ```
//!
//! Invariants:
//! - **Deterministic**: the same change always gives the same moves (runs are
//!   visited in file and line order; candidates are ranked by a total order).
//! - **Cheap**: the removed lines are hash-indexed once; each added line looks
//!   up its own text; a text removed in more than [`detect::MAX_POSTINGS`]
//!   places anchors nothing. No pair of files or of blocks is compared unless
//!   they share anchor lines, so the cost is linear in the changed lines.
//! - **Real moves only**: a move has at least [`detect::MIN_SAME_LINES`] lines
//!   equal to the original (whitespace at the ends ignored, indentation shifted
//!   consistently), at least [`detect::MIN_ANCHORS`] of them long enough to be
//!   distinctive (so runs of `}` or `return None` never form one), and at least
//!   [`detect::MIN_SIMILARITY_PERCENT`] % of its lines equal, and prints at
//!   most [`detect::MAX_EDIT_PERCENT`] % of its head lines as edits (else it
//!   would cost more than the plain lines). A removal and an addition at the
//!   same place of one file are an edit, not a move, and so is a run whose
//!   counterpart at its own place keeps as many of its lines as the move would
//!   (near-identical siblings edited alike are not moves of each other, see
//!   [`in_place`]).
//! - **Each line once**: an added line is the destination of at most one move,
//!   a removed line the source of at most one.
//! - **Renamed identifiers**: a line also counts as equal when it is the
//!   original's once one consistent renaming is applied (at most
//!   [`rename::MAX_RENAMES`] names of definitions or calls, a bijection over the
//!   block, see [`rename`]); the move line names it (`renamed `old` to `new``).
//!   Anchors stay exact lines, so blocks of the same shape and other names
//!   never pair.
//! - **Nothing hidden**: every line of a move's head span is either equal to
//!   the line of the original it is aligned with (under the renaming the move
//!   line names) or printed as an edit (`+`), and every line of the original
//!   is either equal to a head line or printed as an edit (`-`, with its base
//!   number). So the move line stands for the
//!   unchanged lines, which is why coverage counts the whole head span shown
//!   by it ([`span_of`] reads it back).

mod align;
mod detect;
mod in_place;
mod rename;
pub(crate) mod render;

use std::collections::HashMap;

use crate::llm::tokens::TokenCounter;
use crate::review::diff::{ChangeSet, LineKind};

/// One moved block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Move {
    /// The changed file the original was removed from (its head path, as the change names it).
    pub from_file: String,
    /// The original's path at the base revision (what `read_file` with `revision: "base"` opens).
    pub from_path: String,
    /// First and last base line of the original.
    pub from: (u32, u32),
    /// The changed file the block was added to (head path).
    pub to_file: String,
    /// First and last head line of the block.
    pub to: (u32, u32),
    /// Identifiers renamed in the block, `(original, now)`: its lines are
    /// compared with the original's once these are applied ([`rename`]).
    pub renames: Vec<(String, String)>,
    /// What differs inside, in order: original lines not kept and head lines not in the original.
    pub edits: Vec<Edit>,
}

/// One inner difference of a move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Edit {
    /// A line of the original not kept: its base line number and text.
    Removed { line: u32, text: String },
    /// A head line not in the original: its head line number and text.
    Added { line: u32, text: String },
}

/// Every move of a change, with lookups by file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Moves {
    list: Vec<Move>,
    into: HashMap<String, Vec<usize>>,
    out_of: HashMap<String, Vec<usize>>,
}

impl Moves {
    /// The moves of `changes` (binary files take no part).
    pub fn detect(changes: &ChangeSet) -> Self {
        let list = detect::detect(changes);
        let mut into: HashMap<String, Vec<usize>> = HashMap::new();
        let mut out_of: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, m) in list.iter().enumerate() {
            into.entry(m.to_file.clone()).or_default().push(i);
            out_of.entry(m.from_file.clone()).or_default().push(i);
        }
        for indexes in into.values_mut() {
            indexes.sort_by_key(|&i| list[i].to);
        }
        for indexes in out_of.values_mut() {
            indexes.sort_by_key(|&i| list[i].from);
        }
        Moves { list, into, out_of }
    }

    /// How many blocks moved.
    pub fn count(&self) -> usize {
        self.list.len()
    }

    /// What the moves amount to: their head lines, and their tokens as shown
    /// (move lines, edits, moved-away lines) and as plain diff lines.
    pub fn summary(&self, changes: &ChangeSet, counter: &TokenCounter) -> MoveSummary {
        let shown: Vec<String> = self
            .list
            .iter()
            .map(|m| {
                let mut shown = String::new();
                render::move_block(m, render::Numbers::Aligned, &mut shown);
                shown.push_str(&format!("      {}\n", render::moved_away(m)));
                shown
            })
            .collect();
        let lines = PlainLines::of(changes);
        let plain: Vec<String> = self.list.iter().map(|m| lines.of_move(m)).collect();
        let count = |texts: &[String]| -> usize {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            super::count_parallel(counter, &refs).into_iter().sum()
        };
        MoveSummary {
            blocks: self.list.len(),
            lines: self
                .list
                .iter()
                .map(|m| (m.to.1 - m.to.0 + 1) as usize)
                .sum(),
            tokens: count(&shown),
            raw_tokens: count(&plain),
        }
    }

    /// The moves into and out of the changed file at `path` (its head path).
    pub fn of_file(&self, path: &str) -> FileMoves<'_> {
        let pick = |map: &HashMap<String, Vec<usize>>| -> Vec<&Move> {
            map.get(path)
                .map(|ix| ix.iter().map(|&i| &self.list[i]).collect())
                .unwrap_or_default()
        };
        FileMoves {
            into: pick(&self.into),
            out_of: pick(&self.out_of),
        }
    }
}

/// The moves of a change in numbers, for `redline context`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MoveSummary {
    /// Blocks moved.
    pub blocks: usize,
    /// Head lines they span.
    pub lines: usize,
    /// Tokens of their move lines, edits and moved-away lines, as the model sees them.
    pub tokens: usize,
    /// Tokens of the same lines as a plain diff prints them (every `+` and `-` line).
    pub raw_tokens: usize,
}

/// The numbered `-` and `+` lines of every changed file, by head path, each
/// sorted by its number: a move's plain lines are two range lookups, so the
/// summary costs the changed lines once, however many blocks moved.
struct PlainLines<'c> {
    /// Per head path: its removed lines, then its added lines.
    by_file: HashMap<&'c str, (Numbered<'c>, Numbered<'c>)>,
}

/// Lines with their numbers, sorted by number.
type Numbered<'c> = Vec<(u32, &'c str)>;

impl<'c> PlainLines<'c> {
    fn of(changes: &'c ChangeSet) -> Self {
        let mut by_file: HashMap<&str, (Numbered<'c>, Numbered<'c>)> = HashMap::new();
        for file in &changes.files {
            let (removed, added) = by_file.entry(file.path.as_str()).or_default();
            for line in file.hunks.iter().flat_map(|h| &h.lines) {
                match (line.kind, line.old_line, line.new_line) {
                    (LineKind::Removed, Some(n), _) => removed.push((n, line.text.as_str())),
                    (LineKind::Added, _, Some(n)) => added.push((n, line.text.as_str())),
                    _ => {}
                }
            }
        }
        for (removed, added) in by_file.values_mut() {
            removed.sort_by_key(|(n, _)| *n);
            added.sort_by_key(|(n, _)| *n);
        }
        PlainLines { by_file }
    }

    /// A move's added and removed lines as a numbered plain diff prints them.
    fn of_move(&self, m: &Move) -> String {
        let within = |lines: &[(u32, &'c str)], (first, last): (u32, u32)| -> Vec<(u32, &'c str)> {
            let start = lines.partition_point(|(n, _)| *n < first);
            let end = lines.partition_point(|(n, _)| *n <= last);
            lines[start..end.max(start)].to_vec()
        };
        let empty = (Vec::new(), Vec::new());
        let (removed, _) = self.by_file.get(m.from_file.as_str()).unwrap_or(&empty);
        let (_, added) = self.by_file.get(m.to_file.as_str()).unwrap_or(&empty);
        let mut out = String::new();
        for (n, text) in within(removed, m.from) {
            out.push_str(&format!("{n:>5} -{text}\n"));
        }
        for (n, text) in within(added, m.to) {
            out.push_str(&format!("{n:>5} +{text}\n"));
        }
        out
    }
}

/// One file's moves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FileMoves<'a> {
    /// Blocks moved into the file, by head line.
    pub into: Vec<&'a Move>,
    /// Blocks moved out of the file, by base line.
    pub out_of: Vec<&'a Move>,
}

impl<'a> FileMoves<'a> {
    /// Whether the file takes part in no move.
    pub fn is_empty(&self) -> bool {
        self.into.is_empty() && self.out_of.is_empty()
    }

    /// The move whose head span starts at head line `n`.
    pub fn starting_at(&self, n: u32) -> Option<&'a Move> {
        self.into
            .binary_search_by_key(&n, |m| m.to.0)
            .ok()
            .map(|i| self.into[i])
    }

    /// The move whose original holds base line `n` (originals are sorted and never
    /// overlap: each line is in one move at most).
    pub fn source_of(&self, n: u32) -> Option<&'a Move> {
        let at = self.out_of.partition_point(|m| m.from.1 < n);
        self.out_of.get(at).copied().filter(|m| m.from.0 <= n)
    }
}

/// The marker between a move line's head span and its description.
pub(crate) const MOVE_MARK: &str = " ~ moved from `";

/// The head span a move line stands for (`   40-46 ~ moved from …` → `(40, 46)`),
/// `None` for any other line.
pub(crate) fn span_of(line: &str) -> Option<(u32, u32)> {
    let (range, _) = line.trim_start_matches(' ').split_once(MOVE_MARK)?;
    let (first, last) = range.split_once('-')?;
    let first: u32 = first.parse().ok()?;
    let last: u32 = last.parse().ok()?;
    (first <= last).then_some((first, last))
}

#[cfg(test)]
mod tests;
