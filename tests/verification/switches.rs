//! Verification turned off, or given its own model, where a CI job or a repository says
//! so: the Action's `verify` and `verify-model` inputs (through action.yml's mapping onto
//! `REDLINE_VERIFY` and `REDLINE_VERIFY_MODEL`), and `verify = false` in the repository's
//! `.redline.toml` under `redline gitlab` and for GitLab webhooks under `redline serve`
//! (the App's is in `settings::serve_keys`).

use std::path::PathBuf;

use super::duplicates_and_nits::pull_request_with_config;
use super::support::{fabricated_finding, real_finding, reviewer_and_verifier, submit};
use crate::action_cli::{
    TOKEN, composite_step, pull_request_event, pull_request_repo, review_step_env,
};
use crate::common::cli::KEY;
use crate::common::github_mock::GitHubMock;
use crate::common::gitlab_mock::GitLabMock;
use crate::common::model_server::{ModelServer, Wire};
use crate::common::wait_until;

/// A model that reports a real and a fabricated finding; its verifier drops the fabricated one.
async fn model() -> ModelServer {
    let review = submit(vec![real_finding(7), fabricated_finding(6)]);
    ModelServer::start_with(Wire::OpenAi, reviewer_and_verifier(review))
        .await
        .scripting_verifier()
}

#[tokio::test]
async fn the_action_s_verify_input_turns_verification_off_and_verify_model_names_its_model() {
    let mapping = review_step_env();
    for (var, input) in [
        ("REDLINE_VERIFY", "verify"),
        ("REDLINE_VERIFY_MODEL", "verify-model"),
    ] {
        assert!(
            mapping.iter().any(|(v, i)| v == var && i == input),
            "{mapping:?}"
        );
    }
    let pr = pull_request_repo();
    let event = pull_request_event("pull_request/opened.payload.json", &pr.base, &pr.head);
    let action_path = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let bin_dir = PathBuf::from(env!("CARGO_BIN_EXE_redline"))
        .parent()
        .expect("bin dir")
        .to_path_buf();
    // (verify, verify-model): the verifier's model when it is asked, inline comments.
    for (verify, verify_model, verifier_model, posted) in [
        ("false", "", None, 2),
        ("true", "", Some("test-model"), 1),
        ("true", "cheap-verifier", Some("cheap-verifier"), 1),
    ] {
        let gh = GitHubMock::start().await;
        let model = model().await;
        let dir = tempfile::tempdir().expect("tmp");
        let event_path = dir.path().join("event.json");
        std::fs::write(&event_path, event.to_string()).expect("event");
        let inputs = [
            ("github-token", TOKEN.to_string()),
            ("provider", "openai".to_string()),
            ("model", "test-model".to_string()),
            ("api-key", KEY.to_string()),
            ("base-url", model.base_url()),
            ("strategy", "react".to_string()),
            ("verify", verify.to_string()),
            ("verify-model", verify_model.to_string()),
        ];
        let output = composite_step(
            "action-review.sh",
            &mapping,
            &inputs,
            &action_path,
            &bin_dir,
            &event_path,
            &gh,
            pr.repo.path(),
            dir.path(),
        )
        .output()
        .await
        .expect("review step");
        assert!(
            output.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let asked: Vec<String> = model
            .verifier_requests()
            .iter()
            .map(|r| r.body["model"].as_str().unwrap_or_default().to_string())
            .collect();
        let expected: Vec<String> = verifier_model.into_iter().map(String::from).collect();
        assert_eq!(
            asked, expected,
            "verify: {verify}, verify-model: {verify_model}"
        );
        let comments = gh.reviews()[0]["comments"].as_array().map_or(0, Vec::len);
        assert_eq!(comments, posted, "verify: {verify}");
    }
}

#[tokio::test]
async fn verify_false_in_the_repository_s_config_turns_it_off_under_redline_gitlab() {
    use crate::gitlab_cli::{IID, PROJECT, TOKEN, merge_request, run_gitlab};
    for (config, asked, posted) in [("", 1, 1), ("verify = false\n", 0, 2)] {
        let (repo, base, head) = pull_request_with_config(config);
        let gl = GitLabMock::start(TOKEN).await;
        merge_request(&gl, &base, &head, 8);
        let model = model().await;
        let run = run_gitlab(repo.path(), &base, &head, &gl, &model, Some(TOKEN)).await;
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        assert_eq!(model.verifier_requests().len(), asked, "{config:?}");
        let discussions = gl.diff_discussions(PROJECT, IID);
        assert_eq!(discussions.len(), posted, "{config:?}: {discussions:#?}");
    }
}

/// A warning about the repository's config file reads as a warning in a GitLab job's log,
/// once, not as GitHub's `::warning::` workflow command (which GitLab would show as it is).
#[tokio::test]
async fn a_config_warning_under_redline_gitlab_is_a_plain_job_log_line() {
    use crate::gitlab_cli::{TOKEN, merge_request, run_gitlab};
    let (repo, base, head) =
        pull_request_with_config("base_url = \"https://elsewhere.invalid/v1\"\n");
    let gl = GitLabMock::start(TOKEN).await;
    merge_request(&gl, &base, &head, 8);
    let model = model().await;
    let run = run_gitlab(repo.path(), &base, &head, &gl, &model, Some(TOKEN)).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let output = format!("{}{}", run.stdout, run.stderr);
    assert!(!output.contains("::warning::"), "{output}");
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.contains("sets `base_url`, which is ignored"))
        .collect();
    assert_eq!(warnings.len(), 1, "{output}");
    assert!(warnings[0].starts_with("warning: "), "{output}");
}

#[tokio::test]
async fn verify_false_in_the_repository_s_config_turns_it_off_for_gitlab_webhooks() {
    use crate::gitlab_serve_cli::{GitLabServer, IID, PROJECT, hook_token, merge_request};
    for (config, asked) in [(None, 1), (Some("verify = false\n"), 0)] {
        let (_repo, gl, open) = merge_request(config).await;
        let model = crate::threads::support::model(false).await;
        let server = GitLabServer::start(&gl, &model).await;
        let (status, answer) = server
            .deliver("Merge Request Hook", "mr-1", &hook_token(), &open)
            .await;
        assert_eq!(status, 202, "{answer}: {}", server.log());
        wait_until(|| !gl.notes(PROJECT, IID).is_empty()).await;
        assert!(!gl.notes(PROJECT, IID).is_empty(), "{}", server.log());
        assert_eq!(
            model.verifier_requests().len(),
            asked,
            "{config:?}: {}",
            server.log()
        );
    }
}
