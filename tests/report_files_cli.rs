//! Redline's own files written into a repository's work tree (`redline gitlab
//! --code-quality FILE`, `redline review --output FILE` and `--events FILE`): a symbolic link the repository
//! carries at FILE, or on the way to it, never carries the write outside; the command
//! fails naming the path, and the file outside keeps its content.

#![cfg(unix)]

use std::path::Path;

use crate::action_cli::{Pr, calc_finding, pull_request_repo};
use crate::common::cli::{KEY, redline_command};
use crate::common::git::TempRepo;
use crate::common::gitlab_mock::GitLabMock;
use crate::common::model_server::{ModelServer, Reply, Wire};
use crate::gitlab_cli::{GitLabJob, TOKEN, merge_request, run_gitlab_writing};

/// What the file outside the workspace holds, and must still hold (JSON, so that reading
/// the report back through the link parses).
const VICTIM: &str = "{\"victim\": true}";

/// A file outside any workspace, with [`VICTIM`] in it.
fn victim() -> (tempfile::TempDir, std::path::PathBuf) {
    let outside = tempfile::tempdir().expect("tmp");
    let victim = outside.path().join("victim.json");
    std::fs::write(&victim, VICTIM).expect("write");
    (outside, victim)
}

/// The merge request pipeline's job of `pr`.
fn job<'a>(pr: &'a Pr, gl: &'a GitLabMock, model: &'a ModelServer) -> GitLabJob<'a> {
    GitLabJob {
        workspace: pr.repo.path(),
        base: &pr.base,
        head: &pr.head,
        gl,
        model,
        token: Some(TOKEN),
    }
}

fn link(target: &Path, at: &Path) {
    std::os::unix::fs::symlink(target, at).expect("symlink");
}

#[tokio::test]
async fn gitlab_code_quality_refuses_a_link_at_the_report_or_on_its_way() {
    let pr = pull_request_repo();
    let gl = GitLabMock::start(TOKEN).await;
    merge_request(&gl, &pr.base, &pr.head, 8);
    let reply = vec![Reply::tool(
        "s",
        "submit_review",
        serde_json::json!({"findings": [calc_finding(7, "Division by zero in ratio")], "summary": "Adds ratio."}),
    )];
    let (outside, victim) = victim();
    // The clone holds a link where the job writes its report, and a directory link.
    let at_report = pr.repo.path().join("gl-code-quality-report.json");
    link(&victim, &at_report);
    let reports = pr.repo.path().join("reports");
    link(outside.path(), &reports);
    for report in [at_report, reports.join("code-quality.json")] {
        let model = ModelServer::start(Wire::OpenAi, reply.clone()).await;
        let run = run_gitlab_writing(&report, &job(&pr, &gl, &model), &[]).await;
        assert_ne!(run.code, 0, "{}: {}", report.display(), run.stdout);
        assert!(
            run.stderr.contains("nothing was written") && run.stderr.contains("leads outside"),
            "{}",
            run.stderr
        );
        assert_eq!(std::fs::read_to_string(&victim).expect("victim"), VICTIM);
        let outside_files: Vec<_> = std::fs::read_dir(outside.path()).expect("dir").collect();
        assert_eq!(outside_files.len(), 1, "nothing new outside");
    }
    // A path the job names outside its clone is its own choice: written there.
    let elsewhere = tempfile::tempdir().expect("tmp");
    let report = elsewhere.path().join("gl-code-quality-report.json");
    let model = ModelServer::start(Wire::OpenAi, reply).await;
    let run = run_gitlab_writing(&report, &job(&pr, &gl, &model), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.code_quality.is_some_and(|r| r.is_array()));
}

#[tokio::test]
async fn review_output_and_events_refuse_a_link_in_the_repository_before_any_model_call() {
    let repo = TempRepo::new();
    repo.write("src/lib.rs", "pub fn f() {}\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("src/lib.rs", "pub fn f() -> u8 { 1 }\n");
    repo.commit("change");
    let (_outside, victim) = victim();
    let at = repo.path().join("review.json");
    link(&victim, &at);
    for flag in ["--output", "--events"] {
        let output = redline_command()
            .args(["review", "--repo", &repo.path().display().to_string()])
            .args(["--base", "main", "--base-url", "http://127.0.0.1:9/v1"])
            .args([
                "--model",
                "test-model",
                "--no-transcript",
                "--format",
                "json",
            ])
            .arg(flag)
            .arg(&at)
            .env("REDLINE_API_KEY", KEY)
            .output()
            .await
            .expect("run redline");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{flag}: {stderr}");
        assert!(stderr.contains("nothing was written"), "{flag}: {stderr}");
        assert!(!stderr.contains("127.0.0.1:9"), "no model call: {stderr}");
        assert_eq!(std::fs::read_to_string(&victim).expect("victim"), VICTIM);
    }
}
