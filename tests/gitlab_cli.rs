//! `redline gitlab` end to end: the GitLab mock (which refuses what GitLab refuses), the
//! scripted model server, and a temporary git repository as `CI_PROJECT_DIR`.

use std::path::Path;

use serde_json::{Value, json};

use crate::action_cli::{
    GitDaemon, HEAD, HEAD2_EXTRA, calc_finding, pull_request_event, pull_request_repo, run_action,
};
use crate::common::cli::{self, KEY};
use crate::common::github_mock::GitHubMock;
use crate::common::gitlab_mock::{DiffLineSpec, GitLabMock, MergeRequestSpec};
use crate::common::model_server::{ModelServer, Reply, Wire};

pub(crate) const TOKEN: &str = "glpat-test-token-abcdefghijkl";
pub(crate) const PROJECT: u64 = 42;
pub(crate) const IID: u64 = 7;
const CALC: &str = "src/calc.rs";

pub(crate) struct GitLabRun {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) code_quality: Option<Value>,
}

/// Runs `redline gitlab --code-quality FILE` as a merge request pipeline's job does.
pub(crate) async fn run_gitlab(
    workspace: &Path,
    base: &str,
    head: &str,
    gl: &GitLabMock,
    model: &ModelServer,
    token: Option<&str>,
) -> GitLabRun {
    run_gitlab_with(workspace, base, head, gl, model, token, &[]).await
}

/// [`run_gitlab`] with these variables set too.
async fn run_gitlab_with(
    workspace: &Path,
    base: &str,
    head: &str,
    gl: &GitLabMock,
    model: &ModelServer,
    token: Option<&str>,
    vars: &[(&str, &str)],
) -> GitLabRun {
    let dir = tempfile::tempdir().expect("tmp");
    let report = dir.path().join("gl-code-quality-report.json");
    let job = GitLabJob {
        workspace,
        base,
        head,
        gl,
        model,
        token,
    };
    run_gitlab_writing(&report, &job, vars).await
}

/// What a merge request pipeline's job is given.
pub(crate) struct GitLabJob<'a> {
    pub(crate) workspace: &'a Path,
    pub(crate) base: &'a str,
    pub(crate) head: &'a str,
    pub(crate) gl: &'a GitLabMock,
    pub(crate) model: &'a ModelServer,
    pub(crate) token: Option<&'a str>,
}

/// `redline gitlab --code-quality REPORT` in `job`, with these variables set too.
pub(crate) async fn run_gitlab_writing(
    report: &Path,
    job: &GitLabJob<'_>,
    vars: &[(&str, &str)],
) -> GitLabRun {
    let mut command = cli::redline_command();
    command
        .arg("gitlab")
        .arg("--code-quality")
        .arg(report)
        .env("CI_PROJECT_ID", PROJECT.to_string())
        .env("CI_MERGE_REQUEST_IID", IID.to_string())
        .env("CI_MERGE_REQUEST_DIFF_BASE_SHA", job.base)
        .env("CI_COMMIT_SHA", job.head)
        .env("CI_PROJECT_DIR", job.workspace)
        .env("CI_API_V4_URL", job.gl.api_url())
        .env("REDLINE_BASE_URL", job.model.base_url())
        .env("REDLINE_MODEL", "test-model")
        .env("REDLINE_API_KEY", KEY)
        .env("REDLINE_STRATEGY", "react");
    if let Some(token) = job.token {
        command.env("GITLAB_TOKEN", token);
    }
    command.envs(vars.iter().copied());
    let output = command.output().await.expect("run redline gitlab");
    let run = GitLabRun {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        code_quality: std::fs::read_to_string(report)
            .ok()
            .map(|text| serde_json::from_str(&text).expect("the report is JSON")),
    };
    for text in [&run.stdout, &run.stderr] {
        assert!(
            !text.contains(KEY) && !text.contains(TOKEN),
            "secret leaked: {text}"
        );
    }
    run
}

/// The merge request of `pull_request_repo()` (base: 4 lines; head adds lines 5 to 8).
pub(crate) fn merge_request(gl: &GitLabMock, base: &str, head: &str, new_lines: u32) {
    gl.add_merge_request(PROJECT, IID, MergeRequestSpec::new(base, head));
    let mut lines: Vec<DiffLineSpec> = (1..=4).map(|n| DiffLineSpec::context(CALC, n, n)).collect();
    lines.extend((5..=new_lines).map(|n| DiffLineSpec::added(CALC, 5, n)));
    gl.set_diff(PROJECT, IID, lines);
}

