//! Which forges `redline serve` takes webhooks from: the GitHub App
//! (`GITHUB_APP_ID` or `GITHUB_APP_CLIENT_ID`, `GITHUB_APP_PRIVATE_KEY` or
//! `GITHUB_APP_PRIVATE_KEY_PATH`, `GITHUB_WEBHOOK_SECRET`), GitLab (`GITLAB_API_URL`,
//! `GITLAB_TOKEN`, `GITLAB_WEBHOOK_SECRET`), or both.
//!
//! Invariants: a forge is set up when any of its settings is set, and then all of them
//! must be (a half-configured forge is an error naming what is missing, never silently
//! off); with neither set up, the error names both sets; one forge's settings are never
//! asked for when only the other's are given. Secrets appear in no error.

use std::time::Duration;

use anyhow::{Context, anyhow, bail};

use crate::config;
use crate::github::{AppAuth, GitHubError, api_url_from_env};
use crate::gitlab::GitLabClient;
use crate::llm::Secret;

/// GitHub App settings (any of them set means the App is meant).
const GITHUB_VARS: [&str; 5] = [
    "GITHUB_APP_ID",
    "GITHUB_APP_CLIENT_ID",
    "GITHUB_APP_PRIVATE_KEY",
    "GITHUB_APP_PRIVATE_KEY_PATH",
    "GITHUB_WEBHOOK_SECRET",
];

/// GitLab settings (any of them set means GitLab is meant).
pub(super) const GITLAB_VARS: [&str; 3] =
    ["GITLAB_API_URL", "GITLAB_TOKEN", "GITLAB_WEBHOOK_SECRET"];

/// How long the server waits at start for a forge to say who it is.
const IDENTITY_TIMEOUT: Duration = Duration::from_secs(10);

/// The GitHub App's credentials.
pub(super) struct GitHubForge {
    /// Signs App JWTs and caches installation tokens.
    pub(super) auth: AppAuth,
    /// `GITHUB_WEBHOOK_SECRET`.
    pub(super) secret: Secret,
}

/// GitLab's settings.
pub(super) struct GitLabForge {
    /// The API client (`GITLAB_API_URL`, `GITLAB_TOKEN`).
    pub(super) client: GitLabClient,
    /// `GITLAB_TOKEN`, for fetching over HTTPS.
    pub(super) token: Secret,
    /// `GITLAB_WEBHOOK_SECRET`.
    pub(super) secret: Secret,
}

/// The forges the server is set up for (at least one).
pub(super) struct Forges {
    pub(super) github: Option<GitHubForge>,
    pub(super) gitlab: Option<GitLabForge>,
}

/// Whether any of `vars` is set (an empty variable counts as unset).
pub(super) fn any_set(vars: &[&str]) -> bool {
    vars.iter().any(|var| config::env_var(var).is_some())
}

impl Forges {
    /// The forges the environment sets up; an error naming what is missing when a forge
    /// is half set up or none is.
    pub(super) fn from_env() -> anyhow::Result<Forges> {
        let (github, gitlab) = (any_set(&GITHUB_VARS), any_set(&GITLAB_VARS));
        if !github && !gitlab {
            bail!(
                "neither the GitHub App nor GitLab is configured: set GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY_PATH (or GITHUB_APP_PRIVATE_KEY) and GITHUB_WEBHOOK_SECRET for the App, or GITLAB_API_URL, GITLAB_TOKEN and GITLAB_WEBHOOK_SECRET for GitLab"
            );
        }
        Ok(Forges {
            github: github.then(github_forge).transpose()?,
            gitlab: gitlab.then(gitlab_forge).transpose()?,
        })
    }
}

fn github_forge() -> anyhow::Result<GitHubForge> {
    let app_id = required("GITHUB_APP_ID")
        .or_else(|_| required("GITHUB_APP_CLIENT_ID"))
        .map_err(|_| anyhow!("GITHUB_APP_ID (or GITHUB_APP_CLIENT_ID) is not set"))?;
    let key = private_key()?;
    let secret = Secret::new(required("GITHUB_WEBHOOK_SECRET")?);
    let auth = AppAuth::new(&api_url_from_env(), &app_id, key).map_err(|e| {
        let setting = match e {
            GitHubError::Credentials(_) => "GITHUB_APP_PRIVATE_KEY",
            _ => "GITHUB_API_URL",
        };
        anyhow::Error::new(e).context(setting)
    })?;
    Ok(GitHubForge { auth, secret })
}

fn gitlab_forge() -> anyhow::Result<GitLabForge> {
    let api_url = required("GITLAB_API_URL")?;
    let token = Secret::new(
        required("GITLAB_TOKEN")
            .context("GITLAB_TOKEN must be an access token with the `api` scope")?,
    );
    let secret = Secret::new(required("GITLAB_WEBHOOK_SECRET")?);
    let client = GitLabClient::new(&api_url, token.clone()).context("GITLAB_API_URL")?;
    Ok(GitLabForge {
        client,
        token,
        secret,
    })
}

/// The token's username (`GET /user`), so that Redline knows its own notes and `@name`
/// mentions; `None`, with a warning, when GitLab does not say within a few seconds.
pub(super) async fn gitlab_username(client: &GitLabClient) -> Option<String> {
    match tokio::time::timeout(IDENTITY_TIMEOUT, client.own_username()).await {
        Ok(Ok(name)) if !name.is_empty() => Some(name),
        Ok(Ok(_)) => {
            tracing::warn!("GET /user named no user; notes are not answered until it does");
            None
        }
        Ok(Err(error)) => {
            tracing::warn!(%error, "the GitLab token's user is unknown; notes are not answered until GitLab names it");
            None
        }
        Err(_) => {
            tracing::warn!(
                "GET /user timed out; notes are not answered until GitLab names the user"
            );
            None
        }
    }
}

/// Asks `GET /user` again in the background, less and less often, until GitLab names the
/// token's user (a note needing it meanwhile asks too; until then no note is answered).
pub(super) fn learn_gitlab_username_later(client: GitLabClient) {
    tokio::spawn(async move {
        let mut wait = Duration::from_secs(5);
        loop {
            tokio::time::sleep(wait).await;
            if let Ok(name) = client.own_username().await {
                tracing::info!(user = %crate::text::logged(&name), "the GitLab token's user is known now");
                return;
            }
            wait = (wait * 2).min(Duration::from_secs(300));
        }
    });
}

/// A required setting from the environment; the error names it.
pub(super) fn required(name: &str) -> anyhow::Result<String> {
    config::env_var(name).ok_or_else(|| anyhow!("{name} is not set"))
}

/// The App's private key, from `GITHUB_APP_PRIVATE_KEY` or the file named by `GITHUB_APP_PRIVATE_KEY_PATH`.
pub(super) fn private_key() -> anyhow::Result<Secret> {
    if let Ok(pem) = required("GITHUB_APP_PRIVATE_KEY") {
        // Platforms that cannot hold newlines in variables pass them escaped.
        return Ok(Secret::new(pem.replace("\\n", "\n")));
    }
    let path = required("GITHUB_APP_PRIVATE_KEY_PATH").map_err(|_| {
        anyhow!("neither GITHUB_APP_PRIVATE_KEY nor GITHUB_APP_PRIVATE_KEY_PATH is set")
    })?;
    std::fs::read_to_string(&path)
        .map(Secret::new)
        .with_context(|| format!("GITHUB_APP_PRIVATE_KEY_PATH: cannot read {path}"))
}
