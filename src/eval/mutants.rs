//! Mutation rules: the realistic one-bug edits that can be made to a source text on
//! given lines, found on its tree-sitter tree ([`crate::syntax`]).
//!
//! Kinds ([`MutantKind`]): a comparison swapped (`==`/`!=`, `is`/`is not`, `in`/`not
//! in`), a boolean operator swapped (`&&`/`||`, `and`/`or`), an off-by-one in a bound
//! (`<`/`<=`, `>`/`>=`, `..`/`..=`, a `+ 1` or `- 1` dropped), a negation dropped, an
//! `await` dropped, a call statement deleted, a returned value ignored (`x = f(x)`
//! becomes `f(x)`), two arguments swapped, a guard deleted (an `if` without `else`
//! whose body only returns, raises, throws, breaks or continues).
//!
//! Invariants: every edit lies wholly on the given lines (in-place edits on one line;
//! deletions remove whole lines, all of them given); [`apply`] keeps only edits whose
//! result still parses with the same grammar (no error or missing node) and changes
//! behaviour ([`crate::syntax::classify_change`]); the candidates come in a fixed order
//! (by position, then kind, then replacement), so a seeded choice among them repeats.
//!
//! Cost: [`candidates`] is one depth-first walk of the tree with a cursor, carrying each
//! node's ancestors (and their statement counts, counted once) on a stack, so it is linear
//! in the tree's size and its memory in the tree's depth; `Node::parent` (a walk down
//! from the root each time, quadratic on nested code) is never called (clippy.toml). An
//! edit replaces at most [`MAX_EDIT_BYTES`] (a realistic bug is small; a minified line
//! would otherwise make every candidate a copy of it), and a caller skips files past
//! [`crate::eval::MAX_PARSED_BYTES`] before parsing them.

use std::cell::Cell;
use std::collections::BTreeSet;

use tree_sitter::Node;

use crate::syntax::{ChangeKind, Lang, classify_change, parse};

#[path = "mutant_kind.rs"]
mod kind;
pub use kind::{Edit, MutantKind};

/// Most bytes an edit replaces (a one-line operator swap is a few bytes; a whole
/// minified line is no realistic bug).
pub const MAX_EDIT_BYTES: usize = 1024;

/// Every candidate edit of `text` lying on `lines` (1-based), in a fixed order; none
/// when the text does not parse cleanly.
pub fn candidates(lang: Lang, text: &str, lines: &BTreeSet<u32>) -> Vec<Edit> {
    candidates_with_cost(lang, text, lines).0
}

/// What [`candidates`] walked: nodes visited, cursor moves, and children counted for
/// statement counts. Each is linear in the tree's size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalkCost {
    /// Nodes the finder looked at (each once).
    pub visits: usize,
    /// Cursor moves (down, across, up).
    pub moves: usize,
    /// Children counted to know whether a statement is alone in its block.
    pub counted: usize,
    /// The deepest ancestor stack.
    pub depth: usize,
}

/// [`candidates`] and what finding them cost.
pub fn candidates_with_cost(
    lang: Lang,
    text: &str,
    lines: &BTreeSet<u32>,
) -> (Vec<Edit>, WalkCost) {
    let mut cost = WalkCost::default();
    let Some(tree) = parse(lang, text) else {
        return (Vec::new(), cost);
    };
    if tree.root_node().has_error() {
        return (Vec::new(), cost);
    }
    let finder = Finder {
        source: text,
        lines,
        counted: Cell::new(0),
    };
    let mut edits = Vec::new();
    let mut cursor = tree.walk();
    let mut ancestors: Vec<Ancestor<'_>> = Vec::new();
    'walk: loop {
        let node = cursor.node();
        cost.visits += 1;
        finder.visit(&node, &ancestors, &mut edits);
        cost.moves += 1;
        if cursor.goto_first_child() {
            ancestors.push(Ancestor::new(node));
            cost.depth = cost.depth.max(ancestors.len());
            continue;
        }
        loop {
            cost.moves += 1;
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
            ancestors.pop();
        }
    }
    cost.counted = finder.counted.get();
    edits.sort();
    edits.dedup_by(|a, b| a.start == b.start && a.end == b.end && a.replacement == b.replacement);
    (edits, cost)
}

