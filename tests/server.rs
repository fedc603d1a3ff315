//! The webhook server through `app()` (tower `oneshot`), on a temporary SQLite queue.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use redline::llm::Secret;
use redline::queue::{JobId, JobKind, JobState, ReviewTrigger};
use redline::server::signature::sign;
use redline::server::{AppState, ServerConfig, WEBHOOK_BODY_LIMIT, app, serve};
use serde_json::Value;
use tower::ServiceExt;

use crate::queue::support::TestDb;

const SECRET: &str = "test-webhook-secret";

/// A server over a fresh queue, recording calls of the installation hook.
struct Harness {
    _db: TestDb,
    state: AppState,
    removed: Arc<Mutex<Vec<u64>>>,
}

async fn harness(config: ServerConfig) -> Harness {
    let db = TestDb::sqlite();
    let removed = Arc::new(Mutex::new(Vec::new()));
    let hook_log = removed.clone();
    let mut state = AppState::new(db.queue().await, Secret::new(SECRET));
    state.config = config;
    state.on_installation_removed = Some(Arc::new(move |id| hook_log.lock().unwrap().push(id)));
    Harness {
        _db: db,
        state,
        removed,
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/webhooks/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&fixture(name)).unwrap()
}

fn fresh_delivery_id() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "72d3162e-cc78-11e3-81ab-{:012}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

impl Harness {
    /// POSTs `body` as `event` with the given headers (signature `None` = header absent).
    async fn post(
        &self,
        event: Option<&str>,
        delivery: Option<&str>,
        signature: Option<String>,
        body: Vec<u8>,
    ) -> (StatusCode, Value) {
        let mut request =
            Request::post("/webhook").header(header::CONTENT_TYPE, "application/json");
        if let Some(event) = event {
            request = request.header("X-GitHub-Event", event);
        }
        if let Some(delivery) = delivery {
            request = request.header("X-GitHub-Delivery", delivery);
        }
        if let Some(signature) = signature {
            request = request.header("X-Hub-Signature-256", signature);
        }
        let response = app(self.state.clone())
            .oneshot(request.body(Body::from(body)).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// POSTs `body` correctly signed with a fresh delivery id.
    async fn deliver(&self, event: &str, body: Vec<u8>) -> (StatusCode, Value) {
        let signature = sign(&Secret::new(SECRET), &body);
        self.post(
            Some(event),
            Some(&fresh_delivery_id()),
            Some(signature),
            body,
        )
        .await
    }

    async fn get(&self, path: &str) -> (StatusCode, String, Option<String>) {
        let response = app(self.state.clone())
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|value| value.to_str().unwrap().to_string());
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            String::from_utf8(bytes.to_vec()).unwrap(),
            content_type,
        )
    }

    async fn stored(&self) -> (u64, u64) {
        let queue = &self.state.queue;
        let jobs: u64 = queue.counts_by_state().await.unwrap().values().sum();
        (queue.delivery_count().await.unwrap(), jobs)
    }
}

fn job_id(answer: &Value) -> JobId {
    JobId(answer["job_id"].as_i64().expect("job_id in the answer"))
}

#[tokio::test]
async fn an_opened_pull_request_is_queued_before_the_answer() {
    let h = harness(ServerConfig::default()).await;
    let (status, answer) = h
        .deliver("pull_request", fixture("pull_request/opened.payload"))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(answer["status"], "queued");
    let job = h
        .state
        .queue
        .job(job_id(&answer))
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(job.state, JobState::Queued);
    assert_eq!(job.repo_full_name, "Codertocat/Hello-World");
    assert_eq!((job.installation_id, job.pr_number), (Some(1), 2));
    assert_eq!(job.forge, redline::queue::ForgeKind::GitHub);
    assert_eq!(
        job.head_sha.as_deref(),
        Some("ec26c3e57ca3a959ca5aad62de7213c562f8c821")
    );
    assert!(matches!(
        job.trigger().unwrap(),
        ReviewTrigger::PullRequest { action, .. } if action == "opened"
    ));
}

#[tokio::test]
async fn synchronize_and_ready_for_review_are_queued() {
    let h = harness(ServerConfig::default()).await;
    for name in [
        "pull_request/synchronize.payload",
        "pull_request/ready_for_review.with-installation.payload",
    ] {
        let (status, answer) = h.deliver("pull_request", fixture(name)).await;
        assert_eq!(
            (status, answer["status"].as_str()),
            (StatusCode::ACCEPTED, Some("queued"))
        );
    }
}

