//! Error chains as text, for where an error leaves as a string: a log line, a job's
//! recorded failure, a notice, the command line's last message. Library errors keep
//! their causes as `#[source]`; this is the one place that walks them.
//!
//! Invariants: the text names every cause of the chain, in order, except one whose text
//! the message before it already contains (errors that show their cause are not
//! repeated); every URL in it is masked by the one rule of [`crate::text::urls`] (a
//! database URL's password or a `?key=` in a model endpoint never leaves in an error).
//!
//! Also [`ModelReplyError`], the one error whose text is written for the model rather than
//! for a person: what is wrong with a call or reply it made, sent back to it to fix.

use std::error::Error;
use std::fmt;

/// What the model wrote (a tool call's arguments, a finishing call, a text-mode step) cannot
/// be used. The text says what to fix and is sent back to the model as the call's result, as
/// codex-rs does with `FunctionCallError::RespondToModel`; it names no secret and no path
/// outside the repository, only what the model itself wrote.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelReplyError {
    /// The text the model reads.
    #[error("{0}")]
    RespondToModel(String),
}

impl ModelReplyError {
    /// An answer to the model saying what to fix.
    pub(crate) fn respond(text: impl Into<String>) -> ModelReplyError {
        ModelReplyError::RespondToModel(text.into())
    }

    /// This error with `context` around its text (`{}` stands for the text).
    pub(crate) fn within(self, context: impl FnOnce(&str) -> String) -> ModelReplyError {
        let ModelReplyError::RespondToModel(text) = self;
        ModelReplyError::RespondToModel(context(&text))
    }
}

/// `error`'s message, then each cause's, joined by `: `.
pub(crate) fn chain(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut previous = text.clone();
    let mut source = error.source();
    while let Some(cause) = source {
        let current = cause.to_string();
        if !previous.contains(&current) {
            text.push_str(": ");
            text.push_str(&current);
        }
        previous = current;
        source = cause.source();
    }
    crate::text::urls::mask_all(&text)
}

/// Displays an error with its causes ([`chain`]), e.g. as a `tracing` field.
pub(crate) struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&chain(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("disk full")]
    struct Full;

    #[derive(Debug, thiserror::Error)]
    enum Save {
        #[error("cannot save")]
        Hides(#[source] Full),
        #[error("cannot save: {0}")]
        Shows(#[source] Full),
    }

    #[test]
    fn every_cause_is_named() {
        assert_eq!(chain(&Save::Hides(Full)), "cannot save: disk full");
        assert_eq!(
            Chain(&Save::Hides(Full)).to_string(),
            "cannot save: disk full"
        );
    }

    #[test]
    fn a_cause_the_message_shows_is_not_repeated() {
        assert_eq!(chain(&Save::Shows(Full)), "cannot save: disk full");
    }

    #[derive(Debug, thiserror::Error)]
    #[error("cannot connect to postgres://redline:hunter2@db/redline?sslpassword=s3cret")]
    struct Connect;

    #[derive(Debug, thiserror::Error)]
    #[error("database")]
    struct Database(#[source] Connect);

    #[test]
    fn urls_in_a_chain_are_masked() {
        let text = chain(&Database(Connect));
        assert!(
            !text.contains("hunter2") && !text.contains("s3cret"),
            "{text}"
        );
        assert!(
            text.starts_with("database: cannot connect to postgres://redline:***@db/"),
            "{text}"
        );
    }
}
