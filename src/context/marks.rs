//! How the history marks a tool result it shortened or replaced: the pruner's elision stubs
//! and cut notes ([`super::prune`]) and the pointers that answer a repeated read
//! ([`super::reads`]). Each side writes its own marks and recognises the other's, so the
//! texts are defined here, once.

/// The end of every elision stub; also how a stub is recognised.
pub(crate) const STUB_SUFFIX: &str = "elided: call again if needed]";

/// The start of the note left where an oversized observation was cut.
pub(crate) const CUT_MARKER: &str = "[… cut ";

/// The end of every pointer to an earlier result.
pub(crate) const POINTER_SUFFIX: &str = "above, still in view]";

/// Whether an observation is already an elision stub.
pub(crate) fn is_stub(content: &str) -> bool {
    content.starts_with('[') && content.ends_with(STUB_SUFFIX)
}

/// Whether a result is itself a pointer to another one.
pub(crate) fn is_pointer(content: &str) -> bool {
    content.starts_with('[') && content.ends_with(POINTER_SUFFIX)
}

/// The call id a pointer refers to, when `content` is a pointer.
pub(crate) fn pointer_target(content: &str) -> Option<&str> {
    if !is_pointer(content) {
        return None;
    }
    let before = content.strip_suffix(POINTER_SUFFIX)?.trim_end();
    before.rsplit_once(" call ").map(|(_, id)| id)
}
