//! `redline serve` end to end: the real binary as a GitHub App, a signed webhook
//! from GitHub's own payload example, the mock GitHub API (App token endpoint,
//! pull request, review), the scripted model server, and a repository cloned
//! into the App's bare-mirror cache.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::cli::{self, KEY};
use crate::common::git::TempRepo;
use crate::common::github_mock::{GitHubMock, PullSpec};
use crate::common::model_server::{ModelServer, Reply, Wire};
use crate::common::{wait_until, wait_until_async};
use redline::llm::Secret;

pub(crate) const SECRET: &str = "webhook-secret-for-tests";

/// A running `redline serve` (killed on drop) and what it has logged so far.
pub(crate) struct Server {
    pub(crate) child: tokio::process::Child,
    pub(crate) url: String,
    pub(crate) dir: std::sync::Arc<tempfile::TempDir>,
    log: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Server {
    pub(crate) async fn start(gh: &GitHubMock, model: &ModelServer) -> Server {
        Server::start_with(gh, model, &[]).await
    }

    pub(crate) async fn start_with(gh: &GitHubMock, model: &ModelServer, extra: &[&str]) -> Server {
        let dir = std::sync::Arc::new(tempfile::tempdir().expect("tmp"));
        Server::start_in(dir, gh, model, extra).await
    }

    /// A server that may run on CPU 0 only, or `None` when that cannot be arranged.
    async fn start_on_one_core(gh: &GitHubMock, model: &ModelServer) -> Option<Server> {
        let command = cli::redline_command_on_one_core()?;
        let dir = std::sync::Arc::new(tempfile::tempdir().expect("tmp"));
        Some(Server::spawn(command, dir, gh, model, &[]).await)
    }

    /// A server on `database` (a URL; `None`: an SQLite file in `dir`) and the cache of
    /// `dir` (a restart reuses them).
    pub(crate) async fn start_on(
        dir: std::sync::Arc<tempfile::TempDir>,
        database: Option<&str>,
        gh: &GitHubMock,
        model: &ModelServer,
        extra: &[&str],
    ) -> Server {
        let mut command = cli::redline_command();
        if let Some(url) = database {
            command.env("REDLINE_DATABASE_URL", url);
        }
        Server::spawn(command, dir, gh, model, extra).await
    }

    /// A server on the database and cache of `dir` (a restart reuses them).
    async fn start_in(
        dir: std::sync::Arc<tempfile::TempDir>,
        gh: &GitHubMock,
        model: &ModelServer,
        extra: &[&str],
    ) -> Server {
        Server::spawn(cli::redline_command(), dir, gh, model, extra).await
    }

    /// Runs `command` (the binary, perhaps behind a wrapper) as the server.
    async fn spawn(
        mut command: tokio::process::Command,
        dir: std::sync::Arc<tempfile::TempDir>,
        gh: &GitHubMock,
        model: &ModelServer,
        extra: &[&str],
    ) -> Server {
        let key = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/github/TEST-ONLY-app-private-key.pem");
        command
            .env("GITHUB_APP_ID", "12345")
            .env("GITHUB_APP_PRIVATE_KEY_PATH", key)
            .env("GITHUB_WEBHOOK_SECRET", SECRET)
            .env("GITHUB_API_URL", gh.url());
        let args = [&["--workers", "2"], extra].concat();
        Server::launch(command, dir, model, &args).await
    }

    /// Runs `command`, already given its forge's settings, as `redline serve ARGS` on a
    /// free port with the database and cache of `dir` and the model of `model`; returns
    /// once `/healthz` answers.
    pub(crate) async fn launch(
        mut command: tokio::process::Command,
        dir: std::sync::Arc<tempfile::TempDir>,
        model: &ModelServer,
        args: &[&str],
    ) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("port")
            .port();
        // A database the caller chose (PostgreSQL) is kept; else an SQLite file in `dir`.
        let chosen = command
            .as_std()
            .get_envs()
            .any(|(key, value)| key == "REDLINE_DATABASE_URL" && value.is_some());
        if !chosen {
            command.env(
                "REDLINE_DATABASE_URL",
                format!("sqlite://{}", dir.path().join("redline.db").display()),
            );
        }
        let mut child = command
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(args)
            .env("REDLINE_CACHE_DIR", dir.path().join("cache"))
            .env("REDLINE_BASE_URL", model.base_url())
            .env("REDLINE_MODEL", "test-model")
            .env("REDLINE_API_KEY", KEY)
            .env("REDLINE_LOG", "info")
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start redline serve");
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        if let Some(mut stderr) = child.stderr.take() {
            // Drained continuously, so the server never blocks on a full pipe.
            let log = log.clone();
            tokio::spawn(async move {
                use tokio::io::AsyncReadExt;
                let mut buffer = [0u8; 8192];
                while let Ok(read) = stderr.read(&mut buffer).await {
                    if read == 0 {
                        break;
                    }
                    log.lock().unwrap().extend_from_slice(&buffer[..read]);
                }
            });
        }
        let url = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::new();
        wait_until_async(|| {
            let health = client.get(format!("{url}/healthz")).send();
            async move { health.await.is_ok_and(|r| r.status().is_success()) }
        })
        .await;
        Server {
            child,
            url,
            dir,
            log,
        }
    }

