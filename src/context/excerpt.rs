//! One file's part of the shaped first prompt: its changes with asymmetric
//! context taken from the head text, widened to the innermost enclosing
//! definition when that is close (and naming it in the hunk header when it is
//! farther; found by indentation, see [`enclosing_definition`]), overlapping windows merged, every line numbered (in the aligned
//! layout as the `diff` tool numbers it; in the compact layout of plan tasks
//! unpadded, see [`Layout`]), and long pure deletions summarised in one line.
//! A very long line on any side is shown as its length ([`super::noise::shown_line`]).

use std::fmt::Write as _;

use super::moves::{FileMoves, render as moved};
use crate::review::diff::{DiffLine, FileChange, LineKind};
pub use after::AfterContext;
use after::BlockEnds;
pub(crate) use definition::looks_like_definition;
use definition::{Enclosing, enclosing_definition, indentation};

/// Context around each change, in head lines, and how the lines are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ContextLines {
    /// Lines shown before a change.
    pub before: u32,
    /// Lines shown after a change.
    pub after: u32,
    /// When set, the context after a change reaches to the end of the enclosing
    /// statement or block, at most this many lines ([`AfterContext::Block`]).
    pub after_block: Option<u32>,
    /// How numbers and `@@` lines are printed.
    pub layout: Layout,
}

/// How an excerpt prints its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// As the `diff` tool prints: numbers right-aligned in five columns, `@@`
    /// lines with git's ranges (`@@ -12,7 +12,9 @@ fn name`).
    Aligned,
    /// For plan-and-execute tasks, where every task pays for its text: numbers
    /// unpadded (`12 +text`, a blank context line is its number alone), `@@`
    /// lines with only the enclosing definition (`@@ fn name`), since every line
    /// carries its own number anyway, and the `--- a/` line only for renames.
    /// The padding and ranges were a fifth of a task's tokens. Windows are widened
    /// to their enclosing definition only when it is at most
    /// [`COMPACT_WIDENING_LINES`] away; a farther one is named in the `@@` line.
    Compact,
}

impl Layout {
    /// The most lines a window is widened by to reach its enclosing definition.
    fn max_widening(self) -> u32 {
        match self {
            Layout::Aligned => MAX_WIDENING_LINES,
            Layout::Compact => COMPACT_WIDENING_LINES,
        }
    }
}

/// [`MAX_WIDENING_LINES`] for the compact layout: every task pays for its
/// context, and the `@@` line names a definition for the price of one line.
pub(crate) const COMPACT_WIDENING_LINES: u32 = 2;

/// How far up to look for the enclosing definition (lines are skipped by
/// their indentation alone, so a long method's start is still found).
const DEFINITION_SCAN_LINES: u32 = 5_000;

/// A window is widened up to its enclosing definition when that adds at most
/// this many lines; a farther definition is named in the hunk header instead.
pub(crate) const MAX_WIDENING_LINES: u32 = 8;

/// Removal-only blocks shorter than this are always shown line by line, whatever
/// the budget: a short removal (an `else` branch, a bounds check) is often the
/// bug, and a one-line summary of it hides exactly what the reviewer must see.
pub(crate) const SUMMARY_MIN_LINES: usize = 8;

/// A removal-only block is summarised only when its lines cost at least this
/// many times the tokens of the summary line.
pub(crate) const SUMMARY_MIN_SAVING: usize = 3;

/// Longest description of a summarised deletion.
const SUMMARY_WHAT_CHARS: usize = 60;

/// A file's rendered excerpt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Excerpt {
    /// The numbered diff text of the file.
    pub text: String,
    /// Non-blank added head lines printed in `text`.
    pub shown_changed: usize,
}

/// A maximal run of changed lines within a hunk.
#[derive(Debug, Clone)]
struct Block {
    /// First head line of the block (for pure removals, the head line they sit before).
    start: u32,
    /// Last added head line; `start - 1` when the block adds nothing.
    end: u32,
    /// Indentation of the block's first changed line.
    indent: usize,
    /// Index of the hunk the block belongs to.
    hunk: usize,
}

