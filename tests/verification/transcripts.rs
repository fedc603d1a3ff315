//! The transcript records the verification: `redline replay` reproduces it offline (and
//! `replay --no-verify` shows what it dropped), and `--resume` does not ask the verifier
//! again what it already answered.

use std::path::{Path, PathBuf};

use super::support::{
    DROP_REASON, FABRICATED, REAL, fabricated_finding, real_finding, reviewer_and_verifier, submit,
};
use crate::action_cli::pull_request_repo;
use crate::common::cli;
use crate::common::model_server::{ModelServer, Wire};

fn transcript(dir: &Path) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("runs dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.remove(0)
}

async fn replay(file: &Path, extra: &[&str]) -> cli::Run {
    let output = cli::redline_command()
        .arg("replay")
        .arg(file)
        .args(extra)
        .output()
        .await
        .expect("run redline replay");
    cli::Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        events: String::new(),
    }
}

async fn server() -> ModelServer {
    let review = submit(vec![real_finding(7), fabricated_finding(6)]);
    ModelServer::start_with(Wire::OpenAi, reviewer_and_verifier(review))
        .await
        .scripting_verifier()
}

#[tokio::test]
async fn replay_reproduces_the_verification_offline() {
    let pr = pull_request_repo();
    let runs = tempfile::tempdir().expect("runs");
    let server = server().await;
    let runs_dir = runs.path().display().to_string();
    let run = cli::review(
        pr.repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--runs-dir", &runs_dir],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["dropped"][0]["reason"], DROP_REASON, "{out}");
    let file = transcript(runs.path());
    let text = std::fs::read_to_string(&file).expect("transcript");
    assert!(text.contains("\"type\":\"verdict\""), "verdicts recorded");
    drop(server);

    // Offline: the verifier's answer comes from the transcript.
    let replayed = replay(&file, &["--format", "json"]).await;
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert_eq!(replayed.stdout, run.stdout);

    // Without verification the dropped finding is back, shown as a difference.
    let unverified = replay(&file, &["--format", "json", "--no-verify"]).await;
    assert_eq!(unverified.code, 1, "{}", unverified.stderr);
    let out: serde_json::Value = serde_json::from_str(&unverified.stdout).expect("JSON");
    assert_eq!(out["findings"].as_array().map(Vec::len), Some(2), "{out}");
    assert!(
        unverified
            .stderr
            .contains(&format!("+ critical src/calc.rs:6 {FABRICATED}")),
        "{}",
        unverified.stderr
    );
}

/// Keeps the transcript up to and including its last model call (the verifier's), as a
/// crash right after the verifier answered would leave it.
fn cut_after_the_last_model_call(file: &Path) {
    let text = std::fs::read_to_string(file).expect("transcript");
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let last = lines
        .iter()
        .rposition(|l| l.contains("\"record\":\"model_call\""))
        .expect("a model call");
    assert!(
        lines[last].contains("You verify review findings"),
        "the last call is the verifier's"
    );
    std::fs::write(file, lines[..=last].concat()).expect("write");
}

#[tokio::test]
async fn a_resumed_run_does_not_ask_the_verifier_again() {
    let pr = pull_request_repo();
    let runs = tempfile::tempdir().expect("runs");
    let server = server().await;
    let runs_dir = runs.path().display().to_string();
    let first = cli::review(
        pr.repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--runs-dir", &runs_dir],
    )
    .await;
    let first = first.success_json();
    let file = transcript(runs.path());
    cut_after_the_last_model_call(&file);
    let (reviews, verifiers) = (
        server.review_requests().len(),
        server.verifier_requests().len(),
    );
    assert_eq!(verifiers, 1);
    let resumed = cli::review(
        pr.repo.path(),
        &server.base_url(),
        "openai",
        &[
            "--format",
            "json",
            "--runs-dir",
            &runs_dir,
            "--resume",
            "latest",
        ],
    )
    .await;
    let resumed = resumed.success_json();
    assert_eq!(
        server.review_requests().len(),
        reviews,
        "no review call again"
    );
    assert_eq!(
        server.verifier_requests().len(),
        verifiers,
        "the verifier's answer came from the transcript"
    );
    assert_eq!(resumed["findings"], first["findings"]);
    assert_eq!(resumed["findings"][0]["title"], REAL);
    assert_eq!(resumed["dropped"], first["dropped"]);
}
