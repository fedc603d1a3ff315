//! Cost and hard limits per review, end to end: `--max-tokens`, `--max-cost` with a
//! `[pricing]` entry and `--timeout` against the scripted model server, with a model
//! that never stops (it always calls another tool) and one that submits at once.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::cli::{self, Run};
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, RecordedRequest, Reply, Wire};
use crate::strategies::{is_evaluator, is_planner};

/// A change of two files in two areas.
pub(crate) fn two_file_repo() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("src/a.rs", "pub fn a() -> u32 {\n    1\n}\n");
    repo.write("lib/b.rs", "pub fn b() -> u32 {\n    2\n}\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "src/a.rs",
        "pub fn a() -> u32 {\n    let x = 1;\n    x / 0\n}\n",
    );
    repo.write(
        "lib/b.rs",
        "pub fn b() -> u32 {\n    let y = 2;\n    y * 2\n}\n",
    );
    repo.commit("change");
    repo
}

/// The model that never stops: every reply is one more tool call.
pub(crate) fn another_tool_call(index: usize) -> Reply {
    Reply::tool(
        format!("c{index}"),
        "search",
        json!({"pattern": format!("fn [a-z]{{{}}}", index % 7 + 1)}),
    )
}

fn finding_in_a() -> Value {
    json!({"path": "src/a.rs", "line": 3, "severity": "critical", "category": "bug",
           "title": "Division by zero", "body": "`x / 0` panics."})
}

pub(crate) fn submit_a() -> Reply {
    Reply::tool(
        "s",
        "submit_review",
        json!({"findings": [finding_in_a()], "summary": "a reviewed."}),
    )
}

fn tokens_used(out: &Value) -> u64 {
    out["stats"]["prompt_tokens"].as_u64().unwrap_or(0)
        + out["stats"]["completion_tokens"].as_u64().unwrap_or(0)
}

fn max_tokens_sent(req: &RecordedRequest) -> u64 {
    req.body["max_tokens"]
        .as_u64()
        .expect("max_tokens in the request")
}

fn assert_limit_event(run: &Run, limit: &str) {
    let events = run.events();
    let reached: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "limit_reached")
        .collect();
    assert_eq!(reached.len(), 1, "one limit_reached event: {events:?}");
    assert_eq!(reached[0]["limit"], limit);
}

#[tokio::test]
async fn max_tokens_bounds_a_model_that_never_stops() {
    max_tokens_bounds(Wire::OpenAi, "openai").await;
}

#[tokio::test]
async fn max_tokens_bounds_a_model_that_never_stops_through_anthropic() {
    max_tokens_bounds(Wire::Anthropic, "anthropic").await;
}

async fn max_tokens_bounds(wire: Wire, provider: &str) {
    const LIMIT: u64 = 20_000;
    let repo = two_file_repo();
    let server = ModelServer::start_with(wire, |_, index| another_tool_call(index)).await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        provider,
        &[
            "--format",
            "json",
            "--strategy",
            "react",
            "--max-steps",
            "200",
            "--max-tokens",
            &LIMIT.to_string(),
        ],
    )
    .await;
    assert_eq!(run.code, 0, "a limit is a finished review: {}", run.stderr);
    let out = run.json();
    assert_eq!(out["stats"]["limit_reached"], "tokens", "{out}");
    let used = tokens_used(&out);
    assert!(used > 0 && used <= LIMIT, "{used} tokens against {LIMIT}");
    // The server's own count (the usage it reported) agrees with the stats.
    let requests = server.requests();
    assert!(requests.len() >= 3, "several calls fit: {}", requests.len());
    assert_eq!(out["stats"]["model_calls"], requests.len() as u64);
    // The last calls got a lowered allowance: visible in what the server received.
    let first = max_tokens_sent(&requests[0]);
    let last = max_tokens_sent(requests.last().expect("a request"));
    assert!(last < first, "max_tokens {first} then {last}");
    assert_limit_event(&run, "tokens");
    let summary = out["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("token limit")
            && summary.contains("src/a.rs")
            && summary.contains("lib/b.rs"),
        "the summary names what was not reviewed: {summary}"
    );
    assert_eq!(out["findings"].as_array().map(Vec::len), Some(0));
}

