//! `redline action` on `pull_request_review_comment`: one answer per comment (a rerun sees
//! the answer's marker), and `/redline ignore` remembered in the summary comment.

use std::path::Path;

use serde_json::{Value, json};

use super::support::{
    ANSWER_TEXT, FIRST, PR_BODY, PR_TITLE, PUSHED_CALC, SECOND, answers_in, is_chat, model,
    reply_event,
};
use crate::common::cli::{self, KEY};
use crate::common::github_mock::{GitHubMock, PullSpec};
use crate::common::model_server::ModelServer;
use crate::settings::support::pull_request_repo;

fn pull_request_event(action: &str, base: &str, head: &str) -> Value {
    json!({
        "action": action,
        "number": 7,
        "pull_request": {
            "number": 7, "draft": false,
            "base": {"sha": base, "ref": "main", "repo": {"full_name": "octo/demo"}},
            "head": {"sha": head, "ref": "feature", "repo": {"full_name": "octo/demo"}}
        },
        "repository": {"full_name": "octo/demo", "name": "demo", "owner": {"login": "octo"}}
    })
}

/// Runs `redline action` on `event` named `name`; returns its stdout, asserting exit 0.
async fn run(
    workspace: &Path,
    name: &str,
    event: &[u8],
    gh: &GitHubMock,
    model: &ModelServer,
) -> String {
    let dir = tempfile::tempdir().expect("tmp");
    let event_path = dir.path().join("event.json");
    std::fs::write(&event_path, event).expect("event");
    let output = cli::redline_command()
        .arg("action")
        .env("GITHUB_EVENT_NAME", name)
        .env("GITHUB_EVENT_PATH", &event_path)
        .env("GITHUB_TOKEN", "ghs_test_token")
        .env("GITHUB_API_URL", gh.url())
        .env("GITHUB_WORKSPACE", workspace)
        .env("REDLINE_BASE_URL", model.base_url())
        .env("REDLINE_MODEL", "test-model")
        .env("REDLINE_API_KEY", KEY)
        .output()
        .await
        .expect("run redline action");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn raised(gh: &GitHubMock, title: &str) -> usize {
    gh.review_comments()
        .iter()
        .filter(|c| c["in_reply_to_id"].is_null())
        .filter(|c| c["body"].as_str().is_some_and(|b| b.contains(title)))
        .count()
}

fn root(gh: &GitHubMock, title: &str) -> u64 {
    gh.review_comments()
        .iter()
        .filter(|c| c["body"].as_str().is_some_and(|b| b.contains(title)))
        .find_map(|c| c["id"].as_u64())
        .expect("Redline's comment")
}

#[tokio::test]
async fn the_action_answers_a_reply_once_and_remembers_an_ignore() {
    let (repo, base, head) = pull_request_repo(None);
    let gh = GitHubMock::start().await;
    gh.set_permission("alice", "read");
    gh.add_pull(
        "octo",
        "demo",
        7,
        PullSpec::new(&base, &head).with_text(PR_TITLE, PR_BODY),
    );
    let model = model(false).await;
    let opened = pull_request_event("opened", &base, &head).to_string();
    run(repo.path(), "pull_request", opened.as_bytes(), &gh, &model).await;
    let (first, second) = (root(&gh, FIRST), root(&gh, SECOND));

    let question = "Why would b be zero?";
    let id = gh.add_review_comment("octo", "demo", 7, "alice", question, Some(second));
    let event = reply_event(id, Some(second), "alice", "User", question);
    for _ in 0..2 {
        run(
            repo.path(),
            "pull_request_review_comment",
            &event,
            &gh,
            &model,
        )
        .await;
    }
    let answers = answers_in(&gh, second);
    assert_eq!(
        answers.len(),
        1,
        "a rerun does not answer twice: {answers:?}"
    );
    assert!(answers[0]["body"].to_string().contains(ANSWER_TEXT));
    assert_eq!(model.requests().iter().filter(|r| is_chat(r)).count(), 1);
    let chat = model.requests().into_iter().find(is_chat).expect("chat");
    let told = chat.first_user_text();
    assert!(told.contains(PR_TITLE) && told.contains(PR_BODY), "{told}");

    let ignore = gh.add_review_comment("octo", "demo", 7, "alice", "/redline ignore", Some(first));
    let event = reply_event(ignore, Some(first), "alice", "User", "/redline ignore");
    run(
        repo.path(),
        "pull_request_review_comment",
        &event,
        &gh,
        &model,
    )
    .await;
    assert_eq!(answers_in(&gh, first).len(), 1);
    let summary = gh.issue_comments()[0]["body"].to_string();
    assert!(summary.contains("redline:dismissed="), "{summary}");

    repo.write("src/calc.rs", PUSHED_CALC);
    let pushed = repo.commit("guard the divisions");
    let synchronize = pull_request_event("synchronize", &base, &pushed).to_string();
    run(
        repo.path(),
        "pull_request",
        synchronize.as_bytes(),
        &gh,
        &model,
    )
    .await;
    assert_eq!(raised(&gh, FIRST), 1, "ignored: not raised again");
    assert_eq!(
        raised(&gh, SECOND),
        2,
        "the control finding is raised again"
    );
    let summary = gh.issue_comments()[0]["body"].to_string();
    assert!(
        summary.contains("redline:dismissed="),
        "kept over edits: {summary}"
    );
}
