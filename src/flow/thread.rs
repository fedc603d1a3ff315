//! One review-thread flow for `redline action` and `redline serve`, once the forge's cheap
//! checks ([`crate::forge::thread::Gate`]) let a comment through: answer it with a short
//! bounded agent run, post the answer in the thread, and say which finding was dismissed.
//!
//! Invariants: no answer to a bot (the event says so before this flow runs), to a user
//! without read access, outside Redline's own threads unless Redline was mentioned, to a
//! comment already answered (the answer's marker), or past `chat_max_replies` answers in
//! the thread; a fixed reply that dismisses nothing (usage, refusal) is posted once per
//! thread; a thread whose first comment is gone gets nothing. Only the pull request's
//! author or someone with write access dismisses a finding. Where dismissals are
//! stored is the caller's: the App's database, the Action's summary comment.
//! Layering: used by `cli` and `server`; uses `agent`, `config`, `forge` (the thread, its
//! rules and the forge seam), `guidelines`; never a forge's module.

use std::sync::Arc;

use crate::agent::chat::{ChatAnswer, ChatInput, answer_in_thread};
use crate::config::settings::Settings;
use crate::flow::pull::PullCommits;
use crate::forge::Forge;
use crate::forge::PublishError;
use crate::forge::thread::{Thread, ThreadComment, answer_body, may_dismiss};
use crate::guidelines::GuidelineSource;
use crate::llm::ChatModel;
use crate::tools::Workspace;

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
/// the pull request does ([`crate::flow::pull::pull_intent`]).
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
    forge: &dyn Forge,
    comment: &ThreadComment,
    thread: &Thread,
    answer: &ChatAnswer,
) -> Result<Vec<String>, PublishError> {
    if !answer.dismiss || !may_dismiss(forge, comment).await? {
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