fn markers(body: &str) -> Vec<String> {
    redline::forge::parse_markers(body)
}

fn finding_reply(findings: Vec<Value>) -> Vec<Reply> {
    vec![Reply::tool(
        "s",
        "submit_review",
        json!({"findings": findings, "summary": "Adds ratio."}),
    )]
}

#[tokio::test]
async fn a_first_run_posts_discussions_and_one_note_and_later_runs_nothing_twice() {
    let pr = pull_request_repo();
    let gl = GitLabMock::start(TOKEN).await;
    merge_request(&gl, &pr.base, &pr.head, 8);
    let outside = json!({"path": "README.md", "line": 1, "severity": "minor", "category": "style", "title": "Terse README", "body": "Say more."});
    let ranged = json!({"path": CALC, "start_line": 6, "line": 7, "severity": "major", "category": "bug", "title": "Unchecked divisor", "body": "b may be 0.", "suggestion": "pub fn ratio(a: i32, b: i32) -> Option<i32> {\n    a.checked_div(b)\n"});
    let model = ModelServer::start(
        Wire::OpenAi,
        finding_reply(vec![
            calc_finding(7, "Division by zero in ratio"),
            ranged,
            outside,
        ]),
    )
    .await;
    let run = run_gitlab(pr.repo.path(), &pr.base, &pr.head, &gl, &model, Some(TOKEN)).await;
    assert_eq!(
        run.code, 0,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );

    let discussions = gl.diff_discussions(PROJECT, IID);
    assert_eq!(discussions.len(), 2, "{discussions:#?}");
    let single = &discussions[0]["notes"][0];
    assert_eq!(single["position"]["new_line"], 7);
    assert_eq!(single["position"]["new_path"], CALC);
    assert_eq!(single["position"]["head_sha"], pr.head.as_str());
    let range = &discussions[1]["notes"][0];
    assert_eq!(range["position"]["line_range"]["start"]["new_line"], 6);
    let body = range["body"].as_str().unwrap_or_default();
    assert!(body.contains("```suggestion:-1+0\n"), "{body}");
    let notes = gl.notes(PROJECT, IID);
    assert_eq!(notes.len(), 1, "one summary note");
    let summary = notes[0]["body"].as_str().unwrap_or_default();
    assert!(
        summary.contains("README.md"),
        "the finding off the diff is in the summary: {summary}"
    );
    // The head's commit status: running, then the verdict (`fail_on` is `never`).
    let statuses = gl.statuses(PROJECT, &pr.head);
    let states: Vec<&str> = statuses
        .iter()
        .filter_map(|s| s["status"].as_str())
        .collect();
    assert_eq!(states, ["running", "success"], "{statuses:#?}");
    assert_eq!(statuses[1]["name"], "redline");
    assert_eq!(
        statuses[1]["description"],
        "3 findings: 1 critical, 1 major, 1 minor"
    );

    // The Code Quality report lists every finding, with the fingerprints of the comments.
    let report = run.code_quality.expect("a Code Quality report");
    let entries = report.as_array().expect("an array");
    assert_eq!(entries.len(), 3, "{report:#}");
    let critical = entries
        .iter()
        .find(|e| e["description"] == "Division by zero in ratio")
        .expect("entry");
    assert_eq!(critical["severity"], "critical");
    assert_eq!(critical["check_name"], "redline/bug");
    assert_eq!(
        critical["location"],
        json!({"path": CALC, "lines": {"begin": 7}})
    );
    let posted: Vec<String> = discussions
        .iter()
        .flat_map(|d| markers(d["notes"][0]["body"].as_str().unwrap_or_default()))
        .collect();
    assert!(
        posted.contains(
            &critical["fingerprint"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        ),
        "{posted:?}"
    );
    let readme = entries
        .iter()
        .find(|e| e["location"]["path"] == "README.md")
        .expect("entry");
    assert_eq!(readme["severity"], "minor");

    // The same head again: nothing is written, the model is not asked.
    let writes = gl.writes().len();
    let run = run_gitlab(pr.repo.path(), &pr.base, &pr.head, &gl, &model, Some(TOKEN)).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(gl.writes().len(), writes, "a rerun posts nothing");
    assert_eq!(model.review_requests().len(), 1);

    // A new push raising the same finding again: no new discussion; the note is edited.
    pr.repo.write(CALC, format!("{HEAD}{HEAD2_EXTRA}"));
    let head2 = pr.repo.commit("add percent");
    merge_request(&gl, &pr.base, &head2, 12);
    let model2 = ModelServer::start(
        Wire::OpenAi,
        finding_reply(vec![calc_finding(7, "Division by zero in ratio")]),
    )
    .await;
    let run = run_gitlab(pr.repo.path(), &pr.base, &head2, &gl, &model2, Some(TOKEN)).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        gl.diff_discussions(PROJECT, IID).len(),
        2,
        "nothing posted twice"
    );
    let notes = gl.notes(PROJECT, IID);
    assert_eq!(notes.len(), 1, "the note is edited, not posted again");
    assert!(
        notes[0]["body"]
            .as_str()
            .unwrap_or_default()
            .contains(&head2),
        "the note records the new head"
    );
    let new_writes: Vec<_> = gl.writes()[writes..]
        .iter()
        .filter(|w| !w.path.contains("/statuses/"))
        .cloned()
        .collect();
    assert_eq!(new_writes.len(), 1, "{new_writes:#?}");
    assert_eq!(new_writes[0].method, "PUT");
    let states: Vec<Value> = gl
        .statuses(PROJECT, &head2)
        .iter()
        .map(|s| s["status"].clone())
        .collect();
    assert_eq!(states, ["running", "success"]);
}

