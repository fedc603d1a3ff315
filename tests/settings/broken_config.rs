//! A broken `.redline.toml` in the base commit is reported, not silently replaced by
//! defaults: the App posts one comment naming the key and does not review; the Action
//! fails with exit 2 and a `::error` annotation.

use serde_json::json;

use super::support::{pull_request_repo, review_by_the_app, scripted_model};
use crate::common::cli::{self, KEY};
use crate::common::github_mock::GitHubMock;

const BROKEN: &str = "instructions = \"be brief\"\n\nmax_steps = \"many\"\n";

#[tokio::test]
async fn the_app_posts_one_comment_naming_the_key_and_does_not_review() {
    // Three runs: the first, a retry, a redelivery.
    let observed = review_by_the_app(Some(BROKEN), 3).await;
    assert!(observed.requests.is_empty(), "no model call");
    assert!(observed.reviews.is_empty(), "no review");
    assert_eq!(observed.comments.len(), 1, "{:?}", observed.comments);
    let body = observed.comments[0]["body"].as_str().unwrap_or_default();
    assert!(
        body.contains(
            ".redline.toml:3:1: max_steps: expected an integer from 1 to 200, found a string"
        ),
        "{body}"
    );

    let observed = review_by_the_app(Some("strategy = \"fastest\"\n"), 2).await;
    assert!(observed.requests.is_empty() && observed.reviews.is_empty());
    assert_eq!(observed.comments.len(), 1, "{:?}", observed.comments);
    let body = observed.comments[0]["body"].as_str().unwrap_or_default();
    assert!(
        body.contains(".redline.toml:1:1: strategy: unknown strategy `fastest`"),
        "{body}"
    );
}

#[tokio::test]
async fn the_action_fails_with_an_annotation_naming_the_key() {
    let (repo, base, head) = pull_request_repo(Some(BROKEN));
    let gh = GitHubMock::start().await;
    let model = scripted_model().await;
    let dir = tempfile::tempdir().expect("tmp");
    let event = json!({
        "action": "opened",
        "number": 7,
        "pull_request": {
            "number": 7,
            "draft": false,
            "base": {"sha": base, "ref": "main", "repo": {"full_name": "octo/demo"}},
            "head": {"sha": head, "ref": "feature", "repo": {"full_name": "octo/demo"}}
        },
        "repository": {"full_name": "octo/demo", "name": "demo", "owner": {"login": "octo"}}
    });
    let event_path = dir.path().join("event.json");
    std::fs::write(&event_path, event.to_string()).expect("event");
    let output = cli::redline_command()
        .arg("action")
        .env("GITHUB_EVENT_NAME", "pull_request")
        .env("GITHUB_EVENT_PATH", &event_path)
        .env("GITHUB_TOKEN", "ghs_test_token")
        .env("GITHUB_API_URL", gh.url())
        .env("GITHUB_WORKSPACE", repo.path())
        .env("REDLINE_BASE_URL", model.base_url())
        .env("REDLINE_MODEL", "test-model")
        .env("REDLINE_API_KEY", KEY)
        .output()
        .await
        .expect("run redline action");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    let annotation = stdout
        .lines()
        .find(|line| line.starts_with("::error::"))
        .unwrap_or_else(|| panic!("no ::error annotation: {stdout}"));
    assert!(
        annotation.contains("max_steps") && annotation.contains(".redline.toml"),
        "{annotation}"
    );
    assert!(model.requests().is_empty() && gh.reviews().is_empty());
}