/// Removed base lines that sit just before head line `anchor`.
#[derive(Debug, Clone)]
struct RemovedRun<'a> {
    anchor: u32,
    lines: Vec<&'a DiffLine>,
    /// The block removes only: shown as a one-line summary when long.
    removal_only: bool,
}

/// A head line range to print, `end == start - 1` for an empty one.
#[derive(Debug, Clone)]
struct Window {
    start: u32,
    end: u32,
    header: String,
}

/// Head text lines with a fallback to what the hunks carry.
struct HeadLines<'a> {
    /// The full head text split into lines, when it matches the hunks.
    full: Option<Vec<&'a str>>,
    /// Lines known from the hunks themselves, by head line number.
    from_hunks: std::collections::HashMap<u32, &'a str>,
    len: u32,
}

impl<'a> HeadLines<'a> {
    fn new(file: &'a FileChange, head: Option<&'a str>) -> Self {
        let from_hunks: std::collections::HashMap<u32, &str> = file
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| l.kind != LineKind::Removed)
            .filter_map(|l| l.new_line.map(|n| (n, l.text.as_str())))
            .collect();
        let full = head
            .map(|text| text.lines().collect::<Vec<_>>())
            .filter(|lines| {
                from_hunks.iter().all(|(n, text)| {
                    (*n as usize)
                        .checked_sub(1)
                        .and_then(|i| lines.get(i))
                        .is_some_and(|line| {
                            line.trim_end_matches('\r') == text.trim_end_matches('\r')
                        })
                })
            });
        let len = match &full {
            Some(lines) => lines.len() as u32,
            None => from_hunks.keys().copied().max().unwrap_or(0),
        };
        HeadLines {
            full,
            from_hunks,
            len,
        }
    }

    fn get(&self, n: u32) -> Option<&'a str> {
        let line = match &self.full {
            Some(lines) => lines.get((n as usize).checked_sub(1)?).copied(),
            None => self.from_hunks.get(&n).copied(),
        };
        line.map(|l| l.trim_end_matches('\r'))
    }
}

/// Renders `file`'s changes with `context` lines around them. `head` is the
/// file's head text; without it (or when it does not match the hunks) only the
/// lines the hunks carry are shown. Each of the file's moved blocks is one
/// move line plus its edits, each moved original one line ([`super::moves`]).
pub(crate) fn render_file(
    file: &FileChange,
    head: Option<&str>,
    context: ContextLines,
    moves: &FileMoves<'_>,
) -> Excerpt {
    let lines = HeadLines::new(file, head);
    let (blocks, runs) = collect_changes(file);
    let parsed = head.filter(|_| lines.full.is_some());
    let ends = BlockEnds::new(&file.path, parsed, context.after_block);
    let windows = merge_windows(
        blocks
            .iter()
            .map(|block| window_for(block, file, &lines, context, &ends))
            .collect(),
    );
    let added: Vec<u32> = file
        .hunks
        .iter()
        .flat_map(|h| &h.lines)
        .filter(|l| l.kind == LineKind::Added)
        .filter_map(|l| l.new_line)
        .collect();
    let mut out = String::new();
    let old = file.old_path.as_deref().unwrap_or(&file.path);
    if context.layout == Layout::Aligned || old != file.path {
        out.push_str(&format!("--- a/{old}\n"));
    }
    out.push_str(&format!("+++ b/{}\n", file.path));
    let mut shown_changed = 0;
    let numbers = Numbering {
        added: &added,
        runs: &runs,
        moves,
        removed_before: std::iter::once(0)
            .chain(runs.iter().scan(0, |sum, run| {
                *sum += run.lines.len();
                Some(*sum)
            }))
            .collect(),
    };
    for window in &windows {
        shown_changed += render_window(window, &lines, &numbers, context.layout, &mut out);
    }
    Excerpt {
        text: out,
        shown_changed,
    }
}

