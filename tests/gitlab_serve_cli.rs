//! `redline serve` with GitLab settings only, end to end: the real binary, GitLab's
//! webhooks (the fixtures), the GitLab mock, the scripted model, and a repository the
//! server mirrors. No `GITHUB_APP_*` is set.

use serde_json::{Value, json};

use crate::common::cli;
use crate::common::gitlab_mock::{BOT, DiffLineSpec, GitLabMock, MergeRequestSpec};
use crate::common::model_server::ModelServer;
use crate::common::wait_until;
use crate::gitlab_webhook::gitlab_fixture;
use crate::serve_cli::Server;
use crate::settings::support::pull_request_repo;
use crate::threads::support::{ANSWER_TEXT, FIRST, is_chat, model};

pub(crate) const TOKEN: &str = "glpat-serve-token-abcdefghijkl";
pub(crate) const SECRET: &str = "gitlab-webhook-secret-for-tests";
pub(crate) const PROJECT: u64 = 42;
pub(crate) const PATH: &str = "numbers/calculator";
pub(crate) const IID: u64 = 7;
pub(crate) const CALC: &str = "src/calc.rs";

/// Project [`PROJECT`]'s webhook token, as `redline gitlab-hook-token 42` prints it.
pub(crate) fn hook_token() -> String {
    redline::gitlab::project_hook_token(&redline::llm::Secret::new(SECRET), PROJECT)
}

/// A running `redline serve` (killed on drop) and its log.
/// `redline serve` with GitLab's settings only.
pub(crate) struct GitLabServer(Server);

impl GitLabServer {
    pub(crate) async fn start(gl: &GitLabMock, model: &ModelServer) -> GitLabServer {
        let mut command = cli::redline_command();
        for var in [
            "GITHUB_APP_ID",
            "GITHUB_APP_CLIENT_ID",
            "GITHUB_APP_PRIVATE_KEY",
            "GITHUB_APP_PRIVATE_KEY_PATH",
            "GITHUB_WEBHOOK_SECRET",
        ] {
            command.env_remove(var);
        }
        command
            .env("GITLAB_API_URL", gl.api_url())
            .env("GITLAB_TOKEN", TOKEN)
            .env("GITLAB_WEBHOOK_SECRET", SECRET);
        let dir = std::sync::Arc::new(tempfile::tempdir().expect("tmp"));
        GitLabServer(Server::launch(command, dir, model, &[]).await)
    }

    pub(crate) fn log(&self) -> String {
        self.0.log()
    }

    pub(crate) async fn deliver(
        &self,
        event: &str,
        uuid: &str,
        token: &str,
        body: &Value,
    ) -> (u16, String) {
        let response = reqwest::Client::new()
            .post(format!("{}/gitlab/webhook", self.0.url))
            .header("X-Gitlab-Event", event)
            .header("X-Gitlab-Event-UUID", uuid)
            .header("X-Gitlab-Token", token)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("deliver");
        let status = response.status().as_u16();
        (status, response.text().await.unwrap_or_default())
    }

    pub(crate) async fn wait_for_log(&self, text: &str, times: usize) {
        wait_until(|| self.log().matches(text).count() >= times).await;
        assert!(
            self.log().matches(text).count() >= times,
            "{text:?} not logged {times} time(s): {}",
            self.log()
        );
    }
}

/// Merge request !7 of `numbers/calculator` from `pull_request_repo` (base: 3 lines of
/// `src/calc.rs`; head adds lines 4 to 11), its Open hook, and a mock that knows it.
pub(crate) async fn merge_request(
    config: Option<&str>,
) -> (crate::common::git::TempRepo, GitLabMock, Value) {
    let (repo, base, head) = pull_request_repo(config);
    let gl = GitLabMock::start(TOKEN).await;
    gl.add_project(PROJECT, PATH, &repo.path().display().to_string());
    gl.add_merge_request(PROJECT, IID, MergeRequestSpec::new(&base, &head));
    let mut lines: Vec<DiffLineSpec> = (1..=3).map(|n| DiffLineSpec::context(CALC, n, n)).collect();
    lines.extend((4..=11).map(|n| DiffLineSpec::added(CALC, 4, n)));
    gl.set_diff(PROJECT, IID, lines);
    gl.add_member(PROJECT, "grace", 8, 30);
    gl.add_member(PROJECT, "guest", 9, 10);
    gl.add_member(PROJECT, "rita", 10, 20);
    let mut open = gitlab_fixture("merge_request.open");
    open["object_attributes"]["last_commit"]["id"] = json!(head);
    (repo, gl, open)
}

