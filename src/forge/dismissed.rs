//! Findings a change's people turned down: dismissal keys (fingerprints and concern
//! keys, see [`super::fingerprint`](mod@super::fingerprint)), their hidden marker in the summary comment (the
//! Action's store), and the keys of the review threads a forge reports resolved.
//!
//! Invariants: a key is 1 to 64 characters of `[0-9a-z-]`, so a marker can never close
//! early or carry other markup.

use std::collections::BTreeSet;

/// The prefix of the summary comment's dismissal marker.
const DISMISSED_PREFIX: &str = "<!-- redline:dismissed=";
/// The end of an HTML comment.
const COMMENT_END: &str = "-->";
/// Keys kept in the summary marker at most (the oldest go first).
const MAX_MARKED_KEYS: usize = 500;

/// The dismissal keys of one pull request.
pub type Dismissals = BTreeSet<String>;

/// Whether `key` can be a dismissal key.
pub(crate) fn is_key(key: &str) -> bool {
    (1..=64).contains(&key.len())
        && key
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase() || c == '-')
}

/// The keys of the dismissal marker in `body` (the summary comment).
pub(crate) fn parse_dismissed(body: &str) -> Dismissals {
    marked_in_order(body).into_iter().collect()
}

/// The keys of the dismissal marker in `body`, in the order they were written.
fn marked_in_order(body: &str) -> Vec<String> {
    let Some(start) = body.find(DISMISSED_PREFIX) else {
        return Vec::new();
    };
    let rest = &body[start + DISMISSED_PREFIX.len()..];
    let end = rest.find(COMMENT_END).unwrap_or(0);
    rest[..end]
        .split(',')
        .map(str::trim)
        .filter(|key| is_key(key))
        .map(str::to_string)
        .collect()
}

/// `body` with its dismissal marker holding `keys` (added at the end when missing). The
/// keys already marked keep their order and new ones follow; past [`MAX_MARKED_KEYS`]
/// the oldest go, so a new dismissal is never the one dropped.
pub(crate) fn with_dismissed(body: &str, keys: &Dismissals) -> String {
    let mut ordered: Vec<String> = marked_in_order(body)
        .into_iter()
        .filter(|key| keys.contains(key))
        .collect();
    let marked: Dismissals = ordered.iter().cloned().collect();
    ordered.extend(
        keys.iter()
            .filter(|key| is_key(key) && !marked.contains(*key))
            .cloned(),
    );
    let kept: Vec<&str> = ordered
        .iter()
        .skip(ordered.len().saturating_sub(MAX_MARKED_KEYS))
        .map(String::as_str)
        .collect();
    let marker = format!("{DISMISSED_PREFIX}{} {COMMENT_END}", kept.join(","));
    if let Some(start) = body.find(DISMISSED_PREFIX)
        && let Some(len) = body[start..].find(COMMENT_END)
    {
        let end = start + len + COMMENT_END.len();
        return format!("{}{marker}{}", &body[..start], &body[end..]);
    }
    format!("{}\n{marker}", body.trim_end())
}

/// A review thread (GitHub) or discussion (GitLab) as the forge reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReviewThread {
    /// The thread's id on the forge (GitHub: its node id, for `resolveReviewThread`).
    pub id: String,
    /// Resolved on the forge.
    pub is_resolved: bool,
    /// Its lines changed since it was written.
    pub is_outdated: bool,
    /// The keys of Redline's finding in its first comment (empty when not Redline's).
    pub keys: Vec<String>,
}

/// The dismissal keys of the resolved threads among `threads`.
pub(crate) fn resolved_keys(threads: &[ReviewThread]) -> Dismissals {
    threads
        .iter()
        .filter(|t| t.is_resolved)
        .flat_map(|t| t.keys.iter().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_round_trips_and_replaces_itself() {
        let keys: Dismissals = ["00ff".to_string(), "c-12ab".to_string()].into();
        let body = with_dismissed("summary text", &keys);
        assert_eq!(parse_dismissed(&body), keys);
        let mut more = keys.clone();
        more.insert("beef".into());
        let again = with_dismissed(&body, &more);
        assert_eq!(again.matches(DISMISSED_PREFIX).count(), 1);
        assert_eq!(parse_dismissed(&again), more);
    }

    #[test]
    fn a_full_marker_drops_its_oldest_key_not_the_new_one() {
        let old: Dismissals = (0..MAX_MARKED_KEYS).map(|n| format!("a{n:04}")).collect();
        let body = with_dismissed("summary", &old);
        let mut more = parse_dismissed(&body);
        more.insert("zz-new".into());
        let kept = parse_dismissed(&with_dismissed(&body, &more));
        assert_eq!(kept.len(), MAX_MARKED_KEYS);
        assert!(kept.contains("zz-new"), "the new dismissal is kept");
        assert!(!kept.contains("a0000"), "the oldest goes");
        assert!(kept.contains("a0001"));
    }

    #[test]
    fn hostile_keys_are_dropped() {
        let body = "<!-- redline:dismissed=00ff,<b>x</b>,UPPER, ok-1 -->";
        let keys: Vec<String> = parse_dismissed(body).into_iter().collect();
        assert_eq!(keys, ["00ff", "ok-1"]);
        assert!(parse_dismissed("<!-- redline:dismissed=00ff").is_empty());
    }
}
