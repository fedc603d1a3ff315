//! The local review flow as a library: a typed request, prepared and reviewed against the
//! scripted model server, with no command line in between.

use std::sync::Arc;

use serde_json::json;

use redline::config::ModelFlags;
use redline::flow::local::{
    ChangeSelection, Description, IntentSources, LocalOutcome, LocalRequest, Notice, OutputWants,
    Overrides, Purpose, SettingsChoice,
};
use redline::llm::{ProviderSettings, build_client};

use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, Reply, Wire};

const BASE: &str = "pub fn ratio(a: i32, b: i32) -> i32 {\n    if b == 0 {\n        return 0;\n    }\n    a / b\n}\n";
const HEAD: &str = "pub fn ratio(a: i32, b: i32) -> i32 {\n    a / b\n}\n";

/// `main` has a guarded division; `feature` drops the guard.
fn dropped_guard_repo() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("src/calc.rs", BASE);
    repo.commit("ratio");
    repo.checkout_new_branch("feature");
    repo.write("src/calc.rs", HEAD);
    repo.commit("Simplify ratio");
    repo
}

/// `main..HEAD` of `repo` reviewed with the server's model; no user config file.
fn request(repo: &TempRepo, server: &ModelServer, base: &str) -> LocalRequest {
    LocalRequest {
        repository: Some(repo.path().to_path_buf()),
        change: ChangeSelection {
            base: Some(base.into()),
            ..ChangeSelection::default()
        },
        settings: SettingsChoice {
            overrides: Overrides {
                model: ModelFlags {
                    provider: Some("openai".into()),
                    model: Some("scripted-model".into()),
                    base_url: Some(server.base_url()),
                },
                strategy: Some("react".into()),
                ..Overrides::default()
            },
            config_file: None,
            user_file: false,
        },
        intent: IntentSources {
            title: Some("Simplify ratio".into()),
            description: Some(Description::Text("Callers never pass zero.".into())),
        },
        purpose: Purpose::Review,
        output: OutputWants::default(),
    }
}

fn client(settings: &redline::config::ModelSettings) -> Arc<dyn redline::llm::ChatModel> {
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
}

#[tokio::test]
async fn a_local_review_runs_through_the_flow_without_the_command_line() {
    let repo = dropped_guard_repo();
    let finding = json!({"path": "src/calc.rs", "line": 2, "severity": "critical",
        "category": "bug", "title": "Division by zero when b is 0",
        "body": "The guard for `b == 0` is gone."});
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![Reply::tool(
            "call_1",
            "submit_review",
            json!({"findings": [finding], "summary": "Drops the zero guard."}),
        )],
    )
    .await;
    let mut notices: Vec<Notice> = Vec::new();
    let prepared = request(&repo, &server, "main")
        .prepare(&mut |notice| notices.push(notice))
        .expect("prepared");
    assert!(prepared.has_changes());
    assert!(notices.is_empty(), "{notices:?}");

    let outcome = prepared
        .review(client(&prepared.settings.model))
        .await
        .expect("reviewed");
    let LocalOutcome::Report(report) = outcome else {
        panic!("a plan instead of a report");
    };
    assert_eq!(report.findings.len(), 1, "{report:?}");
    assert_eq!(report.findings[0].path, "src/calc.rs");
    assert_eq!(report.findings[0].line, 2);
    // One review call, then one verifier call (the verifier keeps the finding).
    let verification = report.stats.verification.as_ref().expect("verified");
    assert_eq!((verification.model_calls, verification.kept), (1, 1));
    assert_eq!(report.stats.model_calls, 2);

    // One review request, carrying the change and the author's words from the request.
    let requests = server.review_requests();
    assert_eq!(requests.len(), 1);
    let sent = serde_json::to_string(&requests[0].body).expect("body");
    assert!(sent.contains("src/calc.rs"), "{sent}");
    assert!(sent.contains("Callers never pass zero."), "{sent}");
    assert_eq!(requests[0].body["model"], "scripted-model");
}

#[tokio::test]
async fn nothing_to_review_is_a_report_without_a_model_call() {
    let repo = dropped_guard_repo();
    let server = ModelServer::start(Wire::OpenAi, Vec::new()).await;
    let prepared = request(&repo, &server, "feature")
        .prepare(&mut |_| {})
        .expect("prepared");
    assert!(!prepared.has_changes());
    let outcome = prepared
        .review(client(&prepared.settings.model))
        .await
        .expect("reviewed");
    let LocalOutcome::Report(report) = outcome else {
        panic!("a plan instead of a report");
    };
    assert!(report.findings.is_empty());
    assert!(
        report.summary.starts_with("No changes to review against"),
        "{}",
        report.summary
    );
    assert!(server.requests().is_empty());
}
