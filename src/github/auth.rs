//! GitHub App authentication: the App's JWT, and installation tokens cached per
//! installation and renewed shortly before they expire. Tokens live only in
//! memory and are never logged.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::Method;
use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use super::client::{GitHubClient, Pacing, Transport, decode};
use super::error::{GitHubError, github_message};
use crate::forge::ratelimit::RateLimitPolicy;
use crate::llm::Secret;

/// How far in the past the JWT's `iat` is set, for clock drift.
const JWT_BACKDATE_SECS: i64 = 60;
/// The JWT's lifetime from now; GitHub refuses more than ten minutes.
const JWT_LIFETIME_SECS: i64 = 9 * 60;
/// Installation tokens are renewed this long before they expire.
const DEFAULT_RENEWAL_MARGIN: Duration = Duration::from_secs(5 * 60);
/// GitHub documents installation tokens as valid for one hour; used if an answer omits `expires_at`.
const DOCUMENTED_TOKEN_LIFETIME: chrono::Duration = chrono::Duration::hours(1);

/// A GitHub App's credentials. Cheap to clone; clones share the token cache.
#[derive(Clone)]
pub struct AppAuth {
    inner: Arc<AppInner>,
}

struct AppInner {
    transport: Arc<Transport>,
    app_id: String,
    key: EncodingKey,
    renewal_margin: Duration,
    tokens: Mutex<HashMap<u64, CachedToken>>,
    /// Serialises token requests so concurrent users of one installation share one token.
    refresh: tokio::sync::Mutex<()>,
    /// The App's bot login (`SLUG[bot]`), once `GET /app` said it.
    login: tokio::sync::OnceCell<String>,
}

struct CachedToken {
    token: Secret,
    expires_at: DateTime<Utc>,
}

impl fmt::Debug for AppAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppAuth")
            .field("app_id", &self.inner.app_id)
            .finish_non_exhaustive()
    }
}

impl AppAuth {
    /// Credentials of App `app_id` (its numeric id or client id) with its RSA
    /// private key in PEM form, against `api_url`. Must be called inside a tokio runtime.
    pub fn new(
        api_url: &str,
        app_id: impl fmt::Display,
        private_key_pem: Secret,
    ) -> Result<Self, GitHubError> {
        let key = EncodingKey::from_rsa_pem(private_key_pem.expose().as_bytes()).map_err(|e| {
            GitHubError::Credentials(format!(
                "the App private key is not a usable RSA PEM key ({e})"
            ))
        })?;
        let transport = Transport::new(api_url, RateLimitPolicy::default())?;
        Ok(AppAuth {
            inner: Arc::new(AppInner {
                transport: Arc::new(transport),
                app_id: app_id.to_string(),
                key,
                renewal_margin: DEFAULT_RENEWAL_MARGIN,
                tokens: Mutex::new(HashMap::new()),
                refresh: tokio::sync::Mutex::new(()),
                login: tokio::sync::OnceCell::new(),
            }),
        })
    }

    /// These credentials with another rate-limit and pacing policy (for the App's
    /// own requests and every client made from it). Starts with an empty cache.
    pub fn with_rate_limit_policy(self, policy: RateLimitPolicy) -> Self {
        let transport = Arc::new(self.inner.transport.with_policy(policy));
        let margin = self.inner.renewal_margin;
        self.rebuild(transport, margin)
    }

    fn rebuild(self, transport: Arc<Transport>, renewal_margin: Duration) -> Self {
        AppAuth {
            inner: Arc::new(AppInner {
                transport,
                app_id: self.inner.app_id.clone(),
                key: self.inner.key.clone(),
                renewal_margin,
                tokens: Mutex::new(HashMap::new()),
                refresh: tokio::sync::Mutex::new(()),
                login: tokio::sync::OnceCell::new(),
            }),
        }
    }

    /// The App id as given.
    pub fn app_id(&self) -> &str {
        &self.inner.app_id
    }

