//! The code a finding points at, for a reader who checks it (the verifier, the eval's
//! grader): its lines with a few lines of context, numbered, the finding's lines marked `>`
//! and the lines the change added (head) or removed (base) marked `+` / `-`, in a fence
//! longer than any backtick run in the code. At most [`MAX_CODE_LINES`] of the finding's
//! own lines are shown.
//!
//! When the finding sits in a function of at most [`MAX_FUNCTION_LINES`] lines (in a
//! language with a grammar), the excerpt widens to the whole function: whether
//! a finding holds usually turns on a guard or an assignment a few lines above the window,
//! and a reader shown the whole function need not spend a tool call to see it.

use std::ops::RangeInclusive;

use tree_sitter::Node;

use super::anchor::fence_for;
use super::diff::{ChangeSet, LineKind};
use super::finding::{Finding, Side};

/// Lines of context shown before and after a finding's range.
const CONTEXT_LINES: u32 = 5;
/// Lines of a finding's own range shown at most.
pub(crate) const MAX_CODE_LINES: u32 = 40;
/// A function of at most this many lines around the finding is shown whole.
pub(crate) const MAX_FUNCTION_LINES: u32 = 60;

/// Tree-sitter node kinds that are functions, across the languages with a grammar.
const FUNCTION_KINDS: &[&str] = &[
    // Python
    "function_definition",
    // Rust
    "function_item",
    "closure_expression",
    // JavaScript, TypeScript
    "function_declaration",
    "function_expression",
    "function",
    "generator_function_declaration",
    "generator_function",
    "arrow_function",
    "method_definition",
    // Go (`function_declaration` above)
    "method_declaration",
    "func_literal",
];

/// The excerpt of `finding` in `source` (the file's text on the finding's side), with a
/// line saying what it shows; `None` when the finding's lines are not in `source`.
pub(crate) fn code_excerpt(finding: &Finding, changes: &ChangeSet, source: &str) -> Option<String> {
    let lines: Vec<&str> = source.lines().collect();
    let total = u32::try_from(lines.len()).ok()?;
    let range = finding.range();
    if *range.start() == 0 || *range.start() > total {
        return None;
    }
    let end = (*range.end()).min(*range.start() + MAX_CODE_LINES - 1);
    let mut first = range.start().saturating_sub(CONTEXT_LINES).max(1);
    let mut last = end.saturating_add(CONTEXT_LINES).min(total);
    if let Some(function) = enclosing_function(&finding.path, source, *range.start()..=end) {
        first = first.min(*function.start());
        last = last.max(*function.end()).min(total);
    }
    let changed = changed_lines(finding, changes);
    let (version, mark) = match finding.side {
        Side::Right => ("head", '+'),
        Side::Left => ("base", '-'),
    };
    let width = last.to_string().len();
    let mut code = String::new();
    for number in first..=last {
        let text = lines.get(number as usize - 1).copied().unwrap_or_default();
        let pointer = if range.contains(&number) && number <= end {
            '>'
        } else {
            ' '
        };
        let change = if changed.contains(&number) { mark } else { ' ' };
        code.push_str(&format!("{pointer}{change}{number:>width$} | {text}\n"));
    }
    let fence = fence_for(&code);
    let shortened = match end < *range.end() {
        true => format!(
            " (the first {MAX_CODE_LINES} of its {} lines)",
            range.end() - range.start() + 1
        ),
        false => String::new(),
    };
    Some(format!(
        "Code at {version}, lines {first}-{last}; `>` marks the finding's lines{shortened}, `{mark}` the lines the change {}:\n{fence}\n{code}{fence}\n",
        match finding.side {
            Side::Right => "added",
            Side::Left => "removed",
        }
    ))
}

