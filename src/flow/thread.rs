//! One review-thread flow for `redline action` and `redline serve`: decide whether a review
//! comment gets an answer (cheap checks first, before any checkout), answer it with a short
//! bounded agent run, post the answer in the thread, and say which finding was dismissed.
//!
//! Invariants: no answer to a bot (the event says so before this flow runs), to a user
//! without read access, outside Redline's own threads unless Redline was mentioned, to a
//! comment already answered (the answer's marker), or past `chat_max_replies` answers in
//! the thread; a fixed reply that dismisses nothing (usage, refusal) is posted once per
//! thread; a thread whose first comment is gone gets nothing. Only the pull request's
//! author or someone with write access dismisses a finding. Where dismissals are
//! stored is the caller's: the App's database, the Action's summary comment.
//! Layering: used by `cli` and `server`; uses `agent`, `config`, `github`, `guidelines`.

use std::sync::Arc;

use crate::agent::chat::{ChatAnswer, ChatInput, answer_in_thread};
use crate::config::settings::Settings;
use crate::flow::pull::PullCommits;
use crate::forge::Ask;
use crate::forge::Forge;
use crate::forge::PublishError;
use crate::forge::thread::{Thread, answer_body};
use crate::github::thread::{ThreadComment, load_thread, may_dismiss};
use crate::github::{GitHubClient, GitHubError, has_read_access};
use crate::guidelines::GuidelineSource;
use crate::llm::ChatModel;
use crate::tools::Workspace;

/// What `/redline ignore` is answered with.
pub(crate) const DISMISSED_REPLY: &str =
    "Understood: Redline will not raise this finding again on this pull request.";
/// What `/redline ignore` is answered with when the commenter may not dismiss.
pub(crate) const NOT_DISMISSED_REPLY: &str =
    "Only the pull request's author or someone with write access can dismiss a finding; it stays.";

/// What to do with a comment after the cheap checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Nothing: the reason, for the log.
    Skip(String),
    /// Post this fixed reply (a usage text or the dismissal's acknowledgement); no model.
    Reply {
        /// The reply's text.
        text: String,
        /// Keys of the finding to dismiss (empty for none).
        dismiss: Vec<String>,
    },
    /// Answer with the model, after the checkout.
    Answer(Thread),
}

/// The cheap checks: who asks, in which thread, answered before or not. Commands that
/// request a review ([`Ask::Review`]) are the caller's.
pub(crate) async fn gate(
    client: &GitHubClient,
    comment: &ThreadComment,
) -> Result<Gate, GitHubError> {
    if matches!(comment.ask, Ask::Review { .. }) {
        return Ok(Gate::Skip("a review request, not a conversation".into()));
    }
    if !has_read_access(client, &comment.owner, &comment.repo, &comment.author).await? {
        return Ok(Gate::Skip(format!("{} has no read access", comment.author)));
    }
    let thread = load_thread(
        client,
        &comment.owner,
        &comment.repo,
        comment.pr_number,
        comment.root_id,
    )
    .await?;
    let Some(thread) = thread else {
        return Ok(Gate::Skip("the thread is gone".into()));
    };
    let words = GateWords {
        thread: "thread",
        dismissed: DISMISSED_REPLY,
        not_dismissed: NOT_DISMISSED_REPLY,
    };
    in_thread(thread, comment, &words, || may_dismiss(client, comment)).await
}

/// How a forge names its threads and answers `/redline ignore`.
pub(crate) struct GateWords {
    /// What a thread is called ("thread", "discussion").
    pub thread: &'static str,
    /// The reply to a dismissal.
    pub dismissed: &'static str,
    /// The reply to a dismissal the commenter may not make.
    pub not_dismissed: &'static str,
}

/// The rules for a comment in its loaded `thread`, the same on every forge: answered
/// once, replies and `/redline ignore` only in Redline's threads, a dismissal only when
/// `may_dismiss` allows it (asked only then), fixed replies not repeated.
pub(crate) async fn in_thread<E, F, Fut>(
    thread: Thread,
    comment: &ThreadComment,
    words: &GateWords,
    may_dismiss: F,
) -> Result<Gate, E>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<bool, E>>,
{
    if thread.answered(comment.comment_id) {
        return Ok(Gate::Skip("already answered".into()));
    }
    let ours = thread.is_redline_s();
    Ok(match &comment.ask {
        Ask::ReplyInThread if !ours => Gate::Skip(format!("a reply in another {}", words.thread)),
        Ask::Ignore if !ours => Gate::Skip(format!(
            "`/redline ignore` outside Redline's {}s",
            words.thread
        )),
        Ask::Ignore if !may_dismiss().await? => fixed_reply(&thread, words.not_dismissed, words),
        Ask::Ignore => Gate::Reply {
            text: words.dismissed.into(),
            dismiss: thread.dismissal_keys(),
        },
        Ask::Usage(text) => fixed_reply(&thread, text, words),
        _ => Gate::Answer(thread),
    })
}

