//! `redline serve` reads the project guidelines from the pull request's base commit,
//! as the Action and `redline review` do, and honours the guideline keys of the base
//! commit's `.redline.toml`.

use crate::common::git::TempRepo;
use crate::common::github_mock::GitHubMock;

use super::support::{BASE_CALC, HEAD_CALC, run_app, scripted_model};

/// Reviews a pull request whose base has `AGENTS.md` (and `config` as `.redline.toml`)
/// and whose head rewrites it; returns the system prompt of the first model request.
async fn system_prompt_of_the_app(config: Option<&str>) -> String {
    let repo = TempRepo::new();
    repo.write("src/calc.rs", BASE_CALC);
    repo.write("AGENTS.md", "BASE-RULE-7731\n");
    if let Some(config) = config {
        repo.write(".redline.toml", config);
    }
    let base = repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("src/calc.rs", HEAD_CALC);
    repo.write("AGENTS.md", "HEAD-RULE-9090\n");
    let head = repo.commit("change");
    let gh = GitHubMock::start().await;
    let model = scripted_model().await;
    run_app(repo.path(), &base, &head, &gh, &model, 1).await;
    let requests = model.requests();
    assert!(!requests.is_empty(), "the App called the model");
    requests[0].body["messages"][0]["content"]
        .as_str()
        .expect("system prompt")
        .to_string()
}

#[tokio::test]
async fn the_app_quotes_the_base_commits_guidelines_and_honours_guidelines_false() {
    let system = system_prompt_of_the_app(None).await;
    assert!(
        system.contains("`AGENTS.md` (applies to the whole repository)"),
        "{system}"
    );
    assert!(system.contains("BASE-RULE-7731") && !system.contains("HEAD-RULE-9090"));

    let off = system_prompt_of_the_app(Some("guidelines = false\n")).await;
    assert!(!off.contains("# Project guidelines") && !off.contains("BASE-RULE-7731"));
}
