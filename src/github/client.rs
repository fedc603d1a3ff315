//! The GitHub REST client: octocrab's HTTP stack (base URL, TLS, timeouts),
//! with Redline's own credentials, rate-limit handling, write pacing and
//! error reporting on top. Requests and answers are JSON values.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

// `axum::http` is the same `http` 1.x crate octocrab's requests are built from.
use axum::http::header::{ACCEPT, AUTHORIZATION};
use axum::http::{HeaderMap, HeaderValue, Method, Request};
use octocrab::Octocrab;
use octocrab::service::middleware::retry::RetryConfig;
use serde_json::Value;

use super::auth::AppAuth;
use super::error::{GitHubError, github_message};
pub(crate) use crate::forge::path_segment;
use crate::forge::ratelimit::{ForgeAnswer, Limited, RateLimitPolicy, RequestLabel, WriteGate};
use crate::llm::Secret;

/// GitHub.com's API, used when `GITHUB_API_URL` is not set.
pub(crate) const DEFAULT_API_URL: &str = "https://api.github.com";

/// Pages followed at most when listing, so a looping `Link` header cannot hang a run.
const MAX_PAGES: usize = 100;

/// The API base URL: `GITHUB_API_URL` (set by Actions, also on GHES) or GitHub.com's.
pub(crate) fn api_url_from_env() -> String {
    crate::config::env_var("GITHUB_API_URL")
        .map(|url| url.trim().to_string())
        .unwrap_or_else(|| DEFAULT_API_URL.to_string())
}

/// An answer from GitHub, whatever its status.
#[derive(Debug)]
pub(crate) struct RawResponse {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: String,
}

impl ForgeAnswer for RawResponse {
    fn status(&self) -> u16 {
        self.status
    }

    fn headers(&self) -> &HeaderMap {
        &self.headers
    }
}

/// Whether a request goes through the write gate.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pacing {
    /// Reads and token requests.
    Unpaced,
    /// Content-creating requests, at least this far apart.
    Paced(Duration),
}

/// The HTTP side shared by every client of one API: octocrab's stack, the
/// retry policy and the write gate.
pub(crate) struct Transport {
    octo: Octocrab,
    base: url::Url,
    /// The API URL's path without its trailing slash (`/api/v3` on GHES, empty on
    /// GitHub.com): REST paths are relative to it.
    base_path: String,
    /// Where GraphQL is served, from the host's root: `/graphql` next to the REST API,
    /// but `/api/graphql` on GitHub Enterprise Server (REST is `/api/v3`).
    graphql_path: String,
    policy: RateLimitPolicy,
    gate: WriteGate,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("api_url", &self.base.as_str())
            .finish()
    }
}

