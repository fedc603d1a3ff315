//! Source languages, their tree-sitter grammars, and a file's code as a token stream
//! with formatting, comments, docstrings and type annotations told apart.
//!
//! A file's language comes from its extension ([`Lang::of_path`]): Python, Rust,
//! JavaScript, TypeScript (and TSX) and Go have a grammar. [`tokens`] parses a text and
//! walks the tree into a stream in which only what the program does survives:
//! whitespace and line breaks are gone (they are not tokens; Python's indentation is
//! kept through the tree's structure, see below), and, by [`View`], comments, Python
//! docstrings and type annotations are left out.
//!
//! Invariant: two texts whose streams are equal under [`View::Code`] differ only in
//! whitespace, comments, docstrings and the neutral forms listed here, so they behave
//! alike; when in doubt the streams differ. The stream holds the tree's structure (each
//! named node opens and closes with its kind and field), so moving a Python statement
//! out of a block, or changing precedence, changes it. Neutral forms folded: redundant
//! parentheses (`parenthesized_expression` is transparent, the tree keeps the grouping),
//! a trailing comma before a closing bracket in argument, parameter, list, set, map,
//! import and literal lists (not tuples or subscripts, where it changes the value),
//! Python's quote style (`'a'` and `"a"`), Python line continuations, Python's
//! `cast(T, value)` (it is `value`) and `if TYPE_CHECKING:` blocks (never run; both
//! under [`View::Behaviour`] only), and statement
//! separators where a line break means the same (`;` in Python, JavaScript, TypeScript
//! and Go).
//!
//! A text that does not parse cleanly (any error or missing node) has no stream: the
//! caller must then treat the change as one it cannot judge. Files in a language
//! without a grammar have no stream either; [`words`] is the conservative fallback for
//! them: the text split at whitespace, so only changes of whitespace amount (never
//! whitespace added or removed between two characters) compare equal.

use tree_sitter::{Language, Node, Parser, Tree};

/// A language with a grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    /// `.py`, `.pyi`.
    Python,
    /// `.rs`.
    Rust,
    /// `.js`, `.jsx`, `.mjs`, `.cjs`.
    JavaScript,
    /// `.ts`, `.mts`, `.cts`.
    TypeScript,
    /// `.tsx`.
    Tsx,
    /// `.go`.
    Go,
}

impl Lang {
    /// The language of a path, by its extension; `None` without a grammar.
    pub fn of_path(path: &str) -> Option<Lang> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let extension = name.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match extension.as_str() {
            "py" | "pyi" => Lang::Python,
            "rs" => Lang::Rust,
            "js" | "jsx" | "mjs" | "cjs" => Lang::JavaScript,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "go" => Lang::Go,
            _ => return None,
        })
    }

    /// The language's grammar.
    pub fn grammar(self) -> Language {
        match self {
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
        }
    }

    /// Whether a line break ends a statement as `;` does (so `;` is a separator only).
    fn semicolon_is_newline(self) -> bool {
        !matches!(self, Lang::Rust)
    }
}

/// Parses `text`; `None` when the grammar cannot be loaded or the parser gives up.
pub fn parse(lang: Lang, text: &str) -> Option<Tree> {
    let mut parser = Parser::new();
    parser.set_language(&lang.grammar()).ok()?;
    parser.parse(text, None)
}

/// Whether `node` is a comment (of any kind: line, block, doc).
pub fn is_comment(node: &Node<'_>) -> bool {
    node.kind().contains("comment")
}

/// Whether `node` is a Python docstring: a statement that is only a string (the first
/// of a body, or any other: a bare string does nothing either way).
pub fn is_docstring(lang: Lang, node: &Node<'_>) -> bool {
    lang == Lang::Python
        && node.kind() == "expression_statement"
        && node.named_child_count() == 1
        && node
            .named_child(0)
            .is_some_and(|c| matches!(c.kind(), "string" | "concatenated_string"))
}

/// Whether `node` is a type annotation with no effect when the program runs (Python's
/// `type` of a parameter, return or assignment; TypeScript's `type_annotation`).
pub fn is_annotation(lang: Lang, node: &Node<'_>) -> bool {
    match lang {
        Lang::Python => node.kind() == "type",
        Lang::TypeScript | Lang::Tsx => node.kind() == "type_annotation",
        _ => false,
    }
}