    /// A fresh App JWT (RS256; `iat` 60 s in the past, `exp` 9 minutes ahead).
    pub fn jwt(&self) -> Result<Secret, GitHubError> {
        let now = Utc::now().timestamp();
        let claims = json!({
            // RFC 7519 makes `iss` a string; GitHub accepts the App id or client id as one.
            "iss": self.inner.app_id,
            "iat": now - JWT_BACKDATE_SECS,
            "exp": now + JWT_LIFETIME_SECS,
        });
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &self.inner.key)
            .map(Secret::new)
            .map_err(|e| GitHubError::Credentials(format!("cannot sign the App JWT ({e})")))
    }

    /// A token for `installation_id`: the cached one while it is valid for longer
    /// than the renewal margin, otherwise a new one from
    /// `POST /app/installations/{id}/access_tokens`.
    pub async fn installation_token(&self, installation_id: u64) -> Result<Secret, GitHubError> {
        if let Some(token) = self.cached(installation_id) {
            return Ok(token);
        }
        let _refreshing = self.inner.refresh.lock().await;
        // Another task may have fetched it while this one waited.
        if let Some(token) = self.cached(installation_id) {
            return Ok(token);
        }
        let fresh = self.request_installation_token(installation_id).await?;
        let token = fresh.token.clone();
        self.lock_tokens().insert(installation_id, fresh);
        Ok(token)
    }

    /// Forgets the cached token of `installation_id` (e.g. after GitHub refused it).
    pub fn invalidate(&self, installation_id: u64) {
        self.lock_tokens().remove(&installation_id);
    }

    /// A client acting as the App itself (JWT), for `/app/...` endpoints.
    pub(crate) fn app_client(&self) -> GitHubClient {
        GitHubClient::for_app(self.inner.transport.clone(), self.clone())
    }

    /// The login of the App's bot user (`SLUG[bot]`, from `GET /app`, asked once):
    /// the author of every comment the App posts. `None` while GitHub does not say.
    pub(crate) async fn bot_login(&self) -> Option<String> {
        let login = self.inner.login.get_or_try_init(|| async {
            let app = self.app_client().get_json("/app").await?;
            match app["slug"].as_str() {
                Some(slug) if !slug.is_empty() => Ok(format!("{slug}[bot]")),
                _ => Err(GitHubError::Credentials("GET /app named no slug".into())),
            }
        });
        login.await.ok().cloned()
    }

    /// A client acting as installation `installation_id`.
    pub fn installation_client(&self, installation_id: u64) -> GitHubClient {
        GitHubClient::for_installation(self.inner.transport.clone(), self.clone(), installation_id)
    }

    fn cached(&self, installation_id: u64) -> Option<Secret> {
        let margin = chrono::Duration::from_std(self.inner.renewal_margin).ok()?;
        let tokens = self.lock_tokens();
        let cached = tokens.get(&installation_id)?;
        (Utc::now() + margin < cached.expires_at).then(|| cached.token.clone())
    }

    fn lock_tokens(&self) -> std::sync::MutexGuard<'_, HashMap<u64, CachedToken>> {
        // The map holds no invariant a panicking holder could break.
        self.inner
            .tokens
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn request_installation_token(
        &self,
        installation_id: u64,
    ) -> Result<CachedToken, GitHubError> {
        let path = format!("/app/installations/{installation_id}/access_tokens");
        let jwt = self.jwt()?;
        let response = self
            .inner
            .transport
            .send(Method::POST, &path, Some(&json!({})), &jwt, Pacing::Unpaced)
            .await?;
        if !(200..300).contains(&response.status) {
            return Err(GitHubError::Api {
                status: response.status,
                method: "POST".into(),
                path,
                message: jwt.redact(&github_message(&response.body, response.status)),
            });
        }
        let body = decode(&Method::POST, &path, &response)?;
        let decode_error = |message: &str| GitHubError::Decode {
            method: "POST".into(),
            path: path.clone(),
            message: message.into(),
        };
        let token = body
            .get("token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| decode_error("no `token` in the answer"))?;
        let expires_at = match body.get("expires_at").and_then(Value::as_str) {
            Some(text) => DateTime::parse_from_rfc3339(text)
                .map_err(|_| decode_error("`expires_at` is not an RFC 3339 time"))?
                .with_timezone(&Utc),
            None => Utc::now() + DOCUMENTED_TOKEN_LIFETIME,
        };
        tracing::debug!(installation_id, %expires_at, "new installation token");
        Ok(CachedToken {
            token: Secret::new(token),
            expires_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation};

    const PRIVATE: &str = include_str!("../../tests/fixtures/github/TEST-ONLY-app-private-key.pem");
    const PUBLIC: &str = include_str!("../../tests/fixtures/github/TEST-ONLY-app-public-key.pem");

    #[tokio::test]
    async fn jwt_has_github_claims() {
        let app = AppAuth::new("https://api.github.com", 4242, Secret::new(PRIVATE)).unwrap();
        let jwt = app.jwt().unwrap();
        let key = DecodingKey::from_rsa_pem(PUBLIC.as_bytes()).unwrap();
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_required_spec_claims(&["exp", "iat", "iss"]);
        let claims = jsonwebtoken::decode::<Value>(jwt.expose(), &key, &validation)
            .unwrap()
            .claims;
        let now = Utc::now().timestamp();
        assert_eq!(claims["iss"], "4242");
        let iat = claims["iat"].as_i64().unwrap();
        let exp = claims["exp"].as_i64().unwrap();
        assert!((now - iat - 60).abs() <= 2, "iat 60 s back: {iat} vs {now}");
        assert!(
            exp > now && exp - now < 600,
            "exp under ten minutes: {exp} vs {now}"
        );
    }

    #[tokio::test]
    async fn bad_key_is_a_credentials_error_without_the_key() {
        let err =
            AppAuth::new("https://api.github.com", 1, Secret::new("not a key xyz123")).unwrap_err();
        assert!(matches!(err, GitHubError::Credentials(_)));
        assert!(!err.to_string().contains("xyz123"));
        assert!(
            !format!(
                "{:?}",
                AppAuth::new("https://api.github.com", 1, Secret::new(PRIVATE)).unwrap()
            )
            .contains("PRIVATE")
        );
    }
}
