//! The same pull request reviewed by `redline action` and by `redline serve`'s runner:
//! the same model requests, the same findings, the same published review and summary.

use serde_json::{Value, json};

use crate::common::cli;
use crate::common::github_mock::GitHubMock;
use crate::settings::support::{SERVER_MODEL, pull_request_repo, run_app, scripted_model};

fn pull_request_event(base: &str, head: &str) -> Value {
    json!({
        "action": "opened",
        "number": 7,
        "pull_request": {
            "number": 7,
            "draft": false,
            "base": {"sha": base, "ref": "main", "repo": {"full_name": "octo/demo"}},
            "head": {"sha": head, "ref": "feature", "repo": {"full_name": "octo/demo"}}
        },
        "repository": {"full_name": "octo/demo", "name": "demo", "owner": {"login": "octo"}}
    })
}

/// The issue comments' bodies.
fn comment_bodies(gh: &GitHubMock) -> Vec<String> {
    gh.issue_comments()
        .iter()
        .filter_map(|c| c["body"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn action_and_app_publish_the_same_review() {
    let config = "instructions = \"Mind integer division.\"\nmax_comments = 1\nrequest_changes = \"major\"\n";
    let (repo, base, head) = pull_request_repo(Some(config));

    let action_gh = GitHubMock::start().await;
    let action_model = scripted_model().await;
    cli::action_on_pull_request(
        repo.path(),
        &pull_request_event(&base, &head),
        &action_gh.url(),
        &action_model.base_url(),
        SERVER_MODEL,
    )
    .await;

    let app_gh = GitHubMock::start().await;
    let app_model = scripted_model().await;
    run_app(repo.path(), &base, &head, &app_gh, &app_model, 1).await;

    let bodies = |model: &crate::common::model_server::ModelServer| {
        model
            .requests()
            .into_iter()
            .map(|r| r.body)
            .collect::<Vec<_>>()
    };
    // Two review calls, then the verifier's.
    let action_requests = bodies(&action_model);
    assert_eq!(action_requests.len(), 3);
    assert!(
        action_requests[0]["messages"]
            .to_string()
            .contains("Mind integer division.")
    );
    assert_eq!(
        action_requests,
        bodies(&app_model),
        "the same model requests"
    );

    let (action_reviews, app_reviews) = (action_gh.reviews(), app_gh.reviews());
    assert_eq!(action_reviews.len(), 1);
    assert_eq!(action_reviews[0]["event"], "REQUEST_CHANGES");
    assert_eq!(
        action_reviews[0]["comments"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(action_reviews, app_reviews, "the same review");
    let action_comments = comment_bodies(&action_gh);
    assert_eq!(action_comments.len(), 1, "one summary comment");
    assert!(
        action_comments[0].contains("Rounds down"),
        "the finding over max_comments is in the summary"
    );
    assert_eq!(action_comments, comment_bodies(&app_gh), "the same summary");
}