/// A plan of two tasks: the one about `src/a.rs` submits at once, the other never stops.
fn a_submits_b_never_stops(req: &RecordedRequest, index: usize) -> Reply {
    if is_planner(req) {
        return Reply::tool(
            "p",
            "submit_plan",
            json!({"tasks": [
                {"title": "A", "files": ["src/a.rs"], "focus": "arithmetic of a"},
                {"title": "B", "files": ["lib/b.rs"], "focus": "arithmetic of b"}
            ]}),
        );
    }
    if req.first_user_text().contains("+++ b/src/a.rs") {
        submit_a()
    } else {
        another_tool_call(index)
    }
}

#[tokio::test]
async fn plan_tasks_that_finished_keep_their_findings_at_the_token_limit() {
    const LIMIT: u64 = 30_000;
    let repo = two_file_repo();
    let server = ModelServer::start_with(Wire::OpenAi, a_submits_b_never_stops).await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &[
            "--format",
            "json",
            "--strategy",
            "plan",
            "--parallel",
            "2",
            "--max-steps",
            "200",
            "--max-tokens",
            &LIMIT.to_string(),
        ],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["stats"]["limit_reached"], "tokens", "{out}");
    assert!(tokens_used(&out) <= LIMIT, "{out}");
    let findings = out["findings"].as_array().expect("findings");
    assert_eq!(
        findings.len(),
        1,
        "the finished task's finding is kept: {out}"
    );
    assert_eq!(findings[0]["path"], "src/a.rs");
    // The review left its share of the limit to verification: the verifier had the room
    // to keep the finding although the task that never stops spent all it was allowed.
    assert!(findings[0].get("unverified").is_none(), "{out}");
    assert_eq!(out["stats"]["verification"]["kept"], 1, "{out}");
    let tasks = out["stats"]["tasks"].as_array().expect("tasks");
    let outcome = |title: &str| {
        tasks
            .iter()
            .find(|t| t["title"] == title)
            .map(|t| t["outcome"].clone())
    };
    assert_eq!(outcome("A"), Some(json!("ok")), "{out}");
    assert_eq!(outcome("B"), Some(json!("limit_reached")), "{out}");
    let summary = out["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("lib/b.rs") && summary.contains("not reviewed"),
        "{summary}"
    );
    // `--fail-on` still decides the exit code of a review stopped at a limit.
    let server2 = ModelServer::start_with(Wire::OpenAi, a_submits_b_never_stops).await;
    let failing = cli::review(
        repo.path(),
        &server2.base_url(),
        "openai",
        &[
            "--strategy",
            "plan",
            "--max-steps",
            "200",
            "--max-tokens",
            &LIMIT.to_string(),
            "--fail-on",
            "major",
        ],
    )
    .await;
    assert_eq!(failing.code, 1, "stderr: {}", failing.stderr);
    assert!(
        failing.stdout.contains("stopped at the tokens limit"),
        "text footer: {}",
        failing.stdout
    );
}

#[tokio::test]
async fn reflection_keeps_the_actors_findings_when_the_evaluator_is_cut() {
    const LIMIT: u64 = 25_000;
    let repo = two_file_repo();
    let server = ModelServer::start_with(Wire::OpenAi, |req, index| {
        if is_evaluator(req) {
            another_tool_call(index)
        } else {
            submit_a()
        }
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
            "reflect",
            "--max-steps",
            "200",
            "--max-tokens",
            &LIMIT.to_string(),
        ],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["stats"]["limit_reached"], "tokens", "{out}");
    assert!(tokens_used(&out) <= LIMIT, "{out}");
    assert_eq!(out["findings"].as_array().map(Vec::len), Some(1), "{out}");
    assert_eq!(out["findings"][0]["path"], "src/a.rs");
}

