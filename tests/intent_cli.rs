//! What the author says a change does reaches the first user message of every
//! conversation that judges the change (every strategy, the planner and each task, the
//! evaluator and reflector, the Action, the App and thread answers), bounded, and never a
//! system message; a recorded intent replays byte for byte.

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use crate::common::cli::{self, KEY};
use crate::common::git::TempRepo;
use crate::common::github_mock::{GitHubMock, PullSpec};
use crate::common::model_server::{ModelServer, RecordedRequest, Reply, Wire};
use crate::settings::support::{SERVER_MODEL, job, pull_request_repo, runner, scripted_model};
use crate::strategies::{is_evaluator, is_planner, submit};
use redline::queue::JobRunner;

const TITLE: &str = "Trend line: keep the newest window";
const DESCRIPTION: &str = "The trend line must include the newest sample.";
const SUBJECT: &str = "Keep the newest window in the trend line";
const COMMIT_BODY: &str = "The slice ended one sample early.";
const TEMPLATE_NOISE: &str = "Describe your change";

/// A change of two source files whose commit says what it is for.
fn intent_repo() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("src/trend.py", "def window(xs, n):\n    return xs[-n:-1]\n");
    repo.write("src/store.py", "def load():\n    return []\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "src/trend.py",
        "def window(xs, n):\n    start = len(xs) - n\n    return xs[start:-1]\n",
    );
    repo.write("src/store.py", "def load():\n    return list()\n");
    repo.commit(&format!("{SUBJECT}\n\n{COMMIT_BODY}"));
    repo
}

fn description_file(dir: &Path) -> String {
    let path = dir.join("description.md");
    let text = format!(
        "<!-- {TEMPLATE_NOISE} -->\n## Summary\n{DESCRIPTION}\n\n## Screenshots\n\n- [ ] Tests added\n"
    );
    std::fs::write(&path, text).expect("description");
    path.display().to_string()
}

/// The first user message carries the intent, cleaned; the system message never does.
fn assert_told(request: &RecordedRequest, with_commit: bool) {
    let (system, first) = (request.system_text(), request.first_user_text());
    for text in [TITLE, DESCRIPTION, SUBJECT, COMMIT_BODY] {
        assert!(
            !system.contains(text),
            "{text} in a system message: {system}"
        );
    }
    let mut expected = vec![TITLE, DESCRIPTION];
    if with_commit {
        expected.extend([SUBJECT, COMMIT_BODY]);
    }
    for text in expected {
        assert!(first.contains(text), "{text} missing from: {first}");
    }
    assert!(
        first.contains("What the author says this change does"),
        "{first}"
    );
    assert!(
        !first.contains(TEMPLATE_NOISE) && !first.contains("Tests added"),
        "{first}"
    );
}

fn evaluation(overall: f64) -> Reply {
    Reply::tool(
        "e",
        "submit_evaluation",
        json!({"findings": [], "overall_score": overall, "missed_areas": []}),
    )
}

#[tokio::test]
async fn every_conversation_of_every_strategy_is_told_the_intent_in_its_first_user_message() {
    let repo = intent_repo();
    let dir = tempfile::tempdir().expect("tmp");
    let description = description_file(dir.path());
    for strategy in ["react", "plan", "reflect"] {
        let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
            if is_planner(req) {
                return Reply::tool(
                    "p",
                    "submit_plan",
                    json!({"tasks": [
                        {"title": "Trend", "files": ["src/trend.py"], "focus": "bounds"},
                        {"title": "Store", "files": ["src/store.py"], "focus": "types"}
                    ]}),
                );
            }
            if is_evaluator(req) {
                // Low enough that a reflector round follows.
                return evaluation(2.0);
            }
            submit(vec![], "Looked.")
        })
        .await;
        let run = cli::review(
            repo.path(),
            &server.base_url(),
            "openai",
            &[
                "--format",
                "json",
                "--strategy",
                strategy,
                "--title",
                TITLE,
                "--description-file",
                &description,
            ],
        )
        .await;
        run.success_json();
        let requests = server.requests();
        let conversations: Vec<&RecordedRequest> = requests
            .iter()
            .filter(|r| r.body["messages"].as_array().map(Vec::len) == Some(2))
            .collect();
        match strategy {
            // The planner and the two tasks.
            "plan" => {
                assert_eq!(conversations.len(), 3, "{strategy}");
                assert!(requests.iter().any(is_planner));
            }
            // The actor, the evaluator, and a reflector after the low score.
            "reflect" => {
                assert!(conversations.len() >= 3, "{strategy}");
                assert!(requests.iter().any(is_evaluator));
            }
            _ => assert_eq!(conversations.len(), 1, "{strategy}"),
        }
        for request in &requests {
            assert_told(request, true);
        }
    }
}