#[tokio::test]
async fn wrong_or_missing_signatures_are_refused_and_nothing_is_stored() {
    let h = harness(ServerConfig::default()).await;
    let body = fixture("pull_request/opened.payload");
    let wrong = sign(&Secret::new("not the secret"), &body);
    let mut tampered = body.clone();
    tampered[10] ^= 1;
    let good_for_original = sign(&Secret::new(SECRET), &body);
    for (signature, body) in [
        (Some(wrong), body.clone()),
        (None, body.clone()),
        (Some("sha256=".to_string()), body.clone()),
        (Some(good_for_original), tampered),
    ] {
        let (status, answer) = h
            .post(
                Some("pull_request"),
                Some(&fresh_delivery_id()),
                signature,
                body,
            )
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(answer["error"], "invalid signature");
    }
    assert_eq!(h.stored().await, (0, 0));
}

#[tokio::test]
async fn a_closed_pull_request_is_ignored_but_recorded() {
    let h = harness(ServerConfig::default()).await;
    let (status, answer) = h
        .deliver("pull_request", fixture("pull_request/closed.payload"))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(answer["status"], "ignored");
    assert_eq!(h.stored().await, (1, 0));
}

#[tokio::test]
async fn drafts_are_skipped_unless_configured() {
    let h = harness(ServerConfig::default()).await;
    let (status, answer) = h
        .deliver("pull_request", fixture("pull_request/opened.draft"))
        .await;
    assert_eq!(
        (status, answer["status"].as_str()),
        (StatusCode::ACCEPTED, Some("ignored"))
    );
    assert_eq!(answer["reason"], "draft pull request");

    let h = harness(ServerConfig {
        review_drafts: true,
        ..ServerConfig::default()
    })
    .await;
    let (_, answer) = h
        .deliver("pull_request", fixture("pull_request/opened.draft"))
        .await;
    assert_eq!(answer["status"], "queued");
}

#[tokio::test]
async fn a_review_command_on_a_pull_request_is_queued_with_the_commenter() {
    let h = harness(ServerConfig::default()).await;
    let (status, answer) = h
        .deliver(
            "issue_comment",
            fixture("issue_comment/created.with-installation.on-pull-request.redline-command"),
        )
        .await;
    assert_eq!(
        (status, answer["status"].as_str()),
        (StatusCode::ACCEPTED, Some("queued"))
    );
    let job = h.state.queue.job(job_id(&answer)).await.unwrap().unwrap();
    assert_eq!(job.pr_number, 1);
    assert_eq!(job.head_sha, None);
    assert_eq!(
        job.kind,
        JobKind::Requested {
            strategy: Some("deep".into())
        }
    );
    let ReviewTrigger::Command {
        commenter,
        author_association,
        ..
    } = job.trigger().unwrap()
    else {
        panic!("not a command trigger");
    };
    assert_eq!(
        (commenter.as_str(), author_association.as_str()),
        ("Codertocat", "OWNER")
    );
}

#[tokio::test]
async fn other_comments_are_ignored() {
    let h = harness(ServerConfig::default()).await;
    let mut plain =
        fixture_json("issue_comment/created.with-installation.on-pull-request.redline-command");
    plain["comment"]["body"] = "Looks good to me".into();
    let mut edited =
        fixture_json("issue_comment/created.with-installation.on-pull-request.redline-command");
    edited["action"] = "edited".into();
    for body in [
        fixture("issue_comment/created.with-installation.payload"),
        serde_json::to_vec(&plain).unwrap(),
        serde_json::to_vec(&edited).unwrap(),
    ] {
        let (status, answer) = h.deliver("issue_comment", body).await;
        assert_eq!(
            (status, answer["status"].as_str()),
            (StatusCode::ACCEPTED, Some("ignored"))
        );
    }
    assert_eq!(h.stored().await, (3, 0));
}

#[tokio::test]
async fn a_malformed_command_is_answered_with_the_usage_and_not_queued() {
    let mut h = harness(ServerConfig::default()).await;
    let replies = Arc::new(Mutex::new(Vec::new()));
    let log = replies.clone();
    h.state.on_command_reply = Some(Arc::new(move |reply| log.lock().unwrap().push(reply)));
    let mut bogus =
        fixture_json("issue_comment/created.with-installation.on-pull-request.redline-command");
    bogus["comment"]["body"] = "/redline review --now".into();
    let (status, answer) = h
        .deliver("issue_comment", serde_json::to_vec(&bogus).unwrap())
        .await;
    assert_eq!(
        (status, answer["status"].as_str()),
        (StatusCode::ACCEPTED, Some("ignored"))
    );
    assert_eq!(h.stored().await, (1, 0), "recorded, nothing queued");
    let replies = replies.lock().unwrap();
    assert_eq!(replies.len(), 1);
    assert_eq!(
        (replies[0].pr_number, replies[0].commenter.as_str()),
        (1, "Codertocat")
    );
    assert!(replies[0].text.contains("--now") && replies[0].text.contains(redline::forge::USAGE));
}