pub(crate) const PRICING: &str =
    "[pricing.\"test-model\"]\ninput = 10\ncached_input = 1\noutput = 20\n";

/// The cost the table gives the stats' token counts.
fn priced(out: &Value) -> f64 {
    let stats = &out["stats"];
    let n = |k: &str| stats[k].as_u64().unwrap_or(0) as f64;
    ((n("prompt_tokens") - n("cached_prompt_tokens")) * 10.0
        + n("cached_prompt_tokens") * 1.0
        + n("completion_tokens") * 20.0)
        / 1e6
}

#[tokio::test]
async fn max_cost_bounds_a_model_that_never_stops() {
    const MAX_COST: f64 = 0.25;
    let repo = two_file_repo();
    let config = repo.path().join(".git").join("limits.toml");
    std::fs::write(&config, PRICING).expect("config");
    let server = ModelServer::start_with(Wire::OpenAi, |_, index| another_tool_call(index)).await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &[
            "--format",
            "json",
            "--strategy",
            "react",
            "--max-steps",
            "200",
            "--config",
            &config.display().to_string(),
            "--max-cost",
            &MAX_COST.to_string(),
        ],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["stats"]["limit_reached"], "cost", "{out}");
    let cost = out["stats"]["cost_usd"].as_f64().expect("a cost");
    assert!(cost > 0.0 && cost <= MAX_COST, "{cost}");
    assert!(
        (cost - priced(&out)).abs() < 1e-9,
        "{cost} vs {}",
        priced(&out)
    );
    assert_eq!(out["stats"]["cost_estimated"], false);
    assert!(server.requests().len() >= 3, "several calls fit");
    assert_limit_event(&run, "cost");
}

#[tokio::test]
async fn cost_comes_from_the_table_and_is_null_for_an_unknown_model() {
    let repo = two_file_repo();
    let config = repo.path().join(".git").join("pricing.toml");
    std::fs::write(&config, PRICING).expect("config");
    for priced_run in [true, false] {
        let server = ModelServer::start(Wire::OpenAi, vec![submit_a()]).await;
        let mut args = vec!["--format", "json", "--strategy", "react"];
        let path = config.display().to_string();
        if priced_run {
            args.extend(["--config", path.as_str()]);
        }
        let run = cli::review(repo.path(), &server.base_url(), "openai", &args).await;
        let out = run.success_json();
        assert!(out["stats"]["limit_reached"].is_null(), "{out}");
        if priced_run {
            let cost = out["stats"]["cost_usd"].as_f64().expect("a cost");
            assert!(cost > 0.0 && (cost - priced(&out)).abs() < 1e-9, "{out}");
        } else {
            assert!(
                out["stats"]["cost_usd"].is_null(),
                "test-model has no price: {out}"
            );
        }
    }
    // The text footer shows the cost.
    let server = ModelServer::start(Wire::OpenAi, vec![submit_a()]).await;
    let path = config.display().to_string();
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--strategy", "react", "--config", &path],
    )
    .await;
    assert!(run.stdout.contains(" · $0.0"), "{}", run.stdout);
}

#[tokio::test]
async fn usage_the_provider_did_not_report_marks_the_cost_estimated() {
    let repo = two_file_repo();
    let config = repo.path().join(".git").join("pricing.toml");
    std::fs::write(&config, PRICING).expect("config");
    let server = ModelServer::start(Wire::OpenAi, vec![submit_a()])
        .await
        .without_usage();
    let path = config.display().to_string();
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "react", "--config", &path],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["stats"]["cost_estimated"], true, "{out}");
    assert!(
        out["stats"]["cost_usd"].as_f64().unwrap_or(0.0) > 0.0,
        "{out}"
    );
}

