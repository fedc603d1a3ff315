//! `redline check`: verifies the settings without reviewing anything and prints one line
//! per check (`ok`, `FAIL` with what to fix, or `skip`).
//!
//! Checks: the model answers one tiny call (settings exactly as `redline review` resolves
//! them here: flags and environment, the repository's `.redline.toml`, the user's config
//! file, local discovery); and, when App settings are present or `--app` is given, as
//! `redline serve` reads them: the App key signs a JWT that `GET /app` accepts, the
//! webhook secret is set, and the database migrates; when GitLab settings are present,
//! GitLab accepts the token (`GET /user`) and its webhook secret is set. `check` never creates a database:
//! a SQLite file that does not exist yet is checked by migrating one in memory. Invariant: no secret (key, token, webhook secret, database
//! password) appears in the output: every line, failures included, has every URL
//! in it masked (user info and credential-looking query parameters).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::review::{ConfigChoice, local_settings, repository_config};
use super::serve::database_url;
use super::serve_forges::{GITLAB_VARS, any_set};
use super::serve_forges::{private_key, required};
use super::{CheckArgs, EXIT_ERROR, EXIT_OK};
use crate::config::ModelSettings;
use crate::config::settings::SettingFlags;
use crate::github::{AppAuth, GitHubError, api_url_from_env};
use crate::gitlab::GitLabClient;
use crate::llm::{
    CallTimeouts, ChatRequest, Message, ProviderSettings, RetryPolicy, Secret, build_client,
};
use crate::queue::Queue;

/// Variables whose presence means this machine is set up as the App (the GitHub App's,
/// then the database's).
const APP_VARS: [&str; 6] = [
    "GITHUB_APP_ID",
    "GITHUB_APP_CLIENT_ID",
    "GITHUB_APP_PRIVATE_KEY",
    "GITHUB_APP_PRIVATE_KEY_PATH",
    "GITHUB_WEBHOOK_SECRET",
    "REDLINE_DATABASE_URL",
];

/// The reply budget of the model check: enough for "OK", small enough to cost nothing.
const CHECK_REPLY_TOKENS: u32 = 16;

/// The result of one check.
enum Outcome {
    Ok(String),
    Fail { problem: String, fix: String },
    Skip(String),
}

/// One printed line.
struct Line {
    name: &'static str,
    outcome: Outcome,
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.outcome {
            Outcome::Ok(text) => write!(f, "ok    {}: {text}", self.name),
            Outcome::Fail { problem, fix } => {
                write!(f, "FAIL  {}: {problem}; fix: {fix}", self.name)
            }
            Outcome::Skip(text) => write!(f, "skip  {}: {text}", self.name),
        }
    }
}

fn fail(problem: impl Into<String>, fix: impl Into<String>) -> Outcome {
    Outcome::Fail {
        problem: problem.into(),
        fix: fix.into(),
    }
}

/// Runs `redline check` and returns the exit code: 0 when nothing failed, 2 otherwise.
pub async fn run(args: CheckArgs) -> i32 {
    let mut lines = vec![Line {
        name: "model",
        outcome: check_model(&args).await,
    }];
    let app_configured = APP_VARS.iter().any(|var| required(var).is_ok());
    let gitlab_configured = any_set(&GITLAB_VARS);
    let github_configured = any_set(&APP_VARS[..APP_VARS.len() - 1]);
    if gitlab_configured {
        lines.push(Line {
            name: "gitlab token",
            outcome: check_gitlab_token().await,
        });
        lines.push(Line {
            name: "gitlab webhook secret",
            outcome: check_gitlab_secret(),
        });
    }
    if gitlab_configured && !github_configured {
        let why = "GitLab only: no GitHub App settings in the environment (`redline serve` runs without the App)";
        for name in ["app key", "webhook secret"] {
            lines.push(Line {
                name,
                outcome: Outcome::Skip(why.into()),
            });
        }
        lines.push(Line {
            name: "database",
            outcome: check_database().await,
        });
    } else if args.app || app_configured {
        lines.push(Line {
            name: "app key",
            outcome: check_app_key().await,
        });
        lines.push(Line {
            name: "webhook secret",
            outcome: check_webhook_secret(),
        });
        lines.push(Line {
            name: "database",
            outcome: check_database().await,
        });
    } else {
        let why = "no App settings in the environment (needed by `redline serve` only; pass --app to check them)";
        for name in ["app key", "webhook secret", "database"] {
            lines.push(Line {
                name,
                outcome: Outcome::Skip(why.into()),
            });
        }
    }
    let mut failed = false;
    for line in &lines {
        failed |= matches!(line.outcome, Outcome::Fail { .. });
        println!("{}", crate::text::urls::mask_all(&line.to_string()));
    }
    if failed { EXIT_ERROR } else { EXIT_OK }
}

