//! Review threads (GitHub) and discussions (GitLab) as every forge shares them: the
//! comment Redline may answer ([`ThreadComment`]) and what it asks, the thread's posts,
//! the rules that decide what a comment gets ([`Gate`]), and Redline's answers.
//!
//! Invariants: Redline never answers a bot (itself included) nor a comment carrying its
//! answer marker (its own answer, whatever identity posted it); a thread is Redline's when
//! its first comment was written by a bot and carries a fingerprint marker; every answer
//! carries a hidden marker naming the comment it answers, so a comment is answered at
//! most once whoever runs again, and answers are counted per thread from those markers.

use serde::Serialize;

use super::command::{Command, parse_command};
use super::fingerprint::{concern_of_comment, neutralise_markers, parse_markers};
use super::{Ask, Forge, IgnoreReason, PublishError};

mod gate;

pub(crate) use gate::{Gate, GateWords, in_thread};

/// The prefix of the marker an answer carries: `<!-- redline:answer=ID -->`.
const ANSWER_PREFIX: &str = "<!-- redline:answer=";

/// What a comment in a review thread (discussion) asks of Redline, by the rules every
/// forge shares: nothing from a bot or from Redline's own answer; else a command, a
/// mention of `mention` (`@slug`, when known), or any reply (`is_reply`).
pub(crate) fn thread_comment_ask(
    body: &str,
    by_bot: bool,
    is_reply: bool,
    mention: Option<&str>,
) -> Result<Ask, IgnoreReason> {
    if by_bot {
        return Err(IgnoreReason::ByBot);
    }
    // Redline's answers carry this marker (quoted text cannot forge it): under an
    // identity that is not a bot (the Action with a personal token), its own answer
    // would otherwise come back as a reply, or as a command the model was led to write.
    if body.contains(ANSWER_PREFIX) {
        return Err(IgnoreReason::OwnAnswer);
    }
    ask_of(body, is_reply, mention).ok_or(IgnoreReason::AsksNothing)
}

/// What `body` asks: a command first, then a mention, then any reply.
fn ask_of(body: &str, is_reply: bool, mention: Option<&str>) -> Option<Ask> {
    match parse_command(body) {
        Ok(Some(Command::Review { strategy, force })) => {
            return Some(Ask::Review { strategy, force });
        }
        Ok(Some(Command::Ignore)) => return Some(Ask::Ignore),
        Err(error) => return Some(Ask::Usage(error.reply())),
        Ok(None) => {}
    }
    if mention.is_some_and(|m| mentions(body, m)) {
        return Some(Ask::Answer);
    }
    is_reply.then_some(Ask::ReplyInThread)
}

/// Whether `body` mentions `handle` (`@name`) as a whole word, case-insensitively, in its
/// prose: as on GitHub, a mention in code (a fenced block or an inline span) or glued to a
/// word before it (`me@redline.dev`) is not one.
pub(crate) fn mentions(body: &str, handle: &str) -> bool {
    let handle = handle.to_ascii_lowercase();
    let lower = prose_of(body).to_ascii_lowercase();
    lower.match_indices(&handle).any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        let next = lower[at + handle.len()..].chars().next();
        let word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        !before.is_some_and(|c| word(c) || c == '@') && !next.is_some_and(word)
    })
}

/// `body` without its fenced code blocks and inline code spans (each becomes a space).
fn prose_of(body: &str) -> String {
    let mut prose = String::with_capacity(body.len());
    let mut fence: Option<String> = None;
    for line in body.lines() {
        let trimmed = line.trim_start();
        let marker: String = trimmed
            .chars()
            .take_while(|&c| c == '`' || c == '~')
            .collect();
        let opens = marker.len() >= 3
            && marker
                .chars()
                .all(|c| c == marker.chars().next().unwrap_or('`'));
        match &fence {
            Some(open) if opens && trimmed.starts_with(open.as_str()) => fence = None,
            Some(_) => {}
            None if opens => fence = Some(marker),
            None => {
                let mut in_code = false;
                for part in line.split('`') {
                    if !in_code {
                        prose.push_str(part);
                    }
                    prose.push(' ');
                    in_code = !in_code;
                }
            }
        }
        prose.push('\n');
    }
    prose
}

