//! End to end: the `redline` binary against temporary git repositories and the
//! scripted model server, over both wire formats.

use serde_json::{Value, json};

use crate::common::cli::{self, KEY};
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, Reply, Wire};

const BASE_CALC: &str = "pub fn average(values: &[i32]) -> i32 {\n    if values.is_empty() {\n        return 0;\n    }\n    let sum: i32 = values.iter().sum();\n    sum / values.len() as i32\n}\n";
const HEAD_CALC: &str = "pub fn average(values: &[i32]) -> i32 {\n    if values.is_empty() {\n        return 0;\n    }\n    let sum: i32 = values.iter().sum();\n    sum / values.len() as i32\n}\n\npub fn ratio(a: i32, b: i32) -> i32 {\n    a / b\n}\n";

/// A repository whose `feature` branch adds `ratio` (a division by zero at src/calc.rs:10).
fn planted_bug_repo() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("src/calc.rs", BASE_CALC);
    repo.write("README.md", "calc\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("src/calc.rs", HEAD_CALC);
    repo.commit("add ratio");
    repo
}

fn division_finding(line: u32) -> Value {
    json!({"path": "src/calc.rs", "line": line, "severity": "critical", "category": "bug",
           "title": "Division by zero when b is 0", "body": "`ratio` divides by `b` without checking it."})
}

async fn planted_bug_is_reported(wire: Wire, provider: &str) {
    let repo = planted_bug_repo();
    let server = ModelServer::start(
        wire,
        vec![
            Reply::tools(vec![
                ("call_1", "read_file", json!({"path": "src/calc.rs"})),
                (
                    "call_2",
                    "search",
                    json!({"pattern": "ratio\\(", "max_results": 10}),
                ),
            ]),
            Reply::tool(
                "call_3",
                "submit_review",
                json!({"findings": [division_finding(10)], "summary": "Adds ratio."}),
            ),
        ],
    )
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        provider,
        &["--format", "json"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let out: Value = serde_json::from_str(&run.stdout).expect("JSON output");
    assert_eq!(out["version"], 1);
    let findings = out["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "{out}");
    assert_eq!(findings[0]["path"], "src/calc.rs");
    assert_eq!(findings[0]["line"], 10);
    assert_eq!(findings[0]["start_line"], 10);
    assert_eq!(findings[0]["side"], "RIGHT");
    assert_eq!(findings[0]["severity"], "critical");
    assert_eq!(out["stats"]["strategy"], "react");
    // Two review calls, then one verifier call that keeps the finding: in the totals and apart.
    assert_eq!(out["stats"]["model_calls"], 3);
    assert_eq!(out["stats"]["tool_calls"], 3);
    assert_eq!(out["stats"]["verification"]["model_calls"], 1);
    assert_eq!(out["stats"]["verification"]["kept"], 1);
    assert!(out["stats"]["prompt_tokens"].as_u64().unwrap_or(0) > 0);

    // Both tool calls of the first reply were answered, each by its own id, with real content.
    let requests = server.review_requests();
    assert_eq!(requests.len(), 2);
    let second = serde_json::to_string(&requests[1].body).expect("body");
    assert!(
        second.contains("call_1") && second.contains("call_2"),
        "{second}"
    );
    assert!(
        second.contains("a / b"),
        "read_file result missing: {second}"
    );
    // The key went to the server, and nowhere else.
    assert!(requests[0].headers.iter().any(|(_, v)| v.contains(KEY)));
    run.assert_no_key();
    let types = run.event_types();
    for expected in [
        "run_started",
        "model_call",
        "tool_call",
        "tool_result",
        "finding",
        "run_finished",
    ] {
        assert!(
            types.iter().any(|t| t == expected),
            "missing {expected} in {types:?}"
        );
    }
    assert!(
        run.stderr.contains("read_file src/calc.rs"),
        "progress: {}",
        run.stderr
    );
}

#[tokio::test]
async fn planted_bug_is_reported_through_openai() {
    planted_bug_is_reported(Wire::OpenAi, "openai").await;
}

#[tokio::test]
async fn planted_bug_is_reported_through_anthropic() {
    planted_bug_is_reported(Wire::Anthropic, "anthropic").await;
}

#[tokio::test]
async fn bad_tool_calls_become_observations_and_the_run_finishes() {
    let repo = planted_bug_repo();
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![
            Reply::tools(vec![
                ("c1", "open_browser", json!({"url": "x"})),
                ("c2", "read_file", json!({"start_line": "abc"})),
            ]),
            Reply::raw_tool("c3", "read_file", "{\"path\": \"src/calc.rs\""),
            Reply::tool("c4", "read_file", json!({"path": "../../etc/passwd"})),
            Reply::tool(
                "c5",
                "submit_review",
                json!({"findings": [division_finding(10)], "summary": "ok"}),
            ),
        ],
    )
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let out: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(out["findings"].as_array().map(Vec::len), Some(1));
    let requests = server.requests();
    let last = serde_json::to_string(&requests[3].body).expect("body");
    assert!(last.contains("unknown tool `open_browser`"), "{last}");
    assert!(last.contains("invalid arguments for `read_file`"), "{last}");
    assert!(last.contains("not valid JSON"), "{last}");
    assert!(last.contains("outside the repository"), "{last}");
    assert!(!last.contains("root:x:0:0"), "path escape was not refused");
}

#[tokio::test]
async fn max_steps_triggers_a_final_turn_without_tools() {
    let repo = planted_bug_repo();
    let read = |id: &str| Reply::tool(id, "read_file", json!({"path": "src/calc.rs"}));
    let final_answer = format!(
        "Here is my conclusion:\n```json\n{}\n```",
        json!({"findings": [division_finding(10)], "summary": "Out of steps."})
    );
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![read("a"), read("b"), Reply::text(&final_answer)],
    )
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--max-steps", "2"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let out: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(out["findings"][0]["line"], 10);
    // Three review calls, then the verifier's.
    assert_eq!(out["stats"]["model_calls"], 4);
    let requests = server.review_requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[1].body.get("tools").is_some());
    let final_tools = requests[2]
        .body
        .get("tools")
        .and_then(Value::as_array)
        .map(Vec::len)
        .unwrap_or(0);
    assert_eq!(final_tools, 0, "the final turn must offer no tools");
}