/// The model settings exactly as `redline review` here would resolve them: flags and
/// `REDLINE_*`, the repository's `.redline.toml` (at `HEAD`, when the current directory
/// is in a repository), the user's config file, and local model discovery.
fn review_model_settings(args: &CheckArgs) -> anyhow::Result<ModelSettings> {
    let flags = SettingFlags {
        model: args.model.flags(),
        ..SettingFlags::default()
    };
    let cwd = std::env::current_dir()?;
    let repository = match crate::repo::discover(&cwd) {
        Ok(root) => {
            let choice = ConfigChoice {
                config: None,
                uncommitted: false,
                quiet: true,
            };
            repository_config(&root, &choice, "HEAD")?
        }
        Err(_) => None,
    };
    Ok(local_settings(flags, "flag", repository)?.model)
}

async fn check_model(args: &CheckArgs) -> Outcome {
    let settings = match review_model_settings(args) {
        Ok(settings) => settings,
        Err(e) => {
            let missing_key = e.chain().any(|cause| {
                matches!(
                    cause.downcast_ref::<crate::config::ConfigError>(),
                    Some(crate::config::ConfigError::MissingApiKey { .. })
                )
            });
            let fix = if missing_key {
                "set the model provider's API key (REDLINE_API_KEY, OPENAI_API_KEY or ANTHROPIC_API_KEY), or point REDLINE_BASE_URL at a local model server"
            } else {
                "set the model as for `redline review`: flags, REDLINE_* variables, `model` in .redline.toml or your config file"
            };
            return fail(super::error_message(&e), fix);
        }
    };
    let where_ = format!(
        "`{}` at {}",
        settings.model,
        crate::text::urls::masked(&settings.base_url)
    );
    let client = build_client(check_provider_settings(&settings), None);
    let request = ChatRequest {
        model: settings.model.clone(),
        messages: vec![Message::user("Reply with the single word OK.")],
        tools: Vec::new(),
        max_tokens: CHECK_REPLY_TOKENS,
        temperature: None,
    };
    match client.complete(&request).await {
        Ok(reply) => Outcome::Ok(format!(
            "{where_} answered ({} prompt + {} completion tokens)",
            reply.usage.prompt_tokens, reply.usage.completion_tokens
        )),
        Err(e) => fail(
            format!("{where_}: {e}"),
            "check the key, --model / REDLINE_MODEL and that --base-url / REDLINE_BASE_URL is reachable from here",
        ),
    }
}

/// The resolved settings with one retry at most: a check should answer soon.
fn check_provider_settings(settings: &ModelSettings) -> ProviderSettings {
    ProviderSettings {
        provider: settings.provider,
        base_url: settings.base_url.clone(),
        api_key: settings.api_key.clone(),
        timeouts: CallTimeouts {
            request: settings.timeouts.request.min(Duration::from_secs(120)),
            ..settings.timeouts
        },
        retry: RetryPolicy {
            max_retries: 1,
            ..RetryPolicy::default()
        },
    }
}

async fn check_app_key() -> Outcome {
    let Ok(app_id) = required("GITHUB_APP_ID").or_else(|_| required("GITHUB_APP_CLIENT_ID")) else {
        return fail(
            "GITHUB_APP_ID (or GITHUB_APP_CLIENT_ID) is not set",
            "set it to the App's id from its settings page",
        );
    };
    let key = match private_key() {
        Ok(key) => key,
        Err(problem) => {
            return fail(
                super::error_message(&problem),
                "set GITHUB_APP_PRIVATE_KEY_PATH to the App's .pem file (or the PEM itself in GITHUB_APP_PRIVATE_KEY)",
            );
        }
    };
    let api_url = api_url_from_env();
    let auth = match AppAuth::new(&api_url, &app_id, key) {
        Ok(auth) => auth,
        Err(GitHubError::Credentials(problem)) => {
            return fail(
                problem,
                "use the private key GitHub generated for the App (a PEM file starting with -----BEGIN RSA PRIVATE KEY-----)",
            );
        }
        Err(e) => {
            return fail(
                format!("GITHUB_API_URL {api_url}: {e}"),
                "fix GITHUB_API_URL",
            );
        }
    };
    match auth.app_client().get_json("/app").await {
        Ok(app) => {
            let slug = app["slug"].as_str().unwrap_or("?");
            Outcome::Ok(format!(
                "GitHub accepted the App JWT (GET /app at {api_url}: `{slug}`)"
            ))
        }
        Err(e @ GitHubError::Api { status: 401, .. }) => fail(
            format!("GitHub refused the App JWT: {e}"),
            "check that GITHUB_APP_ID is this App's id and the key is one of its current private keys, and that this machine's clock is right",
        ),
        // The error names the request (`GET /app failed: …`).
        Err(e) => fail(
            format!("at {api_url}: {e}"),
            "check that GITHUB_API_URL is GitHub's API root (https://api.github.com, or https://HOST/api/v3 on GitHub Enterprise Server) and reachable",
        ),
    }
}

