//! `POST /gitlab/webhook` through `app()` (tower `oneshot`) on both queue backends: the
//! token, redelivery, supersede, and GitHub and GitLab jobs kept apart.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use redline::forge::ForgeKind;
use redline::gitlab::project_hook_token;
use redline::llm::Secret;
use redline::queue::{JobId, JobState};
use redline::server::signature::sign;
use redline::server::{AppState, GitLabHooks, app};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::backend_tests;
use crate::queue::support::TestDb;

const GITLAB_SECRET: &str = "gitlab-secret-for-tests";
const GITHUB_SECRET: &str = "github-secret-for-tests";

/// The token of the fixtures' project (id 42).
static PROJECT_TOKEN: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| project_hook_token(&Secret::new(GITLAB_SECRET), 42));

pub(crate) fn gitlab_fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/gitlab-webhooks/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).expect(&path)).expect("JSON")
}

async fn state(db: &TestDb, gitlab: bool) -> AppState {
    let mut state = AppState::new(db.queue().await, Secret::new(GITHUB_SECRET));
    if gitlab {
        state.gitlab = Some(GitLabHooks::new(
            Secret::new(GITLAB_SECRET),
            false,
            Some("redline-bot".into()),
        ));
    }
    state
}

async fn send(state: &AppState, request: Request<Body>) -> (StatusCode, Value) {
    let response = app(state.clone()).oneshot(request).await.expect("response");
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// Delivers `body` as GitLab does, with `token` (absent when `None`).
async fn deliver(
    state: &AppState,
    event: &str,
    uuid: &str,
    token: Option<&str>,
    body: &Value,
) -> (StatusCode, Value) {
    let mut request = Request::post("/gitlab/webhook")
        .header(header::CONTENT_TYPE, "application/json")
        .header("X-Gitlab-Event", event)
        .header("X-Gitlab-Event-UUID", uuid);
    if let Some(token) = token {
        request = request.header("X-Gitlab-Token", token);
    }
    send(state, request.body(Body::from(body.to_string())).unwrap()).await
}

fn job_id(answer: &Value) -> JobId {
    JobId(
        answer["job_id"]
            .as_i64()
            .unwrap_or_else(|| panic!("{answer}")),
    )
}

async fn job_state(state: &AppState, id: JobId) -> JobState {
    state.queue.job(id).await.unwrap().expect("job").state
}

async fn a_merge_request_is_queued_once_and_a_wrong_token_is_refused(db: &TestDb) {
    let state = state(db, true).await;
    let open = gitlab_fixture("merge_request.open");
    for token in [Some("wrong"), Some(""), None] {
        let (status, answer) = deliver(&state, "Merge Request Hook", "u-bad", token, &open).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{token:?}: {answer}");
    }
    let secret = Some(PROJECT_TOKEN.as_str());
    let (status, answer) = deliver(&state, "Merge Request Hook", "u-1", secret, &open).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let id = job_id(&answer);
    let job = state.queue.job(id).await.unwrap().expect("job");
    assert_eq!(job.forge, ForgeKind::GitLab);
    assert_eq!(
        (job.repo_full_name.as_str(), job.pr_number),
        ("numbers/calculator", 7)
    );
    assert_eq!(job.installation_id, None);
    let (status, answer) = deliver(&state, "Merge Request Hook", "u-1", secret, &open).await;
    assert_eq!(
        (status, answer["status"].as_str()),
        (StatusCode::OK, Some("duplicate"))
    );
    assert_eq!(
        state
            .queue
            .jobs_for_pr(ForgeKind::GitLab, "numbers/calculator", 7)
            .await
            .unwrap()
            .len(),
        1,
        "a redelivery queues nothing"
    );
    let (status, _) = deliver(&state, "Merge Request Hook", "u-2", None, &open).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

async fn an_update_with_new_commits_supersedes_the_queued_review(db: &TestDb) {
    let state = state(db, true).await;
    let secret = Some(PROJECT_TOKEN.as_str());
    let open = gitlab_fixture("merge_request.open");
    let (_, answer) = deliver(&state, "Merge Request Hook", "u-open", secret, &open).await;
    let first = job_id(&answer);
    let edit = gitlab_fixture("merge_request.update-title");
    let (status, answer) = deliver(&state, "Merge Request Hook", "u-edit", secret, &edit).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(answer["status"], "ignored", "{answer}");
    assert_eq!(job_state(&state, first).await, JobState::Queued);
    let push = gitlab_fixture("merge_request.update-new-commits");
    let (status, answer) = deliver(&state, "Merge Request Hook", "u-push", secret, &push).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let second = job_id(&answer);
    assert_ne!(first, second);
    assert_eq!(job_state(&state, first).await, JobState::Superseded);
    assert_eq!(job_state(&state, second).await, JobState::Queued);
    let job = state.queue.job(second).await.unwrap().expect("job");
    assert_eq!(
        job.head_sha.as_deref(),
        Some("2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f")
    );
    let close = gitlab_fixture("merge_request.close");
    let (_, answer) = deliver(&state, "Merge Request Hook", "u-close", secret, &close).await;
    assert_eq!(answer["status"], "ignored", "{answer}");
}

async fn github_and_gitlab_deliveries_for_the_same_name_and_number_are_separate_jobs(db: &TestDb) {
    let state = state(db, true).await;
    let path = format!(
        "{}/tests/fixtures/webhooks/pull_request/ready_for_review.with-installation.payload.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut pull: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    pull["number"] = json!(7);
    pull["pull_request"]["number"] = json!(7);
    pull["pull_request"]["draft"] = json!(false);
    pull["repository"]["full_name"] = json!("numbers/calculator");
    let body = pull.to_string().into_bytes();
    // The same delivery id on both forges: two deliveries, not a redelivery.
    let uuid = "0b1c2d3e-0000-4000-8000-000000000007";
    let request = Request::post("/webhook")
        .header(header::CONTENT_TYPE, "application/json")
        .header("X-GitHub-Event", "pull_request")
        .header("X-GitHub-Delivery", uuid)
        .header(
            "X-Hub-Signature-256",
            sign(&Secret::new(GITHUB_SECRET), &body),
        )
        .body(Body::from(body))
        .unwrap();
    let (status, answer) = send(&state, request).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let github = job_id(&answer);
    let open = gitlab_fixture("merge_request.open");
    let (status, answer) = deliver(
        &state,
        "Merge Request Hook",
        uuid,
        Some(PROJECT_TOKEN.as_str()),
        &open,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let gitlab = job_id(&answer);
    assert_ne!(github, gitlab);
    for (id, forge) in [(github, ForgeKind::GitHub), (gitlab, ForgeKind::GitLab)] {
        let job = state.queue.job(id).await.unwrap().expect("job");
        assert_eq!(
            (
                job.forge,
                job.state,
                job.repo_full_name.as_str(),
                job.pr_number
            ),
            (forge, JobState::Queued, "numbers/calculator", 7),
            "neither supersedes the other"
        );
    }
}

async fn without_gitlab_settings_every_gitlab_delivery_is_refused(db: &TestDb) {
    let state = state(db, false).await;
    let open = gitlab_fixture("merge_request.open");
    for token in [Some(PROJECT_TOKEN.as_str()), Some(""), None] {
        let (status, _) = deliver(&state, "Merge Request Hook", "u-x", token, &open).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(state.queue.delivery_count().await.unwrap(), 0);
}

async fn a_delivery_needs_its_own_project_s_token_and_a_clean_path(db: &TestDb) {
    let state = state(db, true).await;
    let open = gitlab_fixture("merge_request.open");
    let other = project_hook_token(&Secret::new(GITLAB_SECRET), 43);
    // The master secret and another project's token open nothing of project 42's.
    for token in [GITLAB_SECRET, other.as_str()] {
        let (status, answer) =
            deliver(&state, "Merge Request Hook", "t-1", Some(token), &open).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{answer}");
    }
    // A body that names no project id cannot be any project's.
    let mut nameless = open.clone();
    nameless["project"]
        .as_object_mut()
        .expect("project")
        .remove("id");
    let token = Some(PROJECT_TOKEN.as_str());
    let (status, _) = deliver(&state, "Merge Request Hook", "t-2", token, &nameless).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // A NUL or a line break in the path is the sender's mistake (400), never a retry (503).
    for (n, path) in ["numbers/calc\u{0}ulator", "numbers/calc\nulator"]
        .iter()
        .enumerate()
    {
        let mut broken = open.clone();
        broken["project"]["path_with_namespace"] = json!(path);
        let uuid = format!("t-nul-{n}");
        let (status, answer) = deliver(&state, "Merge Request Hook", &uuid, token, &broken).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    }
    assert_eq!(state.queue.delivery_count().await.unwrap(), 0);
    let (status, answer) = deliver(&state, "Merge Request Hook", "t-3", token, &open).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
}

backend_tests!(
    a_delivery_needs_its_own_project_s_token_and_a_clean_path,
    a_merge_request_is_queued_once_and_a_wrong_token_is_refused,
    an_update_with_new_commits_supersedes_the_queued_review,
    github_and_gitlab_deliveries_for_the_same_name_and_number_are_separate_jobs,
    without_gitlab_settings_every_gitlab_delivery_is_refused,
);

#[tokio::test]
async fn notes_are_handed_to_the_note_hook_and_bad_bodies_refused() {
    let db = TestDb::sqlite();
    let mut state = state(&db, true).await;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    if let Some(gitlab) = state.gitlab.as_mut() {
        gitlab.on_note_ids(move |id| log.lock().unwrap().push(id));
    }
    let secret = Some(PROJECT_TOKEN.as_str());
    let note = gitlab_fixture("note.merge_request");
    let (status, answer) = deliver(&state, "Note Hook", "n-1", secret, &note).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert_eq!(answer["status"], "accepted");
    let commit = gitlab_fixture("note.commit");
    let (_, answer) = deliver(&state, "Note Hook", "n-2", secret, &commit).await;
    assert_eq!(answer["status"], "ignored", "{answer}");
    assert_eq!(*seen.lock().unwrap(), vec![1402], "one note handed over");
    let (status, _) = deliver(&state, "Note Hook", "n-3", secret, &json!([1])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let request = Request::post("/gitlab/webhook")
        .header("X-Gitlab-Event", "Note Hook")
        .header("X-Gitlab-Token", PROJECT_TOKEN.as_str())
        .body(Body::from(note.to_string()))
        .unwrap();
    let (status, answer) = send(&state, request).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "no X-Gitlab-Event-UUID: {answer}"
    );
    db.cleanup().await;
}