#[tokio::test]
async fn two_unreadable_replies_stop_the_run_with_a_clear_error() {
    let repo = planted_bug_repo();
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![
            Reply::text("I think it's fine, maybe."),
            Reply::text("Still thinking..."),
        ],
    )
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json"],
    )
    .await;
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("consecutive replies"), "{}", run.stderr);
    assert!(run.event_types().iter().any(|t| t == "error"));
}

#[tokio::test]
async fn findings_outside_the_diff_land_in_the_summary() {
    let repo = planted_bug_repo();
    let outside = json!({"path": "README.md", "line": 1, "severity": "minor", "category": "style",
                         "title": "README is terse", "body": "Say more."});
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![Reply::tool(
            "c1",
            "submit_review",
            json!({"findings": [division_finding(11), outside], "summary": "Adds ratio."}),
        )],
    )
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let out: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let findings = out["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "{out}");
    assert_eq!(findings[0]["path"], "src/calc.rs");
    let summary = out["summary"].as_str().expect("summary");
    assert!(
        summary.contains("README.md:1") && summary.contains("README is terse"),
        "{summary}"
    );
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_waited_out() {
    let repo = planted_bug_repo();
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![
            Reply::Error {
                status: 429,
                headers: vec![("retry-after".into(), "1".into())],
                body: json!({"error": {"message": "Rate limit reached", "type": "requests"}})
                    .to_string(),
            },
            Reply::tool(
                "c1",
                "submit_review",
                json!({"findings": [division_finding(10)], "summary": "s"}),
            ),
        ],
    )
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(server.review_requests().len(), 2);
    assert!(run.event_types().iter().any(|t| t == "model_retry"));
}

#[tokio::test]
async fn a_cut_stream_is_retried() {
    let repo = planted_bug_repo();
    let submit = Reply::tool(
        "c1",
        "submit_review",
        json!({"findings": [division_finding(10)], "summary": "s"}),
    );
    let server = ModelServer::start(
        Wire::Anthropic,
        vec![Reply::Cut(Box::new(submit.clone())), submit],
    )
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "anthropic",
        &["--format", "json"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let out: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(out["findings"][0]["line"], 10);
}

#[tokio::test]
async fn fail_on_sets_the_exit_code() {
    let repo = planted_bug_repo();
    let script = || {
        vec![Reply::tool(
            "c1",
            "submit_review",
            json!({"findings": [division_finding(10)], "summary": "s"}),
        )]
    };
    let server = ModelServer::start(Wire::OpenAi, script()).await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--fail-on", "major"],
    )
    .await;
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    assert!(run.stdout.contains("src/calc.rs:10"), "{}", run.stdout);
    let server = ModelServer::start(Wire::OpenAi, script()).await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--fail-on", "never", "--format", "sarif"],
    )
    .await;
    assert_eq!(run.code, 0);
    let sarif: Value = serde_json::from_str(&run.stdout).expect("SARIF is JSON");
    assert_eq!(sarif["version"], "2.1.0");
}

