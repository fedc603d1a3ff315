//! Answers in merge request discussions for `redline serve`: the hook GitLab notes are
//! handed to, as [`super::thread_runner`] is for GitHub's review comments, with the same
//! rules ([`crate::flow::thread`]): cheap checks before any checkout, a claim in the
//! database before anything is posted, `chat_max_replies` counted in the database before
//! the model is asked, and `/redline ignore` in Redline's own discussions only.
//!
//! Invariants: what a note says and who wrote it are read from GitLab (the note, by its id,
//! in the discussion Redline loads anyway), never taken from the delivery: a note id not in
//! the discussion is ignored, a note by the token's user is never answered (and while that
//! user is unknown, no note is), and the merge request's author is GitLab's. Only a
//! Reporter or above (who can read the code) gets an answer; only the
//! merge request's author or a Developer or above dismisses a finding; a note is answered
//! at most once whoever delivers it again; claims, counts and dismissals are kept under
//! [`gitlab_key`]; answers run in the background, a few at once, and a burst beyond
//! [`MAX_WAITING`](super::answer_pool::MAX_WAITING) waiting answers is dropped with a warning rather than held.

use std::sync::Arc;

use super::GitLabNoteHook;
use super::answer_pool::AnswerPool;
use super::gitlab_runner::{GitLabRunner, gitlab_key};
use super::review_runner::{repository_settings, send};
use crate::errors::Chain;
use crate::flow;
use crate::flow::pull::pull_intent;
use crate::flow::thread::{Answered, Gate, GateWords};
use crate::forge::Ask;
use crate::forge::PublishError;
use crate::forge::thread::{Thread, answer_body, thread_comment_ask};
use crate::forge::{Forge, ThreadNote};
use crate::github::thread::ThreadComment;
use crate::gitlab::discussion::load_discussion;
use crate::gitlab::merge_request::fetch_merge_request;
use crate::gitlab::{GitLabError, GitLabMergeRequest};
use crate::queue::{JobError, Queue, QueueError};
use crate::text::logged;

/// What `/redline ignore` is answered with (GitHub's words, in GitLab's terms).
const DISMISSED_REPLY: &str =
    "Understood: Redline will not raise this finding again on this merge request.";
/// What `/redline ignore` is answered with when the commenter may not dismiss.
const NOT_DISMISSED_REPLY: &str = "Only the merge request's author or someone with the Developer role or above can dismiss a finding; it stays.";