#[tokio::test]
async fn the_commit_status_fails_with_the_review_or_by_fail_on() {
    let pr = pull_request_repo();
    let gl = GitLabMock::start(TOKEN).await;
    merge_request(&gl, &pr.base, &pr.head, 8);
    let model = ModelServer::start_with(Wire::OpenAi, |_, index| match index {
        0 => Reply::Error {
            status: 400,
            headers: Vec::new(),
            body: json!({"error": {"message": "bad request"}}).to_string(),
        },
        _ => Reply::tool(
            "s",
            "submit_review",
            json!({"findings": [calc_finding(7, "Division by zero in ratio")], "summary": "s"}),
        ),
    })
    .await;
    let fail_on = [("REDLINE_FAIL_ON", "major")];
    let vars = fail_on.as_slice();
    let run = run_gitlab_with(
        pr.repo.path(),
        &pr.base,
        &pr.head,
        &gl,
        &model,
        Some(TOKEN),
        vars,
    )
    .await;
    assert_ne!(run.code, 0, "{}", run.stdout);
    let statuses = gl.statuses(PROJECT, &pr.head);
    let last = statuses.last().expect("a status");
    assert_eq!(last["status"], "failed", "{statuses:#?}");
    let description = last["description"].as_str().unwrap_or_default();
    assert!(
        description.starts_with("failed: ") && description.contains("400"),
        "{description}"
    );

    let run = run_gitlab_with(
        pr.repo.path(),
        &pr.base,
        &pr.head,
        &gl,
        &model,
        Some(TOKEN),
        vars,
    )
    .await;
    assert_eq!(run.code, 1, "a finding at fail_on: {}", run.stdout);
    let states: Vec<Value> = gl
        .statuses(PROJECT, &pr.head)
        .iter()
        .map(|s| s["status"].clone())
        .collect();
    assert_eq!(states, ["running", "failed", "running", "failed"]);
    let last = gl.statuses(PROJECT, &pr.head).pop().expect("a status");
    assert_eq!(
        last["description"],
        "1 finding: 1 critical; fails at major or above"
    );
}