    /// What the server has written to stderr so far.
    pub(crate) fn log(&self) -> String {
        String::from_utf8_lossy(&self.log.lock().unwrap()).into_owned()
    }

    /// Job runs this server has finished, whatever their outcome (`redline_jobs_total`).
    pub(crate) async fn finished_jobs(&self) -> u64 {
        let metrics = reqwest::get(format!("{}/metrics", self.url))
            .await
            .expect("metrics")
            .text()
            .await
            .unwrap_or_default();
        metrics
            .lines()
            .filter(|line| line.starts_with("redline_jobs_total{"))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    /// Waits (a bounded number of polls) until `count` job runs have finished: after
    /// that, a run can no longer publish anything.
    pub(crate) async fn wait_for_finished_jobs(&self, count: u64) {
        let finished =
            wait_until_async(|| async move { self.finished_jobs().await >= count }).await;
        assert!(finished, "fewer than {count} job runs finished");
    }

    /// Delivers `body` signed with the webhook secret, as GitHub does.
    pub(crate) async fn deliver_signed(
        &self,
        event: &str,
        delivery: &str,
        body: &[u8],
    ) -> (u16, String) {
        let signature = redline::server::signature::sign(&Secret::new(SECRET), body);
        self.deliver(event, delivery, body, Some(signature)).await
    }

    async fn deliver(
        &self,
        event: &str,
        delivery: &str,
        body: &[u8],
        signature: Option<String>,
    ) -> (u16, String) {
        let mut request = reqwest::Client::new()
            .post(format!("{}/webhook", self.url))
            .header("X-GitHub-Event", event)
            .header("X-GitHub-Delivery", delivery)
            .header("content-type", "application/json")
            .body(body.to_vec());
        if let Some(signature) = signature {
            request = request.header("X-Hub-Signature-256", signature);
        }
        let response = request.send().await.expect("deliver");
        let status = response.status().as_u16();
        (status, response.text().await.unwrap_or_default())
    }
}

pub(crate) fn pull_request_payload(base: &str, head: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/fixtures/webhooks/pull_request/ready_for_review.with-installation.payload.json",
    );
    let mut event: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("JSON");
    event["number"] = json!(7);
    event["pull_request"]["number"] = json!(7);
    event["pull_request"]["draft"] = json!(false);
    event["pull_request"]["base"]["sha"] = json!(base);
    event["pull_request"]["head"]["sha"] = json!(head);
    event["repository"]["full_name"] = json!("octo/demo");
    event["repository"]["name"] = json!("demo");
    event["repository"]["owner"]["login"] = json!("octo");
    event.to_string().into_bytes()
}

#[tokio::test]
async fn a_signed_webhook_becomes_one_review_on_github() {
    signed_webhook_becomes_one_review(false).await;
}

/// The same on one core, where the server runs every task on one thread.
#[tokio::test]
async fn on_one_core_a_signed_webhook_becomes_one_review_on_github() {
    signed_webhook_becomes_one_review(true).await;
}

