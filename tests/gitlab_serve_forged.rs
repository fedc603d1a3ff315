//! `redline serve` on GitLab against forged deliveries: a project's token opens that
//! project only (whatever path the body names), a note is acted on as GitLab has it (its
//! author and text read by id; a note id that does not exist is ignored), and Redline never
//! answers its own note, even when `GET /user` failed at start.

use serde_json::json;

use crate::common::gitlab_mock::BOT;
use crate::common::wait_until;
use crate::gitlab_serve_cli::{
    GitLabServer, IID, PATH, PROJECT, SECRET, hook_token, merge_request, model_calls,
    note_event as note, replies, reviewed,
};
use crate::gitlab_webhook::gitlab_fixture;
use crate::threads::support::model;

#[tokio::test]
async fn a_token_opens_its_own_project_only_whatever_path_the_body_names() {
    let (repo, gl, open) = merge_request(None).await;
    gl.add_project(43, "other/app", &repo.path().display().to_string());
    let model = model(false).await;
    let server = GitLabServer::start(&gl, &model).await;
    // The master secret is no project's token.
    let (status, answer) = server
        .deliver("Merge Request Hook", "f-1", SECRET, &open)
        .await;
    assert_eq!(status, 401, "{answer}");
    // Project 43's maintainer knows 43's token: naming 42's path with 43's id is refused.
    let other = redline::gitlab::project_hook_token(&redline::llm::Secret::new(SECRET), 43);
    let (status, answer) = server
        .deliver("Merge Request Hook", "f-2", &other, &open)
        .await;
    assert_eq!(status, 401, "43's token for 42's delivery: {answer}");
    let mut forged = open.clone();
    forged["project"]["id"] = json!(43);
    let (status, answer) = server
        .deliver("Merge Request Hook", "f-3", &other, &forged)
        .await;
    assert_eq!(status, 400, "{answer}\n{}", server.log());
    assert!(answer.contains("not project 43's"), "{answer}");
    // A path with a line break or NUL is refused before it is logged or stored.
    let mut broken = open.clone();
    broken["project"]["path_with_namespace"] = json!(format!("{PATH}\nINFO forged line\u{0}"));
    let (status, answer) = server
        .deliver("Merge Request Hook", "f-4", &hook_token(), &broken)
        .await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        !server.log().contains("\nINFO forged line"),
        "{}",
        server.log()
    );
    assert_eq!(model_calls(&model, false), 0, "nothing was reviewed");
    assert!(gl.writes().is_empty(), "{:?}", gl.writes());
}

#[tokio::test]
async fn a_note_is_acted_on_as_gitlab_has_it_and_a_forged_note_id_is_ignored() {
    let (_repo, gl, open) = merge_request(None).await;
    let model = model(false).await;
    let server = GitLabServer::start(&gl, &model).await;
    let (discussion, _, _) = reviewed(&gl, &server, &open).await;
    // A note id that is not in the discussion, "by" a Developer: nothing is dismissed.
    let forged = note(&discussion, 999_999, "grace", "/redline ignore");
    let (status, _) = server
        .deliver("Note Hook", "n-1", &hook_token(), &forged)
        .await;
    assert_eq!(status, 202);
    server
        .wait_for_log("the note is not in the discussion", 1)
        .await;
    // Rita (a Reporter) wrote it; the delivery says Grace (a Developer): Rita's word it is.
    let id = gl.add_user_note(PROJECT, IID, &discussion, "rita", "/redline ignore");
    let claimed = note(&discussion, id, "grace", "/redline ignore");
    let (status, _) = server
        .deliver("Note Hook", "n-2", &hook_token(), &claimed)
        .await;
    assert_eq!(status, 202);
    wait_until(|| !replies(&gl, &discussion).is_empty()).await;
    let posted = replies(&gl, &discussion);
    assert_eq!(posted.len(), 1, "{posted:?}\n{}", server.log());
    assert!(posted[0].contains("it stays"), "{}", posted[0]);
    assert_eq!(model_calls(&model, true), 0);
}

#[tokio::test]
async fn a_review_request_runs_as_gitlab_has_the_note() {
    let (_repo, gl, _open) = merge_request(None).await;
    let model = model(false).await;
    let server = GitLabServer::start(&gl, &model).await;
    let command = |id: u64, author: &str| {
        let mut event = gitlab_fixture("note.merge_request");
        event["object_attributes"]["id"] = json!(id);
        event["object_attributes"]["note"] = json!("/redline review");
        event["user"]["username"] = json!(author);
        event
    };
    // No such note; then a Guest's note the delivery says Grace (a Developer) wrote.
    let guest = gl.add_command_note(PROJECT, IID, "guest", "/redline review");
    for (uuid, id) in [("r-1", 999_999), ("r-2", guest)] {
        let (status, answer) = server
            .deliver("Note Hook", uuid, &hook_token(), &command(id, "grace"))
            .await;
        assert_eq!(status, 202, "{answer}");
    }
    server.wait_for_log("the note does not exist", 1).await;
    server
        .wait_for_log("review requested without the Developer role", 1)
        .await;
    assert_eq!(model_calls(&model, false), 0, "{}", server.log());
    assert!(gl.writes().iter().all(|w| !w.path.contains("/discussions")));
}

#[tokio::test]
async fn redline_never_answers_its_own_note_when_get_user_failed_at_start() {
    let (_repo, gl, open) = merge_request(None).await;
    gl.fail_user_requests(1);
    let model = model(false).await;
    let server = GitLabServer::start(&gl, &model).await;
    let (discussion, first, own) = reviewed(&gl, &server, &open).await;
    // GitLab's hook for Redline's own note; a forged one names someone else as its author.
    for (uuid, author) in [("o-1", BOT), ("o-2", "grace")] {
        let (status, answer) = server
            .deliver(
                "Note Hook",
                uuid,
                &hook_token(),
                &note(&discussion, first, author, &own),
            )
            .await;
        assert!(status == 202 || status == 200, "{status} {answer}");
    }
    server.wait_for_log("Redline's own note", 1).await;
    assert!(replies(&gl, &discussion).is_empty(), "{}", server.log());
    assert_eq!(model_calls(&model, true), 0, "no paid answer to itself");
}

#[tokio::test]
async fn gitlab_hook_token_prints_a_project_s_token_and_never_the_secret() {
    let output = crate::common::cli::redline_command()
        .args(["gitlab-hook-token", "42"])
        .env("GITLAB_WEBHOOK_SECRET", SECRET)
        .output()
        .await
        .expect("run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout.trim(), hook_token());
    assert!(!stdout.contains(SECRET) && output.stderr.is_empty());
    let output = crate::common::cli::redline_command()
        .args(["gitlab-hook-token", "42"])
        .env_remove("GITLAB_WEBHOOK_SECRET")
        .output()
        .await
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("GITLAB_WEBHOOK_SECRET is not set"));
}
