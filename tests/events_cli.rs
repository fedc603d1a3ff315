//! `--events` end to end: events reach the file while the review runs, and SIGINT /
//! SIGTERM end the file with a cancelled `run_finished` record and exit 130 / 143.

use crate::common::wait::{DEADLINE, wait_until};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::cli::{self, KEY};
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, Reply, Wire};

const BASE: &str = "pub fn average(values: &[i32]) -> i32 {\n    let sum: i32 = values.iter().sum();\n    sum / values.len() as i32\n}\n";
const HEAD: &str = "pub fn average(values: &[i32]) -> i32 {\n    let sum: i32 = values.iter().sum();\n    sum / values.len() as i32\n}\n\npub fn ratio(a: i32, b: i32) -> i32 {\n    a / b\n}\n";

fn feature_repo() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("src/calc.rs", BASE);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("src/calc.rs", HEAD);
    repo.commit("add ratio");
    repo
}

fn events_in(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("every line is a whole JSON object"))
        .collect()
}

/// Waits until `check` holds ([`wait_until`]); fails the test if it never does.
async fn eventually(what: &str, check: impl FnMut() -> bool) {
    assert!(
        wait_until(check).await,
        "{what} did not happen within {DEADLINE:?}"
    );
}

/// Sends `signal` (`INT`, `TERM`) to `child` and waits at most 20 s for it to exit.
async fn stop_with(child: &mut tokio::process::Child, signal: &str) -> std::process::ExitStatus {
    let pid = child.id().expect("pid").to_string();
    let killed = tokio::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .await
        .expect("kill");
    assert!(killed.success());
    tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("redline exits within 20 s of the signal")
        .expect("wait")
}

/// Starts a review whose second model call is held, waits until it is held, checks the
/// events file already has the run so far, sends `signal`, and checks the ending.
async fn cancelled_by(signal: &str, expected_code: i32) {
    let repo = feature_repo();
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![
            Reply::tool("c1", "read_file", json!({"path": "src/calc.rs"})),
            // Held until the run is stopped.
            Reply::Never,
        ],
    )
    .await;
    let events = repo.path().join(".git").join("events.jsonl");
    let output = repo.path().join(".git").join("out.json");
    let mut child = cli::redline_command()
        .arg("review")
        .arg("--repo")
        .arg(repo.path())
        .args([
            "--base",
            "main",
            "--strategy",
            "react",
            "--model",
            "test-model",
        ])
        .args(["--base-url", &server.base_url()])
        .arg("--events")
        .arg(&events)
        .arg("--output")
        .arg(&output)
        .env("REDLINE_API_KEY", KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start redline");
    // Progress is read while the run goes on.
    let progress = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let mut stderr_pipe = child.stderr.take().expect("stderr");
    let reader = {
        let progress = progress.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr_pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                progress.lock().expect("lock").push_str(&text);
            }
        })
    };
    let progress_text = || progress.lock().expect("lock").clone();

    eventually("the second model call", || server.requests().len() >= 2).await;
    // While the reply is held, the file already holds the run so far.
    eventually("run_started and model_call in the events file", || {
        let types: Vec<String> = events_in(&events)
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_default().to_string())
            .collect();
        types.first().map(String::as_str) == Some("run_started")
            && types.iter().any(|t| t == "model_call")
            && types.iter().any(|t| t == "tool_result")
    })
    .await;
    eventually("stderr progress of the first step", || {
        progress_text().contains("read_file src/calc.rs")
    })
    .await;

    let status = stop_with(&mut child, signal).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), reader).await;
    let stderr = progress_text();
    assert_eq!(status.code(), Some(expected_code), "stderr: {stderr}");

    let all = events_in(&events);
    let last = all.last().expect("events");
    assert_eq!(last["type"], "run_finished", "{last}");
    assert_eq!(last["cancelled"], true, "{last}");
    assert_eq!(last["signal"], format!("SIG{signal}"), "{last}");
    assert_eq!(last["stats"]["model_calls"], 1, "{last}");
    assert_eq!(last["stats"]["tool_calls"], 1, "{last}");
    assert!(last["findings"].is_array(), "{last}");
    assert_eq!(
        all.iter().filter(|e| e["type"] == "run_finished").count(),
        1,
        "only the cancelled record ends the run"
    );
    assert!(stderr.contains("cancelled"), "{stderr}");
    assert!(
        !output.exists(),
        "an output file the cancelled run created is removed"
    );
    for text in [
        stderr.as_str(),
        &std::fs::read_to_string(&events).unwrap_or_default(),
    ] {
        assert!(!text.contains(KEY), "key leaked: {text}");
    }
}

#[tokio::test]
async fn sigterm_ends_the_events_with_a_cancelled_record_and_exit_143() {
    cancelled_by("TERM", 143).await;
}

#[tokio::test]
async fn sigint_ends_the_events_with_a_cancelled_record_and_exit_130() {
    cancelled_by("INT", 130).await;
}

/// A plan of two tasks: the one about `src/a.rs` submits a finding, the other's model call
/// is held. SIGINT then ends the run as at a limit: the cancelled record carries the
/// finished task's finding and the run's real counters (cost included), once.
#[tokio::test]
async fn an_interrupted_plan_keeps_what_finished_in_its_cancelled_record() {
    use crate::limits_cli::{PRICING, submit_a, two_file_repo};
    use crate::strategies::is_planner;

    let repo = two_file_repo();
    let config = repo.path().join(".git").join("pricing.toml");
    std::fs::write(&config, PRICING).expect("config");
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_planner(req) {
            Reply::tool(
                "p",
                "submit_plan",
                json!({"tasks": [
                    {"title": "A", "files": ["src/a.rs"], "focus": "arithmetic of a"},
                    {"title": "B", "files": ["lib/b.rs"], "focus": "arithmetic of b"}
                ]}),
            )
        } else if req.first_user_text().contains("+++ b/src/a.rs") {
            submit_a()
        } else {
            Reply::Never
        }
    })
    .await;
    let events = repo.path().join(".git").join("events.jsonl");
    let mut child = cli::redline_command()
        .args(["review", "--repo", &repo.path().display().to_string()])
        .args(["--base", "main", "--strategy", "plan", "--parallel", "2"])
        .args(["--model", "test-model", "--base-url", &server.base_url()])
        .arg("--config")
        .arg(&config)
        .arg("--events")
        .arg(&events)
        .env("REDLINE_API_KEY", KEY)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start redline");
    // The planner's call and task A's have answered; task B's call is held.
    eventually("two answered model calls and a third in flight", || {
        let answered = events_in(&events)
            .iter()
            .filter(|e| e["type"] == "model_call")
            .count();
        answered >= 2 && server.requests().len() >= 3
    })
    .await;
    let status = stop_with(&mut child, "INT").await;
    assert_eq!(status.code(), Some(130));

    let all = events_in(&events);
    let last = all.last().expect("events");
    assert_eq!(
        (&last["type"], &last["cancelled"]),
        (&json!("run_finished"), &json!(true)),
        "{last}"
    );
    let findings = last["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "task A's finding is kept: {last}");
    assert_eq!(findings[0]["path"], "src/a.rs");
    assert_eq!(last["stats"]["limit_reached"], "interrupted", "{last}");
    assert!(
        last["stats"]["cost_usd"].as_f64().is_some_and(|c| c > 0.0),
        "the calls made are priced: {last}"
    );
    assert_eq!(
        all.iter().filter(|e| e["type"] == "run_finished").count(),
        1,
        "only the cancelled record ends the run"
    );
}