async fn signed_webhook_becomes_one_review(one_core: bool) {
    let repo = TempRepo::new();
    repo.write("src/calc.rs", "pub fn one() -> i32 {\n    1\n}\n");
    let base = repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "src/calc.rs",
        "pub fn one() -> i32 {\n    1\n}\n\npub fn ratio(a: i32, b: i32) -> i32 {\n    a / b\n}\n",
    );
    let head = repo.commit("add ratio");

    let gh = GitHubMock::start().await;
    gh.add_pull(
        "octo",
        "demo",
        7,
        PullSpec::new(&base, &head).with_clone_url(&repo.path().display().to_string()),
    );
    let model = ModelServer::start(
        Wire::OpenAi,
        vec![Reply::tool("s", "submit_review", json!({"findings": [{"path": "src/calc.rs", "line": 6, "severity": "critical",
            "category": "bug", "title": "Division by zero", "body": "b may be 0."}], "summary": "Adds ratio."}))],
    )
    .await;
    let server = if one_core {
        Server::start_on_one_core(&gh, &model).await
    } else {
        Some(Server::start(&gh, &model).await)
    };
    let Some(mut server) = server else {
        crate::common::skip("serve on one core", "taskset is not installed");
        return;
    };
    let body = pull_request_payload(&base, &head);
    if one_core {
        assert!(
            server.log().contains("async runtime started cores=1"),
            "{}",
            server.log()
        );
    }

    let (status, _) = server
        .deliver("pull_request", "d-bad", &body, Some("sha256=00".into()))
        .await;
    assert_eq!(status, 401, "a wrong signature is refused");
    let (status, _) = server.deliver("pull_request", "d-none", &body, None).await;
    assert_eq!(status, 401, "a missing signature is refused");

    let (status, answer) = server.deliver_signed("pull_request", "d-1", &body).await;
    assert_eq!(status, 202, "{answer}");
    wait_until(|| !gh.reviews().is_empty()).await;
    let reviews = gh.reviews();
    assert_eq!(
        reviews.len(),
        1,
        "requests: {:?}",
        gh.requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect::<Vec<_>>()
    );
    assert_eq!(reviews[0]["commit_id"], head.as_str());
    assert_eq!(reviews[0]["comments"][0]["path"], "src/calc.rs");
    assert_eq!(reviews[0]["comments"][0]["line"], 6);
    assert!(
        gh.token_requests() >= 1,
        "an installation token was requested with the App JWT"
    );

    let (status, answer) = server.deliver_signed("pull_request", "d-1", &body).await;
    assert!(
        status == 200 && answer.contains("duplicate"),
        "a redelivery is not queued again: {status} {answer}"
    );
    let metrics = reqwest::get(format!("{}/metrics", server.url))
        .await
        .expect("metrics")
        .text()
        .await
        .unwrap_or_default();
    assert!(
        metrics.contains("redline_webhook_deliveries_total"),
        "{metrics}"
    );
    assert_eq!(
        model.review_requests().len(),
        1,
        "one review, one model call"
    );

    #[cfg(unix)]
    {
        let pid = server.child.id().expect("pid");
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        let exit = tokio::time::timeout(Duration::from_secs(60), server.child.wait())
            .await
            .expect("exits after SIGTERM")
            .expect("wait");
        assert!(exit.success(), "graceful shutdown exits 0: {exit:?}");
    }
}

#[tokio::test]
async fn the_cost_ceiling_bounds_a_review_and_metrics_count_its_cost() {
    let repo = TempRepo::new();
    repo.write("src/calc.rs", "pub fn one() -> i32 {\n    1\n}\n");
    let base = repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("src/calc.rs", "pub fn one() -> i32 {\n    1 / 0\n}\n");
    let head = repo.commit("divide");
    let gh = GitHubMock::start().await;
    gh.add_pull(
        "octo",
        "demo",
        7,
        PullSpec::new(&base, &head).with_clone_url(&repo.path().display().to_string()),
    );
    let model = ModelServer::start(
        Wire::OpenAi,
        vec![Reply::tool(
            "s",
            "submit_review",
            json!({"findings": [], "summary": "ok"}),
        )],
    )
    .await;
    // The repository sets no limit: the ceiling applies ($0.01 at gpt-4.1-mini's list price).
    let server = Server::start_with(
        &gh,
        &model,
        &["--model", "gpt-4.1-mini", "--max-cost-ceiling", "0.01"],
    )
    .await;
    let (status, answer) = server
        .deliver_signed(
            "pull_request",
            "d-cost",
            &pull_request_payload(&base, &head),
        )
        .await;
    assert_eq!(status, 202, "{answer}");
    wait_until(|| !gh.issue_comments().is_empty()).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let allowance = requests[0].body["max_tokens"].as_u64().unwrap_or(0);
    assert!(
        allowance > 0 && allowance < 8192,
        "the ceiling lowered the reply allowance: {allowance}"
    );
    let metrics = reqwest::get(format!("{}/metrics", server.url))
        .await
        .expect("metrics")
        .text()
        .await
        .unwrap_or_default();
    let cost: f64 = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "redline_review_cost_usd_total{forge=\"github\",repository=\"octo/demo\"} ",
            )
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no cost for octo/demo: {metrics}"));
    assert!(cost > 0.0 && cost <= 0.01, "{cost}");

    // A cost ceiling needs a price: refused at start for a model the table does not know.
    let output = cli::redline_command()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--max-cost-ceiling",
            "1",
        ])
        .env("GITHUB_APP_ID", "1")
        .env(
            "GITHUB_APP_PRIVATE_KEY_PATH",
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/github/TEST-ONLY-app-private-key.pem"),
        )
        .env("GITHUB_WEBHOOK_SECRET", SECRET)
        .env("REDLINE_BASE_URL", "http://127.0.0.1:9/v1")
        .env("REDLINE_MODEL", "local-model")
        .output()
        .await
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--max-cost-ceiling"), "{stderr}");
}

