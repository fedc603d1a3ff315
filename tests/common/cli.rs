//! Runs the `redline` binary the way a user does, with a clean environment.

use std::path::Path;

use serde_json::Value;

/// The API key every end-to-end test uses; it must never show up in output.
pub const KEY: &str = "sk-test-SECRET-0123456789abcdef";

/// What one run of the binary left behind.
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error (progress and errors).
    pub stderr: String,
    /// The `--events` file's contents.
    pub events: String,
}

impl Run {
    /// The JSON on stdout of a run that must have exited 0 (its stderr in the failure).
    pub fn success_json(&self) -> Value {
        assert_eq!(self.code, 0, "stderr: {}", self.stderr);
        self.json()
    }

    /// Standard output as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}): {}\nstderr: {}",
                self.stdout, self.stderr
            )
        })
    }

    /// The parsed events, each checked to carry `type` and `ts`.
    pub fn events(&self) -> Vec<Value> {
        self.events
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("event is JSON"))
            .inspect(|e| {
                assert!(
                    e["ts"].is_string() && e["type"].is_string(),
                    "event without ts/type: {e}"
                )
            })
            .collect()
    }

    /// The events' types, in order.
    pub fn event_types(&self) -> Vec<String> {
        self.events()
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Fails when the API key leaked anywhere.
    pub fn assert_no_key(&self) {
        for (name, text) in [
            ("stdout", &self.stdout),
            ("stderr", &self.stderr),
            ("events", &self.events),
        ] {
            assert!(
                !text.contains(KEY) && !text.contains("0123456789abcdef"),
                "API key leaked into {name}: {text}"
            );
        }
    }
}

/// `redline review --repo REPO --base main --provider P --base-url URL --model test-model --events FILE ARGS…`
pub async fn review(repo: &Path, base_url: &str, provider: &str, extra: &[&str]) -> Run {
    let events_path = repo.join(".git").join("redline-events.jsonl");
    let mut args: Vec<String> = [
        "review",
        "--repo",
        &repo.display().to_string(),
        "--base",
        "main",
        "--provider",
        provider,
        "--base-url",
        base_url,
        "--model",
        "test-model",
        "--events",
        &events_path.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    let output = redline_command()
        .args(&args)
        .env("REDLINE_API_KEY", KEY)
        .output()
        .await
        .expect("run redline");
    run_of(
        output,
        std::fs::read_to_string(&events_path).unwrap_or_default(),
    )
}

fn run_of(output: std::process::Output, events: String) -> Run {
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        events,
    }
}

/// `redline review --repo REPO --base main --base-url URL ARGS…` with the key and nothing
/// else chosen (no model, no events file), for checks of those flags themselves.
pub async fn review_bare(repo: &Path, base_url: &str, extra: &[&str]) -> Run {
    let output = redline_command()
        .args(["review", "--repo", &repo.display().to_string()])
        .args(["--base", "main", "--base-url", base_url])
        .args(extra)
        .env("REDLINE_API_KEY", KEY)
        .output()
        .await
        .expect("run redline");
    run_of(output, String::new())
}

/// `redline action` on a `pull_request` event `event` for the checkout `workspace`, against
/// the mock GitHub at `github_url` and the model server at `model_url` serving `model`;
/// asserts exit 0 and returns the process's output.
pub async fn action_on_pull_request(
    workspace: &Path,
    event: &Value,
    github_url: &str,
    model_url: &str,
    model: &str,
) -> std::process::Output {
    let dir = tempfile::tempdir().expect("tmp");
    let event_path = dir.path().join("event.json");
    std::fs::write(&event_path, event.to_string()).expect("event");
    let output = redline_command()
        .arg("action")
        .env("GITHUB_EVENT_NAME", "pull_request")
        .env("GITHUB_EVENT_PATH", &event_path)
        .env("GITHUB_TOKEN", "ghs_test_token")
        .env("GITHUB_API_URL", github_url)
        .env("GITHUB_WORKSPACE", workspace)
        .env("REDLINE_BASE_URL", model_url)
        .env("REDLINE_MODEL", model)
        .env("REDLINE_API_KEY", KEY)
        .output()
        .await
        .expect("run redline action");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    output
}

/// The binary with every variable that could change its behaviour removed.
pub fn redline_command() -> tokio::process::Command {
    isolated(tokio::process::Command::new(env!("CARGO_BIN_EXE_redline")))
}

/// [`redline_command`] allowed to run on CPU 0 only (`taskset`, as on a one-core machine), or
/// `None` when `taskset` is not installed.
pub fn redline_command_on_one_core() -> Option<tokio::process::Command> {
    let taskset = std::process::Command::new("taskset")
        .args(["-c", "0", "true"])
        .status()
        .is_ok_and(|status| status.success());
    if !taskset {
        return None;
    }
    let mut command = tokio::process::Command::new("taskset");
    command.args(["-c", "0", env!("CARGO_BIN_EXE_redline")]);
    Some(isolated(command))
}

/// `command` with every variable that could change the binary's behaviour removed.
fn isolated(mut command: tokio::process::Command) -> tokio::process::Command {
    for var in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "REDLINE_API_KEY",
        "REDLINE_PROVIDER",
        "REDLINE_MODEL",
        "REDLINE_BASE_URL",
        "REDLINE_STRATEGY",
        "REDLINE_FAIL_ON",
        "REDLINE_CONFIG",
        "REDLINE_MAX_COST",
        "REDLINE_MAX_TOKENS",
        "REDLINE_TIMEOUT",
        "REDLINE_VERIFY",
        "REDLINE_VERIFY_MODEL",
        "GITHUB_TOKEN",
        "GITHUB_EVENT_NAME",
        "GITHUB_EVENT_PATH",
        "GITLAB_API_URL",
        "GITLAB_TOKEN",
        "GITLAB_WEBHOOK_SECRET",
        "NO_COLOR",
        "CLICOLOR",
        "CLICOLOR_FORCE",
    ] {
        command.env_remove(var);
    }
    // A model server running on this machine must not change a test either; discovery
    // tests remove this.
    command.env("REDLINE_NO_DISCOVERY", "1");
    // The user's own config file must not change a test; tests that need one set their own.
    command.env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("redline-tests-no-user-config"),
    );
    // Run transcripts of tests stay out of the user's state directory.
    command.env(
        "XDG_STATE_HOME",
        std::env::temp_dir().join("redline-tests-state"),
    );
    command.stdin(std::process::Stdio::null());
    command
}