#[tokio::test]
async fn the_timeout_cancels_a_call_in_flight() {
    let repo = two_file_repo();
    let server = ModelServer::start_with(Wire::OpenAi, |_, _| Reply::Never).await;
    let run = tokio::time::timeout(
        Duration::from_secs(60),
        cli::review(
            repo.path(),
            &server.base_url(),
            "openai",
            &["--format", "json", "--strategy", "react", "--timeout", "2s"],
        ),
    )
    .await
    .expect("the review ends soon after its timeout");
    let out = run.success_json();
    assert_eq!(out["stats"]["limit_reached"], "time", "{out}");
    assert_eq!(server.requests().len(), 1, "the held call was the only one");
    assert_limit_event(&run, "time");
    assert!(
        out["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("time limit"),
        "{out}"
    );
}

#[tokio::test]
async fn bad_limits_are_rejected_before_any_model_call() {
    let repo = two_file_repo();
    let server = ModelServer::start(Wire::OpenAi, vec![submit_a()]).await;
    let bad_config = repo.path().join(".git").join("bad.toml");
    let cases: Vec<(Vec<String>, Option<&str>, &str)> = vec![
        (
            vec!["--max-tokens".into(), "0".into()],
            None,
            "--max-tokens",
        ),
        (vec!["--max-cost".into(), "-1".into()], None, "--max-cost"),
        (vec!["--max-cost".into(), "lots".into()], None, "--max-cost"),
        (vec!["--timeout".into(), "soon".into()], None, "--timeout"),
        // A duration too long for any clock: an error naming the flag, not a panic.
        (
            vec!["--timeout".into(), "18446744073709551615s".into()],
            None,
            "--timeout",
        ),
        // One format: `FILE:LINE:COL: key: message`.
        (
            vec![],
            Some("max_tokens = -3\n"),
            "bad.toml:1:1: max_tokens: ",
        ),
        (
            vec![],
            Some("timeout = 9223372036854775807\n"),
            "bad.toml:1:1: timeout: ",
        ),
        (
            vec![],
            Some("timeout = \"0s\"\n"),
            "bad.toml:1:1: timeout: ",
        ),
        (
            vec![],
            Some("[pricing.\"test-model\"]\ninput = -1\noutput = 1\n"),
            "pricing.\"test-model\".input",
        ),
        (
            vec![],
            Some("[pricing.\"test-model\"]\ninput = \"cheap\"\noutput = 1\n"),
            "pricing.\"test-model\".input",
        ),
        // A cost limit needs a price for the model.
        (
            vec!["--max-cost".into(), "1".into()],
            None,
            "[pricing.\"test-model\"]",
        ),
    ];
    for (flags, config, expected) in cases {
        let mut args: Vec<String> = vec!["--strategy".into(), "react".into()];
        args.extend(flags);
        if let Some(text) = config {
            std::fs::write(&bad_config, text).expect("config");
            args.extend(["--config".into(), bad_config.display().to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = cli::review(repo.path(), &server.base_url(), "openai", &args).await;
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(expected), "{expected}: {}", run.stderr);
    }
    assert!(server.requests().is_empty(), "no model call was made");
    // The environment variables work like the flags.
    let run = {
        let events = repo.path().join(".git").join("env-events.jsonl");
        let output = cli::redline_command()
            .args([
                "review",
                "--repo",
                &repo.path().display().to_string(),
                "--base",
                "main",
                "--base-url",
                &server.base_url(),
                "--model",
                "test-model",
                "--events",
                &events.display().to_string(),
            ])
            .env("REDLINE_API_KEY", cli::KEY)
            .env("REDLINE_MAX_TOKENS", "zero")
            .output()
            .await
            .expect("run");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    assert_eq!(run.0, Some(2));
    assert!(run.1.contains("REDLINE_MAX_TOKENS"), "{}", run.1);
    assert!(server.requests().is_empty());
}