#[tokio::test]
async fn missing_settings_are_named_at_start() {
    let output = cli::redline_command()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env_remove("GITHUB_APP_ID")
        .env_remove("GITHUB_APP_CLIENT_ID")
        .output()
        .await
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("GITHUB_APP_ID"));
    let output = cli::redline_command()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("GITHUB_APP_ID", "1")
        .env("GITHUB_APP_PRIVATE_KEY", "not a key")
        .env("GITHUB_WEBHOOK_SECRET", SECRET)
        .env("REDLINE_BASE_URL", "http://127.0.0.1:9/v1")
        .output()
        .await
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("GITHUB_APP_PRIVATE_KEY") && !stderr.contains("not a key"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_review_that_fails_for_good_leaves_a_notice_when_configured() {
    let gh = GitHubMock::start().await;
    // The pull request is unknown to GitHub (404): retrying cannot help.
    let model = ModelServer::start(Wire::OpenAi, vec![]).await;
    let server = Server::start_with(&gh, &model, &["--failure-notice"]).await;
    let body = pull_request_payload(
        "1111111111111111111111111111111111111111",
        "2222222222222222222222222222222222222222",
    );
    let (status, answer) = server.deliver_signed("pull_request", "d-404", &body).await;
    assert_eq!(status, 202, "{answer}");
    wait_until(|| !gh.issue_comments().is_empty()).await;
    let comments = gh.issue_comments();
    assert_eq!(comments.len(), 1);
    let text = comments[0]["body"].as_str().unwrap_or_default();
    assert!(text.contains("could not review"), "{text}");
    assert!(!text.contains(KEY) && !text.contains("ghs_"), "{text}");
    assert!(model.requests().is_empty() && gh.reviews().is_empty());
    wait_until(|| server.log().contains("giving up")).await;
    let log = server.log();
    assert!(
        log.contains("job failed for good; giving up"),
        "the final failure is logged as one: {log}"
    );
    assert!(
        !log.contains("will retry") && !log.contains("decision="),
        "{log}"
    );
    assert!(
        log.contains("redline serve listening") && !log.contains('\u{1b}'),
        "a redirected log has no ANSI escapes: {log:?}"
    );
}

#[tokio::test]
async fn a_bad_github_api_url_is_named_as_such() {
    let key = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github/TEST-ONLY-app-private-key.pem");
    let output = cli::redline_command()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("GITHUB_APP_ID", "1")
        .env("GITHUB_APP_PRIVATE_KEY_PATH", key)
        .env("GITHUB_WEBHOOK_SECRET", SECRET)
        .env("GITHUB_API_URL", "ftp://not-an-api")
        .env("REDLINE_BASE_URL", "http://127.0.0.1:9/v1")
        .env("REDLINE_MODEL", "test-model")
        .output()
        .await
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("GITHUB_API_URL") && !stderr.contains("GITHUB_APP_PRIVATE_KEY"),
        "{stderr}"
    );
}

/// A repository whose pull request gets a second push: head1 adds `ratio`, head2 `percent`.
fn two_push_repo() -> (TempRepo, String, String, String) {
    let repo = TempRepo::new();
    repo.write("src/calc.rs", "pub fn one() -> i32 {\n    1\n}\n");
    let base = repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "src/calc.rs",
        "pub fn one() -> i32 {\n    1\n}\n\npub fn ratio(a: i32, b: i32) -> i32 {\n    a / b\n}\n",
    );
    let head1 = repo.commit("add ratio");
    repo.write("src/calc.rs", "pub fn one() -> i32 {\n    1\n}\n\npub fn ratio(a: i32, b: i32) -> i32 {\n    a / b\n}\n\npub fn percent(a: i32) -> i32 {\n    a * 100\n}\n");
    let head2 = repo.commit("add percent");
    (repo, base, head1, head2)
}

