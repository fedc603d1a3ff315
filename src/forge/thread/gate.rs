//! The rules that decide, before any checkout, what a comment in a review thread
//! (discussion) gets, the same on every forge once the forge has loaded the thread and
//! said who may dismiss: an answer at most once per comment, replies and `/redline
//! ignore` only in Redline's threads, a dismissal only by someone who may make it, and a
//! fixed reply (usage, refusal) at most once per thread. Each forge names its threads and
//! words its replies ([`GateWords`]); reading the thread and the commenter's access is the
//! forge's.

use super::{Thread, ThreadComment};
use crate::forge::Ask;

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