#[tokio::test]
async fn a_huge_description_costs_at_most_the_intent_budget() {
    let repo = intent_repo();
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("huge.md");
    let huge = format!("{DESCRIPTION}\n") + &"The window keeps the newest sample. ".repeat(6_000);
    assert!(huge.len() > 200_000);
    std::fs::write(&path, &huge).expect("write");
    let output = cli::redline_command()
        .args(["context", "--repo", &repo.path().display().to_string()])
        .args(["--base", "main", "--format", "json", "--model", "gpt-4.1"])
        .args(["--description-file", &path.display().to_string()])
        .output()
        .await
        .expect("context");
    assert_eq!(output.status.code(), Some(0));
    let out: Value = serde_json::from_slice(&output.stdout).expect("json");
    let tokens = out["intent"]["tokens"].as_u64().expect("tokens");
    assert_eq!(out["intent"]["budget"], 1000);
    assert!(tokens > 500 && tokens <= 1000, "{tokens}");
    let text = out["intent"]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains(DESCRIPTION) && text.contains("characters shown]"),
        "{text}"
    );

    let server = ModelServer::start(Wire::OpenAi, vec![submit(vec![], "ok")]).await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--description-file", &path.display().to_string()],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let request = &server.requests()[0];
    assert!(request.body_len < 30_000, "{} bytes", request.body_len);
}

#[tokio::test]
async fn context_shows_the_intent_section_and_its_size() {
    let repo = intent_repo();
    let output = cli::redline_command()
        .args(["context", "--repo", &repo.path().display().to_string()])
        .args(["--base", "main", "--show", "--title", TITLE])
        .output()
        .await
        .expect("context");
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("intent: ") && text.contains("intent_budget 1000"),
        "{text}"
    );
    assert!(text.contains(&format!("Title: {TITLE}")), "{text}");
    assert!(text.contains(SUBJECT), "{text}");
}

#[tokio::test]
async fn an_intent_budget_of_zero_leaves_the_section_out_and_a_bad_one_is_refused() {
    let repo = intent_repo();
    let dir = tempfile::tempdir().expect("tmp");
    let config = dir.path().join("redline.toml");
    std::fs::write(&config, "intent_budget = 0\n").expect("config");
    let server = ModelServer::start(Wire::OpenAi, vec![submit(vec![], "ok")]).await;
    let config_arg = config.display().to_string();
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--config", &config_arg, "--title", TITLE],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let first = server.requests()[0].first_user_text();
    assert!(
        !first.contains(TITLE) && !first.contains(SUBJECT),
        "{first}"
    );
    assert!(first.starts_with("Review this change.\n\n"), "{first}");

    std::fs::write(&config, "intent_budget = 99999\n").expect("config");
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--config", &config_arg],
    )
    .await;
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("intent_budget"), "{}", run.stderr);
    assert_eq!(server.requests().len(), 1, "no model call for a bad config");
}

#[tokio::test]
async fn a_description_on_stdin_is_recorded_and_replays_byte_for_byte() {
    let repo = intent_repo();
    let runs = tempfile::tempdir().expect("runs");
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![
            Reply::tool("r", "read_file", json!({"path": "src/trend.py"})),
            submit(
                vec![
                    json!({"path": "src/trend.py", "line": 3, "severity": "major",
                    "category": "bug", "title": "Still drops the newest sample",
                    "body": "`-1` ends the slice one early, against the description."}),
                ],
                "The slice still ends early.",
            ),
        ],
    )
    .await;
    let mut child = cli::redline_command()
        .args(["review", "--repo", &repo.path().display().to_string()])
        .args(["--base", "main", "--base-url", &server.base_url()])
        .args([
            "--model",
            "test-model",
            "--format",
            "json",
            "--title",
            TITLE,
        ])
        .args(["--description-file", "-"])
        .args(["--runs-dir", &runs.path().display().to_string()])
        .env("REDLINE_API_KEY", KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(DESCRIPTION.as_bytes())
        .await
        .expect("write");
    drop(stdin);
    let output = child.wait_with_output().await.expect("review");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for request in server.requests() {
        assert_told(&request, true);
    }
    let transcript = std::fs::read_dir(runs.path())
        .expect("runs")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("a transcript");
    let text = std::fs::read_to_string(&transcript).expect("transcript");
    let header: Value = serde_json::from_str(text.lines().next().expect("header")).expect("json");
    let recorded = header["intent"].as_str().unwrap_or_default();
    assert!(
        recorded.contains(DESCRIPTION) && recorded.contains(TITLE),
        "{header}"
    );

    // Replay has neither the title nor standard input: the header holds the intent.
    let replay = cli::redline_command()
        .args([
            "replay",
            &transcript.display().to_string(),
            "--format",
            "json",
        ])
        .output()
        .await
        .expect("replay");
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    assert_eq!(replay.stdout, output.stdout, "byte-identical report");
    let until = cli::redline_command()
        .args(["replay", &transcript.display().to_string()])
        .args(["--until", "1", "--format", "json"])
        .output()
        .await
        .expect("replay --until");
    let step: Value = serde_json::from_slice(&until.stdout).expect("json");
    assert!(
        step["messages"][1].to_string().contains(DESCRIPTION),
        "{step}"
    );
}

