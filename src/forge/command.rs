//! The `/redline` comment command, one grammar for the Action and the App, and the
//! `pull_request` actions that start a review.
//!
//! Grammar (first line of the comment, after leading whitespace):
//! `/redline review [--strategy NAME | --strategy=NAME] [--force]` or `/redline ignore` (in
//! a review thread: the finding is dismissed for the pull request). `--force` reviews a head
//! that was already reviewed (without it, the request is answered with [`already_reviewed`]).
//! A first word other than `/redline` is not a command; anything else after `/redline`
//! (another subcommand, an unknown argument, a repeated or empty `--strategy`, a repeated
//! `--force`, a name with other characters than letters, digits, `-`, `_`, `.`) is a
//! [`CommandError`], answered with [`USAGE`].

/// The word that starts every command.
const PREFIX: &str = "/redline";
/// Longest accepted strategy name.
const MAX_STRATEGY_LEN: usize = 64;

/// What a malformed command is told.
pub const USAGE: &str = "Usage: `/redline review [--strategy auto|react|plan|reflect] [--force]` on the first line of a comment (`--force` reviews again a head already reviewed), or `/redline ignore` in a review thread to dismiss its finding.";

/// The answer to `/redline review` (without `--force`) when the head is already reviewed:
/// `head` is its short id, `change` names the change (`pull request`, `merge request`).
pub(crate) fn already_reviewed(head: &str, change: &str) -> String {
    format!(
        "Redline already reviewed {head}, the head of this {change}: its findings are above, and a review of the same commits would find nothing new. Push new commits to have them reviewed, or comment `/redline review --force` to review the whole {change} again."
    )
}

/// `pull_request` actions that request a review (for the Action and the App alike).
pub(crate) const REVIEW_ACTIONS: [&str; 4] =
    ["opened", "reopened", "synchronize", "ready_for_review"];

/// A command found in a comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Review the pull request now, optionally with a named strategy.
    Review {
        /// `--strategy NAME`.
        strategy: Option<String>,
        /// `--force`: review even a head already reviewed.
        force: bool,
    },
    /// In a review thread: the thread's finding is wrong or will not be fixed; dismiss it.
    Ignore,
}

/// A `/redline` command that does not follow the grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub(crate) struct CommandError {
    /// What is wrong, quoting at most 40 characters of the comment.
    pub reason: String,
}

impl CommandError {
    fn new(reason: impl Into<String>) -> Self {
        CommandError {
            reason: reason.into(),
        }
    }

    /// The reply to post: what is wrong, then the usage.
    pub fn reply(&self) -> String {
        format!(
            "Redline did not understand this command: {}.\n\n{USAGE}",
            self.reason
        )
    }
}

/// Reads the command at the start of a comment body. `Ok(None)` when the body is not a
/// `/redline` command; `Err` when it is one but does not follow the grammar.
pub(crate) fn parse_command(body: &str) -> Result<Option<Command>, CommandError> {
    let first_line = body.trim_start().lines().next().unwrap_or("");
    let mut words = first_line.split_whitespace();
    if words.next() != Some(PREFIX) {
        return Ok(None);
    }
    match words.next() {
        Some("review") => {}
        Some("ignore") => {
            return match words.next() {
                None => Ok(Some(Command::Ignore)),
                Some(word) => Err(CommandError::new(format!(
                    "unknown argument {:?}",
                    shorten(word)
                ))),
            };
        }
        Some(other) => {
            return Err(CommandError::new(format!(
                "unknown command {:?}",
                shorten(other)
            )));
        }
        None => return Err(CommandError::new("no command after /redline")),
    }
    let mut strategy = None;
    let mut force = false;
    while let Some(word) = words.next() {
        if word == "--force" {
            if force {
                return Err(CommandError::new("--force given twice"));
            }
            force = true;
            continue;
        }
        let value = match word.strip_prefix("--strategy") {
            Some("") => words.next(),
            Some(rest) if rest.starts_with('=') => rest.strip_prefix('='),
            _ => {
                return Err(CommandError::new(format!(
                    "unknown argument {:?}",
                    shorten(word)
                )));
            }
        };
        let name = value.ok_or_else(|| CommandError::new("--strategy needs a name"))?;
        if strategy.is_some() {
            return Err(CommandError::new("--strategy given twice"));
        }
        strategy = Some(valid_strategy(name)?);
    }
    Ok(Some(Command::Review { strategy, force }))
}

fn valid_strategy(name: &str) -> Result<String, CommandError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.is_empty() || name.len() > MAX_STRATEGY_LEN || !name.chars().all(allowed) {
        return Err(CommandError::new(format!(
            "invalid strategy name {:?}",
            shorten(name)
        )));
    }
    Ok(name.to_string())
}

/// At most 40 characters of user text, for error messages.
fn shorten(text: &str) -> String {
    text.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(strategy: Option<&str>) -> Result<Option<Command>, CommandError> {
        Ok(Some(Command::Review {
            strategy: strategy.map(str::to_string),
            force: false,
        }))
    }

    #[test]
    fn force_reviews_again_in_any_place() {
        for body in [
            "/redline review --force",
            "/redline review --strategy plan --force",
            "/redline review --force --strategy=plan",
        ] {
            let Ok(Some(Command::Review { force, .. })) = parse_command(body) else {
                panic!("{body:?}: {:?}", parse_command(body));
            };
            assert!(force, "{body:?}");
        }
        assert!(parse_command("/redline review --force --force").is_err());
        assert!(USAGE.contains("--force"));
        let reply = already_reviewed("abc1234", "merge request");
        assert!(
            reply.contains("abc1234") && reply.contains("`/redline review --force`"),
            "{reply}"
        );
    }

    #[test]
    fn plain_review() {
        assert_eq!(parse_command("/redline review"), review(None));
        assert_eq!(
            parse_command("  \n/redline   review  \nthanks!"),
            review(None)
        );
    }

    #[test]
    fn strategy_in_both_spellings() {
        assert_eq!(
            parse_command("/redline review --strategy plan"),
            review(Some("plan"))
        );
        assert_eq!(
            parse_command("/redline review --strategy=fast-1"),
            review(Some("fast-1"))
        );
    }

    #[test]
    fn ignore_takes_no_argument() {
        assert_eq!(parse_command("/redline ignore"), Ok(Some(Command::Ignore)));
        assert_eq!(
            parse_command(" /redline ignore \nnot a bug: intended"),
            Ok(Some(Command::Ignore))
        );
        assert!(parse_command("/redline ignore all").is_err());
    }

    #[test]
    fn other_text_is_not_a_command() {
        for body in [
            "",
            "LGTM",
            "please /redline review",
            "/redlinereview",
            "/redline-bot review",
        ] {
            assert_eq!(parse_command(body), Ok(None), "{body:?}");
        }
    }

    #[test]
    fn malformed_commands_are_errors_with_a_usage_reply() {
        for (body, reason) in [
            ("/redline", "no command"),
            ("/redline help", "unknown command"),
            ("/redline reviewer", "unknown command"),
            ("/redline review --strategy", "needs a name"),
            ("/redline review --strategy=", "invalid strategy"),
            ("/redline review --strategy a;rm", "invalid strategy"),
            ("/redline review --strategy a --strategy b", "twice"),
            ("/redline review --strategyx", "unknown argument"),
            ("/redline review --forced", "unknown argument"),
            ("/redline review now", "unknown argument"),
        ] {
            let err = parse_command(body).unwrap_err();
            assert!(err.reason.contains(reason), "{body:?}: {err}");
            assert!(err.reply().contains(USAGE), "{body:?}");
        }
    }
}
