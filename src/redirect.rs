//! The one redirect rule of every HTTP client that carries a credential (the model API's
//! key, GitLab's `PRIVATE-TOKEN`, the token a mirror fetch sends): a redirect is followed
//! only to the origin (scheme, host and port) of the request's own URL; any other ends the
//! request with [`RedirectRefused`], so the credential never leaves the configured host.
//! (reqwest drops `Authorization` on such a redirect, but not `x-api-key`, `api-key` nor
//! `PRIVATE-TOKEN`, and following would still fetch content from elsewhere.)
//!
//! Invariants: at most [`MAX_REDIRECTS`] redirects; the error names the refused origin only
//! (never a path, query or user information, which may hold a secret).

use reqwest::redirect::{Attempt, Policy};

/// Redirects followed at most.
pub(crate) const MAX_REDIRECTS: usize = 5;

/// Why a redirect was not followed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RedirectRefused {
    /// The redirect leads to another origin.
    #[error("redirected to another origin ({0}); credentials go to the configured host only")]
    OtherOrigin(String),
    /// Too many redirects in a row.
    #[error("more than {MAX_REDIRECTS} redirects")]
    TooMany,
}

/// The redirect policy of a credentialed client (see the module documentation).
pub(crate) fn same_origin() -> Policy {
    Policy::custom(decide)
}

fn decide(attempt: Attempt<'_>) -> reqwest::redirect::Action {
    if attempt.previous().len() > MAX_REDIRECTS {
        return attempt.error(RedirectRefused::TooMany);
    }
    let next = attempt.url();
    let same = attempt
        .previous()
        .first()
        .is_some_and(|first| first.origin() == next.origin());
    if same {
        attempt.follow()
    } else {
        let origin = next.origin().ascii_serialization();
        attempt.error(RedirectRefused::OtherOrigin(origin))
    }
}

/// The refusal behind `error`, when a redirect was refused.
pub(crate) fn refused(error: &reqwest::Error) -> Option<&RedirectRefused> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<RedirectRefused>() {
            return Some(refused);
        }
        source = cause.source();
    }
    None
}
