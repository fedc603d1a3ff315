//! A verifier that gives no readable verdict (prose, unknown tools, garbage arguments, a
//! refused call, no answer at all) drops nothing: the findings are kept and marked
//! `"unverified": true`, the review succeeds within its limits. `--no-verify` and
//! `verify = false` send no verifier request.

use serde_json::{Value, json};

use super::support::{FABRICATED, REAL, fabricated_finding, real_finding, submit};
use crate::action_cli::pull_request_repo;
use crate::common::cli;
use crate::common::model_server::ModelServer;
use crate::common::model_server::{RecordedRequest, Reply, Wire};

/// A model whose review submits both findings and whose verifier answers with `verifier`.
async fn server(
    verifier: impl Fn(&RecordedRequest, usize) -> Reply + Send + Sync + 'static,
) -> ModelServer {
    let review = submit(vec![real_finding(7), fabricated_finding(6)]);
    ModelServer::start_with(Wire::OpenAi, move |request, index| {
        match request.is_verifier() {
            true => verifier(request, index),
            false => review.clone(),
        }
    })
    .await
    .scripting_verifier()
}

/// Both findings are reported, each marked unverified; nothing is dropped.
fn assert_all_kept_unverified(out: &Value) {
    let findings = out["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 2, "{out}");
    for finding in findings {
        assert_eq!(finding["unverified"], true, "{out}");
    }
    assert_eq!(out["dropped"], json!([]), "{out}");
    let verification = &out["stats"]["verification"];
    assert_eq!(verification["unverified"], 2, "{out}");
    assert_eq!(verification["dropped"], 0, "{out}");
    assert!(
        verification["incomplete"].as_str().is_some(),
        "says why: {out}"
    );
}

async fn review(server: &ModelServer, extra: &[&str]) -> cli::Run {
    let pr = pull_request_repo();
    let mut args = match extra.contains(&"--format") {
        true => Vec::new(),
        false => vec!["--format", "json"],
    };
    args.extend_from_slice(extra);
    let run = cli::review(pr.repo.path(), &server.base_url(), "openai", &args).await;
    drop(pr);
    run
}

#[tokio::test]
async fn an_unreadable_verifier_answer_drops_nothing_and_marks_the_findings_unverified() {
    let server = server(|_, _| Reply::text("These findings look plausible to me.")).await;
    let run = review(&server, &[]).await;
    let out = run.success_json();
    assert_all_kept_unverified(&out);
    // Asked again once, then given up (the parse failure limit), never more.
    assert_eq!(server.verifier_requests().len(), 2);
    let verdicts: Vec<Value> = run
        .events()
        .into_iter()
        .filter(|e| e["type"] == "verdict")
        .collect();
    assert_eq!(verdicts.len(), 2);
    assert!(verdicts.iter().all(|v| v["verdict"] == "unverified"));
    // Markdown says so beside each finding.
    let markdown = review(&server, &["--format", "markdown"]).await;
    assert_eq!(markdown.code, 0, "{}", markdown.stderr);
    assert!(
        markdown.stdout.contains("· unverified"),
        "{}",
        markdown.stdout
    );
}

#[tokio::test]
async fn a_verifier_calling_unknown_tools_or_writing_garbage_drops_nothing() {
    let server = server(|_, index| match index % 3 {
        0 => Reply::tool("u", "delete_repository", json!({"force": true})),
        1 => Reply::raw_tool("g", "submit_verdicts", "{\"verdicts\": [{\"id\": "),
        _ => Reply::tool("w", "submit_verdicts", json!({"verdicts": "all fine"})),
    })
    .await;
    let run = review(&server, &[]).await;
    let out = run.success_json();
    assert_all_kept_unverified(&out);
    // Its own step budget (4) and the final turns bound it.
    let calls = server.verifier_requests().len();
    assert!((2..=6).contains(&calls), "{calls} verifier calls");
    assert!(!out.to_string().contains("delete_repository"), "{out}");
}

#[tokio::test]
async fn a_verifier_call_the_endpoint_refuses_drops_nothing() {
    let server =
        server(|_, _| Reply::api_error(Wire::OpenAi, 400, "invalid_request_error", "bad request"))
            .await;
    let out = review(&server, &[]).await.success_json();
    assert_all_kept_unverified(&out);
}

#[tokio::test]
async fn no_verify_sends_no_verifier_request() {
    let server = server(|request, _| super::support::verdicts_dropping(request, FABRICATED)).await;
    let out = review(&server, &["--no-verify"]).await.success_json();
    assert_eq!(server.verifier_requests().len(), 0);
    let findings = out["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 2, "{out}");
    assert!(
        findings.iter().all(|f| f.get("unverified").is_none()),
        "{out}"
    );
    assert!(out["stats"].get("verification").is_none(), "{out}");

    // `verify = false` in the config file does the same.
    let dir = tempfile::tempdir().expect("tmp");
    let config = dir.path().join("redline.toml");
    std::fs::write(&config, "verify = false\n").expect("config");
    let config = config.display().to_string();
    let out = review(&server, &["--config", &config]).await.success_json();
    assert_eq!(server.verifier_requests().len(), 0);
    assert_eq!(out["findings"].as_array().map(Vec::len), Some(2), "{out}");

    // And with verification on, the same server's verifier drops the fabricated one.
    let out = review(&server, &[]).await.success_json();
    assert_eq!(server.verifier_requests().len(), 1);
    assert_eq!(out["findings"][0]["title"], REAL, "{out}");
}

#[tokio::test]
async fn the_time_limit_holds_with_a_verifier_that_never_answers() {
    let server = server(|_, _| Reply::Never).await;
    let run = review(&server, &["--timeout", "3s"]).await;
    let out = run.success_json();
    assert_all_kept_unverified(&out);
    let incomplete = out["stats"]["verification"]["incomplete"]
        .as_str()
        .unwrap_or_default();
    assert!(incomplete.contains("time"), "{incomplete}");
    assert_eq!(server.verifier_requests().len(), 1);
}

#[tokio::test]
async fn the_token_limit_holds_with_a_verifier_that_never_stops() {
    const LIMIT: u64 = 14_000;
    let server = server(|_, index| {
        Reply::tool(
            format!("c{index}"),
            "search",
            json!({"pattern": format!("fn [a-z]{{{}}}", index % 7 + 1)}),
        )
    })
    .await;
    let run = review(&server, &["--max-tokens", &LIMIT.to_string()]).await;
    let out = run.success_json();
    assert_all_kept_unverified(&out);
    let stats = &out["stats"];
    let used = stats["prompt_tokens"].as_u64().unwrap_or(0)
        + stats["completion_tokens"].as_u64().unwrap_or(0);
    assert!(used <= LIMIT, "{used} tokens against {LIMIT}");
    let verifier = stats["verification"]["prompt_tokens"].as_u64().unwrap_or(0)
        + stats["verification"]["completion_tokens"]
            .as_u64()
            .unwrap_or(0);
    assert!(verifier > 0 && verifier < used, "{stats}");
}

/// A change adding `lines` numbered lines to `src/many.rs`.
fn many_lines_repo(lines: u32) -> crate::common::git::TempRepo {
    let repo = crate::common::git::TempRepo::new();
    repo.write("README.md", "many\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    let text: String = (1..=lines).map(|n| format!("let v{n} = {n};\n")).collect();
    repo.write("src/many.rs", text);
    repo.commit("many");
    repo
}

#[tokio::test]
async fn findings_are_verified_in_batches_of_at_most_twenty() {
    let repo = many_lines_repo(30);
    // Distinct concerns (titles sharing no meaningful word), so none is merged.
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliett", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
        "sierra", "tango", "uniform",
    ];
    let findings: Vec<Value> = words
        .iter()
        .zip(1..)
        .map(|(word, n): (&&str, u32)| {
            json!({"path": "src/many.rs", "line": n, "severity": "major", "category": "bug",
                   "title": format!("{word} overflows"), "body": format!("Value v{n} is wrong.")})
        })
        .collect();
    let review = submit(findings);
    // The verifier drops the 21st finding and keeps every other.
    let server = ModelServer::start_with(Wire::OpenAi, move |request, _| {
        match request.is_verifier() {
            true => super::support::verdicts_dropping(request, "uniform"),
            false => review.clone(),
        }
    })
    .await
    .scripting_verifier();
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json"],
    )
    .await;
    let out = run.success_json();
    let verifier = server.verifier_requests();
    assert_eq!(verifier.len(), 2, "20 findings, then 1");
    assert_eq!(verifier[0].verifier_ids().len(), 20);
    assert_eq!(verifier[1].verifier_ids(), ["F1"]);
    assert_eq!(out["findings"].as_array().map(Vec::len), Some(20), "{out}");
    assert_eq!(out["dropped"][0]["title"], "uniform overflows", "{out}");
    assert_eq!(out["stats"]["verification"]["batches"], 2);
}

#[tokio::test]
async fn verify_model_names_the_verifier_s_model() {
    let server = server(|request, _| super::support::verdicts_dropping(request, FABRICATED)).await;
    let dir = tempfile::tempdir().expect("tmp");
    let config = dir.path().join("redline.toml");
    std::fs::write(&config, "verify_model = \"cheap-verifier\"\n").expect("config");
    let config = config.display().to_string();
    let out = review(&server, &["--config", &config]).await.success_json();
    let verifier = server.verifier_requests();
    assert_eq!(verifier.len(), 1);
    assert_eq!(verifier[0].body["model"], "cheap-verifier");
    assert!(
        server
            .review_requests()
            .iter()
            .all(|r| r.body["model"] == "test-model")
    );
    assert_eq!(out["stats"]["verification"]["model"], "cheap-verifier");
    assert_eq!(out["findings"][0]["title"], REAL, "{out}");

    // A cost limit needs the verifier's price too: named before any model call.
    std::fs::write(
        &config,
        "verify_model = \"cheap-verifier\"\n[pricing.\"test-model\"]\ninput = 1\noutput = 1\n",
    )
    .expect("config");
    let before = server.requests().len();
    let run = review(&server, &["--config", &config, "--max-cost", "1"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("cheap-verifier") && run.stderr.contains("pricing"),
        "{}",
        run.stderr
    );
    assert_eq!(server.requests().len(), before, "no model call");
}
