//! A malformed `/redline` command gets one reply with the usage, from the Action and
//! from the App alike (the same grammar), and no review.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::wait_until;

use crate::common::cli::{self, KEY};
use crate::common::github_mock::GitHubMock;
use crate::common::model_server::{ModelServer, Wire};
use crate::serve_cli::Server;
use redline::forge::USAGE;

const BOGUS: &str = "/redline review --strategy plan --now";

fn comment_event(installation: bool) -> Value {
    let name = if installation {
        "created.with-installation.on-pull-request.redline-command.json"
    } else {
        "created.on-pull-request.redline-command.json"
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/webhooks/issue_comment")
        .join(name);
    let mut event: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("JSON");
    event["comment"]["body"] = json!(BOGUS);
    event["repository"]["owner"]["login"] = json!("octo");
    event["repository"]["name"] = json!("demo");
    event["repository"]["full_name"] = json!("octo/demo");
    event
}

fn usage_replies(gh: &GitHubMock) -> Vec<String> {
    gh.issue_comments()
        .iter()
        .filter_map(|c| c["body"].as_str().map(str::to_string))
        .filter(|body| body.contains(USAGE) && body.contains("--now"))
        .collect()
}

#[tokio::test]
async fn the_action_replies_with_the_usage_once() {
    let gh = GitHubMock::start().await;
    gh.set_permission("Codertocat", "write");
    let model = ModelServer::start(Wire::OpenAi, vec![]).await;
    let dir = tempfile::tempdir().expect("tmp");
    let event_path = dir.path().join("event.json");
    std::fs::write(&event_path, comment_event(false).to_string()).expect("event");
    for _ in 0..2 {
        let output = cli::redline_command()
            .arg("action")
            .env("GITHUB_EVENT_NAME", "issue_comment")
            .env("GITHUB_EVENT_PATH", &event_path)
            .env("GITHUB_TOKEN", "ghs_test_token")
            .env("GITHUB_API_URL", gh.url())
            .env("GITHUB_WORKSPACE", dir.path())
            .env("REDLINE_BASE_URL", model.base_url())
            .env("REDLINE_API_KEY", KEY)
            .output()
            .await
            .expect("run redline action");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "{stdout}");
        assert!(stdout.contains("usage"), "{stdout}");
    }
    assert_eq!(usage_replies(&gh).len(), 1, "a rerun does not reply twice");
    assert!(model.requests().is_empty() && gh.reviews().is_empty());
}

#[tokio::test]
async fn the_app_replies_with_the_usage_once() {
    let gh = GitHubMock::start().await;
    gh.set_permission("Codertocat", "write");
    let model = ModelServer::start(Wire::OpenAi, vec![]).await;
    let server = Server::start(&gh, &model).await;
    let body = comment_event(true).to_string().into_bytes();
    let (status, answer) = server.deliver_signed("issue_comment", "c-1", &body).await;
    assert_eq!(status, 202, "{answer}");
    wait_until(|| !usage_replies(&gh).is_empty()).await;
    assert_eq!(usage_replies(&gh).len(), 1);

    // The same comment delivered again (a new delivery id) is answered by the same reply: not posted again.
    let lists_before = comment_lists(&gh);
    let (status, _) = server.deliver_signed("issue_comment", "c-2", &body).await;
    assert_eq!(status, 202);
    wait_until(|| comment_lists(&gh) > lists_before).await;
    assert!(
        comment_lists(&gh) > lists_before,
        "the reply was considered"
    );
    assert_eq!(usage_replies(&gh).len(), 1);
    assert!(model.requests().is_empty() && gh.reviews().is_empty());
}

/// How many times the issue comments were listed (each reply checks them first).
fn comment_lists(gh: &GitHubMock) -> usize {
    gh.requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/issues/1/comments"))
        .count()
}

#[tokio::test]
async fn an_unknown_strategy_in_a_command_is_named_as_the_command_s() {
    let (repo, base, head) = crate::settings::support::pull_request_repo(None);
    let gh = GitHubMock::start().await;
    gh.set_permission("Codertocat", "write");
    gh.add_pull(
        "octo",
        "demo",
        1,
        crate::common::github_mock::PullSpec::new(&base, &head),
    );
    let model = ModelServer::start(Wire::OpenAi, vec![]).await;
    let dir = tempfile::tempdir().expect("tmp");
    let mut event = comment_event(false);
    event["comment"]["body"] = json!("/redline review --strategy fastest");
    let event_path = dir.path().join("event.json");
    std::fs::write(&event_path, event.to_string()).expect("event");
    let output = cli::redline_command()
        .arg("action")
        .env("GITHUB_EVENT_NAME", "issue_comment")
        .env("GITHUB_EVENT_PATH", &event_path)
        .env("GITHUB_TOKEN", "ghs_test_token")
        .env("GITHUB_API_URL", gh.url())
        .env("GITHUB_WORKSPACE", repo.path())
        .env("REDLINE_BASE_URL", model.base_url())
        .env("REDLINE_API_KEY", KEY)
        .output()
        .await
        .expect("run redline action");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.lines().any(|l| l.starts_with("::error::")
            && l.contains("/redline review --strategy: unknown strategy `fastest`")),
        "{stdout}"
    );
    assert!(model.requests().is_empty() && gh.reviews().is_empty());
}