#[tokio::test]
async fn missing_key_and_bad_flags_exit_2() {
    let repo = planted_bug_repo();
    let output = cli::redline_command()
        .args([
            "review",
            "--repo",
            &repo.path().display().to_string(),
            "--base",
            "main",
        ])
        .output()
        .await
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("REDLINE_API_KEY") && stderr.contains("--base-url"),
        "{stderr}"
    );

    let server = ModelServer::start(Wire::OpenAi, vec![]).await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "yaml"],
    )
    .await;
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--format"), "{}", run.stderr);
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--max-stepz", "3"],
    )
    .await;
    assert_eq!(run.code, 2);
    // The events file of `cli::review` given as --output too: each would overwrite the other.
    let events = repo.path().join(".git").join("redline-events.jsonl");
    let events = events.display().to_string();
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--output", &events],
    )
    .await;
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("same file"), "{}", run.stderr);
    let empty_model = cli::review_bare(repo.path(), &server.base_url(), &["--model", ""]).await;
    assert_eq!(empty_model.code, 2, "{}", empty_model.stderr);
    assert!(
        empty_model
            .stderr
            .contains("--model: the model name is empty"),
        "{}",
        empty_model.stderr
    );
    assert!(server.requests().is_empty(), "no model call on bad input");
}

#[tokio::test]
async fn unknown_config_keys_are_named() {
    let repo = planted_bug_repo();
    repo.write(".redline.toml", "max_step = 3\n");
    let server = ModelServer::start(Wire::OpenAi, vec![]).await;
    // The work tree's file is read with --uncommitted (by default the base revision's).
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--uncommitted"],
    )
    .await;
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("max_step"), "{}", run.stderr);
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn server_error_messages_never_show_the_key() {
    let repo = planted_bug_repo();
    let echo = json!({"error": {"message": format!("Incorrect API key provided: {KEY}"), "type": "invalid_request_error", "code": "invalid_api_key"}});
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![Reply::Error {
            status: 401,
            headers: vec![],
            body: echo.to_string(),
        }],
    )
    .await;
    let run = cli::review(repo.path(), &server.base_url(), "openai", &[]).await;
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.to_lowercase().contains("credentials") || run.stderr.contains("401"),
        "{}",
        run.stderr
    );
    run.assert_no_key();
}

#[tokio::test]
async fn a_key_the_model_repeats_never_reaches_the_report() {
    let repo = planted_bug_repo();
    let mut finding = division_finding(10);
    finding["body"] = json!(format!("The server said the key is {KEY}."));
    let submit = || {
        Reply::tool(
            "call_1",
            "submit_review",
            json!({"findings": [finding.clone()], "summary": format!("key {KEY}")}),
        )
    };
    // One reply per run: JSON on stdout, then SARIF to a file.
    let server = ModelServer::start(Wire::OpenAi, vec![submit(), submit()]).await;
    let sarif = repo.path().join(".git").join("out.sarif");
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--verbose"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["findings"][0]["line"], 10, "{out}");
    assert!(
        out["findings"][0]["body"]
            .as_str()
            .is_some_and(|body| body.contains("[REDACTED]")),
        "{out}"
    );
    run.assert_no_key();
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &[
            "--format",
            "sarif",
            "--output",
            &sarif.display().to_string(),
        ],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let written = std::fs::read_to_string(&sarif).expect("sarif written");
    assert!(
        !written.contains(KEY) && written.contains("[REDACTED]"),
        "{written}"
    );
}

/// An output file that refuses the write (a full disk) loses nothing: the result goes to
/// stdout and the run fails naming `--output`.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_result_that_cannot_be_written_to_output_goes_to_stdout() {
    let repo = planted_bug_repo();
    let submit = || {
        Reply::tool(
            "call_1",
            "submit_review",
            json!({"findings": [division_finding(10)], "summary": "Adds ratio."}),
        )
    };
    let server = ModelServer::start(Wire::OpenAi, vec![submit(), submit()]).await;
    let args = ["--format", "json", "--output", "/dev/full"];
    let run = cli::review(repo.path(), &server.base_url(), "openai", &args).await;
    assert_eq!(run.code, 2, "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains("cannot write --output /dev/full")
            && run.stderr.contains("on stdout instead"),
        "{}",
        run.stderr
    );
    assert_eq!(run.json()["findings"][0]["line"], 10);
    // An events file that refuses writes is said once; the review goes on.
    let args = [
        "--model",
        "test-model",
        "--format",
        "json",
        "--events",
        "/dev/full",
    ];
    let events_full = cli::review_bare(repo.path(), &server.base_url(), &args).await;
    let stderr = events_full.stderr;
    assert_eq!(events_full.code, 0, "{stderr}");
    assert_eq!(
        stderr.matches("cannot write --events").count(),
        1,
        "{stderr}"
    );
}
