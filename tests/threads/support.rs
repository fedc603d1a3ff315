//! A pull request reviewed by the App, its threads, and the events that reply in them.

use crate::common::wait_until;
use std::path::Path;

use serde_json::{Value, json};

use crate::common::git::TempRepo;
use crate::common::github_mock::{GitHubMock, PullSpec};
use crate::common::model_server::{ModelServer, RecordedRequest, Reply, Wire};
use crate::serve_cli::Server;
use crate::settings::support::pull_request_repo;

/// What the scripted model answers in a thread.
pub const ANSWER_TEXT: &str = "The divisor can be zero here: guard it.";
/// The text the head after a push holds (the model then finds only the second issue
/// when `SECOND_REVIEW_DROPS_FIRST` is in play).
pub const PUSHED_MARK: &str = "checked_div";
/// The head after a push: both commented lines edited, so both findings' fingerprints change.
pub const PUSHED_CALC: &str = "pub fn one() -> i32 {\n    1\n}\n\npub fn ratio(a: i32, b: i32) -> i32 {\n    a.checked_div(b).unwrap_or(0)\n}\n\npub fn half(a: i32) -> i32 {\n    a.checked_div(2).unwrap_or(0)\n}\n";
/// Title of the finding on line 6.
pub const FIRST: &str = "Division by zero";
/// Title of the finding on line 10.
pub const SECOND: &str = "Rounds down";
/// The pull request's title and description: what a thread answer is told it is for.
pub const PR_TITLE: &str = "Add ratio and half";
pub const PR_BODY: &str = "Integer helpers for the report page.";

/// Whether a model request is a thread answer (it offers the `answer` tool).
pub fn is_chat(request: &RecordedRequest) -> bool {
    request.body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["function"]["name"] == "answer"))
}

/// The model: a review submits both findings (only the second after a push when
/// `drop_first_after_push`); an answer says [`ANSWER_TEXT`], dismissing when the
/// author's comment says "intended".
pub async fn model(drop_first_after_push: bool) -> ModelServer {
    model_with(drop_first_after_push, false).await
}

/// [`model`], whose answers explore for ever (`list_files`) when `endless_chat`.
pub async fn model_with(drop_first_after_push: bool, endless_chat: bool) -> ModelServer {
    ModelServer::start_with(Wire::OpenAi, move |request, _| {
        let text = request.body["messages"].to_string();
        if is_chat(request) && endless_chat {
            return Reply::tool("l", "list_files", json!({}));
        }
        if is_chat(request) {
            // The comment is quoted in the first user message (the system prompt names
            // "intended" too).
            let dismiss = request.body["messages"][1]["content"]
                .as_str()
                .is_some_and(|m| m.contains("intended"));
            return Reply::tool(
                "a",
                "answer",
                json!({"body": ANSWER_TEXT, "dismiss": dismiss}),
            );
        }
        let finding = |line: u32, title: &str| {
            json!({"path": "src/calc.rs", "line": line,
            "severity": "major", "category": "bug", "title": title, "body": "Check the divisor."})
        };
        let pushed = text.contains(PUSHED_MARK);
        let findings = if pushed && drop_first_after_push {
            vec![finding(10, SECOND)]
        } else {
            vec![finding(6, FIRST), finding(10, SECOND)]
        };
        Reply::tool(
            "s",
            "submit_review",
            json!({"findings": findings, "summary": "Issues."}),
        )
    })
    .await
}

/// A pull request `octo/demo#7`, reviewed once by a running App.
pub struct Reviewed {
    pub repo: TempRepo,
    pub base: String,
    pub gh: GitHubMock,
    pub model: ModelServer,
    pub server: Server,
}

impl Reviewed {
    /// Starts the App and has it review the pull request (`config` at the base).
    pub async fn start(config: Option<&str>, drop_first_after_push: bool) -> Reviewed {
        Reviewed::start_with(config, model(drop_first_after_push).await).await
    }

    /// [`Reviewed::start`] with this model.
    pub async fn start_with(config: Option<&str>, model: ModelServer) -> Reviewed {
        let (repo, base, head) = pull_request_repo(config);
        let gh = GitHubMock::start().await;
        gh.set_permission("alice", "read");
        let server = Server::start(&gh, &model).await;
        let reviewed = Reviewed {
            repo,
            base,
            gh,
            model,
            server,
        };
        reviewed.review(&head, "opened", "pr-1").await;
        reviewed
    }

    /// Points the pull request at `head` and delivers `pull_request` `action`; waits for
    /// the review's summary to name `head`.
    pub async fn review(&self, head: &str, action: &str, delivery: &str) {
        let clone = self.repo.path().display().to_string();
        self.gh.add_pull(
            "octo",
            "demo",
            7,
            PullSpec::new(&self.base, head)
                .with_clone_url(&clone)
                .with_text(PR_TITLE, PR_BODY),
        );
        let event = json!({
            "action": action, "number": 7,
            "pull_request": {"draft": false, "head": {"sha": head, "ref": "feature"},
                "base": {"sha": self.base, "ref": "main"}},
            "repository": {"full_name": "octo/demo"},
            "installation": {"id": 9},
            "sender": {"login": "alice", "type": "User"}
        });
        let body = event.to_string().into_bytes();
        let (status, answer) = self
            .server
            .deliver_signed("pull_request", delivery, &body)
            .await;
        assert_eq!(status, 202, "{answer}");
        let gh = &self.gh;
        wait_until(|| summaries(gh).iter().any(|s| s.contains(head))).await;
        assert!(
            summaries(gh).iter().any(|s| s.contains(head)),
            "no review of {head}: {}",
            self.server.log()
        );
    }