/// `GET /user` with `GITLAB_TOKEN` at `GITLAB_API_URL`, as `redline serve` asks it.
async fn check_gitlab_token() -> Outcome {
    let Ok(api_url) = required("GITLAB_API_URL") else {
        return fail(
            "GITLAB_API_URL is not set",
            "set it to GitLab's API root (https://gitlab.com/api/v4, or https://HOST/api/v4)",
        );
    };
    let Ok(token) = required("GITLAB_TOKEN") else {
        return fail(
            "GITLAB_TOKEN is not set",
            "set it to an access token with the `api` scope and the Developer role or above",
        );
    };
    let client = match GitLabClient::new(&api_url, Secret::new(token)) {
        Ok(client) => client,
        Err(e) => return fail(format!("GITLAB_API_URL: {e}"), "fix GITLAB_API_URL"),
    };
    match client.own_username().await {
        Ok(name) => Outcome::Ok(format!(
            "GitLab accepted the token (GET /user at {api_url}: `{name}`)"
        )),
        Err(e) if e.status() == Some(401) => fail(
            format!("GitLab refused the token: {e}"),
            "use a current access token with the `api` scope in GITLAB_TOKEN",
        ),
        Err(e) => fail(
            format!("GET /user at {api_url}: {e}"),
            "check that GITLAB_API_URL is GitLab's API root (ending in /api/v4) and reachable",
        ),
    }
}

fn check_gitlab_secret() -> Outcome {
    match required("GITLAB_WEBHOOK_SECRET") {
        Ok(_) => Outcome::Ok("GITLAB_WEBHOOK_SECRET is set".into()),
        Err(problem) => fail(
            problem.to_string(),
            "set GITLAB_WEBHOOK_SECRET to the secret token entered in the project's (or group's) webhook settings",
        ),
    }
}

fn check_webhook_secret() -> Outcome {
    match required("GITHUB_WEBHOOK_SECRET") {
        Ok(_) => Outcome::Ok("GITHUB_WEBHOOK_SECRET is set".into()),
        Err(problem) => fail(
            problem.to_string(),
            "set GITHUB_WEBHOOK_SECRET to the secret entered in the App's webhook settings",
        ),
    }
}

async fn check_database() -> Outcome {
    let url = database_url();
    let shown = crate::text::urls::masked(&url);
    if let Some(path) = missing_sqlite_file(&url) {
        return check_new_sqlite(&shown, &path).await;
    }
    match Queue::connect(&url).await {
        Ok(queue) => {
            let outcome = match queue.ping().await {
                Ok(()) => Outcome::Ok(format!(
                    "{shown} migrated and answering ({})",
                    queue.backend()
                )),
                Err(e) => fail(
                    format!("{shown}: {e}"),
                    "check that the database server is up",
                ),
            };
            queue.close().await;
            outcome
        }
        Err(e) => fail(
            format!("REDLINE_DATABASE_URL {shown}: {e}"),
            "set REDLINE_DATABASE_URL to sqlite://PATH (a writable place) or postgres://USER@HOST/DB that this user may create tables in",
        ),
    }
}

/// The file of a SQLite URL when it does not exist yet: `check` never creates it
/// (`redline serve` does, on its first start).
fn missing_sqlite_file(url: &str) -> Option<PathBuf> {
    use std::str::FromStr;
    if !url.starts_with("sqlite:") || url.contains(":memory:") {
        return None;
    }
    let options = sqlx::sqlite::SqliteConnectOptions::from_str(url).ok()?;
    let path = options.get_filename().to_path_buf();
    (!path.as_os_str().is_empty() && path.symlink_metadata().is_err()).then_some(path)
}

/// A SQLite database that does not exist yet: its directory must exist, and the
/// migrations are checked on a database in memory, so nothing is left behind.
async fn check_new_sqlite(shown: &str, path: &Path) -> Outcome {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return fail(
            format!("{shown}: the directory {} does not exist", dir.display()),
            "set REDLINE_DATABASE_URL to sqlite://PATH in an existing, writable directory, or create it",
        );
    }
    match Queue::connect("sqlite::memory:").await {
        Ok(queue) => {
            queue.close().await;
            Outcome::Ok(format!(
                "{shown} does not exist yet; `redline serve` creates it (migrations checked in memory, nothing written)"
            ))
        }
        Err(e) => fail(
            format!("migrating a SQLite database: {e}"),
            "report this: the built-in migrations failed",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_say_what_to_fix() {
        let line = Line {
            name: "webhook secret",
            outcome: fail("GITHUB_WEBHOOK_SECRET is not set", "set it"),
        };
        assert_eq!(
            line.to_string(),
            "FAIL  webhook secret: GITHUB_WEBHOOK_SECRET is not set; fix: set it"
        );
    }
}
