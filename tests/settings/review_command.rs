//! The App's job for a `/redline review` comment on a head it already reviewed: the
//! commenter is answered in the pull request (once per head) and nothing is reviewed;
//! `/redline review --force` reviews the whole pull request again.

use redline::queue::{JobKind, ReviewTrigger};
use tokio_util::sync::CancellationToken;

use super::support::{job, pull_request_repo, runner, scripted_model};
use crate::common::github_mock::{GitHubMock, PullSpec};

fn command_job(force: bool) -> redline::queue::Job {
    let mut job = job(7);
    job.kind = JobKind::Requested { strategy: None };
    job.payload = serde_json::to_value(ReviewTrigger::Command {
        commenter: "alice".into(),
        author_association: "MEMBER".into(),
        comment_id: 11,
        force,
    })
    .expect("trigger");
    job
}

#[tokio::test]
async fn the_app_answers_a_review_command_on_a_reviewed_head_and_force_reviews_again() {
    let (repo, base, head) = pull_request_repo(None);
    let gh = GitHubMock::start().await;
    let model = scripted_model().await;
    gh.add_pull(
        "octo",
        "demo",
        7,
        PullSpec::new(&base, &head).with_clone_url(&repo.path().display().to_string()),
    );
    gh.set_permission("alice", "write");
    let cache = tempfile::tempdir().expect("cache");
    let runner = runner(&gh, &model, cache.path());
    use redline::queue::JobRunner as _;
    runner
        .run(&job(7), CancellationToken::new())
        .await
        .expect("the first review");
    let calls = model.requests().len();
    assert!(calls > 0);
    assert_eq!(gh.reviews().len(), 1);
    let comments = gh.issue_comments().len();

    for _ in 0..2 {
        runner
            .run(&command_job(false), CancellationToken::new())
            .await
            .expect("the command's job");
    }
    assert_eq!(model.requests().len(), calls, "nothing is reviewed again");
    let answers: Vec<String> = gh.issue_comments()[comments..]
        .iter()
        .map(|c| c["body"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(answers.len(), 1, "once per head: {answers:?}");
    assert!(
        answers[0].contains(&format!("already reviewed {}", &head[..7]))
            && answers[0].contains("`/redline review --force`"),
        "{}",
        answers[0]
    );

    runner
        .run(&command_job(true), CancellationToken::new())
        .await
        .expect("the forced review");
    assert!(model.requests().len() > calls, "--force reviews again");
}
