//! GitLab's steps of the thread-answer pipeline ([`crate::server::pipeline::answer`]): a note in
//! a merge request's discussion, with the same rules as GitHub's review comments
//! ([`crate::forge::thread::Gate`]): cheap checks before any checkout, and `/redline ignore` in
//! Redline's own discussions only.
//!
//! Invariants: what a note says and who wrote it are read from GitLab (the note, by its id,
//! in the discussion Redline loads anyway), never taken from the delivery: a note id not in
//! the discussion is ignored, a note by the token's user is never answered (and while that
//! user is unknown, no note is), and the merge request's author is GitLab's. Only a
//! Reporter or above (who can read the code) gets an answer; only the merge request's
//! author or a Developer or above dismisses a finding; claims, counts and dismissals are
//! kept under [`gitlab_key`].

use async_trait::async_trait;

use super::runner::{GitLabChange, GitLabRunner, GitLabSteps, gitlab_key};
use crate::forge::thread::{
    Gate, GateWords, Thread, ThreadComment, in_thread, may_dismiss, thread_comment_ask,
};
use crate::forge::{Ask, Forge, ForgeKind, ThreadNote};
use crate::gitlab::GitLabMergeRequest;
use crate::gitlab::discussion::load_discussion;
use crate::gitlab::merge_request::DiffRefs;
use crate::queue::{JobError, Queue};
use crate::server::GitLabNoteHook;
use crate::server::pipeline::MirrorSource;
use crate::server::pipeline::answer::{AnswerError, AnswerSteps, AnswerWords, answer_hook};
use crate::text::logged;

/// What `/redline ignore` is answered with (GitHub's words, in GitLab's terms).
const DISMISSED_REPLY: &str =
    "Understood: Redline will not raise this finding again on this merge request.";
/// What `/redline ignore` is answered with when the commenter may not dismiss.
const NOT_DISMISSED_REPLY: &str = "Only the merge request's author or someone with the Developer role or above can dismiss a finding; it stays.";

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
pub(crate) fn gitlab_note_hook(
    runner: std::sync::Arc<GitLabRunner>,
    queue: Queue,
) -> GitLabNoteHook {
    answer_hook(runner, queue)
}

/// A note and its merge request as GitLab has it.
pub(crate) struct GitLabNote {
    /// The note.
    note: MergeRequestNote,
    /// Its merge request.
    change: GitLabChange,
}

#[async_trait]
impl AnswerSteps for GitLabSteps {
    type Delivered = ThreadNote;
    type Note = GitLabNote;
    type Change = DiffRefs;

    const FORGE: ForgeKind = ForgeKind::GitLab;
    const WORDS: AnswerWords = AnswerWords {
        comment: "note",
        thread: "discussion",
    };

    fn delivered_id(delivered: &ThreadNote) -> u64 {
        delivered.comment.id
    }

    async fn open(&self, delivered: ThreadNote) -> Result<Option<GitLabNote>, AnswerError> {
        let Some(mut note) = MergeRequestNote::of(delivered) else {
            return Ok(None);
        };
        let read = self.read(&note.project(), note.comment.pr_number).await;
        let change = read.map_err(|e| AnswerError::Thread(e.into()))?;
        // The delivery's word for who opened the merge request counts for nothing.
        note.comment.pr_author = change.mr.author.clone();
        Ok(Some(GitLabNote { note, change }))
    }

    fn comment(note: &GitLabNote) -> &ThreadComment {
        &note.note.comment
    }

    fn key(note: &GitLabNote) -> String {
        gitlab_key(&note.change.project)
    }

    fn thread_id(note: &GitLabNote) -> String {
        note.note.discussion_id.clone()
    }

    async fn gate(&self, note: &mut GitLabNote) -> Result<Gate, AnswerError> {
        let forge = note.change.seam(&self.client);
        gate(&forge, &mut note.note).await
    }

    async fn change(&self, note: &GitLabNote) -> Result<DiffRefs, AnswerError> {
        note.change.refs().map_err(AnswerError::Checkout)
    }

    fn seam<'a>(&'a self, note: &'a GitLabNote, _: Option<&'a DiffRefs>) -> Box<dyn Forge + 'a> {
        Box::new(note.change.seam(&self.client))
    }

    async fn mirror(&self, note: &GitLabNote, _: &DiffRefs) -> Result<MirrorSource, JobError> {
        self.mirror_of(&note.change.project).await
    }

    fn revisions(refs: &DiffRefs) -> (&str, &str) {
        (&refs.base_sha, &refs.head_sha)
    }
}

/// The cheap checks (the rules of [`Gate`], as GitHub's review comments get them) on the
/// note as GitLab has it; `note`'s `root_id` becomes its discussion's first note.
async fn gate(
    forge: &GitLabMergeRequest<'_>,
    note: &mut MergeRequestNote,
) -> Result<Gate, AnswerError> {
    if matches!(note.comment.ask, Ask::Review { .. }) {
        return Ok(Gate::Skip("a review request, not a conversation".into()));
    }
    let thread = load_discussion(forge.client, forge.project, forge.iid, &note.discussion_id);
    let Some(thread) = thread.await.map_err(thread_error)? else {
        return Ok(Gate::Skip("the discussion is gone".into()));
    };
    if let NoteCheck::Skip(reason) = as_gitlab_has_it(forge, note, &thread).await? {
        return Ok(Gate::Skip(reason));
    }
    let comment = &note.comment;
    if !forge
        .may_read(&comment.author)
        .await
        .map_err(thread_error)?
    {
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
    let gate = in_thread(thread, comment, &words, || may_dismiss(forge, comment));
    gate.await.map_err(AnswerError::Thread)
}

/// Whether a note, as GitLab has it, may get an answer.
enum NoteCheck {
    /// It may: the note's author, text and ask are GitLab's now.
    Answerable,
    /// It gets nothing: the reason, for the log.
    Skip(String),
}

/// The note's author, text and ask as GitLab has them (the note by its id in `thread`),
/// or why it gets nothing: not in the discussion, written by the token's user, or asking
/// nothing as GitLab has it.
async fn as_gitlab_has_it(
    forge: &GitLabMergeRequest<'_>,
    note: &mut MergeRequestNote,
    thread: &Thread,
) -> Result<NoteCheck, AnswerError> {
    let skip = |reason: &str| Ok(NoteCheck::Skip(reason.to_string()));
    let id = note.comment.comment_id;
    let Some(posted) = thread.posts.iter().find(|post| post.id == id) else {
        return skip("the note is not in the discussion");
    };
    // Known: the discussion was read with it.
    let own = forge.client.own_username().await.map_err(thread_error)?;
    if posted.by_bot || posted.author == own {
        return skip("Redline's own note");
    }
    let mention = format!("@{own}");
    let ask = match thread_comment_ask(&posted.body, false, true, Some(&mention)) {
        Ok(Ask::Review { .. }) => return skip("a review request, not a conversation"),
        Ok(ask) => ask,
        Err(reason) => return skip(&reason.to_string()),
    };
    let comment = &mut note.comment;
    comment.author = posted.author.clone();
    comment.body = posted.body.clone();
    if !posted.path.is_empty() {
        comment.path = posted.path.clone();
    }
    comment.ask = ask;
    Ok(NoteCheck::Answerable)
}

/// A failure to read the discussion or the commenter's role.
fn thread_error(error: crate::gitlab::GitLabError) -> AnswerError {
    AnswerError::Thread(error.into())
}