/// A comment Redline may answer in a review thread (GitHub: a review comment; GitLab: a
/// note in a discussion of a merge request), normalised from the delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadComment {
    /// Repository owner (GitLab: the project's namespace).
    pub owner: String,
    /// Repository name (GitLab: the project's name).
    pub repo: String,
    /// Pull (merge) request number.
    pub pr_number: u64,
    /// The comment's id.
    pub comment_id: u64,
    /// The thread's first comment (the comment itself when it starts the thread).
    pub root_id: u64,
    /// The author's login.
    pub author: String,
    /// The text.
    pub body: String,
    /// The commented file.
    pub path: String,
    /// The diff hunk the thread sits on.
    pub diff_hunk: String,
    /// The App installation, when the event came to the GitHub App.
    pub installation_id: Option<u64>,
    /// The author's relation to the repository, as the forge reports it.
    pub author_association: String,
    /// The pull request's author, when the event names them.
    pub pr_author: Option<String>,
    /// What the comment asks.
    pub ask: Ask,
}

/// Whether the commenter may dismiss a finding: the change's author, or someone who may
/// write ([`Forge::may_write`]).
pub(crate) async fn may_dismiss(
    forge: &dyn Forge,
    comment: &ThreadComment,
) -> Result<bool, PublishError> {
    if comment.pr_author.as_deref() == Some(comment.author.as_str()) {
        return Ok(true);
    }
    forge.may_write(&comment.author).await
}

/// One comment of a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadPost {
    /// The comment's id.
    pub id: u64,
    /// The author's login.
    pub author: String,
    /// Whether a bot wrote it.
    pub by_bot: bool,
    /// The text.
    pub body: String,
    /// The commented file.
    pub path: String,
}

/// A review thread: its first comment and the replies, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    /// The comments, the first comment of the thread first.
    pub posts: Vec<ThreadPost>,
}

impl Thread {
    /// The thread's first comment.
    pub fn root(&self) -> Option<&ThreadPost> {
        self.posts.first()
    }

    /// Whether the thread is Redline's: a bot's first comment carrying a fingerprint.
    pub(crate) fn is_redline_s(&self) -> bool {
        self.root()
            .is_some_and(|root| root.by_bot && !parse_markers(&root.body).is_empty())
    }

    /// Redline's answers in the thread.
    pub fn answers(&self) -> usize {
        self.posts
            .iter()
            .filter(|p| p.by_bot && answered_id(&p.body).is_some())
            .count()
    }

    /// Whether Redline already answered comment `id`.
    pub fn answered(&self, id: u64) -> bool {
        self.posts
            .iter()
            .any(|p| p.by_bot && answered_id(&p.body) == Some(id))
    }

    /// Whether Redline already posted `text` as an answer in the thread (a fixed reply).
    pub(crate) fn has_answer_text(&self, text: &str) -> bool {
        let text = text.trim();
        self.posts.iter().any(|p| {
            p.by_bot && answered_id(&p.body).is_some() && p.body.trim_start().starts_with(text)
        })
    }

    /// The keys that dismiss the thread's finding: its fingerprints and its concern.
    pub(crate) fn dismissal_keys(&self) -> Vec<String> {
        let Some(root) = self.root().filter(|_| self.is_redline_s()) else {
            return Vec::new();
        };
        let mut keys = parse_markers(&root.body);
        keys.extend(concern_of_comment(&root.path, &root.body));
        keys
    }
}

/// The comment id an answer's marker names.
fn answered_id(body: &str) -> Option<u64> {
    let start = body.find(ANSWER_PREFIX)? + ANSWER_PREFIX.len();
    let digits: String = body[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The body of Redline's answer to comment `id`: the text (markers defused) and the
/// hidden marker naming `id`.
pub(crate) fn answer_body(text: &str, id: u64) -> String {
    // Model text: no mentions, images or HTML outside code, as in the walkthrough.
    format!(
        "{}\n\n{ANSWER_PREFIX}{id} -->",
        neutralise_markers(&crate::text::escape_markdown(text.trim_end()))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_cannot_carry_a_forged_marker() {
        let body = answer_body(
            "see <!-- redline:answer=77 --> and <!-- redline:fp=beef -->",
            5,
        );
        assert_eq!(answered_id(&body), Some(5));
        assert!(parse_markers(&body).is_empty());
    }

    #[test]
    fn answers_mention_no_one_and_show_no_remote_image() {
        let body = answer_body(
            "Ask @alice or @org/team. ![pixel](https://evil.example/t.png) <img src=x> `Vec<u8>`",
            5,
        );
        assert!(
            !body.contains("@alice") && !body.contains("@org/team"),
            "{body}"
        );
        assert!(
            !body.contains("![pixel]") && !body.contains("<img"),
            "{body}"
        );
        assert!(body.contains("`Vec<u8>`"), "{body}");
        assert_eq!(answered_id(&body), Some(5));
    }
}
