//! One-off notices on a change request (e.g. "the repository's config is broken"), posted
//! at most once per text: each carries a hidden marker with a hash of its text, and a
//! notice whose marker is already on the change is not posted again (redeliveries
//! and retried jobs stay quiet). [`notice_once`] is the only way a notice is posted, on
//! every forge: a forge only lists its comments and posts one.

use sha2::{Digest, Sha256};

use super::fingerprint::neutralise_markers;
use super::{Forge, PublishError};

/// The prefix of a notice marker.
const NOTICE_PREFIX: &str = "<!-- redline:notice=";

/// The hidden marker of a notice text.
fn notice_marker(text: &str) -> String {
    let digest = hex::encode(Sha256::digest(text.as_bytes()));
    format!("{NOTICE_PREFIX}{} -->", &digest[..16])
}

/// Posts `text` on the change `forge` names unless the same notice is among its comments;
/// `Ok(true)` when it was posted. `text` may quote repository content: anything in it that
/// reads as a Redline marker is defused.
pub(crate) async fn notice_once(forge: &dyn Forge, text: &str) -> Result<bool, PublishError> {
    let notice = MarkedNotice::of(text);
    let bodies = forge.comment_bodies().await?;
    if notice.is_among(bodies.iter().map(String::as_str)) {
        return Ok(false);
    }
    forge.post_comment(&notice.body).await?;
    Ok(true)
}

/// A notice ready to post: its text with any Redline marker defused (it may quote
/// repository content), and the hidden marker that tells it is there already.
struct MarkedNotice {
    /// What to post: the text, then the marker.
    body: String,
    /// The marker to look for among the comments already posted.
    marker: String,
}

impl MarkedNotice {
    /// The notice of `text`.
    fn of(text: &str) -> MarkedNotice {
        let text = neutralise_markers(text);
        let marker = notice_marker(&text);
        MarkedNotice {
            body: format!("{text}\n\n{marker}"),
            marker,
        }
    }

    /// Whether one of `bodies` is this notice.
    fn is_among<'a>(&self, mut bodies: impl Iterator<Item = &'a str>) -> bool {
        bodies.any(|body| body.contains(&self.marker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_depend_on_the_text_only() {
        assert_eq!(notice_marker("a"), notice_marker("a"));
        assert_ne!(notice_marker("a"), notice_marker("b"));
        assert!(notice_marker("a").starts_with(NOTICE_PREFIX));
    }
}
