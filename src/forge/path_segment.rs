//! One URL path segment from untrusted text, for both forges' REST paths (owner,
//! repository, project or user names come from event payloads and are not trusted to be
//! well-formed; a GitLab project's full path becomes one segment, `group%2Fapp`).
//!
//! Invariants: only RFC 3986's unreserved characters stay as they are; every other byte
//! is percent-encoded, so a value can never add a segment or a query.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// What stays as it is in a path segment: RFC 3986's unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// `value` made safe as one URL path segment.
pub(crate) fn path_segment(value: &str) -> String {
    utf8_percent_encode(value, SEGMENT).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_escaped() {
        assert_eq!(path_segment("octo-cat_1.x"), "octo-cat_1.x");
        assert_eq!(path_segment("a/../b c"), "a%2F..%2Fb%20c");
        assert_eq!(path_segment("group/sub/app"), "group%2Fsub%2Fapp");
        assert_eq!(path_segment("é?#"), "%C3%A9%3F%23");
    }
}
