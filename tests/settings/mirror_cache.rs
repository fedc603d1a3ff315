//! `redline serve --cache-budget-mb`: after a job's fetch, the least recently used
//! mirrors are removed until the cache fits, and the job's own mirror is kept.

use tokio_util::sync::CancellationToken;

use super::support::{job, pull_request_repo, runner, scripted_model};
use crate::common::github_mock::{GitHubMock, PullSpec};
use redline::queue::JobRunner;

#[tokio::test]
async fn a_job_trims_the_mirror_cache_to_its_budget_and_keeps_its_own_mirror() {
    let (repo, base, head) = pull_request_repo(None);
    let gh = GitHubMock::start().await;
    let model = scripted_model().await;
    gh.add_pull(
        "octo",
        "demo",
        7,
        PullSpec::new(&base, &head).with_clone_url(&repo.path().display().to_string()),
    );
    let cache = tempfile::tempdir().expect("cache");
    let stale = cache.path().join("other").join("old.git");
    std::fs::create_dir_all(&stale).expect("stale mirror");
    std::fs::write(stale.join("pack"), vec![0u8; 4096]).expect("stale pack");
    let mut runner = runner(&gh, &model, cache.path());
    runner.shared.cache_budget_bytes = 1;
    let _ = runner.run(&job(7), CancellationToken::new()).await;
    assert!(!stale.exists(), "the stale mirror outside the budget stays");
    assert!(
        cache.path().join("octo").join("demo.git").exists(),
        "the job's own mirror was removed"
    );
    assert_eq!(gh.reviews().len(), 1, "the review was not published");
}