fn pull_request_event(base: &str, head: &str, title: &str, body: &str) -> Value {
    json!({
        "action": "opened",
        "number": 7,
        "pull_request": {
            "number": 7, "draft": false, "title": title, "body": body,
            "base": {"sha": base, "ref": "main", "repo": {"full_name": "octo/demo"}},
            "head": {"sha": head, "ref": "feature", "repo": {"full_name": "octo/demo"}}
        },
        "repository": {"full_name": "octo/demo", "name": "demo", "owner": {"login": "octo"}}
    })
}

const PR_TITLE: &str = "Add ratio and half helpers";
const PR_BODY: &str = "Adds `ratio` that never divides by zero. Fixes #12.\n\ncc @alice";
const ISSUE_TITLE: &str = "ratio panics on a zero divisor";
const ISSUE_BODY: &str = "Calling ratio(1, 0) crashes the service.";

/// The intent as the Action and the App tell it: the pull request, its issue, its commit.
fn assert_pull_intent(request: &RecordedRequest, with_issue: bool) {
    let (system, first) = (request.system_text(), request.first_user_text());
    assert!(
        !system.contains(PR_TITLE) && !system.contains(ISSUE_TITLE),
        "{system}"
    );
    for text in [PR_TITLE, "never divides by zero", "add ratio and half"] {
        assert!(first.contains(text), "{text} missing from: {first}");
    }
    assert!(
        first.contains("@\u{2060}alice"),
        "mention neutralised: {first}"
    );
    assert_eq!(
        first.contains(ISSUE_TITLE) && first.contains(ISSUE_BODY),
        with_issue,
        "{first}"
    );
}

#[tokio::test]
async fn the_action_and_the_app_tell_the_pull_request_s_intent_and_its_issue() {
    let (repo, base, head) = pull_request_repo(None);
    let action_gh = GitHubMock::start().await;
    action_gh.add_issue("octo", "demo", 12, ISSUE_TITLE, ISSUE_BODY);
    let action_model = scripted_model().await;
    cli::action_on_pull_request(
        repo.path(),
        &pull_request_event(&base, &head, PR_TITLE, PR_BODY),
        &action_gh.url(),
        &action_model.base_url(),
        SERVER_MODEL,
    )
    .await;
    for request in action_model.requests() {
        assert_pull_intent(&request, true);
    }

    let app_gh = GitHubMock::start().await;
    app_gh.add_issue("octo", "demo", 12, ISSUE_TITLE, ISSUE_BODY);
    let app_model = scripted_model().await;
    run_app_with_text(repo.path(), &base, &head, &app_gh, &app_model).await;
    // The review's two calls and the verifier's: each is told the intent.
    let app_requests = app_model.requests();
    assert_eq!(app_requests.len(), 3, "the App reviewed");
    for request in &app_requests {
        assert_pull_intent(request, true);
    }
    assert_eq!(
        action_model
            .requests()
            .into_iter()
            .map(|r| r.body)
            .collect::<Vec<_>>(),
        app_requests.into_iter().map(|r| r.body).collect::<Vec<_>>(),
        "the Action and the App send the same requests"
    );
}

async fn run_app_with_text(
    path: &Path,
    base: &str,
    head: &str,
    gh: &GitHubMock,
    model: &ModelServer,
) {
    let spec = PullSpec::new(base, head)
        .with_clone_url(&path.display().to_string())
        .with_text(PR_TITLE, PR_BODY);
    gh.add_pull("octo", "demo", 7, spec);
    let cache = tempfile::tempdir().expect("cache");
    let _ = runner(gh, model, cache.path())
        .run(&job(7), CancellationToken::new())
        .await;
}

#[tokio::test]
async fn without_issues_read_the_app_reviews_with_the_rest_of_the_intent() {
    let (repo, base, head) = pull_request_repo(None);
    let gh = GitHubMock::start().await;
    gh.add_issue("octo", "demo", 12, ISSUE_TITLE, ISSUE_BODY);
    gh.forbid_issue_reads();
    let model = scripted_model().await;
    run_app_with_text(repo.path(), &base, &head, &gh, &model).await;
    // The review's two calls and the verifier's.
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "the review went on");
    for request in &requests {
        assert_pull_intent(request, false);
    }
    assert_eq!(gh.reviews().len(), 1, "and was published");
}