/// What a token stream keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Every token: comments, docstrings and annotations included.
    All,
    /// Without comments and docstrings.
    Code,
    /// Without comments, docstrings and type annotations: what runs.
    Behaviour,
}

/// One element of a token stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A named node with children begins: its field in the parent and its kind.
    Open(Option<&'static str>, &'static str),
    /// The last opened node ends.
    Close,
    /// A leaf: its field, kind and text.
    Leaf(Option<&'static str>, &'static str, String),
}

/// The token stream of `text` under `view`; `None` when it does not parse cleanly.
pub fn tokens(lang: Lang, text: &str, view: View) -> Option<Vec<Token>> {
    tokens_of(lang, &parse(lang, text)?, text, view)
}

/// The token stream of `text`, already parsed as `tree`, under `view`; `None` when it
/// does not parse cleanly.
pub fn tokens_of(lang: Lang, tree: &Tree, text: &str, view: View) -> Option<Vec<Token>> {
    if tree.root_node().has_error() {
        return None;
    }
    let walker = Walker {
        lang,
        view,
        source: text.as_bytes(),
    };
    walker.walk(tree.root_node())
}

/// `text` split at whitespace: the fallback for files without a grammar.
pub fn words(text: &str) -> Vec<&str> {
    text.split_whitespace().collect()
}

struct Walker<'s> {
    lang: Lang,
    view: View,
    source: &'s [u8],
}

/// A node being walked: its children (listed once, with their fields), the next child
/// to visit, and how far its text is covered.
struct Frame<'t> {
    node: Node<'t>,
    children: Vec<(Node<'t>, Option<&'static str>)>,
    next: usize,
    covered: usize,
    open: bool,
}

/// What the walk knows of a node's surroundings, so that no `parent()` or
/// `next_sibling()` call (each a walk from the root, quadratic on nested code) is made.
#[derive(Clone, Copy, Default)]
struct Around<'t> {
    /// The node whose child it is.
    parent: Option<Node<'t>>,
    /// The next sibling.
    next: Option<Node<'t>>,
    /// The next sibling that is not an extra (a comment), for commas only.
    next_non_extra: Option<Node<'t>>,
}

