//! The thread-answer pipeline of `redline serve`, written once for every forge: a comment
//! in a review thread (GitHub: a review comment, GitLab: a note in a discussion) is
//! checked ([`crate::flow::thread`]'s rules, before any checkout), claimed in the queue
//! database, answered from a checkout of the change, its answer counted against
//! `chat_max_replies` first and its tokens and cost in `/metrics` labelled by forge, and
//! its dismissal (if any) recorded in the database, where later reviews read it. Each
//! forge supplies only its own steps through [`AnswerSteps`] (GitHub:
//! [`crate::server::github::answers`], GitLab: [`crate::server::gitlab::notes`]).
//!
//! Invariants: a comment id is claimed before any answer is posted, so redeliveries,
//! storms and replicas answer it at most once (a failure after the claim is logged, not
//! retried); a thread's answers are counted in the database before the model is asked, so
//! `chat_max_replies` holds under concurrent comments and replicas (a counted answer that
//! then fails still counts: the cap is never passed); only the change's author or someone
//! who may write dismisses a finding; answers run in the background, a few at once, and a
//! burst beyond [`MAX_WAITING`](crate::server::answer_pool::MAX_WAITING) waiting answers is
//! dropped with a warning rather than held.

use std::sync::Arc;

use async_trait::async_trait;

use super::checkout::{MirrorSource, fetch_source, repository_settings};
use super::{Pipeline, send};
use crate::agent::AgentError;
use crate::config::ConfigError;
use crate::errors::Chain;
use crate::flow;
use crate::flow::pull::pull_intent;
use crate::flow::thread::Answered;
use crate::forge::PublishError;
use crate::forge::thread::{Gate, Thread, ThreadComment, answer_body};
use crate::forge::{Forge, ForgeKind};
use crate::queue::{JobError, Queue, QueueError};
use crate::server::answer_pool::AnswerPool;