impl Transport {
    /// A transport to `api_url`. Needs a tokio runtime (octocrab spawns its worker).
    pub(crate) fn new(api_url: &str, policy: RateLimitPolicy) -> Result<Self, GitHubError> {
        let trimmed = api_url.trim().trim_end_matches('/');
        let base = url::Url::parse(trimmed)
            .map_err(|e| GitHubError::Setup(format!("invalid API URL `{trimmed}`: {e}")))?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(GitHubError::Setup(format!(
                "invalid API URL `{trimmed}`: expected http(s)://host[/path]"
            )));
        }
        let base_path = base.path().trim_end_matches('/').to_string();
        let graphql_path = match base_path.strip_suffix("/v3") {
            Some(api) => format!("{api}/graphql"),
            None => format!("{base_path}/graphql"),
        };
        // octocrab gets the origin only: it would put the base path in front of every
        // request, GHES's GraphQL path included; `full_path` joins it here instead.
        let origin = base.origin().ascii_serialization();
        let octo = Octocrab::builder()
            .base_uri(origin.as_str())
            .and_then(|builder| {
                builder
                    // Rate limits are handled here, with waits octocrab cannot configure.
                    .add_retry_config(RetryConfig::None)
                    .set_connect_timeout(Some(Duration::from_secs(10)))
                    .set_read_timeout(Some(Duration::from_secs(60)))
                    .build()
            })
            .map_err(|e| GitHubError::Setup(crate::errors::chain(&e)))?;
        Ok(Transport {
            octo,
            base,
            base_path,
            graphql_path,
            policy,
            gate: WriteGate::default(),
        })
    }

    /// The same connection with another policy (and a fresh write gate).
    pub(crate) fn with_policy(&self, policy: RateLimitPolicy) -> Self {
        Transport {
            octo: self.octo.clone(),
            base: self.base.clone(),
            base_path: self.base_path.clone(),
            graphql_path: self.graphql_path.clone(),
            policy,
            gate: WriteGate::default(),
        }
    }

    /// The GraphQL endpoint's path from the host's root.
    pub(crate) fn graphql_path(&self) -> &str {
        &self.graphql_path
    }

    /// `path` from the host's root: REST paths get the API's base path in front
    /// (pagination links and the GraphQL path already start from the root).
    fn full_path(&self, path: &str) -> String {
        if path == self.graphql_path || path.starts_with(&self.base_path) {
            path.to_string()
        } else {
            format!("{}{path}", self.base_path)
        }
    }

    /// Sends a request, waiting out rate limits; any other status is returned as is.
    pub(crate) async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        bearer: &Secret,
        pacing: Pacing,
    ) -> Result<RawResponse, GitHubError> {
        let attempt = self.send_with_retries(method, path, body, bearer);
        match pacing {
            Pacing::Unpaced => attempt.await,
            Pacing::Paced(interval) => {
                self.gate
                    .pass(interval, &self.policy.sleeper, attempt)
                    .await
            }
        }
    }

    async fn send_with_retries(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        bearer: &Secret,
    ) -> Result<RawResponse, GitHubError> {
        let label = RequestLabel {
            forge: "GitHub",
            method: method.as_str(),
            path,
        };
        let method_ref = &method;
        let send_once = move || self.send_once(method_ref.clone(), path, body, bearer);
        let message_of = |response: &RawResponse| {
            bearer.redact(&github_message(&response.body, response.status))
        };
        match self.policy.wait_out(label, send_once, message_of).await? {
            Limited::Answered(response) => Ok(response),
            Limited::GaveUp { waited, message } => Err(GitHubError::RateLimited {
                method: method.to_string(),
                path: path.to_string(),
                waited,
                message,
            }),
        }
    }

    async fn send_once(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        bearer: &Secret,
    ) -> Result<RawResponse, GitHubError> {
        let failed = |message: String| GitHubError::Transport {
            method: method.to_string(),
            path: path.to_string(),
            message: bearer.redact(&message),
        };
        let mut auth =
            HeaderValue::from_str(&format!("Bearer {}", bearer.expose())).map_err(|_| {
                GitHubError::Credentials(
                    "the token has characters not allowed in an HTTP header".into(),
                )
            })?;
        auth.set_sensitive(true);
        let builder = Request::builder()
            .method(method.clone())
            .uri(self.full_path(path))
            .header(AUTHORIZATION, auth)
            .header(ACCEPT, "application/vnd.github+json");
        let request = self
            .octo
            .build_request(builder, body)
            .map_err(|e| failed(crate::errors::chain(&e)))?;
        let response = self
            .octo
            .execute(request)
            .await
            .map_err(|e| failed(crate::errors::chain(&e)))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = self
            .octo
            .body_to_string(response)
            .await
            .map_err(|e| failed(crate::errors::chain(&e)))?;
        Ok(RawResponse {
            status,
            headers,
            body,
        })
    }

    /// The path of the `rel="next"` page in a `Link` header, when it points back
    /// at this API (credentials are never sent anywhere else).
    fn next_page_path(&self, headers: &HeaderMap) -> Option<String> {
        let link = headers.get("link")?.to_str().ok()?;
        let target = link.split(',').find_map(|part| {
            let (url, params) = part.split_once(';')?;
            params
                .split(';')
                .any(|p| p.trim() == "rel=\"next\"")
                .then(|| url.trim().trim_start_matches('<').trim_end_matches('>'))
        })?;
        let next = url::Url::parse(target).ok()?;
        if next.origin() != self.base.origin() {
            tracing::warn!("ignoring a pagination link to another host");
            return None;
        }
        Some(match next.query() {
            Some(query) => format!("{}?{query}", next.path()),
            None => next.path().to_string(),
        })
    }
}

/// The user the Action's `GITHUB_TOKEN` writes as.
pub(crate) const ACTIONS_BOT: &str = "github-actions[bot]";