#[tokio::test]
async fn a_position_gitlab_refuses_moves_the_finding_to_the_summary() {
    let pr = pull_request_repo();
    let gl = GitLabMock::start(TOKEN).await;
    // GitLab's diff of the merge request stops at line 6: line 7 is not a line of it.
    merge_request(&gl, &pr.base, &pr.head, 6);
    let model = ModelServer::start(
        Wire::OpenAi,
        finding_reply(vec![calc_finding(7, "Division by zero in ratio")]),
    )
    .await;
    let run = run_gitlab(pr.repo.path(), &pr.base, &pr.head, &gl, &model, Some(TOKEN)).await;
    assert_eq!(
        run.code, 0,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert!(gl.diff_discussions(PROJECT, IID).is_empty());
    let refused = gl
        .writes()
        .iter()
        .filter(|w| w.path.ends_with("/discussions"))
        .count();
    assert_eq!(refused, 1, "the discussion was tried once");
    let notes = gl.notes(PROJECT, IID);
    assert_eq!(notes.len(), 1);
    let summary = notes[0]["body"].as_str().unwrap_or_default();
    assert!(
        summary.contains("Division by zero in ratio")
            && summary.contains("GitLab could not place it"),
        "{summary}"
    );
}

#[tokio::test]
async fn a_pipeline_on_another_commit_than_the_head_posts_no_discussion() {
    let pr = pull_request_repo();
    let gl = GitLabMock::start(TOKEN).await;
    merge_request(&gl, &pr.base, &pr.head, 8);
    // A newer push: the merge request's head is no longer the pipeline's commit.
    gl.add_merge_request(
        PROJECT,
        IID,
        MergeRequestSpec::new(&pr.base, &"e".repeat(40)),
    );
    let model = ModelServer::start(
        Wire::OpenAi,
        finding_reply(vec![calc_finding(7, "Division by zero in ratio")]),
    )
    .await;
    let run = run_gitlab(pr.repo.path(), &pr.base, &pr.head, &gl, &model, Some(TOKEN)).await;
    assert_eq!(
        run.code, 0,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert!(
        gl.diff_discussions(PROJECT, IID).is_empty(),
        "no position on another diff"
    );
    let notes = gl.notes(PROJECT, IID);
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0]["body"]
            .as_str()
            .unwrap_or_default()
            .contains("Division by zero in ratio")
    );
}

#[tokio::test]
async fn positions_name_the_merge_requests_own_diff_refs() {
    let pr = pull_request_repo();
    let gl = GitLabMock::start(TOKEN).await;
    merge_request(&gl, &pr.base, &pr.head, 8);
    // The target branch moved on since the merge base (start_sha is not base_sha); the
    // mock refuses a position whose SHAs are not exactly the merge request's diff_refs.
    let mut spec = MergeRequestSpec::new(&pr.base, &pr.head);
    spec.start_sha = "0".repeat(40);
    gl.add_merge_request(PROJECT, IID, spec);
    let model = ModelServer::start(
        Wire::OpenAi,
        finding_reply(vec![calc_finding(7, "Division by zero in ratio")]),
    )
    .await;
    let run = run_gitlab(pr.repo.path(), &pr.base, &pr.head, &gl, &model, Some(TOKEN)).await;
    assert_eq!(
        run.code, 0,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    let posted = gl.diff_discussions(PROJECT, IID);
    assert_eq!(
        posted.len(),
        1,
        "positions name the merge request's own diff_refs"
    );
    assert_eq!(
        posted[0]["notes"][0]["position"]["start_sha"],
        "0".repeat(40)
    );
}

#[tokio::test]
async fn a_resolved_discussion_is_not_raised_again_when_its_line_changes() {
    let pr = pull_request_repo();
    let gl = GitLabMock::start(TOKEN).await;
    merge_request(&gl, &pr.base, &pr.head, 8);
    let model = ModelServer::start(
        Wire::OpenAi,
        finding_reply(vec![calc_finding(7, "Division by zero in ratio")]),
    )
    .await;
    let run = run_gitlab(pr.repo.path(), &pr.base, &pr.head, &gl, &model, Some(TOKEN)).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    gl.resolve_discussions_with(PROJECT, IID, "Division by zero in ratio");
    // The line changes (a new fingerprint), the concern stays: resolved means dismissed.
    pr.repo
        .write(CALC, HEAD.replace("    a / b\n", "    a / b // fast\n"));
    let head2 = pr.repo.commit("comment");
    merge_request(&gl, &pr.base, &head2, 8);
    let model2 = ModelServer::start(
        Wire::OpenAi,
        finding_reply(vec![calc_finding(7, "Division by zero in ratio")]),
    )
    .await;
    let run = run_gitlab(pr.repo.path(), &pr.base, &head2, &gl, &model2, Some(TOKEN)).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        gl.diff_discussions(PROJECT, IID).len(),
        1,
        "the resolved finding is not posted again"
    );
}

