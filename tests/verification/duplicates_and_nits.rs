//! A problem two plan tasks both report is posted once (the other recorded as merged), and
//! nit findings are listed, collapsed, in the summary instead of inline, on GitHub and on
//! GitLab, unless `inline_at` says otherwise.

use serde_json::{Value, json};

use super::support::{DROP_REASON, REAL, listed, real_finding, submit, verdicts_dropping};
use crate::action_cli::{BASE, HEAD, pull_request_event, pull_request_repo, run_action};
use crate::common::cli;
use crate::common::git::TempRepo;
use crate::common::github_mock::GitHubMock;
use crate::common::gitlab_mock::GitLabMock;
use crate::common::model_server::{ModelServer, RecordedRequest, Reply, Wire};
use crate::limits_cli::two_file_repo;
use crate::strategies::is_planner;

/// A plan of two tasks (one per file) that both report the division by zero in
/// `src/a.rs`, in other words.
fn two_tasks_one_problem(request: &RecordedRequest, _: usize) -> Reply {
    if is_planner(request) {
        return Reply::tool(
            "p",
            "submit_plan",
            json!({"tasks": [
                {"title": "A", "files": ["src/a.rs"], "focus": "arithmetic of a"},
                {"title": "B", "files": ["lib/b.rs"], "focus": "arithmetic of b"}
            ]}),
        );
    }
    let finding = match request.first_user_text().contains("+++ b/src/a.rs") {
        true => json!({"path": "src/a.rs", "line": 3, "severity": "critical", "category": "bug",
            "title": "Division by zero", "body": "`x / 0` always panics: the divisor is the literal zero."}),
        false => json!({"path": "src/a.rs", "line": 3, "severity": "major", "category": "bug",
            "title": "Every call of a() panics", "body": "The divisor in `x / 0` is zero, so every call panics at runtime."}),
    };
    submit(vec![finding])
}

