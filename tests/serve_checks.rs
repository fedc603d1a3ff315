//! `redline serve` shows each review in the pull request's checks (a check run named
//! `Redline`), end to end: the real binary, signed webhooks, the mock GitHub and the
//! scripted model, on SQLite and (when `REDLINE_TEST_POSTGRES_URL` is set) PostgreSQL.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::github_mock::{GitHubMock, PullSpec};
use crate::common::model_server::{ModelServer, Reply, Wire};
use crate::common::{wait_until, wait_until_async};
use crate::serve_cli::{Server, pull_request_payload};
use crate::settings::support::pull_request_repo;
use redline::queue::{JobId, Queue};

/// Runs each named `async fn(Option<&str>)` (the database URL; `None`: SQLite) as a test on
/// SQLite and on PostgreSQL.
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(None).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    let Some(db) = crate::queue::support::TestDb::postgres(stringify!($name)).await
                    else {
                        return;
                    };
                    super::$name(Some(db.url())).await;
                    db.cleanup().await;
                }
            )*
        }
    };
}

on_both_databases!(
    a_review_s_check_run_follows_fail_on,
    a_failed_review_fails_its_check_and_a_re_run_reviews_again,
    superseded_reviews_are_cancelled_naming_the_newer_commit,
    a_check_left_in_progress_by_a_killed_server_is_queued_again_and_completed,
    without_the_checks_permission_the_review_posts_and_one_notice_says_so,
);

fn finding(path: &str, line: u32, severity: &str, title: &str) -> Value {
    json!({"path": path, "line": line, "severity": severity, "category": "bug",
        "title": title, "body": "b may be 0."})
}

fn submit(findings: Vec<Value>) -> Reply {
    Reply::tool(
        "s",
        "submit_review",
        json!({"findings": findings, "summary": "Reviewed."}),
    )
}

/// A server on `database` (none: SQLite) with fast leases.
async fn server(database: Option<&str>, gh: &GitHubMock, model: &ModelServer) -> Server {
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let flags = ["--heartbeat-secs", "1", "--lease-secs", "2"];
    Server::start_on(dir, database, gh, model, &flags).await
}

/// Pull request `octo/demo#7` of `repo` at `base..head`, known to the mock.
fn add_pull(gh: &GitHubMock, repo: &Path, base: &str, head: &str) {
    let clone_url = repo.display().to_string();
    gh.add_pull(
        "octo",
        "demo",
        7,
        PullSpec::new(base, head).with_clone_url(&clone_url),
    );
}

/// The check runs on `head` that are completed.
fn completed_on(gh: &GitHubMock, head: &str) -> Vec<Value> {
    gh.check_runs()
        .into_iter()
        .filter(|run| run["head_sha"] == head && run["status"] == "completed")
        .collect()
}

async fn wait_for_completed(gh: &GitHubMock, head: &str, count: usize) -> Vec<Value> {
    wait_until(|| completed_on(gh, head).len() >= count).await;
    let runs = completed_on(gh, head);
    assert!(
        runs.len() >= count,
        "{count} completed check run(s) on {head}: {:#?}",
        gh.check_runs()
    );
    runs
}

/// The job id in a 202 answer.
fn job_id(answer: &str) -> String {
    let answer: Value = serde_json::from_str(answer).expect("JSON answer");
    answer["job_id"].to_string()
}

