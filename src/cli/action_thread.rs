//! `redline action` on a `pull_request_review_comment` event: the answer in the thread
//! (see [`crate::flow::thread`]). One workflow run per event answers once; a rerun sees the
//! answer's marker in the thread and posts nothing. Dismissals go to the summary comment's
//! hidden marker, where later runs of the Action read them.

use super::ci_settings::ci_settings;
use super::review::model_client;
use super::workflow::{escape_data, is_missing_key, workflow_warning, workspace_commits};
use super::{ActionArgs, EXIT_OK};
use crate::agent::events::EventSink;
use crate::flow;
use crate::flow::pull::pull_intent;
use crate::flow::thread::Answered;
use crate::forge::thread::{Gate, Thread, ThreadComment};
use crate::github::thread::gate;
use crate::github::{GitHubClient, GitHubPull, PullText, fetch_pull, record_dismissed};
use crate::llm::Secret;

/// Answers `comment` in its thread when the checks let it; the step's exit code.
pub(super) async fn answer(
    args: &ActionArgs,
    client: &GitHubClient,
    token: &Secret,
    comment: &ThreadComment,
) -> anyhow::Result<i32> {
    match gate(client, comment).await? {
        Gate::Skip(reason) => {
            println!("::notice::Redline: no answer ({})", escape_data(&reason));
        }
        Gate::Reply { text, dismiss } => {
            dismiss_in_summary(client, comment, &dismiss).await?;
            let forge = GitHubPull::at(client, &comment.owner, &comment.repo, comment.pr_number);
            flow::thread::post_answer(&forge, comment, &text).await?;
            println!("::notice::Redline: answered the command in its thread");
        }
        Gate::Answer(thread) => answer_with_model(args, client, token, comment, &thread).await?,
    }
    Ok(EXIT_OK)
}

async fn answer_with_model(
    args: &ActionArgs,
    client: &GitHubClient,
    token: &Secret,
    comment: &ThreadComment,
    thread: &Thread,
) -> anyhow::Result<()> {
    let pull = fetch_pull(client, &comment.owner, &comment.repo, comment.pr_number).await?;
    let commits = workspace_commits(&pull.base_sha, &pull.head_sha, None, token).await?;
    let settings = match ci_settings(&args.ci, &commits, None, &workflow_warning) {
        // A comment on a fork's pull request runs without the repository's secrets.
        Err(error) if pull.is_fork && is_missing_key(&error) => {
            println!(
                "::notice::Redline: no answer: this pull request comes from a fork, and GitHub gives a fork's workflow run no secrets, so there is no model API key (the Redline GitHub App answers in threads of forks' pull requests)"
            );
            return Ok(());
        }
        other => other?,
    };
    let model = model_client(&settings.model, &EventSink::discard());
    let text = PullText {
        owner: &comment.owner,
        repo: &comment.repo,
        title: &pull.title,
        body: &pull.body,
    };
    let forge = GitHubPull {
        client,
        text,
        number: comment.pr_number,
    };
    let intent = pull_intent(&forge, &commits).await;
    let answered =
        match flow::thread::answer(model, &settings, &commits, comment, thread, &intent).await? {
            Answered::Answer(answered) => answered,
            Answered::Skipped(reason) => {
                println!("::notice::Redline: no answer ({})", escape_data(&reason));
                return Ok(());
            }
        };
    let keys = flow::thread::dismissal_after(&forge, comment, thread, &answered).await?;
    dismiss_in_summary(client, comment, &keys).await?;
    flow::thread::post_answer(&forge, comment, &answered.body).await?;
    println!(
        "::notice::Redline: answered in the thread ({} model call(s))",
        answered.model_calls
    );
    Ok(())
}

/// Records `keys` in the summary comment's dismissal marker (nothing when empty).
async fn dismiss_in_summary(
    client: &GitHubClient,
    comment: &ThreadComment,
    keys: &[String],
) -> anyhow::Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    record_dismissed(
        client,
        &comment.owner,
        &comment.repo,
        comment.pr_number,
        keys,
    )
    .await?;
    Ok(())
}