impl<'s> Walker<'s> {
    /// A depth-first walk with an explicit stack (deep trees must not exhaust it), each
    /// node's children listed once with a cursor: linear in the tree's size. Text
    /// of a node that no child covers (a grammar may hide a string's or comment's
    /// content) is in the stream too, as `text` leaves.
    fn walk<'t>(&self, root: Node<'t>) -> Option<Vec<Token>> {
        let mut out = Vec::new();
        let mut stack: Vec<Frame<'t>> = Vec::new();
        let mut cursor = root.walk();
        self.visit(
            root,
            None,
            Around::default(),
            &mut out,
            &mut stack,
            &mut cursor,
        )?;
        while let Some(frame) = stack.last_mut() {
            if let Some(&(child, field)) = frame.children.get(frame.next) {
                let following = frame.children.get(frame.next + 1..).unwrap_or_default();
                frame.next += 1;
                let around = Around {
                    parent: Some(frame.node),
                    next: following.first().map(|(n, _)| *n),
                    next_non_extra: (child.kind() == ",")
                        .then(|| following.iter().map(|(n, _)| *n).find(|n| !n.is_extra()))
                        .flatten(),
                };
                let (node, from) = (frame.node, frame.covered);
                frame.covered = frame.covered.max(child.end_byte());
                self.gap(&node, from, child.start_byte(), &mut out);
                self.visit(child, field, around, &mut out, &mut stack, &mut cursor)?;
            } else {
                let frame = stack.pop()?;
                self.gap(&frame.node, frame.covered, frame.node.end_byte(), &mut out);
                if frame.open {
                    out.push(Token::Close);
                }
            }
        }
        Some(out)
    }

    /// Puts a node in the stream: a leaf (comments whole), or an opened node to walk.
    fn visit<'t>(
        &self,
        node: Node<'t>,
        field: Option<&'static str>,
        around: Around<'t>,
        out: &mut Vec<Token>,
        stack: &mut Vec<Frame<'t>>,
        cursor: &mut tree_sitter::TreeCursor<'t>,
    ) -> Option<()> {
        if self.skipped(&node, &around) {
            return Some(());
        }
        if let Some(value) = self.cast_value(&node) {
            // A named node: nothing about it depends on its surroundings.
            return self.visit(value, field, Around::default(), out, stack, cursor);
        }
        if node.child_count() == 0 || is_comment(&node) {
            out.push(Token::Leaf(field, node.kind(), self.leaf_text(&node)?));
            return Some(());
        }
        let open = !self.transparent(&node);
        if open {
            out.push(Token::Open(field, self.kind_of(&node)));
        }
        stack.push(Frame {
            node,
            children: children_of(node, cursor),
            next: 0,
            covered: node.start_byte(),
            open,
        });
        Some(())
    }

    /// The value of Python's `cast(T, value)` (`typing.cast`): it returns `value` as it
    /// is, so without annotations the call is its value.
    fn cast_value<'t>(&self, node: &Node<'t>) -> Option<Node<'t>> {
        if self.view != View::Behaviour || self.lang != Lang::Python || node.kind() != "call" {
            return None;
        }
        let function = node.child_by_field_name("function")?;
        let name = function.utf8_text(self.source).ok()?;
        let arguments = node.child_by_field_name("arguments")?;
        let value = arguments.named_child(1)?;
        (matches!(name, "cast" | "typing.cast" | "t.cast")
            && arguments.kind() == "argument_list"
            && arguments.named_child_count() == 2
            && value.kind() != "keyword_argument")
            .then_some(value)
    }

    /// Text of `node` between `from` and `to` that no child covers: whitespace between
    /// tokens is dropped, except inside string literals where it is the value.
    fn gap(&self, node: &Node<'_>, from: usize, to: usize, out: &mut Vec<Token>) {
        let Some(bytes) = self.source.get(from..to) else {
            return;
        };
        let text = String::from_utf8_lossy(bytes);
        let literal = node.kind().contains("string") || node.kind().contains("char");
        let text = if literal { &text[..] } else { text.trim() };
        if !text.is_empty() {
            out.push(Token::Leaf(None, "text", text.to_string()));
        }
    }

    /// Nodes (and their subtrees) left out of the stream.
    fn skipped(&self, node: &Node<'_>, around: &Around<'_>) -> bool {
        if node.is_extra() && !is_comment(node) {
            return true; // Python's line continuation: whitespace.
        }
        let hidden = match self.view {
            View::All => false,
            View::Code => is_comment(node) || is_docstring(self.lang, node),
            View::Behaviour => {
                is_comment(node)
                    || is_docstring(self.lang, node)
                    || is_annotation(self.lang, node)
                    || self.annotation_mark(node, around)
                    || self.type_checking_block(node)
            }
        };
        hidden || (!node.is_named() && self.neutral_punctuation(node, around))
    }

    /// Python's `if TYPE_CHECKING:` without `else`: code only type checkers run.
    fn type_checking_block(&self, node: &Node<'_>) -> bool {
        self.lang == Lang::Python
            && node.kind() == "if_statement"
            && node.child_by_field_name("alternative").is_none()
            && node
                .child_by_field_name("condition")
                .and_then(|c| c.utf8_text(self.source).ok())
                .is_some_and(|c| {
                    matches!(
                        c,
                        "TYPE_CHECKING" | "typing.TYPE_CHECKING" | "t.TYPE_CHECKING"
                    )
                })
    }

    /// The `:` or `->` that introduces a Python annotation being left out.
    fn annotation_mark(&self, node: &Node<'_>, around: &Around<'_>) -> bool {
        self.lang == Lang::Python
            && !node.is_named()
            && matches!(node.kind(), ":" | "->")
            && around.next.is_some_and(|n| n.kind() == "type")
    }

    /// Anonymous tokens that change nothing: parentheses of a transparent node, a
    /// separator `;`, a trailing comma in a list.
    fn neutral_punctuation(&self, node: &Node<'_>, around: &Around<'_>) -> bool {
        let parent = around.parent;
        match node.kind() {
            "(" | ")" => parent.is_some_and(|p| self.transparent(&p)),
            ";" | "\n" => self.lang.semicolon_is_newline() && node.child_count() == 0,
            "," => {
                let closes = around
                    .next_non_extra
                    .is_some_and(|n| matches!(n.kind(), ")" | "]" | "}" | ">"));
                closes && parent.is_some_and(|p| trailing_comma_is_neutral(p.kind()))
            }
            _ => false,
        }
    }

    /// Nodes whose own kind is not in the stream (their children are).
    fn transparent(&self, node: &Node<'_>) -> bool {
        match node.kind() {
            "parenthesized_expression" => true,
            // `a: int` is the parameter `a` once its annotation is left out.
            "typed_parameter" => self.view == View::Behaviour && self.lang == Lang::Python,
            _ => false,
        }
    }

    /// The node's kind in the stream: a Python parameter with a default is one kind
    /// once its annotation is left out.
    fn kind_of(&self, node: &Node<'_>) -> &'static str {
        match node.kind() {
            "typed_default_parameter"
                if self.view == View::Behaviour && self.lang == Lang::Python =>
            {
                "default_parameter"
            }
            kind => kind,
        }
    }

    fn leaf_text(&self, node: &Node<'_>) -> Option<String> {
        let text = node.utf8_text(self.source).ok()?;
        Some(match (self.lang, node.kind()) {
            // Quote style: 'a' and "a" are the same string.
            (Lang::Python, "string_start" | "string_end") => {
                text.to_ascii_lowercase().replace('\'', "\"")
            }
            (_, "\n") => ";".to_string(),
            _ => text.to_string(),
        })
    }
}

