//! Answers in review threads for `redline serve`: the hook the webhook hands review
//! comments to. Each comment is checked ([`crate::flow::thread::gate`]), claimed in the
//! queue database, answered from a checkout of the pull request, and its dismissal (if
//! any) recorded in the database, where later reviews of the pull request read it.
//!
//! Invariants: a comment id is claimed before any answer is posted, so redeliveries,
//! storms and replicas answer it at most once (a failure after the claim is logged, not
//! retried); a thread's answers are counted in the database before the model is asked, so
//! `chat_max_replies` holds under concurrent comments and replicas (a counted answer that
//! then fails still counts: the cap is never passed); answers run in the background, a
//! few at once, and a burst beyond [`MAX_WAITING`](super::answer_pool::MAX_WAITING) waiting answers is dropped with a
//! warning rather than held.

use std::sync::Arc;

use super::ThreadCommentHook;
use super::answer_pool::AnswerPool;
use super::review_runner::{PullAt, ReviewRunner, send};
use crate::agent::AgentError;
use crate::config::ConfigError;
use crate::config::settings::Settings;
use crate::errors::Chain;
use crate::flow;
use crate::flow::pull::pull_intent;
use crate::flow::thread::{Answered, Gate};
use crate::forge::PublishError;
use crate::github::thread::ThreadComment;
use crate::github::{GitHubClient, GitHubError, GitHubPull, PullText, fetch_pull};
use crate::llm::Usage;
use crate::queue::{JobError, Queue, QueueError};

