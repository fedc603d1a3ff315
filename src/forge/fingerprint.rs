//! Stable fingerprints of findings, carried in hidden HTML comments so that a
//! later run recognises what an earlier run already posted.
//!
//! The fingerprint hashes the line's content rather than its number: pushing
//! more commits moves lines around, but an unchanged line keeps its text.

use sha2::{Digest, Sha256};

use crate::review::finding::Category;

/// The prefix of a fingerprint marker.
const MARKER_PREFIX: &str = "<!-- redline:fp=";
/// The end of an HTML comment.
const COMMENT_END: &str = "-->";
/// Hex characters kept from the hash: 64 bits, plenty for one pull request.
const FINGERPRINT_LEN: usize = 16;

/// A short stable hash of a finding: its path, the normalised text of the line
/// it is anchored on, and its concern (category and normalised title words).
///
/// Whitespace changes on the line and punctuation or case changes in the title
/// do not change the fingerprint.
pub fn fingerprint(path: &str, line_text: &str, category: Category, title: &str) -> String {
    let mut hasher = Sha256::new();
    for part in [
        path,
        &normalise_line(line_text),
        category.as_str(),
        &normalise_title(title),
    ] {
        hasher.update(part.as_bytes());
        // A separator that cannot appear in the parts keeps ("ab","c") apart from ("a","bc").
        hasher.update([0u8]);
    }
    let digest = hex::encode(hasher.finalize());
    digest[..FINGERPRINT_LEN].to_string()
}

/// The prefix that tells a concern key from a fingerprint.
const CONCERN_PREFIX: &str = "c-";

/// A key of a finding's concern alone: its path, category and normalised title, without
/// the line's text. A dismissed finding stays dismissed when its line is edited.
pub(crate) fn concern_key(path: &str, category: &str, title: &str) -> String {
    let mut hasher = Sha256::new();
    for part in [path, category, &normalise_title(title)] {
        hasher.update(part.as_bytes());
        hasher.update([0u8]);
    }
    let digest = hex::encode(hasher.finalize());
    format!("{CONCERN_PREFIX}{}", &digest[..FINGERPRINT_LEN])
}

/// The concern key of one of Redline's inline comments on `path`, read from its heading
/// (`**[severity · category] title**`); `None` when the body has no such heading.
pub(crate) fn concern_of_comment(path: &str, body: &str) -> Option<String> {
    let heading = body.trim_start().lines().next()?;
    let inner = heading.strip_prefix("**[")?.strip_suffix("**")?;
    let (labels, title) = inner.split_once("] ")?;
    let (_, category) = labels.split_once(" · ")?;
    // The title as posted is escaped; its key is the one the model's title has.
    Some(concern_key(
        path,
        category.trim(),
        &crate::text::unescape_inline(title),
    ))
}

/// The hidden marker that carries `fp` in a comment body.
pub fn marker(fp: &str) -> String {
    format!("{MARKER_PREFIX}{fp} {COMMENT_END}")
}

/// Every fingerprint carried by a marker in `body`, in order of appearance.
pub fn parse_markers(body: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find(MARKER_PREFIX) {
        rest = &rest[start + MARKER_PREFIX.len()..];
        let fp: String = rest.chars().take_while(|c| c.is_ascii_hexdigit()).collect();
        let after = rest[fp.len()..].trim_start();
        if !fp.is_empty() && after.starts_with(COMMENT_END) {
            found.push(fp.to_ascii_lowercase());
        }
    }
    found
}

/// Untrusted text (model output, repository content) with anything that would
/// read as one of Redline's hidden markers defused, so it cannot fake one.
pub(crate) fn neutralise_markers(text: &str) -> String {
    text.replace("<!-- redline:", "<!-- quoted redline:")
        .replace("<!--redline:", "<!-- quoted redline:")
}

/// The line trimmed, with every run of whitespace collapsed to one space.
fn normalise_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The title's words, lower-cased, without punctuation.
fn normalise_title(title: &str) -> String {
    title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_under_whitespace_and_title_punctuation() {
        let a = fingerprint(
            "src/a.rs",
            "  let x =   y;",
            Category::Bug,
            "Off-by-one in loop",
        );
        let b = fingerprint(
            "src/a.rs",
            "let x = y;\t",
            Category::Bug,
            "off by one in loop.",
        );
        assert_eq!(a, b);
        assert_eq!(a.len(), FINGERPRINT_LEN);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn differs_by_path_line_category_and_title() {
        let base = fingerprint("a.rs", "x", Category::Bug, "t");
        assert_ne!(base, fingerprint("b.rs", "x", Category::Bug, "t"));
        assert_ne!(base, fingerprint("a.rs", "y", Category::Bug, "t"));
        assert_ne!(base, fingerprint("a.rs", "x", Category::Security, "t"));
        assert_ne!(base, fingerprint("a.rs", "x", Category::Bug, "u"));
    }

    #[test]
    fn markers_round_trip() {
        let fp = fingerprint("a.rs", "x", Category::Bug, "t");
        let body = format!(
            "**Bug**\n\ntext\n\n{}\nmore {}",
            marker(&fp),
            marker("00ff")
        );
        assert_eq!(parse_markers(&body), vec![fp, "00ff".to_string()]);
    }

    #[test]
    fn a_comment_heading_gives_the_finding_s_concern_key() {
        let key = concern_key("a.rs", Category::Bug.as_str(), "Off-by-one in loop");
        let body = "**[major · bug] Off-by-one in loop.**\n\nThe loop ends early.";
        assert_eq!(concern_of_comment("a.rs", body), Some(key.clone()));
        assert_ne!(concern_of_comment("b.rs", body), Some(key));
        assert_eq!(concern_of_comment("a.rs", "just a reply"), None);
    }

    #[test]
    fn ignores_malformed_markers() {
        assert!(parse_markers("<!-- redline:fp= -->").is_empty());
        assert!(parse_markers("<!-- redline:fp=zz -->").is_empty());
        assert!(parse_markers("<!-- redline:fp=abc").is_empty());
        assert!(parse_markers("no markers here").is_empty());
    }

    #[test]
    fn neutralised_text_carries_no_marker() {
        let hostile = format!("ignore {} and <!--redline:fp=beef -->", marker("abcd"));
        assert!(parse_markers(&neutralise_markers(&hostile)).is_empty());
    }
}