/// Why a comment got no answer; each step keeps its cause for the log.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AnswerError {
    /// The change, the thread or the commenter's permission could not be read.
    #[error("could not read the review thread")]
    Thread(#[source] PublishError),
    /// The queue database could not claim the comment.
    #[error("could not claim the comment")]
    Claim(#[source] QueueError),
    /// The queue database could not count the answer in its thread.
    #[error("could not count the answer")]
    Count(#[source] QueueError),
    /// The queue database could not record a dismissal.
    #[error("could not record the dismissal")]
    Dismiss(#[source] QueueError),
    /// The change could not be read.
    #[error("could not read the pull request")]
    Pull(#[source] PublishError),
    /// The change's commits could not be fetched.
    #[error("could not check out the pull request")]
    Checkout(#[source] JobError),
    /// The repository's `.redline.toml` is broken.
    #[error("the repository's settings are not usable")]
    Settings(#[source] ConfigError),
    /// The model run failed.
    #[error("the model could not answer")]
    Model(#[source] AgentError),
    /// Whether the commenter may dismiss the finding could not be read.
    #[error("could not read the answered thread")]
    Answered(#[source] PublishError),
    /// The answer could not be posted.
    #[error("could not post the answer")]
    Post(#[source] PublishError),
}

/// How a forge's comments and threads are named in the log.
pub(crate) struct AnswerWords {
    /// A comment ("review comment", "note").
    pub(crate) comment: &'static str,
    /// A thread ("thread", "discussion").
    pub(crate) thread: &'static str,
}

/// What one forge does to answer a comment in a review thread; [`handle`] does the rest,
/// the same way for every forge.
#[async_trait]
pub(crate) trait AnswerSteps: Send + Sync + Sized + 'static {
    /// The comment as the webhook hands it over.
    type Delivered: Send + 'static;
    /// The comment with what the forge needs to answer it.
    type Note: Send + Sync;
    /// The change the comment is on, as its checkout needs it.
    type Change: Send + Sync;

    /// Which forge: the label of its metrics.
    const FORGE: ForgeKind;
    /// How its comments and threads are named in the log.
    const WORDS: AnswerWords;

    /// The delivered comment's id, for the log.
    fn delivered_id(delivered: &Self::Delivered) -> u64;

    /// The comment as the forge has it; `None`: not one to answer on this forge.
    async fn open(&self, delivered: Self::Delivered) -> Result<Option<Self::Note>, AnswerError>;

    /// The comment, as the rules read it.
    fn comment(note: &Self::Note) -> &ThreadComment;

    /// The key claims, answer counts and dismissals are kept under.
    fn key(note: &Self::Note) -> String;

    /// The thread an answer is posted in, as [`Forge::reply`] names it.
    fn thread_id(note: &Self::Note) -> String;

    /// The cheap checks, on the comment as the forge has it.
    async fn gate(&self, note: &mut Self::Note) -> Result<Gate, AnswerError>;

    /// The change, read for the checkout.
    async fn change(&self, note: &Self::Note) -> Result<Self::Change, AnswerError>;

    /// The change as the forge seam has it: with what its author wrote when `change` is read.
    fn seam<'a>(
        &'a self,
        note: &'a Self::Note,
        change: Option<&'a Self::Change>,
    ) -> Box<dyn Forge + 'a>;

    /// Where the change's mirror is and how it is fetched.
    async fn mirror(
        &self,
        note: &Self::Note,
        change: &Self::Change,
    ) -> Result<MirrorSource, JobError>;

    /// The change's base and head commits.
    fn revisions(change: &Self::Change) -> (&str, &str);
}

/// The hook that answers comments with `runner`'s checkout, model and settings,
/// recording claims and dismissals in `queue`.
pub(crate) fn answer_hook<S: AnswerSteps>(
    runner: Arc<Pipeline<S>>,
    queue: Queue,
) -> Arc<dyn Fn(S::Delivered) + Send + Sync> {
    let pool = AnswerPool::new();
    Arc::new(move |delivered: S::Delivered| {
        let id = S::delivered_id(&delivered);
        let (runner, queue) = (runner.clone(), queue.clone());
        let spawned = pool.spawn(async move {
            // The one boxing point: it proves the whole answer `Send` for the spawn.
            if let Err(error) = send(handle(&runner, &queue, delivered)).await {
                let error = Chain(&error);
                let comment = S::WORDS.comment;
                tracing::warn!(comment = id, %error, "could not answer a {comment}");
            }
        });
        if !spawned {
            let comment = S::WORDS.comment;
            tracing::warn!(comment = id, "too many {comment}s waiting; not answered");
        }
    })
}

/// Checks, claims, answers and records one comment.
async fn handle<S: AnswerSteps>(
    runner: &Pipeline<S>,
    queue: &Queue,
    delivered: S::Delivered,
) -> Result<(), AnswerError> {
    let steps = &runner.steps;
    let Some(mut note) = steps.open(delivered).await? else {
        return Ok(());
    };
    let gate = steps.gate(&mut note).await?;
    let (comment, key) = (S::comment(&note), S::key(&note));
    let asked = match gate {
        Gate::Skip(reason) => {
            not_answered::<S>(comment, &reason);
            return Ok(());
        }
        Gate::Reply { text, dismiss } => Ok((text, dismiss)),
        Gate::Answer(thread) => Err(thread),
    };
    let claimed = queue.claim_comment(&key, comment.comment_id).await;
    if !claimed.map_err(AnswerError::Claim)? {
        not_answered::<S>(comment, "claimed by another delivery");
        return Ok(());
    }
    match asked {
        Ok((text, dismiss)) => {
            dismiss_in(queue, &key, comment, &dismiss).await?;
            let forge = steps.seam(&note, None);
            let body = answer_body(&text, comment.comment_id);
            let posted = forge.reply(&S::thread_id(&note), &body).await;
            posted.map_err(AnswerError::Post)
        }
        Err(thread) => answer(runner, queue, &note, &thread).await,
    }
}

/// Logs why `comment` gets no answer.
fn not_answered<S: AnswerSteps>(comment: &ThreadComment, reason: &str) {
    let noun = S::WORDS.comment;
    tracing::info!(comment = comment.comment_id, %reason, "{noun} not answered");
}

/// Records the dismissal of `keys` (none: nothing) on `comment`'s change.
async fn dismiss_in(
    queue: &Queue,
    key: &str,
    comment: &ThreadComment,
    keys: &[String],
) -> Result<(), AnswerError> {
    if keys.is_empty() {
        return Ok(());
    }
    let dismissed = queue.dismiss(key, comment.pr_number, keys).await;
    dismissed.map_err(AnswerError::Dismiss)
}

/// The model's answer from a checkout of the change, posted; its dismissal recorded.
async fn answer<S: AnswerSteps>(
    runner: &Pipeline<S>,
    queue: &Queue,
    note: &S::Note,
    thread: &Thread,
) -> Result<(), AnswerError> {
    let (steps, shared) = (&runner.steps, &runner.shared);
    let comment = S::comment(note);
    let change = steps.change(note).await?;
    let source = steps.mirror(note, &change).await;
    let source = source.map_err(AnswerError::Checkout)?;
    let fetched = fetch_source(shared, source, S::revisions(&change), None).await;
    let commits = fetched.map_err(AnswerError::Checkout)?;
    let label = format!("{} {}", S::WORDS.comment, comment.comment_id);
    let settings = repository_settings(&shared.settings, shared.ceilings, &label, None, &commits)
        .map_err(AnswerError::Settings)?;
    let key = S::key(note);
    let max = settings.threads.chat_max_replies;
    let reserved = queue.reserve_answer(&key, comment.root_id, max, thread.answers());
    if !reserved.await.map_err(AnswerError::Count)? {
        let reason = format!("chat_max_replies reached in the {}", S::WORDS.thread);
        not_answered::<S>(comment, &reason);
        return Ok(());
    }
    let model = (shared.model)(&settings.model);
    let forge = steps.seam(note, Some(&change));
    let intent = pull_intent(forge.as_ref(), &commits).await;
    let answered = flow::thread::answer(model, &settings, &commits, comment, thread, &intent)
        .await
        .map_err(AnswerError::Model)?;
    let answered = match answered {
        Answered::Answer(answered) => answered,
        Answered::Skipped(reason) => {
            not_answered::<S>(comment, &reason);
            return Ok(());
        }
    };
    let (usage, repository) = (
        &answered.usage,
        format!("{}/{}", comment.owner, comment.repo),
    );
    let cost = settings.agent.price.map(|price| price.cost(usage));
    let tokens = (usage.prompt_tokens, usage.completion_tokens);
    shared.count_usage(S::FORGE, &repository, tokens, cost);
    let keys = flow::thread::dismissal_after(forge.as_ref(), comment, thread, &answered)
        .await
        .map_err(AnswerError::Answered)?;
    dismiss_in(queue, &key, comment, &keys).await?;
    let body = answer_body(&answered.body, comment.comment_id);
    let posted = forge.reply(&S::thread_id(note), &body).await;
    posted.map_err(AnswerError::Post)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigReadError;

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
}