#[tokio::test]
async fn fail_on_fails_the_job_after_posting_and_a_missing_or_wrong_token_is_exit_2() {
    let pr = pull_request_repo();
    let gl = GitLabMock::start(TOKEN).await;
    merge_request(&gl, &pr.base, &pr.head, 8);
    let model = ModelServer::start(
        Wire::OpenAi,
        finding_reply(vec![calc_finding(7, "Division by zero")]),
    )
    .await;

    let run = run_gitlab(pr.repo.path(), &pr.base, &pr.head, &gl, &model, None).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("GITLAB_TOKEN"), "{}", run.stderr);
    let run = run_gitlab(
        pr.repo.path(),
        &pr.base,
        &pr.head,
        &gl,
        &model,
        Some("glpat-wrong-token-0000"),
    )
    .await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("401"), "{}", run.stderr);
    // The token is named, with what it needs.
    assert!(
        run.stderr.contains("GITLAB_TOKEN") && run.stderr.contains("`api` scope"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("glpat-wrong-token-0000"),
        "{}",
        run.stderr
    );
    assert!(
        model.requests().is_empty(),
        "no model call before GitLab answers"
    );

    let mut command = cli::redline_command();
    let output = command
        .args(["gitlab", "--fail-on", "major"])
        .env("CI_PROJECT_ID", PROJECT.to_string())
        .env("CI_MERGE_REQUEST_IID", IID.to_string())
        .env("CI_MERGE_REQUEST_DIFF_BASE_SHA", &pr.base)
        .env("CI_COMMIT_SHA", &pr.head)
        .env("CI_PROJECT_DIR", pr.repo.path())
        .env("CI_API_V4_URL", gl.api_url())
        .env("GITLAB_TOKEN", TOKEN)
        .env("REDLINE_BASE_URL", model.base_url())
        .env("REDLINE_API_KEY", KEY)
        .output()
        .await
        .expect("run");
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        gl.diff_discussions(PROJECT, IID).len(),
        1,
        "posted before failing"
    );
}

/// Every missing variable is named in one run, not one run at a time.
#[tokio::test]
async fn every_missing_variable_is_named_at_once() {
    let output = cli::redline_command()
        .arg("gitlab")
        .env("CI_MERGE_REQUEST_IID", IID.to_string())
        .output()
        .await
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for name in ["CI_PROJECT_ID", "CI_API_V4_URL", "GITLAB_TOKEN"] {
        assert!(stderr.contains(name), "{name}: {stderr}");
    }
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[tokio::test]
async fn outside_a_merge_request_pipeline_there_is_nothing_to_review() {
    let output = cli::redline_command()
        .arg("gitlab")
        .output()
        .await
        .expect("run");
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stdout).contains("not a merge request pipeline"));
}

