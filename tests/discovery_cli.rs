//! Local model discovery end to end: `redline review` with no key and no endpoint finds
//! the scripted model server through `GET /v1/models` on the ports it is given
//! (`REDLINE_DISCOVERY_PORTS`, so that the test never depends on the default ports being free).

use serde_json::json;

use crate::common::cli::redline_command;
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, Reply, Wire};

fn repo() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("src/calc.rs", "pub fn one() -> i32 {\n    1\n}\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "src/calc.rs",
        "pub fn one() -> i32 {\n    1\n}\n\npub fn ratio(a: i32, b: i32) -> i32 {\n    a / b\n}\n",
    );
    repo.commit("add ratio");
    repo
}

async fn server() -> ModelServer {
    ModelServer::start(
        Wire::OpenAi,
        vec![Reply::tool(
            "s",
            "submit_review",
            json!({"findings": [], "summary": "Looks fine."}),
        )],
    )
    .await
    .with_models(&["local-coder:7b", "other"])
}

/// A port with nothing listening (bound, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn review(repo: &TempRepo, ports: &str, extra: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = redline_command();
    command
        .args(["review", "--base", "main", "--format", "json", "--repo"])
        .arg(repo.path())
        .args(extra)
        .env_remove("REDLINE_NO_DISCOVERY")
        .env("REDLINE_DISCOVERY_PORTS", ports);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().await.expect("run redline");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[tokio::test]
async fn review_without_key_or_endpoint_uses_the_first_local_server_and_says_so() {
    let repo = repo();
    let server = server().await;
    let ports = format!("{},{}", closed_port(), server.port());
    let run = review(&repo, &ports, &[], &[]).await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let url = format!("http://127.0.0.1:{}/v1", server.port());
    assert!(
        run.stderr.contains(&url) && run.stderr.contains("local-coder:7b"),
        "says which server and model: {}",
        run.stderr
    );
    let probes = server.model_list_requests();
    assert!(!probes.is_empty(), "the server was probed");
    assert!(
        probes.iter().all(|p| p.header("authorization").is_none()),
        "no credentials"
    );
    let requests = server.requests();
    let calls: Vec<_> = requests
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body["model"], "local-coder:7b", "its first model");
    let out: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(out["summary"], "Looks fine.");
}

#[tokio::test]
async fn a_configured_model_is_used_on_the_discovered_server() {
    let repo = repo();
    let server = server().await;
    let run = review(
        &repo,
        &server.port().to_string(),
        &["--model", "chosen"],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let call = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/chat/completions")
        .expect("a model call");
    assert_eq!(call.body["model"], "chosen");
}

#[tokio::test]
async fn any_explicit_choice_or_the_switch_turns_discovery_off() {
    let repo = repo();
    let server = server().await;
    let port = server.port().to_string();
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: [Case; 3] = [
        (&[], &[("REDLINE_NO_DISCOVERY", "1")]),
        (&["--provider", "openai"], &[]),
        (&[], &[("REDLINE_PROVIDER", "openai")]),
    ];
    for (extra, env) in cases {
        let run = review(&repo, &port, extra, env).await;
        assert_eq!(run.code, 2, "{extra:?} {env:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("no API key"),
            "the error stays as it was: {}",
            run.stderr
        );
    }
    assert!(
        server.model_list_requests().is_empty() && server.requests().is_empty(),
        "nothing was probed"
    );
}

#[tokio::test]
async fn nothing_answering_keeps_the_missing_key_error() {
    let repo = repo();
    let run = review(&repo, &closed_port().to_string(), &[], &[]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no API key"), "{}", run.stderr);
}

/// `--base-url` at a local server without `--model`: the default hosted model is not sent;
/// the server's `GET /v1/models` is asked, and the error lists what it serves and names
/// `--model`, before any model call.
#[tokio::test]
async fn a_local_base_url_without_a_model_lists_the_served_models() {
    let repo = repo();
    let server = server().await;
    let base_url = server.base_url().replace("127.0.0.1", "localhost");
    let run = review(&repo, "", &["--base-url", &base_url], &[]).await;
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("`gpt-4.1-mini`")
            && run.stderr.contains("local-coder:7b, other")
            && run.stderr.contains("--model"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.matches("local-coder:7b").count(),
        1,
        "{}",
        run.stderr
    );
    assert!(server.requests().is_empty(), "no model call");
    // With the model named, the same server reviews.
    let run = review(
        &repo,
        "",
        &["--base-url", &base_url, "--model", "local-coder:7b"],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// A model named explicitly is checked against the local server's list before the review
/// starts: a wrong name is an error listing what the server serves, with no model call; a
/// server without a model list (404) is not a reason to stop.
#[tokio::test]
async fn a_named_model_the_local_server_does_not_serve_fails_before_the_review() {
    let repo = repo();
    let server = server().await;
    let base_url = server.base_url();
    let run = review(
        &repo,
        "",
        &["--base-url", &base_url, "--model", "llama3"],
        &[],
    )
    .await;
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("does not serve the model `llama3`; it serves: local-coder:7b, other")
            && run.stderr.contains("--model"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("review started"), "{}", run.stderr);
    assert!(server.requests().is_empty(), "no model call");
    assert_eq!(server.model_list_requests().len(), 1);

    let unlisted = ModelServer::start(
        Wire::OpenAi,
        vec![Reply::tool(
            "s",
            "submit_review",
            json!({"findings": [], "summary": "Looks fine."}),
        )],
    )
    .await;
    let run = review(
        &repo,
        "",
        &["--base-url", &unlisted.base_url(), "--model", "llama3"],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(unlisted.requests().len(), 1);
}