/// Why a note got no answer it should have had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoteError {
    /// GitLab did not answer as needed.
    #[error(transparent)]
    GitLab(#[from] GitLabError),
    /// Posting the answer failed.
    #[error(transparent)]
    Publish(#[from] PublishError),
    /// The database failed.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// The checkout failed.
    #[error(transparent)]
    Checkout(#[from] JobError),
    /// The project's settings are broken.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The model run failed.
    #[error(transparent)]
    Agent(#[from] crate::agent::AgentError),
    /// GitLab has no diff of the merge request yet.
    #[error("GitLab has no diff of the merge request yet")]
    NoDiff,
}

/// A note in a discussion of a merge request.
struct MergeRequestNote {
    /// The note as a thread comment (`root_id`: the discussion's first note, once read).
    comment: ThreadComment,
    /// The discussion's id.
    discussion_id: String,
}

impl MergeRequestNote {
    /// The note `note` names; `None` for a project path without a namespace.
    fn of(note: ThreadNote) -> Option<MergeRequestNote> {
        let (owner, repo) = note.change.owner_and_name()?;
        let comment = ThreadComment {
            owner: owner.to_string(),
            repo: repo.to_string(),
            pr_number: note.change.number,
            comment_id: note.comment.id,
            root_id: note.comment.id,
            author: note.comment.author,
            body: note.body,
            path: note.path,
            diff_hunk: note.diff_hunk,
            installation_id: None,
            author_association: note.comment.role,
            pr_author: note.change_author,
            ask: note.ask,
        };
        Some(MergeRequestNote {
            comment,
            discussion_id: note.thread,
        })
    }

    /// The project's full path.
    fn project(&self) -> String {
        format!("{}/{}", self.comment.owner, self.comment.repo)
    }
}

/// The hook that answers notes with `runner`'s checkout, model and settings, recording
/// claims and dismissals in `queue`.
pub(crate) fn gitlab_note_hook(runner: Arc<GitLabRunner>, queue: Queue) -> GitLabNoteHook {
    let pool = AnswerPool::new();
    Arc::new(move |note: ThreadNote| {
        let Some(note) = MergeRequestNote::of(note) else {
            return;
        };
        let id = note.comment.comment_id;
        let (runner, queue) = (runner.clone(), queue.clone());
        let spawned = pool.spawn(async move {
            // The one boxing point: it proves the whole answer `Send` for the spawn.
            if let Err(error) = send(handle(&runner, &queue, note)).await {
                let error = Chain(&error);
                tracing::warn!(note = id, %error, "could not answer a note");
            }
        });
        if !spawned {
            tracing::warn!(note = id, "too many notes waiting; not answered");
        }
    })
}

/// Checks, claims, answers and records one note.
async fn handle(
    runner: &GitLabRunner,
    queue: &Queue,
    mut note: MergeRequestNote,
) -> Result<(), NoteError> {
    let project = note.project();
    let iid = note.comment.pr_number;
    let mr = fetch_merge_request(&runner.client, &project, iid).await?;
    let forge = GitLabMergeRequest {
        client: &runner.client,
        project: &project,
        iid,
        title: &mr.title,
        description: &mr.description,
        diff_refs: mr.diff_refs.as_ref(),
    };
    // The delivery's word for who opened the merge request counts for nothing.
    note.comment.pr_author = mr.author.clone();
    let gate = gate(&forge, &mut note).await?;
    let key = gitlab_key(&project);
    let comment = &note.comment;
    let claim = || queue.claim_comment(&key, comment.comment_id);
    match gate {
        Gate::Skip(reason) => {
            tracing::info!(note = comment.comment_id, %reason, "note not answered");
            Ok(())
        }
        Gate::Reply { text, dismiss } => {
            if !claim().await? {
                already_claimed(comment);
                return Ok(());
            }
            if !dismiss.is_empty() {
                queue.dismiss(&key, iid, &dismiss).await?;
            }
            let body = answer_body(&text, comment.comment_id);
            Ok(forge.reply(&note.discussion_id, &body).await?)
        }
        Gate::Answer(thread) => {
            if !claim().await? {
                already_claimed(comment);
                return Ok(());
            }
            answer(runner, queue, &forge, &note, &thread).await
        }
    }
}

/// Logs that another delivery of `comment` claimed it first.
fn already_claimed(comment: &ThreadComment) {
    tracing::info!(
        note = comment.comment_id,
        reason = "claimed by another delivery",
        "note not answered"
    );
}

/// The cheap checks, as [`flow::thread::gate`] makes them on GitHub, on the note as GitLab
/// has it; `note`'s `root_id` becomes its discussion's first note.
async fn gate(
    forge: &GitLabMergeRequest<'_>,
    note: &mut MergeRequestNote,
) -> Result<Gate, NoteError> {
    if matches!(note.comment.ask, Ask::Review { .. }) {
        return Ok(Gate::Skip("a review request, not a conversation".into()));
    }
    let thread = load_discussion(forge.client, forge.project, forge.iid, &note.discussion_id);
    let Some(thread) = thread.await? else {
        return Ok(Gate::Skip("the discussion is gone".into()));
    };
    if let Err(reason) = as_gitlab_has_it(forge, note, &thread).await? {
        return Ok(Gate::Skip(reason));
    }
    let comment = &note.comment;
    if !forge.may_read(&comment.author).await? {
        return Ok(Gate::Skip(format!(
            "{} cannot read the project",
            logged(&comment.author)
        )));
    }
    if let Some(root) = thread.root() {
        note.comment.root_id = root.id;
    }
    let words = GateWords {
        thread: "discussion",
        dismissed: DISMISSED_REPLY,
        not_dismissed: NOT_DISMISSED_REPLY,
    };
    let comment = &note.comment;
    let gate = flow::thread::in_thread(thread, comment, &words, || may_dismiss(forge, comment));
    Ok(gate.await?)
}

/// The note's author, text and ask as GitLab has them (the note by its id in `thread`),
/// or why it gets nothing: not in the discussion, written by the token's user, or asking
/// nothing as GitLab has it.
async fn as_gitlab_has_it(
    forge: &GitLabMergeRequest<'_>,
    note: &mut MergeRequestNote,
    thread: &Thread,
) -> Result<Result<(), String>, NoteError> {
    let id = note.comment.comment_id;
    let Some(posted) = thread.posts.iter().find(|post| post.id == id) else {
        return Ok(Err("the note is not in the discussion".into()));
    };
    // Known: the discussion was read with it.
    let own = forge.client.own_username().await?;
    if posted.by_bot || posted.author == own {
        return Ok(Err("Redline's own note".into()));
    }
    let mention = format!("@{own}");
    let ask = match thread_comment_ask(&posted.body, false, true, Some(&mention)) {
        Ok(Ask::Review { .. }) => return Ok(Err("a review request, not a conversation".into())),
        Ok(ask) => ask,
        Err(reason) => return Ok(Err(reason.to_string())),
    };
    let comment = &mut note.comment;
    comment.author = posted.author.clone();
    comment.body = posted.body.clone();
    if !posted.path.is_empty() {
        comment.path = posted.path.clone();
    }
    comment.ask = ask;
    Ok(Ok(()))
}

/// The merge request's author, or a Developer or above.
async fn may_dismiss(
    forge: &GitLabMergeRequest<'_>,
    comment: &ThreadComment,
) -> Result<bool, PublishError> {
    if comment.pr_author.as_deref() == Some(comment.author.as_str()) {
        return Ok(true);
    }
    forge.may_write(&comment.author).await
}

/// The model's answer from a checkout of the merge request, posted; its dismissal recorded.
async fn answer(
    runner: &GitLabRunner,
    queue: &Queue,
    forge: &GitLabMergeRequest<'_>,
    note: &MergeRequestNote,
    thread: &Thread,
) -> Result<(), NoteError> {
    let comment = &note.comment;
    let refs = forge.diff_refs.ok_or(NoteError::NoDiff)?;
    let commits = runner.checkout(forge.project, refs, None).await?;
    let label = format!("note {}", comment.comment_id);
    let shared = &runner.shared;
    let settings = repository_settings(&shared.settings, shared.ceilings, &label, None, &commits)?;
    let key = gitlab_key(forge.project);
    let max = settings.threads.chat_max_replies;
    if !queue
        .reserve_answer(&key, comment.root_id, max, thread.answers())
        .await?
    {
        tracing::info!(
            note = comment.comment_id,
            reason = "chat_max_replies reached in the discussion",
            "note not answered"
        );
        return Ok(());
    }
    let model = (shared.model)(&settings.model);
    let intent = pull_intent(forge, &commits).await;
    let answered =
        flow::thread::answer(model, &settings, &commits, comment, thread, &intent).await?;
    let answered = match answered {
        Answered::Answer(answered) => answered,
        Answered::Skipped(reason) => {
            tracing::info!(note = comment.comment_id, %reason, "note not answered");
            return Ok(());
        }
    };
    shared.metrics.add_model_tokens(
        answered.usage.prompt_tokens,
        answered.usage.completion_tokens,
    );
    if let Some(price) = settings.agent.price {
        shared
            .metrics
            .add_review_cost(forge.project, price.cost(&answered.usage));
    }
    if answered.dismiss && may_dismiss(forge, comment).await? {
        let keys = thread.dismissal_keys();
        if !keys.is_empty() {
            queue.dismiss(&key, comment.pr_number, &keys).await?;
        }
    }
    let body = answer_body(&answered.body, comment.comment_id);
    Ok(forge.reply(&note.discussion_id, &body).await?)
}