#[tokio::test]
async fn a_finding_reported_by_two_plan_tasks_is_posted_once() {
    let repo = two_file_repo();
    let server = ModelServer::start_with(Wire::OpenAi, two_tasks_one_problem).await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "plan", "--yes"],
    )
    .await;
    let out = run.success_json();
    let tasks = out["stats"]["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 2, "{out}");
    assert!(tasks.iter().all(|t| t["findings"] == 1), "{out}");
    let findings = out["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "posted once: {out}");
    assert_eq!(findings[0]["title"], "Division by zero");
    assert_eq!(findings[0]["severity"], "critical");
    let merged = out["merged"].as_array().expect("merged");
    assert_eq!(merged.len(), 1, "{out}");
    assert_eq!(merged[0]["title"], "Every call of a() panics");
    assert_eq!(merged[0]["into"]["title"], "Division by zero");
    assert_eq!(merged[0]["into"]["path"], "src/a.rs");
    // The verifier is asked about the one finding that is left.
    let verifier = server.verifier_requests();
    assert_eq!(verifier.len(), 1);
    assert_eq!(verifier[0].verifier_ids(), ["F1"]);
    assert_eq!(out["stats"]["verification"]["merged"], 1);
}

/// The title of the nit: true, and cosmetic.
const NIT: &str = "Name the parameters numerator and denominator";

fn nit() -> Value {
    json!({"path": "src/calc.rs", "line": 6, "severity": "nit", "category": "style",
           "title": NIT, "body": "Clearer names."})
}

fn body(comment: &Value) -> &str {
    comment["body"].as_str().unwrap_or_default()
}

/// The Action's pull request with `config` as `.redline.toml` at its base.
pub(super) fn pull_request_with_config(config: &str) -> (TempRepo, String, String) {
    let repo = TempRepo::new();
    repo.write("src/calc.rs", BASE);
    repo.write(".redline.toml", config);
    let base = repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("src/calc.rs", HEAD);
    let head = repo.commit("add ratio");
    (repo, base, head)
}

#[tokio::test]
async fn nits_are_not_inline_comments_by_default_on_github() {
    let pr = pull_request_repo();
    let gh = GitHubMock::start().await;
    let model = ModelServer::start(Wire::OpenAi, vec![submit(vec![real_finding(7), nit()])]).await;
    let event = pull_request_event("pull_request/opened.payload.json", &pr.base, &pr.head);
    let run = run_action(pr.repo.path(), "pull_request", &event, &gh, &model).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let reviews = gh.reviews();
    let comments = reviews[0]["comments"].as_array().expect("comments");
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(body(&comments[0]).contains(REAL));
    let summary = gh.issue_comments();
    let summary = body(&summary[0]);
    let details = summary
        .find("<details><summary>Less severe findings, not posted inline (1)</summary>")
        .expect("a collapsed block");
    let nit_at = summary.find(NIT).expect("the nit is listed");
    assert!(nit_at > details, "{summary}");
    assert!(summary[details..].contains("</details>"), "{summary}");
}

#[tokio::test]
async fn inline_at_nit_posts_nits_inline() {
    let (repo, base, head) = pull_request_with_config("inline_at = \"nit\"\n");
    let gh = GitHubMock::start().await;
    let model = ModelServer::start(Wire::OpenAi, vec![submit(vec![real_finding(7), nit()])]).await;
    let event = pull_request_event("pull_request/opened.payload.json", &base, &head);
    let run = run_action(repo.path(), "pull_request", &event, &gh, &model).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let comments = gh.reviews()[0]["comments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(comments.len(), 2, "{comments:?}");
    let summary = gh.issue_comments();
    assert!(
        !body(&summary[0]).contains("<details>"),
        "{}",
        body(&summary[0])
    );
}

#[tokio::test]
async fn nits_are_not_discussions_by_default_on_gitlab() {
    use crate::gitlab_cli::{IID, PROJECT, TOKEN, merge_request, run_gitlab};
    let pr = pull_request_repo();
    let gl = GitLabMock::start(TOKEN).await;
    merge_request(&gl, &pr.base, &pr.head, 8);
    let model = ModelServer::start(Wire::OpenAi, vec![submit(vec![real_finding(7), nit()])]).await;
    let run = run_gitlab(pr.repo.path(), &pr.base, &pr.head, &gl, &model, Some(TOKEN)).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let discussions = gl.diff_discussions(PROJECT, IID);
    assert_eq!(discussions.len(), 1, "{discussions:#?}");
    let notes = gl.notes(PROJECT, IID);
    let summary = notes
        .iter()
        .map(body)
        .find(|b| b.contains("<details>"))
        .unwrap_or_else(|| panic!("no collapsed block: {notes:?}"));
    assert!(summary.contains(NIT));
}

/// Nits meet the verifier's bar like any finding: one is sent to the verifier with its
/// severity named, and when it is dropped it is posted nowhere, not even in the collapsed
/// block of the summary (nits exempted from verification, or verified but always kept,
/// fail here).
#[tokio::test]
async fn a_nit_is_verified_and_a_dropped_nit_is_posted_nowhere() {
    let pr = pull_request_repo();
    let gh = GitHubMock::start().await;
    let review = submit(vec![real_finding(7), nit()]);
    let model =
        ModelServer::start_with(
            Wire::OpenAi,
            move |request: &RecordedRequest, _| match request.is_verifier() {
                true => verdicts_dropping(request, NIT),
                false => review.clone(),
            },
        )
        .await
        .scripting_verifier();
    let event = pull_request_event("pull_request/opened.payload.json", &pr.base, &pr.head);
    let run = run_action(pr.repo.path(), "pull_request", &event, &gh, &model).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let verifier = model.verifier_requests();
    assert_eq!(verifier.len(), 1);
    let asked: Vec<String> = listed(&verifier[0]).into_iter().map(|(_, t)| t).collect();
    assert_eq!(asked, [NIT, REAL], "both are verified, in line order");
    let text = verifier[0].user_text();
    assert!(text.contains("· severity nit · category style\n"), "{text}");
    let comments = gh.reviews()[0]["comments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(body(&comments[0]).contains(REAL));
    let summaries: Vec<String> = gh
        .issue_comments()
        .iter()
        .map(|c| body(c).to_string())
        .collect();
    assert_eq!(summaries.len(), 1, "{summaries:?}");
    assert!(!summaries[0].contains("<details>"), "{}", summaries[0]);
    assert!(
        summaries[0].contains("verification dropped 1 finding"),
        "{}",
        summaries[0]
    );
    let sarif = run.sarif.as_ref().map(Value::to_string).unwrap_or_default();
    for posted in [&summaries[0], &sarif, &run.summary] {
        assert!(
            !posted.contains(NIT) && !posted.contains(DROP_REASON),
            "{posted}"
        );
    }
}