async fn a_review_s_check_run_follows_fail_on(database: Option<&str>) {
    let (repo, base, head) = pull_request_repo(Some("fail_on = \"major\"\n"));
    let gh = GitHubMock::start().await;
    add_pull(&gh, repo.path(), &base, &head);
    let model = ModelServer::start_with(Wire::OpenAi, |_, index| match index {
        // A critical finding on the diff, and a major one on a file the change does not touch.
        0 => submit(vec![
            finding("src/calc.rs", 6, "critical", "Division by zero"),
            finding("README.md", 1, "major", "Stale instructions"),
        ]),
        _ => submit(vec![finding("src/calc.rs", 14, "minor", "Name")]),
    })
    .await;
    let server = server(database, &gh, &model).await;
    // Opened as a draft: not reviewed, shown skipped.
    let mut draft: Value =
        serde_json::from_slice(&pull_request_payload(&base, &head)).expect("JSON");
    draft["action"] = json!("opened");
    draft["pull_request"]["draft"] = json!(true);
    let (status, answer) = server
        .deliver_signed("pull_request", "d-0", draft.to_string().as_bytes())
        .await;
    assert_eq!(status, 202, "{answer}");
    let runs = wait_for_completed(&gh, &head, 1).await;
    assert_eq!(runs[0]["conclusion"], "neutral", "{:#}", runs[0]);
    assert_eq!(runs[0]["output"]["title"], "Skipped: draft");
    assert!(model.requests().is_empty());

    // Marked ready: reviewed.
    let (status, answer) = server
        .deliver_signed("pull_request", "d-1", &pull_request_payload(&base, &head))
        .await;
    assert_eq!(status, 202, "{answer}");
    wait_for_completed(&gh, &head, 2).await;
    let runs: Vec<Value> = completed_on(&gh, &head)
        .into_iter()
        .filter(|run| run["external_id"].as_str() == Some(job_id(&answer).as_str()))
        .collect();
    assert_eq!(
        gh.check_runs().len(),
        2,
        "one check run per job: {:#?}",
        gh.check_runs()
    );
    let run = &runs[0];
    assert_eq!(run["name"], "Redline");
    assert_eq!(run["external_id"].as_str(), Some(job_id(&answer).as_str()));
    assert_eq!(run["conclusion"], "failure", "{run:#}");
    assert_eq!(run["output"]["title"], "2 findings: 1 critical, 1 major");
    let summary = run["output"]["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("pullrequestreview-") && summary.contains("**Failing**"),
        "{summary}"
    );
    assert!(
        summary.contains("cost unknown") && summary.contains("completion tokens"),
        "{summary}"
    );
    let annotations = run["annotations"].as_array().cloned().unwrap_or_default();
    assert_eq!(annotations.len(), 1, "{annotations:#?}");
    assert_eq!(annotations[0]["path"], "README.md");
    assert_eq!(annotations[0]["annotation_level"], "failure");

    // Queued when stored, in progress with the strategy and limits, then completed.
    let writes: Vec<Value> = gh
        .check_run_writes()
        .into_iter()
        .filter(|w| w["id"] == run["id"])
        .collect();
    assert_eq!(writes[0]["status"], "queued", "{writes:#?}");
    let running = writes
        .iter()
        .find(|w| w["status"] == "in_progress")
        .unwrap_or_else(|| panic!("no in_progress update: {writes:#?}"));
    let running = running["output"]["summary"].as_str().unwrap_or_default();
    assert!(
        running.contains("Strategy: `auto`") && running.contains("Limits: "),
        "{running}"
    );

    // A push whose review finds only a minor issue passes.
    repo.write(
        "src/calc.rs",
        format!(
            "{}\npub fn zero() -> i32 {{\n    0\n}}\n",
            crate::settings::support::HEAD_CALC
        ),
    );
    let head2 = repo.commit("add zero");
    add_pull(&gh, repo.path(), &base, &head2);
    let (status, answer) = server
        .deliver_signed("pull_request", "d-2", &pull_request_payload(&base, &head2))
        .await;
    assert_eq!(status, 202, "{answer}");
    let runs = wait_for_completed(&gh, &head2, 1).await;
    assert_eq!(runs[0]["conclusion"], "success", "{:#}", runs[0]);
    assert_eq!(runs[0]["output"]["title"], "1 finding: 1 minor");
    assert!(
        gh.check_runs()
            .iter()
            .all(|run| run["status"] == "completed"),
        "{:#?}",
        gh.check_runs()
    );
}

/// A `check_run` `rerequested` delivery for Redline's check on `head` of `octo/demo#7`,
/// asked by `sender` (GitHub's payload example, made Redline's).
fn rerun_payload(head: &str, sender: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/webhooks/check_run/rerequested.payload.json");
    let mut event: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("JSON");
    event["check_run"]["name"] = json!("Redline");
    event["check_run"]["head_sha"] = json!(head);
    event["check_run"]["pull_requests"] = json!([{"number": 7, "head": {"sha": head}}]);
    event["repository"]["full_name"] = json!("octo/demo");
    event["sender"]["login"] = json!(sender);
    event.to_string().into_bytes()
}