/// Splits the hunks into change blocks and runs of removed lines (sorted by anchor).
fn collect_changes(file: &FileChange) -> (Vec<Block>, Vec<RemovedRun<'_>>) {
    let mut blocks = Vec::new();
    let mut runs: Vec<RemovedRun<'_>> = Vec::new();
    for (index, hunk) in file.hunks.iter().enumerate() {
        let mut next_head = if hunk.new_lines == 0 {
            hunk.new_start + 1
        } else {
            hunk.new_start
        };
        let mut open: Option<OpenBlock> = None;
        let mut previous_removed = false;
        for line in &hunk.lines {
            if line.kind == LineKind::Context {
                blocks.extend(close_block(open.take(), next_head, &mut runs));
                previous_removed = false;
            } else {
                let block = open.get_or_insert(OpenBlock {
                    start: next_head,
                    indent: None,
                    first_run: runs.len(),
                    adds: false,
                    hunk: index,
                });
                if block.indent.is_none() && !line.text.trim().is_empty() {
                    block.indent = Some(indentation(&line.text));
                }
                if line.kind == LineKind::Added {
                    block.adds = true;
                    previous_removed = false;
                } else {
                    match runs.last_mut() {
                        Some(run) if previous_removed => run.lines.push(line),
                        _ => runs.push(RemovedRun {
                            anchor: next_head,
                            lines: vec![line],
                            removal_only: true,
                        }),
                    }
                    previous_removed = true;
                }
            }
            if line.kind != LineKind::Removed
                && let Some(n) = line.new_line
            {
                next_head = n + 1;
            }
        }
        blocks.extend(close_block(open.take(), next_head, &mut runs));
    }
    (blocks, runs)
}

/// A block being collected.
struct OpenBlock {
    start: u32,
    indent: Option<usize>,
    first_run: usize,
    adds: bool,
    hunk: usize,
}

/// Finishes a block: its end, and whether its removed runs are removal-only.
fn close_block(
    open: Option<OpenBlock>,
    next_head: u32,
    runs: &mut [RemovedRun<'_>],
) -> Option<Block> {
    let open = open?;
    for run in runs.iter_mut().skip(open.first_run) {
        run.removal_only = !open.adds;
    }
    Some(Block {
        start: open.start,
        end: next_head
            .saturating_sub(1)
            .max(open.start.saturating_sub(1)),
        indent: open.indent.unwrap_or(0),
        hunk: open.hunk,
    })
}

/// The head lines to show for one block.
fn window_for(
    block: &Block,
    file: &FileChange,
    lines: &HeadLines<'_>,
    context: ContextLines,
    ends: &BlockEnds<'_>,
) -> Window {
    let mut start = block.start.saturating_sub(context.before).max(1);
    let fixed = block.end.saturating_add(context.after);
    let to_block = ends.end_after(block.end).unwrap_or(0);
    let mut end = fixed.max(to_block).min(lines.len);
    let hunk = &file.hunks[block.hunk];
    if lines.full.is_none() {
        // Only the hunk's own lines are known.
        start = start.max(hunk.new_start.max(1));
        end = end.min(hunk.new_start + hunk.new_lines.saturating_sub(1));
    }
    let mut header = hunk.header.clone();
    if lines.full.is_some() {
        match enclosing_definition(block, lines) {
            Enclosing::At(definition) if definition < start => {
                if start - definition <= context.layout.max_widening() {
                    start = definition;
                    header.clear();
                } else {
                    // Too far to show the lines in between: name the definition in the
                    // hunk header, as git does, for the price of one line.
                    header = super::noise::shown_line(lines.get(definition).unwrap_or_default())
                        .trim()
                        .to_string();
                }
            }
            // The window shows it.
            Enclosing::At(_) => header.clear(),
            // Git's guess (the nearest unindented line above) is a definition
            // that does not contain the block.
            Enclosing::None if looks_like_definition(&header) => header.clear(),
            Enclosing::None | Enclosing::Unknown => {}
        }
    }
    if header_is_in_view(&header, start, block.start, lines) {
        header.clear();
    }
    Window {
        start,
        end: end.max(start - 1),
        header,
    }
}

/// Whether git's hunk header names a line shown anyway (the window starts
/// above git's hunk), which would only mislead.
fn header_is_in_view(header: &str, from: u32, to: u32, lines: &HeadLines<'_>) -> bool {
    let header = header.trim();
    !header.is_empty()
        && (from..=to).any(|n| {
            lines
                .get(n)
                .is_some_and(|line| line.trim_start().starts_with(header))
        })
}

/// Sorts and merges overlapping or touching windows.
fn merge_windows(mut windows: Vec<Window>) -> Vec<Window> {
    windows.sort_by_key(|w| w.start);
    let mut merged: Vec<Window> = Vec::with_capacity(windows.len());
    for window in windows {
        match merged.last_mut() {
            Some(last) if window.start <= last.end + 1 => last.end = last.end.max(window.end),
            _ => merged.push(window),
        }
    }
    merged
}

/// What is needed to number a window's base side.
struct Numbering<'a> {
    /// Added head lines, sorted.
    added: &'a [u32],
    /// Removed runs, sorted by anchor.
    runs: &'a [RemovedRun<'a>],
    /// The file's moves.
    moves: &'a FileMoves<'a>,
    /// Removed lines in the first k runs, for every k (one lookup per window).
    removed_before: Vec<usize>,
}