/// A node on the way from the root to the one being visited.
struct Ancestor<'t> {
    node: Node<'t>,
    /// Its named children that are not comments, counted when first asked.
    statements: Cell<Option<usize>>,
}

impl<'t> Ancestor<'t> {
    fn new(node: Node<'t>) -> Self {
        Ancestor {
            node,
            statements: Cell::new(None),
        }
    }
}

/// `text` with `edit` made, when it still parses with `lang`'s grammar and behaves
/// differently; `None` otherwise.
pub fn apply(lang: Lang, path: &str, text: &str, edit: &Edit) -> Option<String> {
    let mut mutated = String::with_capacity(text.len());
    mutated.push_str(text.get(..edit.start)?);
    mutated.push_str(&edit.replacement);
    mutated.push_str(text.get(edit.end..)?);
    let tree = parse(lang, &mutated)?;
    let clean = !tree.root_node().has_error();
    (clean && classify_change(path, text, &mutated) == ChangeKind::Behaviour).then_some(mutated)
}

struct Finder<'a> {
    source: &'a str,
    lines: &'a BTreeSet<u32>,
    /// Children counted for statement counts (see [`WalkCost::counted`]).
    counted: Cell<usize>,
}

/// The parent of the node being visited, and its parent.
type Ancestors<'s, 't> = &'s [Ancestor<'t>];

/// An operator and what it becomes, with the kind of the swap.
const OPERATOR_SWAPS: &[(&str, &str, MutantKind)] = &[
    ("==", "!=", MutantKind::Comparison),
    ("!=", "==", MutantKind::Comparison),
    ("===", "!==", MutantKind::Comparison),
    ("!==", "===", MutantKind::Comparison),
    ("is", "is not", MutantKind::Comparison),
    ("is not", "is", MutantKind::Comparison),
    ("in", "not in", MutantKind::Comparison),
    ("not in", "in", MutantKind::Comparison),
    ("&&", "||", MutantKind::Boolean),
    ("||", "&&", MutantKind::Boolean),
    ("and", "or", MutantKind::Boolean),
    ("or", "and", MutantKind::Boolean),
    ("<", "<=", MutantKind::OffByOne),
    ("<=", "<", MutantKind::OffByOne),
    (">", ">=", MutantKind::OffByOne),
    (">=", ">", MutantKind::OffByOne),
    ("..", "..=", MutantKind::OffByOne),
    ("..=", "..", MutantKind::OffByOne),
];

/// Nodes whose operator child may be swapped.
const OPERATOR_PARENTS: &[&str] = &[
    "binary_expression",
    "comparison_operator",
    "boolean_operator",
    "range_expression",
];

