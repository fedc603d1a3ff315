//! The GitLab REST v4 client (gitlab.com and self-managed): `PRIVATE-TOKEN`
//! authentication, rate limits waited out (`Retry-After`, `RateLimit-Reset`; shared with
//! GitHub's client in [`crate::forge::ratelimit`]), paced writes, and pagination.
//!
//! Invariants: the token is only ever sent to the configured API's origin (pagination
//! follows page numbers, never links; a redirect is followed within that origin only,
//! [`crate::redirect`]); it never appears in an error or a log line; every text field a
//! write carries passes [`crate::text::posted`] (no GitLab quick action in it); GitLab's
//! messages are shown on one line, escaped.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::own_user::OwnUser;
pub(crate) use crate::forge::path_segment;
use crate::forge::ratelimit::{ForgeAnswer, Limited, RateLimitPolicy, RequestLabel, WriteGate};
use crate::forge::{ApiFailure, ForgeApiError, PublishError};
use crate::llm::Secret;

/// Pages followed at most when listing (100 items each).
const MAX_PAGES: usize = 100;

/// The API base URL: `CI_API_V4_URL` (set in GitLab CI), else `GITLAB_API_URL`.
pub(crate) fn api_url_from_env() -> Option<String> {
    ["CI_API_V4_URL", "GITLAB_API_URL"].iter().find_map(|name| {
        std::env::var(name)
            .ok()
            .map(|url| url.trim().to_string())
            .filter(|url| !url.is_empty())
    })
}

/// Why a GitLab request failed. Messages never contain the token.
#[derive(Debug, thiserror::Error)]
pub enum GitLabError {
    /// The client could not be set up (bad URL, token not a header value).
    #[error("GitLab client: {0}")]
    Setup(String),
    /// The request did not get an answer.
    #[error("GitLab request {method} {path} failed: {message}")]
    Transport {
        /// The method.
        method: String,
        /// The API path.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// GitLab answered with an error status.
    #[error("GitLab answered {status} to {method} {path}: {message}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// The method.
        method: String,
        /// The API path.
        path: String,
        /// GitLab's message.
        message: String,
    },
    /// Rate limited for longer than the policy allows.
    #[error("GitLab rate limit on {method} {path}: gave up after waiting {waited:?}")]
    RateLimited {
        /// The method.
        method: String,
        /// The API path.
        path: String,
        /// How long was waited.
        waited: Duration,
    },
}

impl GitLabError {
    /// The HTTP status GitLab answered, if it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            GitLabError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// What GitLab's statuses mean to the core: 401 and 403 are a missing permission (or
/// role); 400, 404 and 422 refuse the request itself; a rate limit that did not lift says
/// how long was waited.
impl From<GitLabError> for ForgeApiError {
    fn from(error: GitLabError) -> Self {
        let failure = match &error {
            GitLabError::Api {
                status: 401 | 403, ..
            } => ApiFailure::Denied,
            GitLabError::Api {
                status: 400 | 404 | 422,
                ..
            } => ApiFailure::Refused,
            GitLabError::RateLimited { waited, .. } => ApiFailure::RateLimited { waited: *waited },
            _ => ApiFailure::Other,
        };
        ForgeApiError::new(error.status(), failure, error.to_string())
    }
}

impl From<GitLabError> for PublishError {
    fn from(error: GitLabError) -> Self {
        PublishError::Api(error.into())
    }
}

/// An authenticated GitLab REST v4 client. Cheap to clone; clones share the connection
/// pool and the write gate.
#[derive(Clone)]
pub(crate) struct GitLabClient {
    http: reqwest::Client,
    /// The API base URL without its trailing slash (`https://gitlab.com/api/v4`).
    base: String,
    token: Secret,
    policy: Arc<RateLimitPolicy>,
    gate: Arc<WriteGate>,
    /// The token's own user (`GET /user`), once GitLab named it.
    own_user: OwnUser,
}

impl std::fmt::Debug for GitLabClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitLabClient")
            .field("api_url", &self.base)
            .finish()
    }
}

