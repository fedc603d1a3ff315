//! Which definition contains a changed block, found by indentation: the `@@` line of an
//! excerpt names the innermost one (a method rather than the class above it), or none when
//! no definition contains the block.

use std::sync::LazyLock;

use regex::Regex;

use super::{Block, DEFINITION_SCAN_LINES, HeadLines};

/// What contains a block, as far as indentation tells.
pub(super) enum Enclosing {
    /// The innermost definition containing it, at this head line.
    At(u32),
    /// No definition contains it.
    None,
    /// Not found within [`DEFINITION_SCAN_LINES`].
    Unknown,
}

/// The innermost definition containing the block: walking up, each line less
/// indented than everything passed so far opens a scope that contains the
/// block (a sibling's body or its closing brace is never less indented than
/// the block); the first such line that looks like a definition is the one.
/// So a method is found inside its class, not the class, and a definition
/// that ended above the block is never named.
pub(super) fn enclosing_definition(block: &Block, lines: &HeadLines<'_>) -> Enclosing {
    let lowest = block.start.saturating_sub(DEFINITION_SCAN_LINES).max(1);
    let mut limit = block.indent;
    for n in (lowest..block.start).rev() {
        if limit == 0 {
            return Enclosing::None;
        }
        let Some(text) = lines.get(n) else {
            continue;
        };
        let indent = indentation(text);
        if indent >= limit || is_blank_or_comment(text) {
            continue;
        }
        if looks_like_definition(text) {
            return Enclosing::At(n);
        }
        limit = indent;
    }
    if limit == 0 || lowest == 1 {
        Enclosing::None
    } else {
        Enclosing::Unknown
    }
}

/// Blank lines and comments (and C's `#if`) say nothing about scopes: a
/// comment at column 0 inside a function is not the function's end.
fn is_blank_or_comment(line: &str) -> bool {
    let line = line.trim_start();
    line.is_empty()
        || ["#", "//", "/*", "*", "--"]
            .iter()
            .any(|c| line.starts_with(c))
}

/// Definition keywords after optional modifiers (Rust, Python, Go, JS/TS, Java, C#, Kotlin, Ruby, ...).
static DEFINITION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^\s*(?:(?:pub(?:\([^)]*\))?|export|default|public|private|protected|internal|static|async|unsafe|const|extern\s+\S+|abstract|final|override|virtual|inline|open|suspend|local)\s+)*",
        r"(?:fn|def|func|function|class|impl|trait|struct|enum|union|mod|module|interface|macro_rules!|object|record|namespace|sub|proc)\b",
    ))
    .ok()
});

/// `const name = (args) =>` and friends.
static ARROW_DEFINITION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(?:export\s+)?(?:const|let|var)\s+\w+\s*=\s*(?:async\s+)?(?:\([^)]*\)|\w+)\s*=>",
    )
    .ok()
});

/// `type name(args) {` as in C, C++, Java and C#.
static C_LIKE_DEFINITION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"^\s*[\w:<>\[\]*&, ]+\s[\w:~]+\s*\([^;]*\)\s*(?:const\s*)?(?:throws [\w., ]+)?\{?\s*$",
    )
    .ok()
});

/// A JS/TS class method or a class field holding a function:
/// `async handle(req) {`, `get size(): number {`, `onClick = (e) => {`.
static METHOD_DEFINITION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^\s*(?:(?:public|private|protected|static|async|get|set|override|readonly|abstract)\s+)*",
        r"(?:\*\s*)?#?[A-Za-z_$][\w$]*\s*",
        r"(?:(?:<[^>]*>)?\([^)]*\)\s*(?::\s*[^{=;]+)?\{\s*$|(?::\s*[^=;]+)?=\s*(?:async\s+)?(?:\([^)]*\)|\w+)\s*=>)",
    ))
    .ok()
});

fn matches(regex: &LazyLock<Option<Regex>>, line: &str) -> bool {
    regex.as_ref().is_some_and(|r| r.is_match(line))
}

const CONTROL_WORDS: &[&str] = &[
    "if", "else", "for", "while", "switch", "match", "return", "catch", "do", "try", "case",
    "await", "new", "throw", "yield", "with", "defer", "go", "select",
];

/// Whether a line opens a function, type or module in a common language.
pub(crate) fn looks_like_definition(line: &str) -> bool {
    if matches(&DEFINITION, line) || matches(&ARROW_DEFINITION, line) {
        return true;
    }
    let first_word = line
        .trim_start()
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or("");
    !CONTROL_WORDS.contains(&first_word)
        && (matches(&C_LIKE_DEFINITION, line) || matches(&METHOD_DEFINITION, line))
}

pub(super) fn indentation(text: &str) -> usize {
    text.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}