impl Finder<'_> {
    fn text(&self, node: &Node<'_>) -> &str {
        self.source.get(node.byte_range()).unwrap_or_default()
    }

    /// The 1-based line of a byte offset's row.
    fn line_of(row: usize) -> u32 {
        u32::try_from(row + 1).unwrap_or(u32::MAX)
    }

    /// Whether `node` sits on one given line and is small enough to edit.
    fn on_one_line(&self, node: &Node<'_>) -> bool {
        let (start, end) = (node.start_position().row, node.end_position().row);
        start == end && small(node) && self.lines.contains(&Self::line_of(start))
    }

    /// How many named children of `ancestor` are not comments, counted once per node.
    fn statements(&self, ancestor: &Ancestor<'_>) -> usize {
        if let Some(count) = ancestor.statements.get() {
            return count;
        }
        let mut cursor = ancestor.node.walk();
        let mut count = 0;
        for child in ancestor.node.named_children(&mut cursor) {
            self.counted.set(self.counted.get() + 1);
            if !crate::syntax::is_comment(&child) {
                count += 1;
            }
        }
        ancestor.statements.set(Some(count));
        count
    }

    fn edit(&self, node: &Node<'_>, kind: MutantKind, replacement: String, what: String) -> Edit {
        Edit {
            start: node.start_byte(),
            end: node.end_byte(),
            kind,
            replacement,
            line: Self::line_of(node.start_position().row),
            deletes_lines: false,
            description: what,
        }
    }

    fn visit(&self, node: &Node<'_>, ancestors: Ancestors<'_, '_>, out: &mut Vec<Edit>) {
        if node.is_named() {
            self.named(node, ancestors, out);
        } else {
            self.operator(node, ancestors, out);
        }
    }

    fn named(&self, node: &Node<'_>, ancestors: Ancestors<'_, '_>, out: &mut Vec<Edit>) {
        match node.kind() {
            "unary_expression" | "not_operator" => self.negation(node, out),
            "await_expression" | "await" => self.unwrap_only_child(node, MutantKind::Await, out),
            "expression_statement" => {
                self.dropped_call(node, ancestors, out);
                self.ignored_result(node, out);
            }
            "let_declaration" | "assignment_statement" => self.ignored_result(node, out),
            "argument_list" | "arguments" => self.swapped_arguments(node, ancestors, out),
            "if_statement" | "if_expression" => self.deleted_guard(node, ancestors, out),
            "binary_expression" | "binary_operator" => self.dropped_increment(node, out),
            _ => {}
        }
    }

    fn operator(&self, node: &Node<'_>, ancestors: Ancestors<'_, '_>, out: &mut Vec<Edit>) {
        let parent_fits = parent(ancestors).is_some_and(|p| OPERATOR_PARENTS.contains(&p.kind()));
        if !parent_fits || !self.on_one_line(node) {
            return;
        }
        let text = self.text(node);
        for (from, to, kind) in OPERATOR_SWAPS {
            if *from == text {
                let what = format!("`{from}` changed to `{to}`");
                out.push(self.edit(node, *kind, (*to).to_string(), what));
            }
        }
    }

    /// `!x` → `x`, `not x` → `x`.
    fn negation(&self, node: &Node<'_>, out: &mut Vec<Edit>) {
        let Some(first) = node.child(0) else {
            return;
        };
        let negates = matches!(first.kind(), "!" | "not");
        if negates
            && node.named_child_count() == 1
            && self.on_one_line(node)
            && let Some(argument) = node.named_child(0)
        {
            let what = format!(
                "negation dropped: `{}` became `{}`",
                self.text(node),
                self.text(&argument)
            );
            out.push(self.edit(
                node,
                MutantKind::Negation,
                self.text(&argument).to_string(),
                what,
            ));
        }
    }

    /// `await x` (`x.await`) → `x`.
    fn unwrap_only_child(&self, node: &Node<'_>, kind: MutantKind, out: &mut Vec<Edit>) {
        if node.named_child_count() != 1 || !self.on_one_line(node) {
            return;
        }
        if let Some(inner) = node.named_child(0) {
            let what = format!(
                "`await` dropped: `{}` became `{}`",
                self.text(node),
                self.text(&inner)
            );
            out.push(self.edit(node, kind, self.text(&inner).to_string(), what));
        }
    }

    /// A statement that is only a call, alone on its line(s): the lines are deleted.
    fn dropped_call(&self, node: &Node<'_>, ancestors: Ancestors<'_, '_>, out: &mut Vec<Edit>) {
        let is_call = node.named_child_count() == 1
            && node
                .named_child(0)
                .is_some_and(|c| matches!(c.kind(), "call" | "call_expression"));
        if !is_call || !self.on_one_line(node) {
            return;
        }
        let what = format!("call statement deleted: `{}`", self.text(node));
        out.extend(self.delete_lines(node, ancestors, MutantKind::DroppedCall, what));
    }

    /// The whole lines of `node` deleted, when nothing else is on them and all are given.
    fn delete_lines(
        &self,
        node: &Node<'_>,
        ancestors: Ancestors<'_, '_>,
        kind: MutantKind,
        what: String,
    ) -> Option<Edit> {
        let (first, last) = (node.start_position().row, node.end_position().row);
        if !small(node) || !(first..=last).all(|row| self.lines.contains(&Self::line_of(row))) {
            return None;
        }
        let start = self
            .source
            .get(..node.start_byte())?
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let rest = self.source.get(node.end_byte()..)?;
        let end = node.end_byte() + rest.find('\n').map_or(rest.len(), |i| i + 1);
        let before = self.source.get(start..node.start_byte())?;
        let after = self.source.get(node.end_byte()..end)?;
        let tail = after.trim();
        let alone = before.trim().is_empty() && (tail.is_empty() || tail == ";");
        // Never the only statement of its block: some grammars accept an empty block.
        // The block is the parent, or the grandparent past an `expression_statement`.
        let above = match ancestors {
            [.., grandparent, parent] if parent.node.kind() == "expression_statement" => {
                Some(grandparent)
            }
            [.., parent] if parent.node.kind() == "expression_statement" => None,
            [.., parent] => Some(parent),
            [] => None,
        };
        let siblings = above.map_or(0, |block| self.statements(block));
        let alone = alone && siblings > 1;
        alone.then(|| Edit {
            start,
            end,
            kind,
            replacement: String::new(),
            line: Self::line_of(first),
            deletes_lines: true,
            description: what,
        })
    }

    /// `x = f(x)` (`let x = f(x);`) → `f(x)`: the call's result is dropped.
    fn ignored_result(&self, node: &Node<'_>, out: &mut Vec<Edit>) {
        let (target, value) = match node.kind() {
            "expression_statement" => {
                let Some(inner) = node.named_child(0) else {
                    return;
                };
                if !matches!(inner.kind(), "assignment" | "assignment_expression") {
                    return;
                }
                (
                    inner.child_by_field_name("left"),
                    inner.child_by_field_name("right"),
                )
            }
            "let_declaration" => (
                node.child_by_field_name("pattern"),
                node.child_by_field_name("value"),
            ),
            _ => (
                node.child_by_field_name("left"),
                node.child_by_field_name("right"),
            ),
        };
        let (Some(target), Some(value)) = (target, value) else {
            return;
        };
        // Go's sides are expression lists.
        let (Some(target), Some(value)) = (single(target), single(value)) else {
            return;
        };
        // Before any text is read: a long assignment nests others (quadratic to scan).
        if !self.on_one_line(node) {
            return;
        }
        let name = self.text(&target);
        let uses_target = value
            .child_by_field_name("arguments")
            .or_else(|| value.child_by_field_name("function"))
            .is_some_and(|_| contains_word(self.text(&value), name));
        let fits = target.kind() == "identifier"
            && matches!(value.kind(), "call" | "call_expression")
            && uses_target
            && self.on_one_line(node);
        if fits {
            let call = self.text(&value);
            let semicolon = if node.kind() == "let_declaration" {
                ";"
            } else {
                ""
            };
            let what = format!(
                "result ignored: `{}` became `{call}{semicolon}`",
                self.text(node)
            );
            let replacement = format!("{call}{semicolon}");
            out.push(self.edit(node, MutantKind::IgnoredResult, replacement, what));
        }
    }

    /// `f(a, b)` → `f(b, a)` for two plain, different arguments.
    fn swapped_arguments(
        &self,
        node: &Node<'_>,
        ancestors: Ancestors<'_, '_>,
        out: &mut Vec<Edit>,
    ) {
        let parent_is_call =
            parent(ancestors).is_some_and(|p| matches!(p.kind(), "call" | "call_expression"));
        if !parent_is_call || node.named_child_count() != 2 || !self.on_one_line(node) {
            return;
        }
        let (Some(a), Some(b)) = (node.named_child(0), node.named_child(1)) else {
            return;
        };
        let plain = |n: &Node<'_>| {
            matches!(
                n.kind(),
                "identifier"
                    | "attribute"
                    | "member_expression"
                    | "field_expression"
                    | "selector_expression"
                    | "integer"
                    | "integer_literal"
                    | "int_literal"
                    | "number"
                    | "string"
                    | "string_literal"
                    | "interpreted_string_literal"
            )
        };
        let (ta, tb) = (self.text(&a), self.text(&b));
        if !plain(&a) || !plain(&b) || ta == tb {
            return;
        }
        let mut replacement = self.text(node).to_string();
        let (sa, sb) = (
            a.start_byte() - node.start_byte(),
            b.start_byte() - node.start_byte(),
        );
        replacement.replace_range(sb..sb + tb.len(), ta);
        replacement.replace_range(sa..sa + ta.len(), tb);
        let what = format!("arguments swapped: `{ta}` and `{tb}`");
        out.push(self.edit(node, MutantKind::SwappedArguments, replacement, what));
    }

    /// An `if` without `else` whose body only leaves (returns, raises, ...): deleted.
    fn deleted_guard(&self, node: &Node<'_>, ancestors: Ancestors<'_, '_>, out: &mut Vec<Edit>) {
        if !small(node) || node.child_by_field_name("alternative").is_some() {
            return;
        }
        let Some(body) = node.child_by_field_name("consequence") else {
            return;
        };
        let leaves = |n: &Node<'_>| {
            let n = match n.kind() {
                "expression_statement" if n.named_child_count() == 1 => n.named_child(0),
                _ => Some(*n),
            };
            n.is_some_and(|n| {
                matches!(
                    n.kind(),
                    "return_statement"
                        | "return_expression"
                        | "raise_statement"
                        | "throw_statement"
                        | "break_statement"
                        | "continue_statement"
                        | "break_expression"
                        | "continue_expression"
                )
            })
        };
        // Go's block holds a statement list.
        let body = match body.named_child(0) {
            Some(list) if list.kind() == "statement_list" && body.named_child_count() == 1 => list,
            _ => body,
        };
        let exits = match body.kind() {
            "block" | "statement_block" | "statement_list" => {
                body.named_child_count() == 1 && body.named_child(0).is_some_and(|s| leaves(&s))
            }
            _ => leaves(&body),
        };
        if exits {
            let condition = node
                .child_by_field_name("condition")
                .map(|c| self.text(&c).to_string())
                .unwrap_or_default();
            let what = format!("guard deleted: `if {condition}` and its early exit");
            out.extend(self.delete_lines(node, ancestors, MutantKind::DeletedGuard, what));
        }
    }

    /// `a + 1` / `a - 1` → `a`.
    fn dropped_increment(&self, node: &Node<'_>, out: &mut Vec<Edit>) {
        let (Some(left), Some(op), Some(right)) = (
            node.child_by_field_name("left"),
            node.child_by_field_name("operator"),
            node.child_by_field_name("right"),
        ) else {
            return;
        };
        let one = self.text(&right) == "1";
        if one && matches!(self.text(&op), "+" | "-") && self.on_one_line(node) {
            let what = format!(
                "off by one: `{}` became `{}`",
                self.text(node),
                self.text(&left)
            );
            let replacement = self.text(&left).to_string();
            out.push(self.edit(node, MutantKind::OffByOne, replacement, what));
        }
    }
}

/// The parent of the node being visited.
fn parent<'t>(ancestors: Ancestors<'_, 't>) -> Option<Node<'t>> {
    ancestors.last().map(|a| a.node)
}

/// Whether `node` is small enough to be replaced ([`MAX_EDIT_BYTES`]).
fn small(node: &Node<'_>) -> bool {
    node.byte_range().len() <= MAX_EDIT_BYTES
}

/// The one expression of a Go expression list, or the node itself.
fn single(node: Node<'_>) -> Option<Node<'_>> {
    match node.kind() {
        "expression_list" if node.named_child_count() == 1 => node.named_child(0),
        "expression_list" => None,
        _ => Some(node),
    }
}

/// Whether `word` occurs in `text` as a whole identifier.
fn contains_word(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

#[cfg(test)]
#[path = "mutants_tests.rs"]
mod tests;