#[tokio::test]
async fn ping_answers_200() {
    let h = harness(ServerConfig::default()).await;
    let (status, answer) = h.deliver("ping", fixture("ping/payload")).await;
    assert_eq!(
        (status, answer["status"].as_str()),
        (StatusCode::OK, Some("pong"))
    );
}

#[tokio::test]
async fn installation_events_are_acknowledged_and_removals_call_the_hook() {
    let h = harness(ServerConfig::default()).await;
    for (event, name) in [
        ("installation", "installation/created.payload"),
        (
            "installation_repositories",
            "installation_repositories/added.payload",
        ),
        ("installation", "installation/deleted.payload"),
        ("installation", "installation/suspend.payload"),
    ] {
        let (status, answer) = h.deliver(event, fixture(name)).await;
        assert_eq!(
            (status, answer["status"].as_str()),
            (StatusCode::OK, Some("acknowledged"))
        );
    }
    assert_eq!(*h.removed.lock().unwrap(), vec![2, 16598467]);
    assert_eq!(h.stored().await, (4, 0));
}

#[tokio::test]
async fn unknown_events_are_ignored() {
    let h = harness(ServerConfig::default()).await;
    let (status, answer) = h.deliver("star", br#"{"action":"created"}"#.to_vec()).await;
    assert_eq!(
        (status, answer["status"].as_str()),
        (StatusCode::ACCEPTED, Some("ignored"))
    );
}

#[tokio::test]
async fn a_redelivery_is_not_queued_again() {
    let h = harness(ServerConfig::default()).await;
    let body = fixture("pull_request/opened.payload");
    let signature = sign(&Secret::new(SECRET), &body);
    let delivery = fresh_delivery_id();
    let (first, _) = h
        .post(
            Some("pull_request"),
            Some(&delivery),
            Some(signature.clone()),
            body.clone(),
        )
        .await;
    let (again, answer) = h
        .post(Some("pull_request"), Some(&delivery), Some(signature), body)
        .await;
    assert_eq!((first, again), (StatusCode::ACCEPTED, StatusCode::OK));
    assert_eq!(answer["status"], "duplicate");
    assert_eq!(h.stored().await, (1, 1));
}

/// GitHub's "redeliver" pressed many times at once: the copies arrive together, share the
/// intake's group commits, and still make one job with one `queued` answer.
#[tokio::test]
async fn concurrent_redeliveries_of_one_id_queue_one_job() {
    const COPIES: usize = 200;
    let h = harness(ServerConfig::default()).await;
    let body = fixture("pull_request/opened.payload");
    let signature = sign(&Secret::new(SECRET), &body);
    let delivery = fresh_delivery_id();
    let copies = (0..COPIES).map(|_| {
        h.post(
            Some("pull_request"),
            Some(&delivery),
            Some(signature.clone()),
            body.clone(),
        )
    });
    let answers = futures::future::join_all(copies).await;

    let queued: Vec<_> = answers
        .iter()
        .filter(|(status, _)| *status == StatusCode::ACCEPTED)
        .collect();
    assert_eq!(queued.len(), 1, "one copy is queued");
    assert_eq!(queued[0].1["status"], "queued");
    let duplicates = answers
        .iter()
        .filter(|(status, answer)| *status == StatusCode::OK && answer["status"] == "duplicate")
        .count();
    assert_eq!(duplicates, COPIES - 1, "every other copy is a duplicate");
    assert_eq!(h.stored().await, (1, 1), "one delivery and one job stored");
    let stats = h.state.queue.intake_stats();
    assert!(
        stats.largest_group > 1,
        "the copies were committed together: {stats:?}"
    );
}

#[tokio::test]
async fn malformed_json_is_a_bad_request_and_nothing_is_stored() {
    let h = harness(ServerConfig::default()).await;
    let (status, answer) = h
        .deliver("pull_request", b"{\"action\": \"opened\"".to_vec())
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(answer["error"].as_str().unwrap().contains("malformed JSON"));
    // A wrong type, and numbers past what the queue stores (i64): the sender's mistake (400),
    // not a queue failure to retry (503).
    let mut past_i64 = fixture_json("pull_request/opened.payload");
    past_i64["number"] = 9_223_372_036_854_775_808_u64.into();
    let mut installation = fixture_json("pull_request/opened.payload");
    installation["installation"]["id"] = u64::MAX.into();
    for body in [br#"{"action":"opened","number":"two"}"#.to_vec()]
        .into_iter()
        .chain([past_i64, installation].map(|v| v.to_string().into_bytes()))
    {
        let (status, answer) = h.deliver("pull_request", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    }
    assert_eq!(h.stored().await, (0, 0));
}

#[tokio::test]
async fn missing_event_or_delivery_headers_are_bad_requests() {
    let h = harness(ServerConfig::default()).await;
    let body = fixture("ping/payload");
    let signature = sign(&Secret::new(SECRET), &body);
    let (status, _) = h
        .post(
            None,
            Some(&fresh_delivery_id()),
            Some(signature.clone()),
            body.clone(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = h.post(Some("ping"), None, Some(signature), body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(h.stored().await, (0, 0));
}

#[tokio::test]
async fn a_header_over_the_length_limit_is_called_too_long_not_missing() {
    let h = harness(ServerConfig::default()).await;
    let body = fixture("ping/payload");
    let signature = sign(&Secret::new(SECRET), &body);
    let long = "a".repeat(8 * 1024);
    let (status, answer) = h
        .post(
            Some("ping"),
            Some(&long),
            Some(signature.clone()),
            body.clone(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = answer["error"].as_str().unwrap();
    assert!(
        message.contains("X-GitHub-Delivery header is too long") && message.contains("8192"),
        "{message}"
    );
    assert!(!message.contains("missing"), "{message}");
    let (_, answer) = h
        .post(
            Some(&long),
            Some(&fresh_delivery_id()),
            Some(signature),
            body,
        )
        .await;
    let message = answer["error"].as_str().unwrap();
    assert!(
        message.contains("X-GitHub-Event header is too long"),
        "{message}"
    );
    assert_eq!(h.stored().await, (0, 0));
}

#[tokio::test]
async fn a_3_mb_payload_is_accepted() {
    let h = harness(ServerConfig::default()).await;
    let mut payload = fixture_json("pull_request/opened.payload");
    payload["pull_request"]["body"] = "x".repeat(3 * 1024 * 1024).into();
    let body = serde_json::to_vec(&payload).unwrap();
    assert!(body.len() > 3 * 1024 * 1024);
    let (status, answer) = h.deliver("pull_request", body).await;
    assert_eq!(
        (status, answer["status"].as_str()),
        (StatusCode::ACCEPTED, Some("queued"))
    );
}

#[tokio::test]
async fn a_payload_over_the_limit_is_refused() {
    let h = harness(ServerConfig::default()).await;
    let body = vec![b' '; WEBHOOK_BODY_LIMIT + 1];
    let (status, _) = h.deliver("pull_request", body).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(h.stored().await, (0, 0));
}

#[tokio::test]
async fn healthz_follows_the_database() {
    let h = harness(ServerConfig::default()).await;
    let (status, body, _) = h.get("/healthz").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "ok\n"));
    h.state.queue.close().await;
    let (status, _, _) = h.get("/healthz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn metrics_count_deliveries_and_show_the_queue() {
    let h = harness(ServerConfig::default()).await;
    h.deliver("pull_request", fixture("pull_request/opened.payload"))
        .await;
    h.deliver("pull_request", fixture("pull_request/closed.payload"))
        .await;
    h.post(Some("pull_request"), Some("x"), None, b"{}".to_vec())
        .await;
    h.state.metrics.add_model_tokens(1200, 300);
    let (status, text, content_type) = h.get("/metrics").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        content_type
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    for line in [
        "# TYPE redline_webhook_deliveries_total counter",
        "redline_webhook_deliveries_total{event=\"pull_request\",outcome=\"queued\"} 1",
        "redline_webhook_deliveries_total{event=\"pull_request\",outcome=\"ignored\"} 1",
        "redline_webhook_deliveries_total{event=\"pull_request\",outcome=\"unauthorized\"} 1",
        "# TYPE redline_queue_depth gauge",
        "redline_queue_depth 1",
        "redline_jobs{state=\"queued\"} 1",
        "# TYPE redline_review_duration_seconds histogram",
        "redline_review_duration_seconds_count 0",
        "redline_model_tokens_total{kind=\"input\"} 1200",
        "redline_model_tokens_total{kind=\"output\"} 300",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in:\n{text}"
        );
    }
}

#[tokio::test]
async fn serve_answers_on_a_socket_and_shuts_down_gracefully() {
    let h = harness(ServerConfig::default()).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, h.state.clone(), async {
        let _ = stopped.await;
    }));
    let url = format!("http://{address}/healthz");
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
    assert!(
        client.get(&url).send().await.is_err(),
        "still listening after shutdown"
    );
}
