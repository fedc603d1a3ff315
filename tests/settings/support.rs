//! A pull request with a `.redline.toml` at its base commit, reviewed by the App's job
//! runner in process, against the mock GitHub and a scripted model.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::git::TempRepo;
use crate::common::github_mock::{GitHubMock, PullSpec};
use crate::common::model_server::{ModelServer, RecordedRequest, Reply, Wire};
use redline::config::limits::LimitCeilings;
use redline::config::{ModelSettings, resolve_model};
use redline::forge::PublishConfig;
use redline::github::AppAuth;
use redline::llm::{ProviderSettings, Secret, build_client};
use redline::queue::{Job, JobId, JobKind, JobRunner, JobState, ReviewTrigger};
use redline::server::Metrics;
use redline::server::github::runner::{GitHubSteps, ReviewRunner};
use redline::server::pipeline::{ModelFactory, Pipeline, RunnerSettings};

/// The server's model: it has a built-in price, so cost limits can be kept.
pub const SERVER_MODEL: &str = "gpt-4.1-mini";

pub const BASE_CALC: &str = "pub fn one() -> i32 {\n    1\n}\n";
pub const HEAD_CALC: &str = "pub fn one() -> i32 {\n    1\n}\n\npub fn ratio(a: i32, b: i32) -> i32 {\n    a / b\n}\n\npub fn half(a: i32) -> i32 {\n    a / 2\n}\n";
/// Text only the changed documentation file holds.
pub const DOC_MARK: &str = "DOC-ONLY-TEXT-7f3a";

/// What one review left behind.
pub struct Observed {
    /// The review's model requests, in order.
    pub requests: Vec<RecordedRequest>,
    /// The verifier's model requests, in order.
    pub verifier: Vec<RecordedRequest>,
    /// Reviews posted.
    pub reviews: Vec<Value>,
    /// Issue comments posted (summary and notices).
    pub comments: Vec<Value>,
}

impl Observed {
    /// Request `index`'s body (`null` when there was none).
    pub fn body(&self, index: usize) -> &Value {
        static NONE: Value = Value::Null;
        self.requests.get(index).map_or(&NONE, |r| &r.body)
    }

    /// The first request's body.
    pub fn first(&self) -> &Value {
        self.body(0)
    }

    /// All the text of the first request's messages.
    pub fn first_text(&self) -> String {
        self.first()["messages"].to_string()
    }
}

/// A pull request adding `ratio` and `half` to `src/calc.rs` and a line to
/// `docs/notes.md`, with `config` (if any) as `.redline.toml` in its base commit.
pub fn pull_request_repo(config: Option<&str>) -> (TempRepo, String, String) {
    let repo = TempRepo::new();
    repo.write("src/calc.rs", BASE_CALC);
    repo.write("docs/notes.md", "notes\n");
    if let Some(config) = config {
        repo.write(".redline.toml", config);
    }
    let base = repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("src/calc.rs", HEAD_CALC);
    repo.write("docs/notes.md", format!("notes\n{DOC_MARK}\n"));
    let head = repo.commit("add ratio and half");
    (repo, base, head)
}

/// The model: reads a file first, then submits two major findings (lines 6 and 10).
pub async fn scripted_model() -> ModelServer {
    ModelServer::start_with(Wire::OpenAi, |_, index| {
        if index == 0 {
            return Reply::tool("r", "read_file", json!({"path": "src/calc.rs"}));
        }
        let finding = |line: u32, title: &str| json!({"path": "src/calc.rs", "line": line, "severity": "major",
            "category": "bug", "title": title, "body": "Check the divisor."});
        Reply::tool(
            "s",
            "submit_review",
            json!({"findings": [finding(6, "Division by zero"), finding(10, "Rounds down")], "summary": "Two issues."}),
        )
    })
    .await
}

pub fn job(pr_number: u64) -> Job {
    let now = chrono::Utc::now();
    let trigger = ReviewTrigger::PullRequest {
        action: "opened".into(),
        sender: Some("dev".into()),
        base_ref: "main".into(),
        head_ref: "feature".into(),
    };
    Job {
        id: JobId(1),
        delivery_id: None,
        forge: redline::queue::ForgeKind::GitHub,
        repo_full_name: "octo/demo".into(),
        installation_id: Some(9),
        pr_number,
        head_sha: None,
        kind: JobKind::Review { strategy: None },
        payload: serde_json::to_value(trigger).expect("trigger"),
        state: JobState::Running,
        attempts: 1,
        max_attempts: 3,
        run_at: now,
        lease_owner: None,
        lease_until: None,
        cancel_requested: false,
        last_error: None,
        created_at: now,
        finished_at: None,
    }
}

/// The App's runner as `redline serve` builds it, on `gh` and `model`.
pub fn runner(gh: &GitHubMock, model: &ModelServer, cache: &Path) -> ReviewRunner {
    let key = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/github/TEST-ONLY-app-private-key.pem"),
    )
    .expect("key");
    let flags = redline::config::ModelFlags {
        model: Some(SERVER_MODEL.into()),
        base_url: Some(model.base_url()),
        ..Default::default()
    };
    let settings: ModelSettings =
        resolve_model(&flags, &Default::default(), &|_| None).expect("server settings");
    let factory: ModelFactory = Arc::new(|settings: &ModelSettings| {
        build_client(
            ProviderSettings {
                provider: settings.provider,
                base_url: settings.base_url.clone(),
                api_key: settings.api_key.clone(),
                timeouts: settings.timeouts,
                ..ProviderSettings::default()
            },
            None,
        )
    });
    let steps = GitHubSteps {
        auth: AppAuth::new(&gh.url(), 12345, Secret::new(key)).expect("auth"),
    };
    let shared = RunnerSettings {
        cache_dir: cache.to_path_buf(),
        model: factory,
        settings,
        publish: PublishConfig {
            min_write_interval: std::time::Duration::ZERO,
            ..PublishConfig::default()
        },
        metrics: Arc::new(Metrics::new()),
        cache_budget_bytes: u64::MAX,
        failure_notice: false,
        ceilings: LimitCeilings::default(),
        dismissals: None,
        checks: None,
    };
    Pipeline { steps, shared }
}

/// Reviews the pull request with `config` at its base through the App's runner
/// (`runs` times, as retries or redeliveries would) and reports what it did.
pub async fn review_by_the_app(config: Option<&str>, runs: usize) -> Observed {
    let (repo, base, head) = pull_request_repo(config);
    let gh = GitHubMock::start().await;
    let model = scripted_model().await;
    run_app(repo.path(), &base, &head, &gh, &model, runs).await;
    Observed {
        requests: model.review_requests(),
        verifier: model.verifier_requests(),
        reviews: gh.reviews(),
        comments: gh.issue_comments(),
    }
}

/// Runs the App's job for pull request `octo/demo#7` (`base..head` of the repository at
/// `path`) `runs` times.
pub async fn run_app(
    path: &Path,
    base: &str,
    head: &str,
    gh: &GitHubMock,
    model: &ModelServer,
    runs: usize,
) {
    gh.add_pull(
        "octo",
        "demo",
        7,
        PullSpec::new(base, head).with_clone_url(&path.display().to_string()),
    );
    let cache = tempfile::tempdir().expect("cache");
    let runner = runner(gh, model, cache.path());
    for _ in 0..runs {
        // Whether the run succeeds is not the point: what it sent and posted is.
        let _ = runner.run(&job(7), CancellationToken::new()).await;
    }
}
