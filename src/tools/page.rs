//! The room of one tool result, and the notes that say what did not fit.
//!
//! Invariants:
//! - a result is filled whole lines at a time and never cut in the middle: what
//!   does not fit is left out from some line on, and the result ends with a note
//!   naming exactly what is missing and the call that shows it;
//! - a very long line is elided (shown as its length, as the first message does,
//!   [`crate::context::noise::shown_line`]) before it is measured, so one line
//!   never takes a result's whole room;
//! - a full page stays within both [`super::DEFAULT_MAX_OUTPUT_CHARS`] and the
//!   pruner's cut for new results ([`crate::context::DEFAULT_MAX_OBSERVATION_TOKENS`]),
//!   with room left for its note, so neither cuts it again. Tokens are counted
//!   line by line in the approximate encoding (`cl100k_base` plus 10%), which
//!   over-counts every encoding Redline uses.

use std::borrow::Cow;

use crate::context::noise::shown_line;
use crate::llm::tokens::Encoding;

/// What marks a result whose tail did not fit (also how a cut result is recognised).
pub(crate) const NOT_SHOWN: &str = "not shown (size limit)";

/// How much one page may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Room {
    /// Characters (bytes of UTF-8) of the page, notes aside.
    pub chars: usize,
    /// Tokens of the page, notes aside.
    pub tokens: usize,
}

impl Room {
    /// Room for the notes of a page, kept free in [`Room::DEFAULT`].
    const NOTES: Room = Room {
        chars: 1_500,
        tokens: 400,
    };

    /// A page of a repository tool.
    pub(crate) const DEFAULT: Room = Room {
        chars: super::DEFAULT_MAX_OUTPUT_CHARS - Room::NOTES.chars,
        tokens: crate::context::DEFAULT_MAX_OBSERVATION_TOKENS - Room::NOTES.tokens,
    };
}

// A full page and its notes stay under both caps.
const _: () = assert!(
    Room::DEFAULT.chars + Room::NOTES.chars <= super::DEFAULT_MAX_OUTPUT_CHARS
        && Room::DEFAULT.tokens + Room::NOTES.tokens
            <= crate::context::DEFAULT_MAX_OBSERVATION_TOKENS
);

/// A page being filled, whole lines at a time.
#[derive(Debug, Clone)]
pub(crate) struct Page {
    room: Room,
    text: String,
    tokens: usize,
}

impl Page {
    /// An empty page of `room`.
    pub(crate) fn new(room: Room) -> Self {
        Page {
            room,
            text: String::new(),
            tokens: 0,
        }
    }

    /// Adds `text` (whole lines, each ending in a newline) when it fits; `false`
    /// (and nothing added) when it does not.
    pub(crate) fn push(&mut self, text: &str) -> bool {
        if self.text.len() + text.len() > self.room.chars {
            return false;
        }
        let tokens = Encoding::Approximate.count(text);
        if self.tokens + tokens > self.room.tokens {
            return false;
        }
        self.text.push_str(text);
        self.tokens += tokens;
        true
    }

    /// Adds `text` whatever its size: a short header or note.
    pub(crate) fn push_always(&mut self, text: &str) {
        self.tokens += Encoding::Approximate.count(text);
        self.text.push_str(text);
    }

    /// The page's text.
    pub(crate) fn into_text(self) -> String {
        self.text
    }
}

/// Names the runs of consecutive `items` with the same key: the first `most`
/// each by `describe(key, first, last, count)`, then how many more (`and 3 more files`).
pub(crate) fn runs_named<T>(
    items: &[T],
    key: impl Fn(&T) -> &str,
    most: usize,
    more: &str,
    describe: impl Fn(&str, &T, &T, usize) -> String,
) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        match runs.last_mut() {
            Some((first, last)) if key(&items[*first]) == key(item) => *last = index,
            _ => runs.push((index, index)),
        }
    }
    let mut named: Vec<String> = runs
        .iter()
        .take(most)
        .map(|&(first, last)| {
            let (a, b) = (&items[first], &items[last]);
            describe(key(a), a, b, last - first + 1)
        })
        .collect();
    if runs.len() > most {
        named.push(format!("and {} more {more}", runs.len() - most));
    }
    named.join(", ")
}

/// A numbered line (`  12 +text`, `  12 | text`) with its text elided when very
/// long: the number and mark are kept, the text is shown as its length.
pub(crate) fn elide_long(line: &str) -> Cow<'_, str> {
    let elided = shown_line(line);
    if matches!(elided, Cow::Borrowed(_)) {
        return line.into();
    }
    // The prefix: spaces, digits, one space and a one-character mark (and a space after `|`).
    let digits_end = line.len() - line.trim_start_matches([' ']).len();
    let rest = &line[digits_end..];
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return elided;
    }
    let prefix_len = digits_end + digits;
    let after = &line[prefix_len..];
    let mark_len = match after.as_bytes() {
        [b' ', b'|', b' ', ..] => 3,
        [b' ', b'+' | b'-' | b' ', ..] => 2,
        _ => return elided,
    };
    let (prefix, text) = line.split_at(prefix_len + mark_len);
    format!("{prefix}{}", shown_line(text)).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_takes_whole_lines_while_they_fit() {
        let mut page = Page::new(Room {
            chars: 12,
            tokens: 100,
        });
        assert!(page.push("abc\n"));
        assert!(page.push("defgh\n"));
        assert!(!page.push("ijk\n"));
        page.push_always("[note]\n");
        assert_eq!(page.into_text(), "abc\ndefgh\n[note]\n");
        let mut tokens = Page::new(Room {
            chars: 1_000,
            tokens: 3,
        });
        assert!(!tokens.push("one two three four five\n"));
    }

    #[test]
    fn long_lines_keep_their_number_and_mark() {
        let long = "x".repeat(36_000);
        assert_eq!(
            elide_long(&format!("   12 | {long}")),
            "   12 | [a line of 36,000 characters, not shown]"
        );
        assert_eq!(
            elide_long(&format!("   12 +{long}")),
            "   12 +[a line of 36,000 characters, not shown]"
        );
        assert_eq!(
            elide_long(&long),
            "[a line of 36,000 characters, not shown]"
        );
        assert_eq!(elide_long("   12 | short"), "   12 | short");
    }
}