fn finding_at(line: u32) -> Reply {
    Reply::tool(
        "s",
        "submit_review",
        json!({"findings": [{"path": "src/calc.rs", "line": line, "severity": "critical",
        "category": "bug", "title": "Division by zero", "body": "b may be 0."}], "summary": "s"}),
    )
}

async fn wait_for_reviews(gh: &GitHubMock, count: usize) {
    wait_until(|| gh.reviews().len() >= count).await;
}

#[tokio::test]
async fn a_new_push_cancels_the_running_review_and_only_the_new_head_is_reviewed() {
    let (repo, base, head1, head2) = two_push_repo();
    let gh = GitHubMock::start().await;
    let clone_url = repo.path().display().to_string();
    gh.add_pull(
        "octo",
        "demo",
        7,
        PullSpec::new(&base, &head1).with_clone_url(&clone_url),
    );
    // The review of head1 is slow; the review of head2 answers at once.
    let model = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if serde_json::to_string(&req.body)
            .unwrap_or_default()
            .contains("percent")
        {
            finding_at(6)
        } else {
            Reply::Delay(Duration::from_secs(8), Box::new(finding_at(6)))
        }
    })
    .await;
    let server =
        Server::start_with(&gh, &model, &["--heartbeat-secs", "1", "--lease-secs", "4"]).await;
    let first = pull_request_payload(&base, &head1);
    assert_eq!(
        server
            .deliver_signed("pull_request", "push-1", &first)
            .await
            .0,
        202
    );
    wait_until(|| !model.requests().is_empty()).await;
    assert_eq!(model.requests().len(), 1, "the first review is running");
    gh.add_pull(
        "octo",
        "demo",
        7,
        PullSpec::new(&base, &head2).with_clone_url(&clone_url),
    );
    let second = pull_request_payload(&base, &head2);
    assert_eq!(
        server
            .deliver_signed("pull_request", "push-2", &second)
            .await
            .0,
        202
    );
    wait_for_reviews(&gh, 1).await;
    // Both runs over (the first cancelled, or wrongly finished): nothing more can publish.
    server.wait_for_finished_jobs(2).await;
    let reviews = gh.reviews();
    assert_eq!(reviews.len(), 1, "the cancelled review published nothing");
    assert_eq!(reviews[0]["commit_id"], head2.as_str());
}

#[tokio::test]
async fn a_killed_server_finishes_the_job_after_restart_exactly_once() {
    let (repo, base, head1, _) = two_push_repo();
    let gh = GitHubMock::start().await;
    gh.add_pull(
        "octo",
        "demo",
        7,
        PullSpec::new(&base, &head1).with_clone_url(&repo.path().display().to_string()),
    );
    // The first attempt hangs in the model call; the attempt after the restart answers.
    let model = ModelServer::start_with(Wire::OpenAi, |_, index| {
        if index == 0 {
            Reply::Never
        } else {
            finding_at(6)
        }
    })
    .await;
    let flags = ["--heartbeat-secs", "1", "--lease-secs", "2"];
    let mut server = Server::start_with(&gh, &model, &flags).await;
    let body = pull_request_payload(&base, &head1);
    assert_eq!(
        server
            .deliver_signed("pull_request", "kill-1", &body)
            .await
            .0,
        202
    );
    wait_until(|| !model.requests().is_empty()).await;
    assert_eq!(model.requests().len(), 1, "the job is in flight");
    server.child.start_kill().expect("kill");
    let _ = server.child.wait().await;
    let restarted = Server::start_in(server.dir.clone(), &gh, &model, &flags).await;
    wait_for_reviews(&gh, 1).await;
    // The job's run is over on the restarted server (the killed one runs nothing).
    restarted.wait_for_finished_jobs(1).await;
    assert_eq!(
        gh.reviews().len(),
        1,
        "finished exactly once as GitHub sees it"
    );
    assert_eq!(
        model.review_requests().len(),
        2,
        "the restarted server took the job again after its lease expired"
    );
    drop(restarted);
}

