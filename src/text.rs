//! Small text helpers shared across modules.

/// The longest prefix of `text` that is at most `max_bytes` long and ends on a
/// character boundary (so cutting never splits a UTF-8 character).
pub(crate) fn prefix_at_char_boundary(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_splits_a_character() {
        assert_eq!(prefix_at_char_boundary("héllo", 2), "h");
        assert_eq!(prefix_at_char_boundary("héllo", 3), "hé");
        assert_eq!(prefix_at_char_boundary("abc", 10), "abc");
    }
}