/// Reviews the merge request and returns Redline's discussion of [`FIRST`]: its id, and
/// the id and body of its first note.
pub(crate) async fn reviewed(
    gl: &GitLabMock,
    server: &GitLabServer,
    open: &Value,
) -> (String, u64, String) {
    let (status, answer) = server
        .deliver("Merge Request Hook", "mr-1", &hook_token(), open)
        .await;
    assert_eq!(status, 202, "{answer}");
    wait_until(|| !gl.notes(PROJECT, IID).is_empty()).await;
    let discussion = gl
        .diff_discussions(PROJECT, IID)
        .into_iter()
        .find(|d| {
            d["notes"][0]["body"]
                .as_str()
                .is_some_and(|b| b.contains(FIRST))
        })
        .unwrap_or_else(|| panic!("no discussion of {FIRST}: {}", server.log()));
    let id = discussion["id"].as_str().expect("id").to_string();
    let first = &discussion["notes"][0];
    let body = first["body"].as_str().unwrap_or_default().to_string();
    (id, first["id"].as_u64().expect("note id"), body)
}

/// A Note Hook for note `id` in `discussion`, by `author`, saying `text`.
pub(crate) fn note_event(discussion: &str, id: u64, author: &str, text: &str) -> Value {
    let mut event = gitlab_fixture("note.merge_request");
    event["object_attributes"]["id"] = json!(id);
    event["object_attributes"]["note"] = json!(text);
    event["object_attributes"]["discussion_id"] = json!(discussion);
    event["user"]["username"] = json!(author);
    event
}

/// Redline's notes in `discussion` after its first.
pub(crate) fn replies(gl: &GitLabMock, discussion: &str) -> Vec<String> {
    gl.discussions(PROJECT, IID)
        .into_iter()
        .filter(|d| d["id"] == json!(discussion))
        .flat_map(|d| d["notes"].as_array().cloned().unwrap_or_default())
        .filter(|n| n["author"]["username"] == BOT)
        .skip(1)
        .filter_map(|n| n["body"].as_str().map(str::to_string))
        .collect()
}

pub(crate) fn model_calls(model: &ModelServer, chat: bool) -> usize {
    model
        .review_requests()
        .iter()
        .filter(|r| is_chat(r) == chat)
        .count()
}

#[tokio::test]
async fn with_gitlab_settings_only_a_merge_request_is_reviewed_once() {
    let (_repo, gl, open) = merge_request(None).await;
    let model = model(false).await;
    let server = GitLabServer::start(&gl, &model).await;
    let (status, answer) = server
        .deliver("Merge Request Hook", "mr-1", "wrong-token", &open)
        .await;
    assert_eq!(status, 401, "{answer}");
    let (status, answer) = server
        .deliver("Merge Request Hook", "mr-1", &hook_token(), &open)
        .await;
    assert_eq!(status, 202, "{answer}: {}", server.log());
    wait_until(|| !gl.notes(PROJECT, IID).is_empty()).await;
    let discussions = gl.diff_discussions(PROJECT, IID);
    assert_eq!(discussions.len(), 2, "{discussions:?}\n{}", server.log());
    let (status, answer) = server
        .deliver("Merge Request Hook", "mr-1", &hook_token(), &open)
        .await;
    assert!(
        status == 200 && answer.contains("duplicate"),
        "{status} {answer}"
    );
    assert_eq!(model_calls(&model, false), 1, "one review, one model call");
    let log = server.log();
    assert!(!log.contains(TOKEN) && !log.contains(SECRET), "{log}");
}