impl Numbering<'_> {
    /// The base line number of whatever comes first at head position `n`.
    fn base_position(&self, n: u32) -> u32 {
        let added_before = self.added.partition_point(|&a| a < n) as u32;
        let runs_before = self.runs.partition_point(|r| r.anchor < n);
        let removed_before = self.removed_before[runs_before];
        (n + removed_before as u32).saturating_sub(added_before)
    }

    fn is_added(&self, n: u32) -> bool {
        self.added.binary_search(&n).is_ok()
    }
}

/// Prints one window; returns the non-blank added lines printed.
fn render_window(
    window: &Window,
    lines: &HeadLines<'_>,
    numbers: &Numbering<'_>,
    layout: Layout,
    out: &mut String,
) -> usize {
    let first_run = numbers.runs.partition_point(|r| r.anchor < window.start);
    let mut runs = numbers.runs[first_run..]
        .iter()
        .take_while(|r| r.anchor <= window.end + 1)
        .peekable();
    let mut body = String::new();
    let mut old_count = 0u32;
    let mut shown = 0;
    let mut moved_to = 0;
    for n in window.start..=window.end + 1 {
        while let Some(run) = runs.next_if(|r| r.anchor == n) {
            old_count += run.lines.len() as u32;
            render_run(run, layout, numbers.moves, &mut body);
        }
        if n > window.end {
            break;
        }
        let text = super::noise::shown_line(lines.get(n).unwrap_or(""));
        if let Some(m) = numbers.moves.starting_at(n) {
            moved::move_block(m, numbers_of(layout), &mut body);
            moved_to = m.to.1;
        }
        if n <= moved_to {
            // Stood for by the move line: not repeated, but shown.
            if numbers.is_added(n) && !text.trim().is_empty() {
                shown += 1;
            }
            continue;
        }
        let mark = if numbers.is_added(n) {
            if !text.trim().is_empty() {
                shown += 1;
            }
            '+'
        } else {
            old_count += 1;
            ' '
        };
        // Writing to a String cannot fail.
        let _ = match layout {
            Layout::Aligned => writeln!(body, "{n:>5} {mark}{text}"),
            Layout::Compact if text.is_empty() && mark == ' ' => writeln!(body, "{n}"),
            Layout::Compact => writeln!(body, "{n} {mark}{text}"),
        };
    }
    if layout == Layout::Compact {
        out.push_str(&compact_hunk_line(&window.header));
        out.push_str(&body);
        return shown;
    }
    let new_count = window.end + 1 - window.start;
    let mut old_start = numbers.base_position(window.start);
    if old_count == 0 {
        old_start = old_start.saturating_sub(1);
    }
    let new_start = if new_count == 0 {
        window.start - 1
    } else {
        window.start
    };
    let separator = if window.header.is_empty() { "" } else { " " };
    out.push_str(&format!(
        "@@ -{old_start},{old_count} +{new_start},{new_count} @@{separator}{}\n",
        window.header
    ));
    out.push_str(&body);
    shown
}

