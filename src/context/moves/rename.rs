//! Renamed identifiers inside a move: a helper moved and renamed (its own
//! name, or a helper it calls) keeps its lines equal once one consistent
//! renaming is applied.
//!
//! Invariants:
//! - **Small**: at most [`MAX_RENAMES`] identifiers are renamed in one move,
//!   and only names of definitions or calls (followed by `(` or `<`, or after a
//!   definition keyword), so an edited variable (`lo` to `hi`) stays an edit.
//! - **Consistent**: the renaming is a bijection over the block: two names
//!   never map to one, and a line counts as equal under it only when every
//!   identifier it keeps is neither renamed nor the target of a renaming.
//!   A name also kept unrenamed in a line equal as it is drops the renaming.
//! - **Deterministic and cheap**: evidence comes from lines the alignment
//!   already pairs, and from at most [`MAX_RENAMES`] + 1 lines above the block
//!   when they reach a renamed definition (never from lines past its end,
//!   often the next definition); pairs are counted in a sorted map; each
//!   comparison is one pass over both lines' tokens.

use std::collections::BTreeMap;

/// Most identifiers one move may rename.
pub(crate) const MAX_RENAMES: usize = 2;

/// Keywords after which an identifier is a definition's name.
const DEFINITION_KEYWORDS: &[&str] = &[
    "def",
    "fn",
    "func",
    "function",
    "class",
    "struct",
    "enum",
    "trait",
    "interface",
    "type",
];

/// A renaming applied to a move's original: `(old, new)` pairs, sorted by `old`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Renames {
    pairs: Vec<(String, String)>,
}

/// One token of a line: an identifier, or any other single character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Ident(&'a str),
    Other(char),
}

fn tokens(line: &str) -> impl Iterator<Item = Token<'_>> + '_ {
    let mut rest = line;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        if first.is_alphabetic() || first == '_' {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let (ident, tail) = rest.split_at(end);
            rest = tail;
            Some(Token::Ident(ident))
        } else {
            rest = &rest[first.len_utf8()..];
            Some(Token::Other(first))
        }
    })
}

impl Renames {
    /// No renaming.
    pub(crate) fn none() -> Self {
        Renames::default()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The `(old, new)` pairs, sorted by the old name.
    pub(crate) fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    fn renamed(&self, name: &str) -> bool {
        self.pairs
            .iter()
            .any(|(old, new)| old == name || new == name)
    }

    /// Whether `removed` becomes `added` under this renaming (both trimmed),
    /// every identifier kept being outside the renaming.
    pub(crate) fn equal(&self, removed: &str, added: &str) -> bool {
        let (mut r, mut a) = (tokens(removed), tokens(added));
        loop {
            match (r.next(), a.next()) {
                (None, None) => return true,
                (Some(Token::Ident(x)), Some(Token::Ident(y))) if x == y => {
                    if self.renamed(x) {
                        return false;
                    }
                }
                (Some(Token::Ident(x)), Some(Token::Ident(y))) => {
                    if !self.pairs.iter().any(|(old, new)| old == x && new == y) {
                        return false;
                    }
                }
                (Some(Token::Other(x)), Some(Token::Other(y))) if x == y => {}
                _ => return false,
            }
        }
    }

    /// Whether every pair of `earlier` is in this renaming too.
    pub(crate) fn extends(&self, earlier: &Renames) -> bool {
        earlier.pairs.iter().all(|pair| self.pairs.contains(pair))
    }

    /// Whether no line of `original` holds a new name and no line of `now` an
    /// old one: the renaming is a bijection over the block, edited lines included.
    pub(crate) fn clean(&self, original: &[&str], now: &[&str]) -> bool {
        let holds = |lines: &[&str], names: &dyn Fn(&(String, String)) -> &str| {
            lines.iter().any(|line| {
                tokens(line).any(|t| {
                    matches!(t, Token::Ident(word) if self.pairs.iter().any(|p| names(p) == word))
                })
            })
        };
        !holds(original, &|(_, new)| new) && !holds(now, &|(old, _)| old)
    }

    /// The renaming a move's paired lines agree on: `differing` are the
    /// (original, now) lines aligned one to one but not equal, `kept` the lines
    /// equal as they are (original side). Empty when they agree on none.
    pub(crate) fn derive<'a>(
        differing: impl IntoIterator<Item = (&'a str, &'a str)>,
        kept: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for (removed, added) in differing {
            for pair in differing_names(removed, added) {
                *counts.entry(pair).or_default() += 1;
            }
        }
        if counts.is_empty() {
            return Renames::none();
        }
        // Two targets for one name, or two names for one target: no renaming
        // explains the lines, so none is taken.
        let mut olds: BTreeMap<&str, usize> = BTreeMap::new();
        let mut news: BTreeMap<&str, usize> = BTreeMap::new();
        for (old, new) in counts.keys() {
            *olds.entry(old).or_default() += 1;
            *news.entry(new).or_default() += 1;
        }
        if olds.values().chain(news.values()).any(|&n| n > 1) || counts.len() > MAX_RENAMES {
            return Renames::none();
        }
        let mut renames = Renames {
            pairs: counts
                .keys()
                .map(|(old, new)| (old.to_string(), new.to_string()))
                .collect(),
        };
        // A name kept as it is elsewhere in the block was not renamed.
        for line in kept {
            for token in tokens(line) {
                if let Token::Ident(name) = token {
                    renames
                        .pairs
                        .retain(|(old, new)| old != name && new != name);
                }
            }
            if renames.is_empty() {
                break;
            }
        }
        renames
    }
}