    /// Commits the removal of `src/calc.rs` and points the pull request at it (no review).
    pub fn delete_the_file(&self) {
        self.repo.remove("src/calc.rs");
        let head = self.repo.commit("remove calc");
        let clone = self.repo.path().display().to_string();
        self.gh.add_pull(
            "octo",
            "demo",
            7,
            PullSpec::new(&self.base, &head).with_clone_url(&clone),
        );
    }

    /// Commits [`PUSHED_CALC`] on the pull request's branch and has the App review it.
    pub async fn push(&self) {
        self.repo.write("src/calc.rs", PUSHED_CALC);
        let head = self.repo.commit("guard the divisions");
        self.review(&head, "synchronize", "pr-2").await;
    }

    /// The id of Redline's review comment titled `title` (the first, if several).
    pub fn root(&self, title: &str) -> u64 {
        self.gh
            .review_comments()
            .iter()
            .filter(|c| c["in_reply_to_id"].is_null())
            .filter(|c| c["body"].as_str().is_some_and(|b| b.contains(title)))
            .filter_map(|c| c["id"].as_u64())
            .min()
            .expect("Redline's comment")
    }

    /// How many of Redline's first comments carry `title`.
    pub fn raised(&self, title: &str) -> usize {
        self.gh
            .review_comments()
            .iter()
            .filter(|c| c["in_reply_to_id"].is_null())
            .filter(|c| c["body"].as_str().is_some_and(|b| b.contains(title)))
            .count()
    }

    /// Writes a reply by `login` in the thread of `root` and delivers its event.
    pub async fn reply(
        &self,
        root: u64,
        login: &str,
        kind: &str,
        body: &str,
        delivery: &str,
    ) -> u64 {
        let id = self
            .gh
            .add_review_comment("octo", "demo", 7, login, body, Some(root));
        let event = reply_event(id, Some(root), login, kind, body);
        let (status, answer) = self
            .server
            .deliver_signed("pull_request_review_comment", delivery, &event)
            .await;
        assert!(status == 202 || status == 200, "{status} {answer}");
        id
    }

    /// Delivers the event of comment `id` again, under `delivery`.
    pub async fn redeliver(&self, id: u64, root: u64, body: &str, delivery: &str) -> (u16, String) {
        let event = reply_event(id, Some(root), "alice", "User", body);
        self.server
            .deliver_signed("pull_request_review_comment", delivery, &event)
            .await
    }

    /// The server's `redline_model_tokens_total{forge="github",kind="input"}`, from `/metrics`.
    pub async fn input_tokens(&self) -> u64 {
        let text = reqwest::get(format!("{}/metrics", self.server.url))
            .await
            .expect("metrics")
            .text()
            .await
            .expect("metrics text");
        text.lines()
            .find_map(|l| {
                l.strip_prefix("redline_model_tokens_total{forge=\"github\",kind=\"input\"} ")
            })
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Redline's answers in the thread of `root`.
    pub fn answers(&self, root: u64) -> Vec<Value> {
        answers_in(&self.gh, root)
    }

    /// Waits until the server logged `text` at least `times` times.
    pub async fn wait_for_log(&self, text: &str, times: usize) {
        let server = &self.server;
        wait_until(|| server.log().matches(text).count() >= times).await;
        assert!(
            server.log().matches(text).count() >= times,
            "{text:?} not logged {times} time(s): {}",
            server.log()
        );
    }
}

/// Redline's answers in the thread of `root`, on `gh`.
pub fn answers_in(gh: &GitHubMock, root: u64) -> Vec<Value> {
    gh.review_comments()
        .into_iter()
        .filter(|c| c["in_reply_to_id"] == json!(root) && c["user"]["type"] == "Bot")
        .collect()
}

/// The summary comments' bodies.
pub fn summaries(gh: &GitHubMock) -> Vec<String> {
    gh.issue_comments()
        .iter()
        .filter_map(|c| c["body"].as_str().map(str::to_string))
        .filter(|b| b.contains("redline:summary"))
        .collect()
}

/// GitHub's `pull_request_review_comment` example, made a comment on `octo/demo#7`.
pub fn reply_event(id: u64, root: Option<u64>, login: &str, kind: &str, body: &str) -> Vec<u8> {
    event_of("created", id, root, login, kind, body)
}

/// GitHub's `pull_request_review_comment` `action` example, made a comment on `octo/demo#7`.
pub fn event_of(
    action: &str,
    id: u64,
    root: Option<u64>,
    login: &str,
    kind: &str,
    body: &str,
) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/webhooks/pull_request_review_comment")
        .join(format!("{action}.payload.json"));
    let mut event: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("JSON");
    event["comment"]["id"] = json!(id);
    event["comment"]["in_reply_to_id"] = json!(root);
    event["comment"]["body"] = json!(body);
    event["comment"]["path"] = json!("src/calc.rs");
    event["comment"]["user"]["login"] = json!(login);
    event["comment"]["user"]["type"] = json!(kind);
    event["pull_request"]["number"] = json!(7);
    // Alice wrote the pull request: her rejections count.
    event["pull_request"]["user"]["login"] = json!("alice");
    event["repository"]["full_name"] = json!("octo/demo");
    event["repository"]["name"] = json!("demo");
    event["repository"]["owner"]["login"] = json!("octo");
    event["installation"]["id"] = json!(9);
    event.to_string().into_bytes()
}