/// `@@`, then the enclosing definition cut to [`COMPACT_HEADER_CHARS`]: its name
/// is what places the excerpt, and the window's own lines carry their numbers.
fn compact_hunk_line(header: &str) -> String {
    let header = header.trim();
    if header.is_empty() {
        return "@@\n".into();
    }
    let mut cut: String = header.chars().take(COMPACT_HEADER_CHARS).collect();
    if cut.len() < header.len() {
        cut.push('…');
    }
    format!("@@ {cut}\n")
}

/// The longest definition a compact `@@` line names, in characters.
const COMPACT_HEADER_CHARS: usize = 48;

fn numbers_of(layout: Layout) -> moved::Numbers {
    match layout {
        Layout::Aligned => moved::Numbers::Aligned,
        Layout::Compact => moved::Numbers::Unpadded,
    }
}

/// A removed run: moved originals as one line each, the rest as below.
fn render_run(run: &RemovedRun<'_>, layout: Layout, moves: &FileMoves<'_>, out: &mut String) {
    for segment in moved::segments(&run.lines, moves) {
        match segment {
            moved::Segment::Moved(m) => {
                if layout == Layout::Aligned {
                    out.push_str("      ");
                }
                out.push_str(&moved::moved_away(m));
                out.push('\n');
            }
            moved::Segment::Gone(lines) => render_gone(&lines, run.removal_only, layout, out),
        }
    }
}

/// Removed lines: a one-line summary when a long pure deletion much cheaper
/// summarised ([`SUMMARY_MIN_LINES`], [`SUMMARY_MIN_SAVING`]), else each line.
fn render_gone(lines: &[&DiffLine], removal_only: bool, layout: Layout, out: &mut String) {
    let mut shown = String::new();
    for line in lines {
        let number = line.old_line.map(|n| n.to_string()).unwrap_or_default();
        let text = super::noise::shown_line(&line.text);
        let _ = match layout {
            Layout::Aligned => writeln!(shown, "{number:>5} -{text}"),
            Layout::Compact => writeln!(shown, "{number} -{text}"),
        };
    }
    if removal_only && lines.len() >= SUMMARY_MIN_LINES {
        let mut summary = String::new();
        if layout == Layout::Aligned {
            summary.push_str("      ");
        }
        summary.push_str(&deletion_summary(lines));
        summary.push('\n');
        if much_cheaper(&summary, &shown) {
            out.push_str(&summary);
            return;
        }
    }
    out.push_str(&shown);
}

/// Whether `summary` costs at most a [`SUMMARY_MIN_SAVING`]th of the tokens of
/// `lines`. Counted in one encoding whatever the model: the ratio, not the
/// count, decides, and it hardly depends on the encoding.
fn much_cheaper(summary: &str, lines: &str) -> bool {
    let encoding = crate::llm::tokens::Encoding::Cl100kBase;
    encoding.count(summary) * SUMMARY_MIN_SAVING <= encoding.count(lines)
}

/// One line standing for a removed block: `[lines 40-72 of base removed (33 lines): fn old_helper]`.
fn deletion_summary(lines: &[&DiffLine]) -> String {
    let first = lines.first().and_then(|l| l.old_line).unwrap_or(0);
    let last = lines.last().and_then(|l| l.old_line).unwrap_or(first);
    let what = lines
        .iter()
        .map(|l| l.text.trim())
        .find(|t| looks_like_definition(t))
        .or_else(|| lines.iter().map(|l| l.text.trim()).find(|t| !t.is_empty()))
        .unwrap_or("");
    let what_len = what.len();
    let mut what: String = what.chars().take(SUMMARY_WHAT_CHARS).collect();
    if what.len() < what_len {
        what.push('…');
    }
    format!(
        "[lines {first}-{last} of base removed ({} lines): {what}; read_file with revision \"base\" shows them]",
        lines.len()
    )
}

mod after;
mod definition;
#[cfg(test)]
mod tests;
