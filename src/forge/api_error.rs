//! A forge's API call that failed, as the forge-neutral core sees it: what the forge
//! answered (its status), what kind of failure that is for a job (a refusal no retry
//! mends, a missing permission, a rate limit that did not lift) and the forge client's
//! text.
//!
//! Invariants: each forge module converts its own client error into this one (`From`
//! impls in `github` and `gitlab`), deciding there what its statuses mean; the text is
//! the client error's text unchanged (already free of credentials), so users read the
//! same messages whichever type carries them.

use std::time::Duration;

/// What kind of failure a forge's answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiFailure {
    /// The forge refused for want of a permission (GitHub: 403; GitLab: 401 or 403).
    Denied,
    /// The forge refused the request itself (gone, invalid): the same request gets the
    /// same answer.
    Refused,
    /// A rate limit did not lift within the allowed wait.
    RateLimited {
        /// How long the client waited before giving up.
        waited: Duration,
    },
    /// Anything else (a server error, no answer, an unexpected answer): worth a retry.
    Other,
}

/// A failed forge API call. Its text is the forge client's.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ForgeApiError {
    /// The HTTP status the forge answered, when it answered with an error.
    status: Option<u16>,
    /// What kind of failure it is.
    failure: ApiFailure,
    /// The client error's text.
    message: String,
}

impl ForgeApiError {
    /// The error a forge client reported as `message`, with the `status` the forge answered
    /// and the `failure` that is.
    pub(crate) fn new(status: Option<u16>, failure: ApiFailure, message: String) -> Self {
        ForgeApiError {
            status,
            failure,
            message,
        }
    }

    /// The HTTP status the forge answered, when it answered with an error.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// What kind of failure it is.
    pub fn failure(&self) -> ApiFailure {
        self.failure
    }

    /// Whether no retry mends it: the forge refused the request or a permission is missing.
    pub fn is_permanent(&self) -> bool {
        matches!(self.failure, ApiFailure::Denied | ApiFailure::Refused)
    }

    /// Whether the forge refused for want of a permission.
    pub fn is_denied(&self) -> bool {
        self.failure == ApiFailure::Denied
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_and_denials_are_permanent_and_the_rest_is_not() {
        let error = |failure| ForgeApiError::new(Some(400), failure, "x".into());
        assert!(error(ApiFailure::Denied).is_permanent());
        assert!(error(ApiFailure::Denied).is_denied());
        assert!(error(ApiFailure::Refused).is_permanent());
        assert!(!error(ApiFailure::Refused).is_denied());
        let waited = Duration::from_secs(1);
        assert!(!error(ApiFailure::RateLimited { waited }).is_permanent());
        assert!(!error(ApiFailure::Other).is_permanent());
    }

    #[test]
    fn the_text_is_the_client_s() {
        let error = ForgeApiError::new(None, ApiFailure::Other, "GET /user failed: reset".into());
        assert_eq!(error.to_string(), "GET /user failed: reset");
    }
}
