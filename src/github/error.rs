//! Errors of the GitHub client. Every text in them has had the credential in
//! use scrubbed out.

use std::time::Duration;

use serde_json::Value;

use crate::forge::{ApiFailure, ForgeApiError, PublishError};

/// A failed GitHub API call.
#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    /// GitHub answered with an error status.
    #[error("GitHub answered {status} to {method} {path}: {message}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// The request method.
        method: String,
        /// The request path (and query).
        path: String,
        /// GitHub's message, with the details it listed.
        message: String,
    },
    /// A rate limit did not lift within the allowed wait.
    #[error(
        "GitHub rate limit on {method} {path} did not lift after waiting {waited:?}: {message}"
    )]
    RateLimited {
        /// The request method.
        method: String,
        /// The request path.
        path: String,
        /// How long the client waited before giving up.
        waited: Duration,
        /// GitHub's last message.
        message: String,
    },
    /// The request did not get an answer (connection, timeout, bad URL).
    #[error("{method} {path} failed: {message}")]
    Transport {
        /// The request method.
        method: String,
        /// The request path.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The answer was not what the API documents.
    #[error("unexpected answer to {method} {path}: {message}")]
    Decode {
        /// The request method.
        method: String,
        /// The request path.
        path: String,
        /// What was wrong with it.
        message: String,
    },
    /// The credentials cannot be used (bad private key, malformed token).
    #[error("GitHub credentials: {0}")]
    Credentials(String),
    /// The client cannot be built (bad API URL).
    #[error("GitHub client setup: {0}")]
    Setup(String),
}

impl GitHubError {
    /// The HTTP status GitHub answered, when it answered with an error.
    pub fn status(&self) -> Option<u16> {
        match self {
            GitHubError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// GitHub's message for an error answer.
    pub(crate) fn api_message(&self) -> Option<&str> {
        match self {
            GitHubError::Api { message, .. } => Some(message),
            _ => None,
        }
    }
}

/// What GitHub's statuses mean to the core: 403 is a missing permission; 401, 404 and 422
/// refuse the request itself; a rate limit that did not lift says how long was waited.
impl From<GitHubError> for ForgeApiError {
    fn from(error: GitHubError) -> Self {
        let failure = match &error {
            GitHubError::Api { status: 403, .. } => ApiFailure::Denied,
            GitHubError::Api {
                status: 401 | 404 | 422,
                ..
            } => ApiFailure::Refused,
            GitHubError::RateLimited { waited, .. } => ApiFailure::RateLimited { waited: *waited },
            _ => ApiFailure::Other,
        };
        ForgeApiError::new(error.status(), failure, error.to_string())
    }
}

impl From<GitHubError> for PublishError {
    fn from(error: GitHubError) -> Self {
        PublishError::Api(error.into())
    }
}

/// GitHub's `error` as a publishing error, a refusal (403) as
/// [`PublishError::Forbidden`] (the token may not comment).
pub(crate) fn as_publish_error(error: GitHubError) -> PublishError {
    if error.status() == Some(403) {
        PublishError::Forbidden {
            message: error.to_string(),
        }
    } else {
        error.into()
    }
}

/// GitHub's error message from an error body: `message`, then the entries of
/// `errors` (objects or plain strings), or the raw body when it is not JSON.
pub(crate) fn github_message(body: &str, status: u16) -> String {
    let Ok(json) = serde_json::from_str::<Value>(body) else {
        let raw = body.trim();
        return if raw.is_empty() {
            format!("HTTP {status}")
        } else {
            raw.chars().take(500).collect()
        };
    };
    let mut parts: Vec<String> = Vec::new();
    if let Some(message) = json.get("message").and_then(Value::as_str) {
        parts.push(message.to_string());
    }
    for error in json
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        parts.push(describe_error_entry(error));
    }
    if parts.is_empty() {
        format!("HTTP {status}")
    } else {
        parts.join("; ")
    }
}

fn describe_error_entry(error: &Value) -> String {
    if let Some(text) = error.as_str() {
        return text.to_string();
    }
    if let Some(message) = error.get("message").and_then(Value::as_str) {
        return message.to_string();
    }
    let field = |name: &str| error.get(name).and_then(Value::as_str).unwrap_or("?");
    format!("{}.{} {}", field("resource"), field("field"), field("code"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_with_listed_errors() {
        let body = r#"{"message":"Unprocessable Entity","errors":["Line could not be resolved",
            {"resource":"PullRequestReviewComment","field":"line","code":"invalid"}]}"#;
        assert_eq!(
            github_message(body, 422),
            "Unprocessable Entity; Line could not be resolved; PullRequestReviewComment.line invalid"
        );
    }

    #[test]
    fn non_json_and_empty_bodies() {
        assert_eq!(github_message("  oops ", 500), "oops");
        assert_eq!(github_message("", 502), "HTTP 502");
        assert_eq!(github_message("{}", 404), "HTTP 404");
    }
}
