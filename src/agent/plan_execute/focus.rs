//! A planned task's focus within its room: never cut mid-sentence.
//!
//! Invariant: a focus longer than its room ends at the last sentence that fits
//! (else at the last word), followed by [`SHORTENED_NOTE`], and the result is
//! at most the room (in bytes); only a single word longer than the room is cut
//! inside, at a character boundary.

use std::borrow::Cow;

/// Ends a focus that was shortened, so the model knows the planner said more.
pub(crate) const SHORTENED_NOTE: &str = " [focus shortened to fit]";

/// `focus` (trimmed) when it fits `room` bytes, else shortened as the module says.
pub(crate) fn fit(focus: &str, room: usize) -> Cow<'_, str> {
    let focus = focus.trim();
    if focus.len() <= room {
        return Cow::Borrowed(focus);
    }
    let keep = room.saturating_sub(SHORTENED_NOTE.len());
    let head = crate::text::prefix_at_char_boundary(focus, keep);
    // `head` ends a sentence when the text goes on with whitespace after it.
    let cut = sentence_end(focus, head.len())
        .or_else(|| word_end(focus, head.len()))
        .unwrap_or(head.len());
    Cow::Owned(format!("{}{SHORTENED_NOTE}", focus[..cut].trim_end()))
}

/// The end of the last whole sentence within `focus[..limit]`: after `.`, `!`
/// or `?` (and closing quotes or brackets) followed by whitespace, or a line end.
fn sentence_end(focus: &str, limit: usize) -> Option<usize> {
    let bytes = focus.as_bytes();
    (1..=limit).rev().find(|&end| {
        let followed_by_space = bytes.get(end).is_none_or(|b| b.is_ascii_whitespace());
        let before = bytes[..end]
            .iter()
            .rev()
            .find(|b| !matches!(b, b'"' | b'\'' | b')' | b']' | b'`'));
        (followed_by_space && matches!(before, Some(b'.' | b'!' | b'?')))
            || bytes.get(end) == Some(&b'\n')
    })
}

/// The end of the last whole word within `focus[..limit]`.
fn word_end(focus: &str, limit: usize) -> Option<usize> {
    let bytes = focus.as_bytes();
    (1..=limit)
        .rev()
        .find(|&end| bytes.get(end).is_none_or(|b| b.is_ascii_whitespace()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_focus_ends_at_a_sentence_with_a_note() {
        let focus = "Check the TLS defaults. Check negative ports are refused! Check the keylog setting is off by default in release builds.";
        let fitted = fit(focus, 90);
        assert_eq!(
            fitted,
            "Check the TLS defaults. Check negative ports are refused! [focus shortened to fit]"
        );
        assert!(fitted.len() <= 90);
        assert_eq!(fit(focus, 500), focus);
    }

    #[test]
    fn one_long_sentence_ends_at_a_word_and_one_long_word_at_a_character() {
        let focus = "Check that every negative port number is refused before the socket opens";
        let fitted = fit(focus, 50);
        assert_eq!(fitted, "Check that every negative [focus shortened to fit]");
        let word = "x".repeat(100);
        let fitted = fit(&word, 40);
        assert!(fitted.len() <= 40 && fitted.ends_with(SHORTENED_NOTE));
    }
}