/// Who the client acts as.
#[derive(Debug, Clone)]
enum Credentials {
    /// A fixed token (the Action's `GITHUB_TOKEN`, a PAT).
    Token(Secret),
    /// The App itself, with a fresh JWT per request.
    App(AppAuth),
    /// An App installation, with cached installation tokens.
    Installation { app: AppAuth, installation_id: u64 },
}

/// An authenticated GitHub REST client. Cheap to clone; clones share the
/// connection pool and the write gate.
#[derive(Debug, Clone)]
pub struct GitHubClient {
    transport: Arc<Transport>,
    credentials: Credentials,
    /// A token's own user login (`GET /user`), once asked.
    token_login: Arc<tokio::sync::OnceCell<Option<String>>>,
}

impl GitHubClient {
    /// A client using `token` (e.g. the Action's `GITHUB_TOKEN`) against `api_url`.
    /// Must be called inside a tokio runtime.
    pub fn with_token(api_url: &str, token: Secret) -> Result<Self, GitHubError> {
        let token = Secret::new(token.expose().trim());
        if token.is_empty() {
            return Err(GitHubError::Credentials("the GitHub token is empty".into()));
        }
        let transport = Transport::new(api_url, RateLimitPolicy::default())?;
        Ok(GitHubClient {
            transport: Arc::new(transport),
            credentials: Credentials::Token(token),
            token_login: Arc::default(),
        })
    }

    /// A client acting as the App (JWT), e.g. to look up installations.
    pub(crate) fn for_app(transport: Arc<Transport>, app: AppAuth) -> Self {
        GitHubClient {
            transport,
            credentials: Credentials::App(app),
            token_login: Arc::default(),
        }
    }

    /// A client acting as one installation of the App.
    pub(crate) fn for_installation(
        transport: Arc<Transport>,
        app: AppAuth,
        installation_id: u64,
    ) -> Self {
        GitHubClient {
            transport,
            credentials: Credentials::Installation {
                app,
                installation_id,
            },
            token_login: Arc::default(),
        }
    }

    /// This client with another rate-limit and pacing policy.
    pub fn with_rate_limit_policy(self, policy: RateLimitPolicy) -> Self {
        GitHubClient {
            transport: Arc::new(self.transport.with_policy(policy)),
            credentials: self.credentials,
            token_login: self.token_login,
        }
    }

    /// The logins whose comments are Redline's own: the App's bot for an App or
    /// installation client; for a token, `github-actions[bot]` (the Action's
    /// `GITHUB_TOKEN`) and the token's own user when `GET /user` names it. `None`
    /// when the App's identity is unknown (GitHub did not say).
    pub(crate) async fn own_logins(&self) -> Option<Vec<String>> {
        match &self.credentials {
            Credentials::App(app) | Credentials::Installation { app, .. } => {
                app.bot_login().await.map(|login| vec![login])
            }
            Credentials::Token(_) => {
                let user = self
                    .token_login
                    .get_or_init(|| async {
                        let user = self.get_json("/user").await.ok()?;
                        user["login"].as_str().map(str::to_string)
                    })
                    .await;
                let mut logins = vec![ACTIONS_BOT.to_string()];
                logins.extend(user.clone());
                Some(logins)
            }
        }
    }

    /// `GET path` (relative to the API URL, e.g. `/repos/o/r/pulls/1`).
    pub(crate) async fn get_json(&self, path: &str) -> Result<Value, GitHubError> {
        let response = self
            .request(Method::GET, path, None, Pacing::Unpaced)
            .await?;
        decode(&Method::GET, path, &response)
    }

    /// Every item of a paginated list, following `Link: rel="next"` (100 per page).
    pub(crate) async fn get_all_pages(&self, path: &str) -> Result<Vec<Value>, GitHubError> {
        let separator = if path.contains('?') { '&' } else { '?' };
        let mut next = Some(format!("{path}{separator}per_page=100"));
        let mut items = Vec::new();
        for _ in 0..MAX_PAGES {
            let Some(page) = next.take() else { break };
            let response = self
                .request(Method::GET, &page, None, Pacing::Unpaced)
                .await?;
            match decode(&Method::GET, &page, &response)? {
                Value::Array(page_items) => items.extend(page_items),
                _ => {
                    return Err(GitHubError::Decode {
                        method: "GET".into(),
                        path: page,
                        message: "expected a JSON array".into(),
                    });
                }
            }
            next = self.transport.next_page_path(&response.headers);
        }
        Ok(items)
    }