/// Whether `removed` becomes `added` by renaming names of definitions or calls only.
pub(crate) fn renames_only(removed: &str, added: &str) -> bool {
    !differing_names(removed, added).is_empty()
}

/// Whether `removed` defines a name (`def name`, `fn name`, ...) that `added` renames.
pub(crate) fn defines_renamed(removed: &str, added: &str) -> bool {
    let r: Vec<Token<'_>> = tokens(removed).collect();
    let a: Vec<Token<'_>> = tokens(added).collect();
    r.len() == a.len()
        && (0..r.len()).any(|k| {
            matches!((r[k], a[k]), (Token::Ident(x), Token::Ident(y)) if x != y) && defines(&r, k)
        })
}

/// The identifier pairs in which `removed` and `added` differ, when they differ
/// only in names of definitions or calls; nothing when anything else differs.
fn differing_names<'a>(removed: &'a str, added: &'a str) -> Vec<(&'a str, &'a str)> {
    let r: Vec<Token<'a>> = tokens(removed).collect();
    let a: Vec<Token<'a>> = tokens(added).collect();
    if r.len() != a.len() {
        return Vec::new();
    }
    let mut pairs = Vec::new();
    for (k, (x, y)) in r.iter().zip(&a).enumerate() {
        match (x, y) {
            (Token::Ident(x), Token::Ident(y)) if x == y => {}
            (Token::Ident(x), Token::Ident(y)) => {
                if !names_a_definition_or_call(&r, k) {
                    return Vec::new();
                }
                if !pairs.contains(&(*x, *y)) {
                    pairs.push((*x, *y));
                }
            }
            (Token::Other(x), Token::Other(y)) if x == y => {}
            _ => return Vec::new(),
        }
    }
    pairs
}

/// Whether the identifier at `k` is called or instantiated (`name(`, `name<`)
/// or defined (`def name`, `fn name`, ...).
fn names_a_definition_or_call(tokens: &[Token<'_>], k: usize) -> bool {
    matches!(tokens.get(k + 1), Some(Token::Other('(' | '<'))) || defines(tokens, k)
}

/// Whether the identifier at `k` follows a definition keyword (`def name`).
fn defines(tokens: &[Token<'_>], k: usize) -> bool {
    k >= 2
        && matches!(tokens[k - 1], Token::Other(' '))
        && matches!(tokens[k - 2], Token::Ident(word) if DEFINITION_KEYWORDS.contains(&word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renamed_definition_and_call_are_equal_under_one_renaming() {
        let renames = Renames::derive(
            [
                ("def parse_port(text):", "def read_port(text):"),
                ("value = clean(text)", "value = tidy(text)"),
            ],
            ["return value"],
        );
        assert_eq!(
            renames.pairs(),
            [
                ("clean".to_string(), "tidy".to_string()),
                ("parse_port".to_string(), "read_port".to_string())
            ]
        );
        assert!(renames.equal("x = parse_port(clean(y))", "x = read_port(tidy(y))"));
        // A name kept where it should be renamed, or a target kept as it is: not equal.
        assert!(!renames.equal("x = parse_port(y)", "x = parse_port(y)"));
        assert!(!renames.equal("x = read_port(y)", "x = read_port(y)"));
        assert!(!renames.equal("x = a + b", "x = a - b"));
    }

    #[test]
    fn edited_variables_conflicts_and_many_names_are_no_renaming() {
        // A variable changed is an edit, not a renaming.
        assert!(Renames::derive([("if x < lo:", "if x < hi:")], []).is_empty());
        // Two targets for one name.
        assert!(
            Renames::derive([("a = f(x)", "a = g(x)"), ("b = f(y)", "b = h(y)")], []).is_empty()
        );
        // Three names.
        assert!(Renames::derive([("f(g(h(x)))", "p(q(r(x)))")], []).is_empty());
        // A name kept elsewhere as it is.
        assert!(Renames::derive([("a = f(x)", "a = g(x)")], ["b = f(y)"]).is_empty());
    }
}