#[tokio::test]
async fn the_same_change_gets_the_same_requests_and_findings_on_github_and_gitlab() {
    let pr = pull_request_repo();
    let script = || {
        finding_reply(vec![
            calc_finding(7, "Division by zero in ratio"),
            json!({"path": "README.md", "line": 1, "severity": "minor", "category": "style", "title": "Old code", "body": "Outside the diff."}),
        ])
    };
    let mut event = pull_request_event("pull_request/opened.payload.json", &pr.base, &pr.head);
    // The issue the change closes reaches the model the same way on both forges.
    event["pull_request"]["body"] = json!("Adds ratio.\n\nFixes #12");
    let (issue_title, issue_body) = ("Ratios are missing", "We need a/b in calc.");
    let title = event["pull_request"]["title"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let body = event["pull_request"]["body"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    let gh = GitHubMock::start().await;
    gh.add_issue("octo", "demo", 12, issue_title, issue_body);
    let gh_model = ModelServer::start(Wire::OpenAi, script()).await;
    let run = run_action(pr.repo.path(), "pull_request", &event, &gh, &gh_model).await;
    assert_eq!(run.code, 0, "{}", run.stderr);

    let gl = GitLabMock::start(TOKEN).await;
    merge_request(&gl, &pr.base, &pr.head, 8);
    gl.add_merge_request(
        PROJECT,
        IID,
        MergeRequestSpec::new(&pr.base, &pr.head).with_text(&title, &body),
    );
    let closed = json!({"iid": 12, "title": issue_title, "description": issue_body});
    gl.set_closes_issues(PROJECT, IID, vec![closed]);
    let gl_model = ModelServer::start(Wire::OpenAi, script()).await;
    let run = run_gitlab(
        pr.repo.path(),
        &pr.base,
        &pr.head,
        &gl,
        &gl_model,
        Some(TOKEN),
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);

    let (gh_requests, gl_requests) = (gh_model.requests(), gl_model.requests());
    assert_eq!(gh_requests.len(), gl_requests.len());
    for (a, b) in gh_requests.iter().zip(&gl_requests) {
        assert_eq!(a.body, b.body, "the model sees the same requests");
    }
    let prompt = gl_requests[0].body.to_string();
    assert!(
        prompt.contains("We need a/b in calc."),
        "the closed issue is in the intent: {prompt}"
    );
    let inline =
        |bodies: Vec<String>| -> Vec<String> { bodies.iter().flat_map(|b| markers(b)).collect() };
    let gh_inline = inline(
        gh.review_comments()
            .iter()
            .map(|c| c["body"].as_str().unwrap_or_default().to_string())
            .collect(),
    );
    let gl_inline = inline(
        gl.diff_discussions(PROJECT, IID)
            .iter()
            .map(|d| {
                d["notes"][0]["body"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect(),
    );
    assert_eq!(gh_inline.len(), 1);
    assert_eq!(
        gh_inline, gl_inline,
        "the same findings inline, with the same fingerprints"
    );
    // The finding off the diff is a note of the summary on both.
    let gh_summary = gh.issue_comments()[0]["body"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let gl_summary = gl.notes(PROJECT, IID)[0]["body"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        gh_summary.contains("Old code") && gl_summary.contains("Old code"),
        "{gh_summary}\n{gl_summary}"
    );
}

#[tokio::test]
async fn a_rate_limited_write_is_sent_again_after_retry_after() {
    let pr = pull_request_repo();
    let gl = GitLabMock::start(TOKEN).await;
    merge_request(&gl, &pr.base, &pr.head, 8);
    gl.rate_limit_next_write(1);
    let model = ModelServer::start(
        Wire::OpenAi,
        finding_reply(vec![calc_finding(7, "Division by zero in ratio")]),
    )
    .await;
    let run = run_gitlab(pr.repo.path(), &pr.base, &pr.head, &gl, &model, Some(TOKEN)).await;
    assert_eq!(
        run.code, 0,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    let discussion_posts = gl
        .writes()
        .iter()
        .filter(|w| w.path.ends_with("/discussions"))
        .count();
    assert_eq!(discussion_posts, 2, "the refused write was sent again");
    assert_eq!(gl.diff_discussions(PROJECT, IID).len(), 1);
}

#[tokio::test]
async fn a_shallow_clone_is_deepened_until_base_and_head_meet() {
    // GitLab's default GIT_DEPTH clones the head only: the base commit is fetched.
    let pr = pull_request_repo();
    let daemon = GitDaemon::serve(pr.repo.path());
    let clone_dir = tempfile::tempdir().expect("tmp");
    let workspace = clone_dir.path().join("ws");
    let status = std::process::Command::new("git")
        .args([
            "clone",
            "--quiet",
            "--depth",
            "1",
            "--branch",
            "feature",
            &daemon.url,
        ])
        .arg(&workspace)
        .status()
        .expect("git clone");
    assert!(status.success());
    let shallow = git2::Repository::open(&workspace).expect("open");
    let base = git2::Oid::from_str(&pr.base).expect("oid");
    assert!(shallow.is_shallow() && shallow.find_commit(base).is_err());
    let gl = GitLabMock::start(TOKEN).await;
    merge_request(&gl, &pr.base, &pr.head, 8);
    let model = ModelServer::start(
        Wire::OpenAi,
        finding_reply(vec![calc_finding(7, "Division by zero in ratio")]),
    )
    .await;
    let run = run_gitlab(&workspace, &pr.base, &pr.head, &gl, &model, Some(TOKEN)).await;
    assert_eq!(
        run.code, 0,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert_eq!(gl.diff_discussions(PROJECT, IID).len(), 1);
    let first = model.requests()[0].body.to_string();
    assert!(
        first.contains("pub fn ratio"),
        "the change is reviewed: {first}"
    );
}
