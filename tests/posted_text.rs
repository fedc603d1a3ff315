//! What Redline posts holds nothing a forge acts on: on GitLab, no line reads as a quick
//! action (`/approve`, `/merge`, ...), even inside a suggestion; on both forges, a model's
//! finding and summary ping nobody, show no remote image and carry no live HTML.

use serde_json::{Value, json};

use crate::action_cli::{pull_request_event, pull_request_repo, run_action};
use crate::common::github_mock::GitHubMock;
use crate::common::gitlab_mock::GitLabMock;
use crate::common::model_server::{ModelServer, Reply, Wire};
use crate::gitlab_cli::{IID, PROJECT, TOKEN, merge_request, run_gitlab};

/// A model's finding body and summary that try every trick.
const HOSTILE: &str = "Looks fine to me.\n/approve\n  /merge\n@someone please look. ![x](https://evil.example/x.png) <img src=https://evil.example/y.png>";

fn hostile_reply() -> Vec<Reply> {
    let finding = json!({"path": "src/calc.rs", "line": 7, "severity": "critical", "category": "bug",
        "title": "Division by zero @someone <b>now</b>", "body": HOSTILE,
        "suggestion": "    a.checked_div(b).unwrap_or(0)\n/merge\n"});
    let outside = json!({"path": "README.md", "line": 1, "severity": "minor", "category": "style",
        "title": "Terse README", "body": HOSTILE});
    let summary = format!("Adds ratio.\n/close\n{HOSTILE}");
    vec![Reply::tool(
        "s",
        "submit_review",
        json!({"findings": [finding, outside], "summary": summary}),
    )]
}

/// Whether a line reads as a GitLab quick action.
fn quick_action_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|line| {
            let mut rest = line.trim_start().chars();
            rest.next() == Some('/') && rest.next().is_some_and(|c| c.is_ascii_alphabetic())
        })
        .collect()
}

/// Asserts `body` has no live mention, remote image or raw HTML of the model's.
fn assert_inert(body: &str) {
    assert!(!body.contains("@someone"), "a live mention: {body}");
    assert!(
        body.contains("@\u{2060}someone"),
        "the text is kept: {body}"
    );
    assert!(!body.contains("![x]("), "an image: {body}");
    assert!(
        !body.contains("<img") && !body.contains("<b>"),
        "raw HTML: {body}"
    );
}

#[tokio::test]
async fn nothing_redline_posts_on_gitlab_reads_as_a_quick_action_or_pings_anyone() {
    let pr = pull_request_repo();
    let gl = GitLabMock::start(TOKEN).await;
    merge_request(&gl, &pr.base, &pr.head, 8);
    let model = ModelServer::start(Wire::OpenAi, hostile_reply()).await;
    let run = run_gitlab(pr.repo.path(), &pr.base, &pr.head, &gl, &model, Some(TOKEN)).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let writes = gl.writes();
    let bodies: Vec<&str> = writes
        .iter()
        .filter_map(|w| w.body["body"].as_str().or(w.body["description"].as_str()))
        .collect();
    assert!(bodies.len() >= 2, "{writes:?}");
    for body in &bodies {
        assert!(quick_action_lines(body).is_empty(), "{body}");
    }
    let discussion = gl.diff_discussions(PROJECT, IID);
    let finding = discussion[0]["notes"][0]["body"]
        .as_str()
        .unwrap_or_default();
    assert_inert(finding);
    assert!(finding.contains("\u{2060}/approve"), "{finding}");
    // The suggestion holds a line GitLab would act on: shown as code, never applicable.
    assert!(
        !finding.contains("```suggestion") && finding.contains("```text"),
        "{finding}"
    );
    let summary = gl.notes(PROJECT, IID)[0]["body"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_inert(&summary);
    assert!(summary.contains("\u{2060}/close"), "{summary}");
}

#[tokio::test]
async fn a_model_s_finding_and_summary_ping_nobody_on_github() {
    let pr = pull_request_repo();
    let gh = GitHubMock::start().await;
    let model = ModelServer::start(Wire::OpenAi, hostile_reply()).await;
    let event = pull_request_event("pull_request/opened.payload.json", &pr.base, &pr.head);
    let run = run_action(pr.repo.path(), "pull_request", &event, &gh, &model).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let reviews = gh.reviews();
    let comments: Vec<Value> = reviews
        .iter()
        .flat_map(|r| r["comments"].as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(comments.len(), 1, "{reviews:?}");
    let comment = comments[0]["body"].as_str().unwrap_or_default();
    assert_inert(comment);
    // GitHub has no quick actions: the suggestion stays applicable, as written.
    assert!(
        comment.contains("```suggestion\n    a.checked_div(b).unwrap_or(0)\n/merge\n```"),
        "{comment}"
    );
    let summaries = gh.issue_comments();
    let summary = summaries[0]["body"].as_str().unwrap_or_default();
    assert_inert(summary);
}