impl GitLabClient {
    /// A client for `api_url` (`.../api/v4`) sending `token` as `PRIVATE-TOKEN`.
    pub(crate) fn new(api_url: &str, token: Secret) -> Result<Self, GitLabError> {
        let base = api_url.trim().trim_end_matches('/').to_string();
        let parsed = url::Url::parse(&base)
            .map_err(|e| GitLabError::Setup(format!("invalid API URL `{base}`: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(GitLabError::Setup(format!(
                "invalid API URL `{base}`: expected http(s)://host/api/v4"
            )));
        }
        let http = reqwest::Client::builder()
            // A redirect elsewhere would carry `PRIVATE-TOKEN` (not a header reqwest strips).
            .redirect(crate::redirect::same_origin())
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| GitLabError::Setup(e.to_string()))?;
        Ok(GitLabClient {
            http,
            base,
            token,
            policy: Arc::new(RateLimitPolicy::default()),
            gate: Arc::new(WriteGate::default()),
            own_user: OwnUser::default(),
        })
    }

    /// `GET path` as JSON.
    pub(crate) async fn get_json(&self, path: &str) -> Result<Value, GitLabError> {
        let (_, body) = self.request(Method::GET, path, None).await?;
        Ok(body)
    }

    /// Every page of a list (`per_page=100`, following `x-next-page`).
    pub(crate) async fn get_all_pages(&self, path: &str) -> Result<Vec<Value>, GitLabError> {
        let separator = if path.contains('?') { '&' } else { '?' };
        let mut items = Vec::new();
        let mut page = 1u64;
        for _ in 0..MAX_PAGES {
            let paged = format!("{path}{separator}per_page=100&page={page}");
            let (headers, body) = self.request(Method::GET, &paged, None).await?;
            if let Value::Array(list) = body {
                items.extend(list);
            }
            let next = headers
                .get("x-next-page")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            match next {
                Some(next) if next > page => page = next,
                _ => break,
            }
        }
        Ok(items)
    }

    /// A content-creating request (POST, PUT), at least `interval` after the last one.
    pub(crate) async fn write_json(
        &self,
        method: Method,
        path: &str,
        body: &Value,
        interval: Duration,
    ) -> Result<Value, GitLabError> {
        // Every text Redline writes on GitLab passes here: no quick action survives.
        let body = crate::text::posted::gitlab_request(body);
        let attempt = self.request(method, path, Some(&body));
        let (_, answer) = self
            .gate
            .pass(interval, &self.policy.sleeper, attempt)
            .await?;
        Ok(answer)
    }

    /// The username the token acts as (`GET /user`, asked until GitLab names it).
    pub(crate) async fn own_username(&self) -> Result<String, GitLabError> {
        self.own_user
            .learn(|| async {
                let user = self.get_json("/user").await?;
                Ok(user["username"].as_str().unwrap_or_default().to_string())
            })
            .await
    }

    /// The token's user as this client learns it (shared: known as soon as it is).
    pub(crate) fn own_user(&self) -> OwnUser {
        self.own_user.clone()
    }

    /// Sends a request, waiting out rate limits (the loop GitHub's client uses); an
    /// error status is an error.
    async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(HeaderMap, Value), GitLabError> {
        let label = RequestLabel {
            forge: "GitLab",
            method: method.as_str(),
            path,
        };
        let method_ref = &method;
        let send_once = move || self.send_once(method_ref.clone(), path, body);
        let message_of = |answer: &Answer| self.message(answer);
        let answer = match self.policy.wait_out(label, send_once, message_of).await? {
            Limited::Answered(answer) => answer,
            Limited::GaveUp { waited, .. } => {
                return Err(GitLabError::RateLimited {
                    method: method.to_string(),
                    path: path.to_string(),
                    waited,
                });
            }
        };
        if !answer.status.is_success() {
            return Err(GitLabError::Api {
                status: answer.status.as_u16(),
                method: method.to_string(),
                path: path.to_string(),
                message: self.message(&answer),
            });
        }
        let value = serde_json::from_str(&answer.text).unwrap_or(Value::Null);
        Ok((answer.headers, value))
    }

    /// GitLab's message in `answer`, without the token.
    fn message(&self, answer: &Answer) -> String {
        self.token
            .redact(&gitlab_message(&answer.text, answer.status))
    }

    async fn send_once(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Answer, GitLabError> {
        let failed = |e: reqwest::Error| GitLabError::Transport {
            method: method.to_string(),
            path: path.to_string(),
            message: self.token.redact(&crate::errors::chain(&e)),
        };
        let mut token = reqwest::header::HeaderValue::from_str(self.token.expose())
            .map_err(|_| GitLabError::Setup("GITLAB_TOKEN is not a valid header value".into()))?;
        token.set_sensitive(true);
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .header("PRIVATE-TOKEN", token);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(failed)?;
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.map_err(failed)?;
        Ok(Answer {
            status,
            headers,
            text,
        })
    }
}

/// One answer from GitLab, whatever its status.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    text: String,
}

impl ForgeAnswer for Answer {
    fn status(&self) -> u16 {
        self.status.as_u16()
    }

    fn headers(&self) -> &HeaderMap {
        &self.headers
    }
}

/// GitLab's `message` (or `error`) field, else the status.
fn gitlab_message(body: &str, status: StatusCode) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let field = parsed.as_ref().and_then(|v| {
        let message = v.get("message").or_else(|| v.get("error"))?;
        Some(match message {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
    });
    let text = field.unwrap_or_else(|| status.to_string());
    // GitLab's words reach a terminal and a log: one line, no escape sequence.
    crate::text::one_line_message(&text)
}