#[tokio::test]
async fn a_job_taken_over_after_its_lease_continues_from_its_transcript() {
    let (repo, base, head1, _) = two_push_repo();
    let gh = GitHubMock::start().await;
    gh.add_pull(
        "octo",
        "demo",
        7,
        PullSpec::new(&base, &head1).with_clone_url(&repo.path().display().to_string()),
    );
    let turns = |req: &crate::common::model_server::RecordedRequest| {
        req.body["messages"]
            .as_array()
            .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
            .unwrap_or(0)
    };
    // The second call of the first attempt hangs; the server is killed during it.
    let hung = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let model = ModelServer::start_with(Wire::OpenAi, move |req, _| match turns(req) {
        0 => Reply::tool("r", "read_file", json!({"path": "src/calc.rs"})),
        _ if !hung.swap(true, std::sync::atomic::Ordering::SeqCst) => Reply::Never,
        _ => finding_at(6),
    })
    .await;
    let flags = ["--heartbeat-secs", "1", "--lease-secs", "2"];
    let mut server = Server::start_with(&gh, &model, &flags).await;
    let body = pull_request_payload(&base, &head1);
    assert_eq!(
        server
            .deliver_signed("pull_request", "transcript-1", &body)
            .await
            .0,
        202
    );
    wait_until(|| model.requests().len() >= 2).await;
    assert_eq!(model.requests().len(), 2, "the second call is in flight");
    server.child.start_kill().expect("kill");
    let _ = server.child.wait().await;
    let restarted = Server::start_in(server.dir.clone(), &gh, &model, &flags).await;
    wait_for_reviews(&gh, 1).await;
    assert_eq!(gh.reviews().len(), 1);
    let requests = model.review_requests();
    assert_eq!(
        requests.len(),
        3,
        "only the call cut off by the kill is made again"
    );
    assert_eq!(
        requests.iter().filter(|r| turns(r) == 0).count(),
        1,
        "the answered first call came from the transcript"
    );
    wait_until(|| {
        std::fs::read_dir(server.dir.path().join("cache/.runs"))
            .map(|d| d.count() == 0)
            .unwrap_or(true)
    })
    .await;
    let left = std::fs::read_dir(server.dir.path().join("cache/.runs"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(left, 0, "the transcript is removed once the job is done");
    drop(restarted);
}

/// compose.yaml passes every optional setting as `${VAR:-}`: empty variables are unset, so
/// the App starts with the defaults (and the key from `OPENAI_API_KEY`) instead of
/// refusing `''` as a provider or a URL.
#[tokio::test]
async fn empty_variables_as_compose_passes_them_count_as_unset() {
    let model = ModelServer::start(Wire::OpenAi, vec![]).await;
    let dir = tempfile::tempdir().expect("tmp");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let mut child = cli::redline_command()
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .env("GITHUB_APP_ID", "12345")
        .env("GITHUB_APP_PRIVATE_KEY", "")
        .env(
            "GITHUB_APP_PRIVATE_KEY_PATH",
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/github/TEST-ONLY-app-private-key.pem"),
        )
        .env("GITHUB_WEBHOOK_SECRET", SECRET)
        .env("GITHUB_API_URL", "")
        .env("OPENAI_API_KEY", KEY)
        .env("ANTHROPIC_API_KEY", "")
        .env("REDLINE_API_KEY", "")
        .env("REDLINE_PROVIDER", "")
        .env("REDLINE_MODEL", "test-model")
        .env("REDLINE_BASE_URL", model.base_url())
        .env("REDLINE_CACHE_DIR", dir.path().join("cache"))
        .env("REDLINE_MAX_COST_CEILING", "")
        .env("REDLINE_TIMEOUT_CEILING", "")
        .env(
            "REDLINE_DATABASE_URL",
            format!("sqlite://{}", dir.path().join("redline.db").display()),
        )
        .current_dir(dir.path())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start redline serve");
    let client = reqwest::Client::new();
    // Stops at once when serve exits instead of answering.
    let healthy = wait_until_async(|| {
        let exited = matches!(child.try_wait(), Ok(Some(_)));
        let health = client
            .get(format!("http://127.0.0.1:{port}/healthz"))
            .send();
        async move { exited || health.await.is_ok_and(|r| r.status().is_success()) }
    })
    .await;
    if let Ok(Some(status)) = child.try_wait() {
        let mut stderr = String::new();
        if let Some(mut pipe) = child.stderr.take() {
            use tokio::io::AsyncReadExt;
            pipe.read_to_string(&mut stderr).await.expect("stderr");
        }
        panic!("serve exited ({status}): {stderr}");
    }
    assert!(healthy, "serve never answered /healthz");
    child.kill().await.expect("stop serve");
}