/// `node`'s children and their fields, read with `cursor` (moved there and back).
fn children_of<'t>(
    node: Node<'t>,
    cursor: &mut tree_sitter::TreeCursor<'t>,
) -> Vec<(Node<'t>, Option<&'static str>)> {
    cursor.reset(node);
    let mut children = Vec::with_capacity(node.child_count());
    if cursor.goto_first_child() {
        loop {
            children.push((cursor.node(), cursor.field_name()));
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    children
}

/// Lists where `a, b,` and `a, b` mean the same (tuples and subscripts are not: there a
/// trailing comma makes a tuple).
fn trailing_comma_is_neutral(parent: &str) -> bool {
    matches!(
        parent,
        "argument_list"
            | "arguments"
            | "parameters"
            | "formal_parameters"
            | "parameter_list"
            | "type_parameters"
            | "type_arguments"
            | "list"
            | "set"
            | "dictionary"
            | "array"
            | "object"
            | "array_expression"
            | "import_from_statement"
            | "named_imports"
            | "export_clause"
            | "object_pattern"
            | "array_pattern"
            | "field_declaration_list"
            | "field_initializer_list"
            | "enum_variant_list"
            | "use_list"
            | "literal_value"
            | "match_block"
    )
}

/// How a file's text changed, as far as behaviour goes; ordered from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeKind {
    /// Nothing changed.
    None,
    /// Whitespace, line breaks and the neutral forms only.
    Formatting,
    /// Comments or docstrings, perhaps with formatting.
    Comments,
    /// Type annotations, perhaps with comments and formatting.
    Annotations,
    /// What the program does (or a change that cannot be judged).
    Behaviour,
}

/// How `old` became `new` in a file at `path`. With a grammar, by token streams; a
/// text that does not parse makes it [`ChangeKind::Behaviour`]. Without a grammar, by
/// [`words`]: equal words are formatting, anything else behaviour.
pub fn classify_change(path: &str, old: &str, new: &str) -> ChangeKind {
    if old == new {
        return ChangeKind::None;
    }
    let Some(lang) = Lang::of_path(path) else {
        return if words(old) == words(new) {
            ChangeKind::Formatting
        } else {
            ChangeKind::Behaviour
        };
    };
    let (Some(old_tree), Some(new_tree)) = (parse(lang, old), parse(lang, new)) else {
        return ChangeKind::Behaviour;
    };
    let same = |view: View| match (
        tokens_of(lang, &old_tree, old, view),
        tokens_of(lang, &new_tree, new, view),
    ) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    };
    if same(View::All) {
        ChangeKind::Formatting
    } else if same(View::Code) {
        ChangeKind::Comments
    } else if same(View::Behaviour) {
        ChangeKind::Annotations
    } else {
        ChangeKind::Behaviour
    }
}

#[cfg(test)]
mod tests;