#[tokio::test]
async fn a_merge_request_s_review_counts_its_tokens_under_the_gitlab_label() {
    let (_repo, gl, open) = merge_request(None).await;
    let model = model(false).await;
    let server = GitLabServer::start(&gl, &model).await;
    reviewed(&gl, &server, &open).await;
    let metrics = reqwest::get(format!("{}/metrics", server.0.url))
        .await
        .expect("metrics")
        .text()
        .await
        .unwrap_or_default();
    let tokens = |forge: &str| -> u64 {
        let prefix = format!("redline_model_tokens_total{{forge=\"{forge}\",kind=\"input\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {forge} tokens: {metrics}"))
    };
    assert!(tokens("gitlab") > 0, "{metrics}");
    assert_eq!(tokens("github"), 0, "{metrics}");
}

#[tokio::test]
async fn a_merge_request_s_commit_status_follows_its_review() {
    let (_repo, gl, open) = merge_request(Some("fail_on = \"major\"\n")).await;
    let head = open["object_attributes"]["last_commit"]["id"]
        .as_str()
        .expect("head")
        .to_string();
    let model = model(false).await;
    let server = GitLabServer::start(&gl, &model).await;
    let (status, answer) = server
        .deliver("Merge Request Hook", "mr-1", &hook_token(), &open)
        .await;
    assert_eq!(status, 202, "{answer}");
    let finished = || {
        gl.statuses(PROJECT, &head)
            .last()
            .is_some_and(|s| s["status"] != "pending" && s["status"] != "running")
    };
    wait_until(finished).await;
    let statuses = gl.statuses(PROJECT, &head);
    let states: Vec<&str> = statuses
        .iter()
        .filter_map(|s| s["status"].as_str())
        .collect();
    // Pending when stored (unless the worker was first), running, then the verdict.
    assert!(
        states == ["pending", "running", "failed"] || states == ["running", "failed"],
        "{statuses:#?}\n{}",
        server.log()
    );
    let last = statuses.last().expect("a status");
    assert_eq!(last["name"], "redline");
    assert_eq!(
        last["description"],
        "2 findings: 2 major; fails at major or above"
    );
    assert!(
        statuses[statuses.len() - 2]["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("reviewing (strategy ")),
        "{statuses:#?}"
    );
}

#[tokio::test]
async fn a_reply_in_redline_s_discussion_gets_one_answer_within_the_caps() {
    let (_repo, gl, open) = merge_request(Some("chat_max_replies = 1\n")).await;
    let model = model(false).await;
    let server = GitLabServer::start(&gl, &model).await;
    let (discussion_id, _, _) = reviewed(&gl, &server, &open).await;
    let note = |id: u64, author: &str, text: &str| note_event(&discussion_id, id, author, text);
    let question = "Are you sure? b is never zero here.";
    let id = gl.add_user_note(PROJECT, IID, &discussion_id, "grace", question);
    for uuid in ["n-1", "n-2"] {
        let (status, answer) = server
            .deliver(
                "Note Hook",
                uuid,
                &hook_token(),
                &note(id, "grace", question),
            )
            .await;
        assert_eq!(status, 202, "{answer}");
    }
    let answers = || replies(&gl, &discussion_id);
    wait_until(|| !answers().is_empty()).await;
    server.wait_for_log("note not answered", 1).await;
    let posted = answers();
    assert_eq!(posted.len(), 1, "{posted:?}");
    let body = &posted[0];
    assert!(
        body.contains(ANSWER_TEXT) && body.contains(&format!("redline:answer={id}")),
        "{body}"
    );
    // A second reply passes the cheap checks but the discussion has its one answer.
    let again = gl.add_user_note(PROJECT, IID, &discussion_id, "grace", "Still sure?");
    server
        .deliver(
            "Note Hook",
            "n-3",
            &hook_token(),
            &note(again, "grace", "Still sure?"),
        )
        .await;
    server.wait_for_log("chat_max_replies reached", 1).await;
    // Someone who cannot read the code gets nothing.
    let guest = gl.add_user_note(PROJECT, IID, &discussion_id, "guest", "Why?");
    server
        .deliver(
            "Note Hook",
            "n-4",
            &hook_token(),
            &note(guest, "guest", "Why?"),
        )
        .await;
    server.wait_for_log("cannot read the project", 1).await;
    assert_eq!(answers().len(), 1);
    assert_eq!(
        model_calls(&model, true),
        1,
        "one model call for one answer"
    );
}

#[tokio::test]
async fn a_half_configured_gitlab_or_no_forge_at_all_is_named_at_start() {
    let run = |env: Vec<(&'static str, &'static str)>| async move {
        let mut command = cli::redline_command();
        command.args(["serve", "--listen", "127.0.0.1:0"]);
        for var in [
            "GITHUB_APP_ID",
            "GITHUB_APP_CLIENT_ID",
            "GITHUB_WEBHOOK_SECRET",
        ] {
            command.env_remove(var);
        }
        for (name, value) in env {
            command.env(name, value);
        }
        let output = command.output().await.expect("run");
        assert_eq!(output.status.code(), Some(2));
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let stderr = run(vec![(
        "GITLAB_API_URL",
        "https://gitlab.example.com/api/v4",
    )])
    .await;
    assert!(
        stderr.contains("GITLAB_TOKEN") && !stderr.contains("GITHUB_APP"),
        "{stderr}"
    );
    let stderr = run(vec![
        ("GITLAB_API_URL", "https://gitlab.example.com/api/v4"),
        ("GITLAB_TOKEN", TOKEN),
    ])
    .await;
    assert!(
        stderr.contains("GITLAB_WEBHOOK_SECRET") && !stderr.contains(TOKEN),
        "{stderr}"
    );
    let stderr = run(vec![]).await;
    assert!(
        stderr.contains("GITHUB_APP_ID") && stderr.contains("GITLAB_TOKEN"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_redline_review_note_runs_for_a_developer_only() {
    let (_repo, gl, _open) = merge_request(None).await;
    let model = model(false).await;
    let server = GitLabServer::start(&gl, &model).await;
    let command = |author: &str| {
        let id = gl.add_command_note(PROJECT, IID, author, "/redline review");
        let mut event = gitlab_fixture("note.merge_request");
        event["object_attributes"]["id"] = json!(id);
        event["object_attributes"]["note"] = json!("/redline review");
        event["user"]["username"] = json!(author);
        event
    };
    let (status, answer) = server
        .deliver("Note Hook", "c-1", &hook_token(), &command("guest"))
        .await;
    assert!(
        status == 202 && answer.contains("queued"),
        "{status} {answer}"
    );
    server
        .wait_for_log("review requested without the Developer role", 1)
        .await;
    assert!(gl.discussions(PROJECT, IID).is_empty());
    assert_eq!(
        model_calls(&model, false),
        0,
        "a Guest's request runs nothing"
    );
    let (status, answer) = server
        .deliver("Note Hook", "c-2", &hook_token(), &command("grace"))
        .await;
    assert!(
        status == 202 && answer.contains("queued"),
        "{status} {answer}"
    );
    wait_until(|| !gl.notes(PROJECT, IID).is_empty()).await;
    assert_eq!(
        gl.diff_discussions(PROJECT, IID).len(),
        2,
        "{}",
        server.log()
    );
    assert_eq!(model_calls(&model, false), 1);
}

/// `/redline review` on a merge request whose head is already reviewed: the asker is
/// answered in a note (once per head) and nothing is reviewed; `--force` reviews again.
#[tokio::test]
async fn a_review_note_on_a_reviewed_head_is_answered_and_force_reviews_again() {
    let (repo, gl, open) = merge_request(None).await;
    let head = repo.head();
    let model = model(false).await;
    let server = GitLabServer::start(&gl, &model).await;
    let (status, answer) = server
        .deliver("Merge Request Hook", "mr-1", &hook_token(), &open)
        .await;
    assert_eq!(status, 202, "{answer}");
    wait_until(|| !gl.notes(PROJECT, IID).is_empty()).await;
    assert_eq!(model_calls(&model, false), 1);
    let notes = gl.notes(PROJECT, IID).len();
    let command = |body: &str| {
        let id = gl.add_command_note(PROJECT, IID, "grace", body);
        let mut event = gitlab_fixture("note.merge_request");
        event["object_attributes"]["id"] = json!(id);
        event["object_attributes"]["note"] = json!(body);
        event["user"]["username"] = json!("grace");
        event
    };
    for uuid in ["c-1", "c-2"] {
        let (status, answer) = server
            .deliver(
                "Note Hook",
                uuid,
                &hook_token(),
                &command("/redline review"),
            )
            .await;
        assert_eq!(status, 202, "{answer}");
    }
    let answered = |notes_now: &[Value]| {
        notes_now
            .iter()
            .filter(|n| {
                n["body"]
                    .as_str()
                    .is_some_and(|b| b.contains("already reviewed"))
            })
            .count()
    };
    wait_until(|| answered(&gl.notes(PROJECT, IID)) == 1).await;
    server.wait_for_log("job finished", 3).await;
    let all = gl.notes(PROJECT, IID);
    assert_eq!(answered(&all), 1, "once per head: {all:?}");
    assert_eq!(all.len(), notes + 1, "{all:?}");
    let reply = all
        .iter()
        .find_map(|n| {
            n["body"]
                .as_str()
                .filter(|b| b.contains("already reviewed"))
        })
        .unwrap_or_default();
    assert!(
        reply.contains(&head[..7])
            && reply.contains("merge request")
            && reply.contains("`/redline review --force`"),
        "{reply}"
    );
    assert_eq!(model_calls(&model, false), 1, "nothing is reviewed again");

    let (status, answer) = server
        .deliver(
            "Note Hook",
            "c-3",
            &hook_token(),
            &command("/redline review --force"),
        )
        .await;
    assert_eq!(status, 202, "{answer}");
    wait_until(|| model_calls(&model, false) == 2).await;
    assert_eq!(
        model_calls(&model, false),
        2,
        "--force reviews again: {}",
        server.log()
    );
}

#[tokio::test]
async fn redline_ignore_dismisses_for_a_developer_and_not_for_a_reporter() {
    let (_repo, gl, open) = merge_request(None).await;
    let model = model(false).await;
    let server = GitLabServer::start(&gl, &model).await;
    let (discussion_id, _, _) = reviewed(&gl, &server, &open).await;
    let replies = || replies(&gl, &discussion_id);
    for (n, author) in ["rita", "grace"].into_iter().enumerate() {
        let id = gl.add_user_note(PROJECT, IID, &discussion_id, author, "/redline ignore");
        let event = note_event(&discussion_id, id, author, "/redline ignore");
        let (status, answer) = server
            .deliver("Note Hook", &format!("i-{n}"), &hook_token(), &event)
            .await;
        assert_eq!(status, 202, "{answer}");
        wait_until(|| replies().len() > n).await;
    }
    let replies = replies();
    assert_eq!(replies.len(), 2, "{replies:?}\n{}", server.log());
    assert!(
        replies[0].contains("it stays"),
        "a Reporter dismisses nothing: {}",
        replies[0]
    );
    assert!(
        replies[1].contains("will not raise this finding again"),
        "a Developer dismisses: {}",
        replies[1]
    );
    assert_eq!(model_calls(&model, true), 0, "fixed replies ask no model");
}

#[tokio::test]
async fn a_broken_config_is_reported_in_one_note_however_often_the_merge_request_comes() {
    let (_repo, gl, open) = merge_request(Some("max_steps = \"many\"\n")).await;
    let model = model(false).await;
    let server = GitLabServer::start(&gl, &model).await;
    // Two deliveries (not redeliveries: each is its own job) of the same head.
    for uuid in ["mr-broken-1", "mr-broken-2"] {
        let (status, answer) = server
            .deliver("Merge Request Hook", uuid, &hook_token(), &open)
            .await;
        assert_eq!(status, 202, "{answer}: {}", server.log());
        server.wait_for_log("job finished", 1).await;
    }
    server.wait_for_log("job finished", 2).await;
    let notes = gl.notes(PROJECT, IID);
    assert_eq!(notes.len(), 1, "{notes:?}\n{}", server.log());
    let body = notes[0]["body"].as_str().unwrap_or_default();
    assert!(
        body.contains("did not review this merge request") && body.contains("max_steps"),
        "{body}"
    );
    assert!(gl.diff_discussions(PROJECT, IID).is_empty(), "no review");
    assert_eq!(model_calls(&model, false), 0, "no model call");
}