/// The lines (1-based) of the innermost function of `source` holding all of `lines`, when
/// it spans at most [`MAX_FUNCTION_LINES`]; `None` without a grammar, a clean parse or
/// such a function.
fn enclosing_function(
    path: &str,
    source: &str,
    lines: RangeInclusive<u32>,
) -> Option<RangeInclusive<u32>> {
    let lang = crate::syntax::Lang::of_path(path)?;
    let tree = crate::syntax::parse(lang, source)?;
    let rows = (*lines.start() as usize - 1)..=(*lines.end() as usize - 1);
    let mut node = tree.root_node();
    let mut innermost = None;
    // Down from the root through the child holding the rows (`Node::parent` walks from the
    // root on every call; see clippy.toml).
    loop {
        if FUNCTION_KINDS.contains(&node.kind()) {
            innermost = Some(node);
        }
        let mut cursor = node.walk();
        let child = node
            .children(&mut cursor)
            .find(|child| holds_rows(child, &rows));
        match child {
            Some(child) => node = child,
            None => break,
        }
    }
    let function = innermost?;
    let start = u32::try_from(function.start_position().row).ok()? + 1;
    let end = u32::try_from(function.end_position().row).ok()? + 1;
    (end - start < MAX_FUNCTION_LINES).then_some(start..=end)
}

/// Whether `node` spans every row of `rows` (0-based).
fn holds_rows(node: &Node<'_>, rows: &RangeInclusive<usize>) -> bool {
    node.start_position().row <= *rows.start() && node.end_position().row >= *rows.end()
}

/// The lines of the finding's file the change added (head) or removed (base).
fn changed_lines(finding: &Finding, changes: &ChangeSet) -> Vec<u32> {
    let Some(file) = changes.file(&finding.path) else {
        return Vec::new();
    };
    file.hunks
        .iter()
        .flat_map(|hunk| &hunk.lines)
        .filter_map(|line| match (finding.side, line.kind) {
            (Side::Right, LineKind::Added) => line.new_line,
            (Side::Left, LineKind::Removed) => line.old_line,
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(path: &str, line: u32) -> Finding {
        Finding::on_lines(path, line, line)
    }

    /// A Python function of `body` lines whose guard sits on its second line.
    fn python_function(body: u32) -> String {
        let mut text = String::from(
            "import os\n\n\ndef load(path):\n    if path is None:\n        return None\n",
        );
        for n in 0..body {
            text.push_str(&format!("    step_{n} = {n}\n"));
        }
        text.push_str("    return step_0\n\n\ndef other():\n    pass\n");
        text
    }

    #[test]
    fn a_short_function_is_shown_whole() {
        let source = python_function(20);
        // The function is lines 4-27; the guard on line 5 is out of line 20's context.
        let excerpt = code_excerpt(&finding("a.py", 20), &ChangeSet::default(), &source).unwrap();
        assert!(excerpt.contains("Code at head, lines 4-27"), "{excerpt}");
        assert!(excerpt.contains("if path is None:"), "{excerpt}");
        assert!(!excerpt.contains("def other"), "{excerpt}");
    }

    #[test]
    fn a_long_function_keeps_the_context_window() {
        let source = python_function(MAX_FUNCTION_LINES + 5);
        let line = 4 + 3 + MAX_FUNCTION_LINES + 5;
        let excerpt = code_excerpt(&finding("a.py", line), &ChangeSet::default(), &source).unwrap();
        let first = line - CONTEXT_LINES;
        assert!(
            excerpt.contains(&format!("Code at head, lines {first}-")),
            "{excerpt}"
        );
        assert!(!excerpt.contains("if path is None:"), "{excerpt}");
    }

    #[test]
    fn the_innermost_function_is_the_one_shown() {
        let source = "fn outer() {\n    let a = 1;\n    let f = |x: u32| {\n        x + 1\n    };\n    f(a);\n}\n";
        let lines = enclosing_function("src/a.rs", source, 4..=4);
        assert_eq!(lines, Some(3..=5));
        assert_eq!(enclosing_function("src/a.rs", source, 2..=2), Some(1..=7));
        assert_eq!(enclosing_function("notes.txt", source, 4..=4), None);
    }
}