async fn a_failed_review_fails_its_check_and_a_re_run_reviews_again(database: Option<&str>) {
    let (repo, base, head) = pull_request_repo(None);
    let gh = GitHubMock::start().await;
    add_pull(&gh, repo.path(), &base, &head);
    let model = ModelServer::start_with(Wire::OpenAi, |_, index| match index {
        0 => Reply::Error {
            status: 400,
            headers: Vec::new(),
            body:
                json!({"error": {"message": "@alice ![x](https://evil.example/t.png) bad request"}})
                    .to_string(),
        },
        _ => submit(vec![finding("src/calc.rs", 6, "major", "Division by zero")]),
    })
    .await;
    let server = server(database, &gh, &model).await;
    let (status, _) = server
        .deliver_signed("pull_request", "d-1", &pull_request_payload(&base, &head))
        .await;
    assert_eq!(status, 202);
    let runs = wait_for_completed(&gh, &head, 1).await;
    assert_eq!(runs[0]["conclusion"], "failure", "{:#}", runs[0]);
    assert_eq!(runs[0]["output"]["title"], "Review failed");
    let summary = runs[0]["output"]["summary"].as_str().unwrap_or_default();
    assert!(
        summary.starts_with("Redline could not review this commit: ") && summary.contains("400"),
        "{summary}"
    );
    assert!(
        !summary.contains('\n') && !summary.contains("@alice") && !summary.contains("![x]"),
        "one plain paragraph, nothing that acts on GitHub: {summary}"
    );
    assert!(gh.reviews().is_empty());

    // "Re-run" by someone without write access: nothing runs, no check run is made.
    let (status, answer) = server
        .deliver_signed("check_run", "r-1", &rerun_payload(&head, "outsider"))
        .await;
    assert_eq!(status, 202, "{answer}");
    server.wait_for_finished_jobs(2).await;
    assert_eq!(gh.check_runs().len(), 1);
    assert_eq!(model.requests().len(), 1, "no review for the outsider");

    // "Re-run" by a writer reviews the commit again in a new check run.
    gh.set_permission("writer", "write");
    let (status, answer) = server
        .deliver_signed("check_run", "r-2", &rerun_payload(&head, "writer"))
        .await;
    assert_eq!(status, 202, "{answer}");
    let runs = wait_for_completed(&gh, &head, 2).await;
    let rerun = runs
        .iter()
        .find(|run| run["external_id"].as_str() == Some(job_id(&answer).as_str()))
        .unwrap_or_else(|| panic!("no check run of the re-run: {runs:#?}"));
    assert_eq!(rerun["conclusion"], "success", "{rerun:#}");
    assert_eq!(rerun["output"]["title"], "1 finding: 1 major");
    assert_eq!(gh.reviews().len(), 1, "the re-run posted the review");
}

async fn superseded_reviews_are_cancelled_naming_the_newer_commit(database: Option<&str>) {
    let (repo, base, head1) = pull_request_repo(None);
    let calc = crate::settings::support::HEAD_CALC;
    repo.write(
        "src/calc.rs",
        format!("{calc}\npub fn two() -> i32 {{\n    2\n}}\n"),
    );
    let head2 = repo.commit("add two");
    repo.write(
        "src/calc.rs",
        format!(
            "{calc}\npub fn two() -> i32 {{\n    2\n}}\n\npub fn three() -> i32 {{\n    3\n}}\n"
        ),
    );
    let head3 = repo.commit("add three");
    let gh = GitHubMock::start().await;
    add_pull(&gh, repo.path(), &base, &head1);
    // The first review is slow; the others answer at once.
    let model = ModelServer::start_with(Wire::OpenAi, |_, index| match index {
        0 => Reply::Delay(Duration::from_secs(4), Box::new(submit(Vec::new()))),
        _ => submit(Vec::new()),
    })
    .await;
    let server = server(database, &gh, &model).await;
    let deliver = |id: &'static str, head: String| {
        let body = pull_request_payload(&base, &head);
        let server = &server;
        async move { server.deliver_signed("pull_request", id, &body).await.0 }
    };
    assert_eq!(deliver("push-1", head1.clone()).await, 202);
    wait_until(|| !model.requests().is_empty()).await;
    assert_eq!(model.requests().len(), 1, "the first review is running");
    add_pull(&gh, repo.path(), &base, &head3);
    // The second push is replaced by the third before it runs.
    assert_eq!(deliver("push-2", head2.clone()).await, 202);
    assert_eq!(deliver("push-3", head3.clone()).await, 202);
    wait_for_completed(&gh, &head3, 1).await;
    for head in [&head1, &head2] {
        let runs = wait_for_completed(&gh, head, 1).await;
        assert_eq!(runs.len(), 1, "{runs:#?}");
        assert_eq!(runs[0]["conclusion"], "cancelled", "{:#}", runs[0]);
        let summary = runs[0]["output"]["summary"].as_str().unwrap_or_default();
        let names_newer = [&head2, &head3]
            .iter()
            .filter(|newer| **newer != head)
            .any(|newer| summary.contains(&newer[..7]));
        assert!(names_newer, "names a newer commit: {summary}");
    }
    assert!(
        completed_on(&gh, &head2)[0]["output"]["summary"]
            .as_str()
            .is_some_and(|summary| summary.contains(&head3[..7])),
        "the superseded push names the one that replaced it"
    );
    assert_eq!(completed_on(&gh, &head3)[0]["conclusion"], "success");
    server.wait_for_finished_jobs(2).await;
    assert!(
        gh.check_runs()
            .iter()
            .all(|run| run["status"] == "completed"),
        "{:#?}",
        gh.check_runs()
    );
}

