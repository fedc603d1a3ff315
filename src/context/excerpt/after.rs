//! How far the context after each change reaches: a fixed number of head lines,
//! or to the end of the innermost statement or block that encloses the change's
//! last line ([`AfterContext::Block`]), found in the head text's syntax tree.
//!
//! Invariants: the block rule never shows fewer lines than the fixed minimum it
//! carries nor more than its cap past the change; a file without a grammar, too
//! large to parse, or whose head text does not match its hunks gets the fixed
//! minimum. The head text is parsed at most once per file.

use std::str::FromStr;

use tree_sitter::{Node, Point, Tree};

use crate::syntax::{self, Lang};

/// The after-context rule of the first message. Today's is two lines; the
/// others exist to measure whether more context saves model rounds (see
/// `benches/context_after.sh`), chosen through `REDLINE_BENCH_CONTEXT_AFTER`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterContext {
    /// This many head lines after each change.
    Lines(u32),
    /// To the end of the innermost statement or block enclosing the change's
    /// last line, at least [`DEFAULT_AFTER_LINES`] and at most `cap` lines past it.
    Block {
        /// The most lines shown after a change.
        cap: u32,
    },
}

/// Head lines shown after each change by default, and the least the block rule shows.
pub(crate) const DEFAULT_AFTER_LINES: u32 = 2;

/// The block rule's cap when none is given (`block`).
pub(crate) const DEFAULT_BLOCK_CAP: u32 = 12;

impl Default for AfterContext {
    fn default() -> Self {
        AfterContext::Lines(DEFAULT_AFTER_LINES)
    }
}

impl AfterContext {
    /// The fixed lines shown after a change (the block rule's minimum).
    pub fn lines(self) -> u32 {
        match self {
            AfterContext::Lines(n) => n,
            AfterContext::Block { .. } => DEFAULT_AFTER_LINES,
        }
    }

    /// The block rule's cap, `None` for a fixed number of lines.
    pub fn block_cap(self) -> Option<u32> {
        match self {
            AfterContext::Lines(_) => None,
            AfterContext::Block { cap } => Some(cap),
        }
    }
}

impl FromStr for AfterContext {
    type Err = String;

    /// `N` (lines), `block` or `block:N` (the cap).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let bad = || format!("`{text}` is not `N`, `block` or `block:N` (N at most 200)");
        let number = |n: &str| n.parse::<u32>().ok().filter(|n| *n <= 200).ok_or_else(bad);
        match text.strip_prefix("block") {
            Some("") => Ok(AfterContext::Block {
                cap: DEFAULT_BLOCK_CAP,
            }),
            Some(rest) => match rest.strip_prefix(':') {
                Some(cap) => Ok(AfterContext::Block { cap: number(cap)? }),
                None => Err(bad()),
            },
            None => number(text).map(AfterContext::Lines),
        }
    }
}

/// A file's syntax tree, for the block rule; empty when the rule is off or the
/// file cannot be parsed.
pub(super) struct BlockEnds<'a> {
    tree: Option<Tree>,
    /// The head text's lines, when parsed.
    lines: Vec<&'a str>,
    cap: u32,
}

impl<'a> BlockEnds<'a> {
    /// Parses `head` when `cap` is set and `path` has a grammar.
    pub(super) fn new(path: &str, head: Option<&'a str>, cap: Option<u32>) -> Self {
        let tree = match (cap, head, Lang::of_path(path)) {
            (Some(_), Some(text), Some(lang)) if text.len() <= crate::eval::MAX_PARSED_BYTES => {
                syntax::parse(lang, text)
            }
            _ => None,
        };
        let lines = match (&tree, head) {
            (Some(_), Some(text)) => text.lines().collect(),
            _ => Vec::new(),
        };
        BlockEnds {
            tree,
            lines,
            cap: cap.unwrap_or(0),
        }
    }