    /// `POST path` with a JSON body; paced like every content-creating request.
    pub(crate) async fn post_json(&self, path: &str, body: &Value) -> Result<Value, GitHubError> {
        let interval = self.transport.policy.min_write_interval;
        self.write_json(Method::POST, path, body, interval).await
    }

    /// `PATCH path` with a JSON body; paced like every content-creating request.
    pub(crate) async fn patch_json(&self, path: &str, body: &Value) -> Result<Value, GitHubError> {
        let interval = self.transport.policy.min_write_interval;
        self.write_json(Method::PATCH, path, body, interval).await
    }

    /// A GraphQL call (`POST /graphql`) with `variables`; its `data` on success. An answer
    /// with `errors` is an error carrying the first message. Unpaced: Redline's GraphQL
    /// calls read threads or resolve one, neither creates content.
    ///
    /// It posts what `Octocrab::graphql` posts, on the same octocrab stack, but through
    /// this client's request path: octocrab's own call would carry octocrab's credentials
    /// (none are configured here) and skip the token renewal, rate-limit waits and
    /// redaction every other request gets.
    pub async fn graphql(&self, query: &str, variables: &Value) -> Result<Value, GitHubError> {
        let path = self.transport.graphql_path().to_string();
        let body = serde_json::json!({ "query": query, "variables": variables });
        let response = self
            .request(Method::POST, &path, Some(&body), Pacing::Unpaced)
            .await?;
        let answer = decode(&Method::POST, &path, &response)?;
        if let Some(first) = answer
            .get("errors")
            .and_then(Value::as_array)
            .and_then(|errors| errors.first())
        {
            let message = first
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("GraphQL error");
            return Err(GitHubError::Decode {
                method: "POST".into(),
                path,
                message: message.chars().take(200).collect(),
            });
        }
        Ok(answer.get("data").cloned().unwrap_or(Value::Null))
    }

    /// A content-creating request, at least `interval` after the previous one.
    pub(crate) async fn write_json(
        &self,
        method: Method,
        path: &str,
        body: &Value,
        interval: Duration,
    ) -> Result<Value, GitHubError> {
        let response = self
            .request(method.clone(), path, Some(body), Pacing::Paced(interval))
            .await?;
        decode(&method, path, &response)
    }

    /// Sends with the current credentials; a 401 with an installation token
    /// renews the token once. Error statuses become [`GitHubError::Api`].
    async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        pacing: Pacing,
    ) -> Result<RawResponse, GitHubError> {
        let mut bearer = self.bearer().await?;
        let mut response = self
            .transport
            .send(method.clone(), path, body, &bearer, pacing)
            .await?;
        if response.status == 401
            && let Credentials::Installation {
                app,
                installation_id,
            } = &self.credentials
        {
            app.invalidate(*installation_id);
            bearer = app.installation_token(*installation_id).await?;
            response = self
                .transport
                .send(method.clone(), path, body, &bearer, pacing)
                .await?;
        }
        if (200..300).contains(&response.status) {
            return Ok(response);
        }
        Err(GitHubError::Api {
            status: response.status,
            method: method.to_string(),
            path: path.to_string(),
            message: bearer.redact(&github_message(&response.body, response.status)),
        })
    }

    async fn bearer(&self) -> Result<Secret, GitHubError> {
        match &self.credentials {
            Credentials::Token(token) => Ok(token.clone()),
            Credentials::App(app) => app.jwt(),
            Credentials::Installation {
                app,
                installation_id,
            } => app.installation_token(*installation_id).await,
        }
    }
}

/// The JSON body of a successful answer (`null` when empty).
pub(crate) fn decode(
    method: &Method,
    path: &str,
    response: &RawResponse,
) -> Result<Value, GitHubError> {
    if response.body.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(&response.body).map_err(|e| GitHubError::Decode {
        method: method.to_string(),
        path: path.to_string(),
        message: format!("invalid JSON: {e}"),
    })
}

#[cfg(test)]
mod tests;