async fn a_check_left_in_progress_by_a_killed_server_is_queued_again_and_completed(
    database: Option<&str>,
) {
    let (repo, base, head) = pull_request_repo(None);
    let gh = GitHubMock::start().await;
    add_pull(&gh, repo.path(), &base, &head);
    // The first attempt hangs in the model call; the attempt after the restart answers.
    let model = ModelServer::start_with(Wire::OpenAi, |_, index| match index {
        0 => Reply::Never,
        _ => submit(Vec::new()),
    })
    .await;
    let dir = Arc::new(tempfile::tempdir().expect("tmp"));
    let flags = ["--heartbeat-secs", "1", "--lease-secs", "2"];
    let mut first = Server::start_on(dir.clone(), database, &gh, &model, &flags).await;
    let body = pull_request_payload(&base, &head);
    let (status, answer) = first.deliver_signed("pull_request", "k-1", &body).await;
    assert_eq!(status, 202);
    let job = JobId(job_id(&answer).parse().expect("a job id"));
    wait_until(|| !model.requests().is_empty()).await;
    let in_progress = |gh: &GitHubMock| {
        gh.check_run_writes()
            .iter()
            .any(|w| w["status"] == "in_progress")
    };
    wait_until(|| in_progress(&gh)).await;
    assert!(in_progress(&gh), "{:#?}", gh.check_run_writes());
    first.child.start_kill().expect("kill");
    let _ = first.child.wait().await;
    // The dead worker's lease runs out before the restart (read from the database, so the
    // wait ends when it has).
    let url = database.map_or_else(
        || format!("sqlite://{}", dir.path().join("redline.db").display()),
        str::to_string,
    );
    let queue = Queue::connect(&url).await.expect("the server's queue");
    let lease_over = wait_until_async(|| async {
        let leased = queue
            .job(job)
            .await
            .expect("read the job")
            .expect("the job");
        leased
            .lease_until
            .is_some_and(|until| until < chrono::Utc::now())
    })
    .await;
    assert!(lease_over, "the killed server's lease never ran out");
    queue.close().await;
    let restarted = Server::start_on(dir, database, &gh, &model, &flags).await;
    let runs = wait_for_completed(&gh, &head, 1).await;
    assert_eq!(gh.check_runs().len(), 1, "{:#?}", gh.check_runs());
    assert_eq!(runs[0]["conclusion"], "success");
    let statuses: Vec<String> = gh
        .check_run_writes()
        .iter()
        .map(|w| w["status"].as_str().unwrap_or_default().to_string())
        .collect();
    let queued_again = statuses
        .iter()
        .skip_while(|status| *status != "in_progress")
        .any(|status| status == "queued");
    assert!(queued_again, "shown queued again at start: {statuses:?}");
    drop(restarted);
}

async fn without_the_checks_permission_the_review_posts_and_one_notice_says_so(
    database: Option<&str>,
) {
    let (repo, base, head) = pull_request_repo(None);
    let gh = GitHubMock::start().await;
    gh.forbid_checks();
    add_pull(&gh, repo.path(), &base, &head);
    let model = ModelServer::start_with(Wire::OpenAi, |_, index| match index {
        0 => submit(vec![finding("src/calc.rs", 6, "major", "Division by zero")]),
        _ => submit(vec![finding("src/calc.rs", 14, "minor", "Name")]),
    })
    .await;
    let server = server(database, &gh, &model).await;
    let notices = |gh: &GitHubMock| {
        gh.issue_comments()
            .iter()
            .filter(|c| {
                c["body"]
                    .as_str()
                    .is_some_and(|b| b.contains("`checks: write`"))
            })
            .count()
    };
    let (status, _) = server
        .deliver_signed("pull_request", "p-1", &pull_request_payload(&base, &head))
        .await;
    assert_eq!(status, 202);
    wait_until(|| !gh.reviews().is_empty() && notices(&gh) > 0).await;
    assert_eq!(gh.reviews().len(), 1, "the review still posts");
    assert_eq!(notices(&gh), 1);
    assert!(gh.check_runs().is_empty());

    repo.write(
        "src/calc.rs",
        format!(
            "{}\npub fn zero() -> i32 {{\n    0\n}}\n",
            crate::settings::support::HEAD_CALC
        ),
    );
    let head2 = repo.commit("add zero");
    add_pull(&gh, repo.path(), &base, &head2);
    let (status, _) = server
        .deliver_signed("pull_request", "p-2", &pull_request_payload(&base, &head2))
        .await;
    assert_eq!(status, 202);
    wait_until(|| gh.reviews().len() >= 2).await;
    server.wait_for_finished_jobs(2).await;
    assert_eq!(gh.reviews().len(), 2);
    assert_eq!(notices(&gh), 1, "the missing permission is noticed once");
    assert!(
        server.log().contains("missing permission"),
        "{}",
        server.log()
    );
}