    /// The last head line to show after a change ending at head line `last`
    /// (1-based): the end of the innermost statement or block that encloses
    /// `last` and goes on past it, at most the cap past `last`; `None` without
    /// a tree or such a node.
    pub(super) fn end_after(&self, last: u32) -> Option<u32> {
        let tree = self.tree.as_ref()?;
        let row = (last as usize).checked_sub(1)?;
        let line = self.lines.get(row)?;
        let column = line.trim_end().len().saturating_sub(1);
        let at = Point { row, column };
        // The nodes holding that point, root first, found walking down with a
        // cursor (a node's parent is a walk from the root per call).
        let mut cursor = tree.root_node().walk();
        let mut holding = Vec::new();
        while cursor.goto_first_child_for_point(at).is_some()
            && cursor.node().start_position() <= at
        {
            holding.push(cursor.node());
        }
        // Innermost first; the root itself is the file, not a statement or block.
        holding
            .iter()
            .rev()
            .map(|node| (end_line(node), node.kind()))
            .find(|&(end, kind)| end > last && is_statement_or_block(kind))
            .map(|(end, _)| end.min(last.saturating_add(self.cap)))
    }
}

/// The 1-based last line of `node` (a node that ends at a line's start ends on the line before).
fn end_line(node: &Node<'_>) -> u32 {
    let end = node.end_position();
    let row = if end.column == 0 && end.row > node.start_position().row {
        end.row
    } else {
        end.row + 1
    };
    row as u32
}

/// Statements, blocks and definitions of the parsed languages, by their node kinds.
fn is_statement_or_block(kind: &str) -> bool {
    kind == "block"
        || kind == "match_arm"
        || kind == "compound_statement"
        || kind == "declaration_list"
        || [
            "_block",
            "_statement",
            "_definition",
            "_item",
            "_declaration",
            "_clause",
            "_body",
        ]
        .iter()
        .any(|suffix| kind.ends_with(suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_knob_reads_lines_and_blocks() {
        assert_eq!("2".parse(), Ok(AfterContext::Lines(2)));
        assert_eq!(" 6 ".parse(), Ok(AfterContext::Lines(6)));
        assert_eq!("block".parse(), Ok(AfterContext::Block { cap: 12 }));
        assert_eq!("block:20".parse(), Ok(AfterContext::Block { cap: 20 }));
        for bad in ["", "blocks", "block5", "block:", "-1", "lines", "999"] {
            assert!(bad.parse::<AfterContext>().is_err(), "{bad}");
        }
    }

    const RUST: &str = "fn f(x: u32) -> u32 {\n    let mut y = x;\n    if y > 3 {\n        y += 1;\n        y *= 2;\n        y -= 5;\n    }\n    y\n}\n\nfn g() {}\n";

    #[test]
    fn a_change_inside_a_block_reaches_its_end() {
        let ends = BlockEnds::new("a.rs", Some(RUST), Some(12));
        // `y += 1;` is in the `if` block, which ends at line 7.
        assert_eq!(ends.end_after(4), Some(7));
        // `let mut y = x;` is in the function's block, which ends at line 9.
        assert_eq!(ends.end_after(2), Some(9));
    }

    #[test]
    fn the_block_rule_is_capped() {
        let ends = BlockEnds::new("a.rs", Some(RUST), Some(2));
        assert_eq!(ends.end_after(2), Some(4));
    }

    #[test]
    fn python_blocks_end_at_their_last_statement() {
        let text = "def f(x):\n    if x:\n        a = 1\n        b = 2\n    return x\n\n\nz = 1\n";
        let ends = BlockEnds::new("m.py", Some(text), Some(12));
        assert_eq!(ends.end_after(3), Some(4));
        // The `if` statement itself goes on past its first line.
        assert_eq!(ends.end_after(2), Some(4));
        assert_eq!(ends.end_after(5), None);
    }

    #[test]
    fn files_without_a_grammar_or_rule_have_no_block_end() {
        assert_eq!(
            BlockEnds::new("a.txt", Some(RUST), Some(12)).end_after(4),
            None
        );
        assert_eq!(BlockEnds::new("a.rs", Some(RUST), None).end_after(4), None);
        // A top-level item's end is the file's business, not a block's.
        assert_eq!(
            BlockEnds::new("a.rs", Some(RUST), Some(12)).end_after(11),
            None
        );
    }
}