/// Why a review comment got no answer; each step keeps its cause for the log.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AnswerError {
    /// The thread or the commenter's permission could not be read.
    #[error("could not read the review thread")]
    Thread(#[source] GitHubError),
    /// The queue database could not claim the comment.
    #[error("could not claim the comment")]
    Claim(#[source] QueueError),
    /// The queue database could not count the answer in its thread.
    #[error("could not count the answer")]
    Count(#[source] QueueError),
    /// The queue database could not record a dismissal.
    #[error("could not record the dismissal")]
    Dismiss(#[source] QueueError),
    /// The pull request could not be read.
    #[error("could not read the pull request")]
    Pull(#[source] GitHubError),
    /// The pull request's commits could not be fetched.
    #[error("could not check out the pull request")]
    Checkout(#[source] JobError),
    /// The repository's `.redline.toml` is broken.
    #[error("the repository's settings are not usable")]
    Settings(#[source] ConfigError),
    /// The model run failed.
    #[error("the model could not answer")]
    Model(#[source] AgentError),
    /// The answered thread could not be read to find the dismissal.
    #[error("could not read the answered thread")]
    Answered(#[source] GitHubError),
    /// The answer could not be posted.
    #[error("could not post the answer")]
    Post(#[source] PublishError),
}

/// The hook that answers review comments with `runner`'s checkout, model and settings,
/// recording claims and dismissals in `queue`.
pub(crate) fn thread_comment_hook(runner: Arc<ReviewRunner>, queue: Queue) -> ThreadCommentHook {
    let pool = AnswerPool::new();
    Arc::new(move |comment: ThreadComment| {
        let id = comment.comment_id;
        let (runner, queue) = (runner.clone(), queue.clone());
        let spawned = pool.spawn(async move {
            // The one boxing point: it proves the whole answer `Send` for the spawn.
            if let Err(error) = send(handle(&runner, &queue, &comment)).await {
                let error = Chain(&error);
                tracing::warn!(comment = id, %error, "could not answer a review comment");
            }
        });
        if !spawned {
            tracing::warn!(
                comment = id,
                "too many review comments waiting; not answered"
            );
        }
    })
}

/// Checks, claims, answers and records one comment.
async fn handle(
    runner: &ReviewRunner,
    queue: &Queue,
    comment: &ThreadComment,
) -> Result<(), AnswerError> {
    let Some(installation_id) = comment.installation_id else {
        return Ok(());
    };
    let client = runner.auth.installation_client(installation_id);
    let gate = flow::thread::gate(&client, comment)
        .await
        .map_err(AnswerError::Thread)?;
    let repo_full_name = format!("{}/{}", comment.owner, comment.repo);
    let claimed = || async {
        queue
            .claim_comment(&repo_full_name, comment.comment_id)
            .await
            .map_err(AnswerError::Claim)
    };
    match gate {
        Gate::Skip(reason) => {
            tracing::info!(comment = comment.comment_id, %reason, "review comment not answered");
            Ok(())
        }
        Gate::Reply { text, dismiss } => {
            if !claimed().await? {
                already_claimed(comment);
                return Ok(());
            }
            if !dismiss.is_empty() {
                queue
                    .dismiss(&repo_full_name, comment.pr_number, &dismiss)
                    .await
                    .map_err(AnswerError::Dismiss)?;
            }
            let forge = GitHubPull::at(&client, &comment.owner, &comment.repo, comment.pr_number);
            flow::thread::post_answer(&forge, comment, &text)
                .await
                .map_err(AnswerError::Post)
        }
        Gate::Answer(thread) => {
            if !claimed().await? {
                already_claimed(comment);
                return Ok(());
            }
            answer(runner, queue, &client, comment, &thread).await
        }
    }
}

/// Logs that another delivery of `comment` claimed it first.
fn already_claimed(comment: &ThreadComment) {
    tracing::info!(
        comment = comment.comment_id,
        reason = "claimed by another delivery",
        "review comment not answered"
    );
}

/// The model's answer from a checkout of the pull request, posted; its dismissal recorded.
async fn answer(
    runner: &ReviewRunner,
    queue: &Queue,
    client: &GitHubClient,
    comment: &ThreadComment,
    thread: &crate::forge::thread::Thread,
) -> Result<(), AnswerError> {
    let (owner, repo) = (comment.owner.as_str(), comment.repo.as_str());
    let pull = fetch_pull(client, owner, repo, comment.pr_number)
        .await
        .map_err(AnswerError::Pull)?;
    let at = PullAt {
        installation_id: comment.installation_id.unwrap_or_default(),
        owner,
        repo,
        number: comment.pr_number,
    };
    let commits = runner
        .checkout(at, &pull, None)
        .await
        .map_err(AnswerError::Checkout)?;
    let label = format!("comment {}", comment.comment_id);
    let settings = runner
        .repository_settings(&label, None, &commits)
        .map_err(AnswerError::Settings)?;
    if !reserve_answer(queue, comment, thread, settings.threads.chat_max_replies).await? {
        return Ok(());
    }
    let model = (runner.model)(&settings.model);
    let text = PullText {
        owner,
        repo,
        title: &pull.title,
        body: &pull.body,
    };
    let forge = GitHubPull {
        client,
        text,
        number: comment.pr_number,
    };
    let intent = pull_intent(&forge, &commits).await;
    let answered = flow::thread::answer(model, &settings, &commits, comment, thread, &intent)
        .await
        .map_err(AnswerError::Model)?;
    let answered = match answered {
        Answered::Answer(answered) => {
            count_cost(
                runner,
                &settings,
                &format!("{owner}/{repo}"),
                &answered.usage,
            );
            answered
        }
        Answered::Skipped(reason) => {
            tracing::info!(comment = comment.comment_id, %reason, "review comment not answered");
            return Ok(());
        }
    };
    let keys = flow::thread::dismissal_after(client, comment, thread, &answered)
        .await
        .map_err(AnswerError::Answered)?;
    if !keys.is_empty() {
        queue
            .dismiss(&format!("{owner}/{repo}"), comment.pr_number, &keys)
            .await
            .map_err(AnswerError::Dismiss)?;
    }
    flow::thread::post_answer(&forge, comment, &answered.body)
        .await
        .map_err(AnswerError::Post)
}

/// Counts the answer in the database before the model is asked, so that `chat_max_replies`
/// holds under concurrent comments; `false` (logged) when the thread has its answers.
async fn reserve_answer(
    queue: &Queue,
    comment: &ThreadComment,
    thread: &crate::forge::thread::Thread,
    max: u32,
) -> Result<bool, AnswerError> {
    let repository = format!("{}/{}", comment.owner, comment.repo);
    let counted = queue
        .reserve_answer(&repository, comment.root_id, max, thread.answers())
        .await
        .map_err(AnswerError::Count)?;
    if !counted {
        tracing::info!(
            comment = comment.comment_id,
            reason = "chat_max_replies reached in the thread",
            "review comment not answered"
        );
    }
    Ok(counted)
}

/// An answer's tokens and cost go into `/metrics` as a review's do.
fn count_cost(runner: &ReviewRunner, settings: &Settings, repository: &str, usage: &Usage) {
    runner
        .metrics
        .add_model_tokens(usage.prompt_tokens, usage.completion_tokens);
    if let Some(price) = settings.agent.price {
        runner
            .metrics
            .add_review_cost(repository, price.cost(usage));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigReadError;
    use crate::errors::chain;

    #[test]
    fn the_log_line_names_the_cause_of_an_unanswered_comment() {
        let error = AnswerError::Settings(ConfigError::Read {
            origin: "main:.redline.toml".into(),
            source: ConfigReadError::TooLarge { limit_kib: 1024 },
        });
        assert_eq!(
            Chain(&error).to_string(),
            "the repository's settings are not usable: cannot read config main:.redline.toml: it is larger than 1024 KiB"
        );
    }

    #[test]
    fn a_failed_checkout_keeps_github_s_answer_in_the_chain() {
        let refused = GitHubError::Api {
            status: 404,
            method: "GET".into(),
            path: "/repos/o/r/pulls/1".into(),
            message: "Not Found".into(),
        };
        let error = AnswerError::Checkout(crate::server::review_runner::github_error(refused));
        let text = chain(&error);
        assert!(
            text.starts_with("could not check out the pull request: "),
            "{text}"
        );
        assert!(
            text.contains("GitHub answered 404 to GET /repos/o/r/pulls/1: Not Found"),
            "{text}"
        );
        let mut causes =
            std::iter::successors(Some(&error as &dyn std::error::Error), |e| e.source());
        assert!(causes.any(|cause| cause.downcast_ref::<GitHubError>().is_some()));
    }
}