/// `text` as a reply that dismisses nothing, unless the thread has it already: a storm of
/// bad commands or refused `/redline ignore`s gets one reply, not one each.
fn fixed_reply(thread: &Thread, text: &str, words: &GateWords) -> Gate {
    if thread.has_answer_text(text) {
        return Gate::Skip(format!("the same reply is already in the {}", words.thread));
    }
    Gate::Reply {
        text: text.to_string(),
        dismiss: Vec::new(),
    }
}

/// What [`answer`] came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// The model's answer, to post.
    Answer(ChatAnswer),
    /// No answer, for this reason (for the log).
    Skipped(String),
}

/// The model's answer to `comment` in `thread`; none past `chat_max_replies` or when the
/// thread's file is gone from the head (deleted since). `intent` is what the author says
/// the pull request does ([`crate::github::fetch_pull_intent`]).
pub async fn answer(
    model: Arc<dyn ChatModel>,
    settings: &Settings,
    commits: &PullCommits,
    comment: &ThreadComment,
    thread: &Thread,
    intent: &crate::intent::Intent,
) -> Result<Answered, crate::agent::AgentError> {
    if thread.answers() >= settings.threads.chat_max_replies as usize {
        return Ok(Answered::Skipped(
            "chat_max_replies reached in the thread".into(),
        ));
    }
    if !comment.path.is_empty() && !commits.view.exists(&comment.path) {
        return Ok(Answered::Skipped(format!(
            "the thread's file {} is not in the head any more",
            comment.path
        )));
    }
    let guidelines = thread_guidelines(settings, commits, &comment.path).await;
    let posts: Vec<(String, String)> = thread
        .posts
        .iter()
        .map(|p| (p.author.clone(), p.body.clone()))
        .collect();
    let workspace = Workspace::new(commits.view.clone(), commits.pr_changes.clone());
    let mut agent = settings.agent.clone();
    agent.set_intent(intent);
    let input = ChatInput {
        intent: &agent.intent,
        path: &comment.path,
        diff_hunk: &comment.diff_hunk,
        thread: &posts,
        question: &comment.body,
        guidelines: guidelines.as_deref(),
    };
    let answer = answer_in_thread(
        model.as_ref(),
        &agent,
        settings.threads.chat_max_steps,
        &workspace,
        &input,
    )
    .await?;
    Ok(Answered::Answer(answer))
}

/// The keys to dismiss after the model's `answer`: the thread's finding when the model
/// accepted a rejection from someone who may dismiss it, else none.
pub(crate) async fn dismissal_after(
    client: &GitHubClient,
    comment: &ThreadComment,
    thread: &Thread,
    answer: &ChatAnswer,
) -> Result<Vec<String>, GitHubError> {
    if !answer.dismiss || !may_dismiss(client, comment).await? {
        return Ok(Vec::new());
    }
    Ok(thread.dismissal_keys())
}

/// Posts `text` as the answer to `comment` (with the marker that prevents a second one).
pub(crate) async fn post_answer(
    forge: &dyn Forge,
    comment: &ThreadComment,
    text: &str,
) -> Result<(), PublishError> {
    let body = answer_body(text, comment.comment_id);
    forge.reply(&comment.root_id.to_string(), &body).await
}

/// The guidelines section for the thread's file, read from the base commit.
async fn thread_guidelines(
    settings: &Settings,
    commits: &PullCommits,
    path: &str,
) -> Option<String> {
    let config = settings.guidelines.clone();
    let model = settings.agent.model.clone();
    let (root, base, path) = (commits.root.clone(), commits.base.clone(), path.to_string());
    let read = tokio::task::spawn_blocking(move || {
        let source = GuidelineSource::Commit {
            root: &root,
            rev: &base,
        };
        crate::guidelines::load_for_model(&config, source, &[path.as_str()], &model)
    });
    read.await.ok().and_then(|guidelines| guidelines.section)
}
