//! Values from outside (webhook payloads, a forge's error messages) made fit for one log or
//! error line: a line break, NUL or terminal escape in them shows as its escape, so it can
//! neither forge a log line nor drive a terminal.
//!
//! Invariants: the output holds no control character and no bidirectional-text control;
//! every other character is kept; a value is cut at [`MAX_LOGGED_CHARS`] characters.

use std::fmt;

/// Characters of one value shown at most.
pub(crate) const MAX_LOGGED_CHARS: usize = 300;

/// `text` shown escaped (see the module documentation), as a `Display` value.
pub(crate) fn logged(text: &str) -> Logged<'_> {
    Logged(text)
}

/// A value shown escaped.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Logged<'a>(&'a str);

/// Whether `c` changes how a line reads without being visible text.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

impl fmt::Display for Logged<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut chars = self.0.chars();
        for c in chars.by_ref().take(MAX_LOGGED_CHARS) {
            if is_unsafe(c) {
                write!(f, "{}", c.escape_unicode())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        if chars.next().is_some() {
            write!(f, "…")?;
        }
        Ok(())
    }
}

/// A message from outside on one line: its first non-blank line, escaped as [`logged`].
pub(crate) fn one_line_message(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or_default();
    logged(line).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_show_escaped_and_plain_text_is_kept() {
        let forged = "group/app\nINFO redline: forged line\u{0}\u{1b}[31m\u{202e}";
        let shown = logged(forged).to_string();
        assert!(!shown.chars().any(is_unsafe), "{shown:?}");
        assert!(shown.starts_with("group/app\\u{a}INFO"), "{shown}");
        assert_eq!(
            logged("numbers/calculator").to_string(),
            "numbers/calculator"
        );
        assert_eq!(logged("héllo · wörld").to_string(), "héllo · wörld");
        let long = "a".repeat(MAX_LOGGED_CHARS + 5);
        assert_eq!(
            logged(&long).to_string().chars().count(),
            MAX_LOGGED_CHARS + 1
        );
    }

    #[test]
    fn a_message_is_its_first_line() {
        assert_eq!(
            one_line_message("\n  404 Not found\u{1b}[2J\nsecond line"),
            "404 Not found\\u{1b}[2J"
        );
        assert_eq!(one_line_message(""), "");
    }
}
