//! GitHub's review threads: the `pull_request_review_comment` event, the review comment a
//! note names ([`ThreadComment::from_note`]), loading a thread from the pull request's
//! review comments, and the cheap checks before an answer ([`gate`]: read access, the
//! thread by its first comment). Shared by the Action and the App; what a comment asks,
//! the rules of the checks and Redline's answers are forge-neutral
//! ([`crate::forge::thread`]).
//!
//! Invariants: a bot is a user of type `Bot` or a login ending in `[bot]`.

use serde::Deserialize;
use serde_json::Value;

use super::GitHubPull;
use super::client::{GitHubClient, path_segment};
use super::error::GitHubError;
pub use crate::forge::Ask;
use crate::forge::thread::{
    Gate, GateWords, Thread, ThreadComment, ThreadPost, in_thread, may_dismiss, thread_comment_ask,
};
use crate::forge::{ChangeRef, CommentRef, ForgeIds, IgnoreReason, PublishError, ThreadNote};

/// A `pull_request_review_comment` event, as much of it as Redline reads.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ReviewCommentEvent {
    /// `created`, `edited` or `deleted`.
    pub action: String,
    /// The comment.
    pub comment: EventComment,
    /// The pull request.
    pub pull_request: EventPull,
    /// The repository.
    pub repository: EventRepository,
    /// The App installation (App deliveries only).
    pub installation: Option<EventInstallation>,
}

/// The comment of a [`ReviewCommentEvent`].
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct EventComment {
    /// The comment's id.
    pub id: u64,
    /// The first comment of its thread, when it is a reply.
    #[serde(default)]
    pub in_reply_to_id: Option<u64>,
    /// The text.
    #[serde(default)]
    pub body: Option<String>,
    /// The author.
    pub user: EventUser,
    /// The commented file.
    #[serde(default)]
    pub path: Option<String>,
    /// The diff hunk the comment sits on.
    #[serde(default)]
    pub diff_hunk: Option<String>,
    /// The author's relation to the repository (`OWNER`, `MEMBER`, ...).
    #[serde(default)]
    pub author_association: Option<String>,
}

/// An account of an event.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct EventUser {
    /// The login.
    pub login: String,
    /// `User`, `Bot` or `Organization`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
}

/// The pull request of a [`ReviewCommentEvent`].
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct EventPull {
    /// Its number.
    pub number: u64,
    /// Its author.
    #[serde(default)]
    pub user: Option<EventUser>,
}

/// The repository of a [`ReviewCommentEvent`].
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct EventRepository {
    /// `owner/name`.
    pub full_name: String,
}

/// The installation of a [`ReviewCommentEvent`].
#[derive(Debug, Clone, Copy, Deserialize)]
pub(crate) struct EventInstallation {
    /// Its id.
    pub id: u64,
}

impl ReviewCommentEvent {
    /// What the event asks of Redline, or why it asks nothing. `mention` is `@slug` of the
    /// App, when known.
    pub(crate) fn to_note(&self, mention: Option<&str>) -> Result<ThreadNote, IgnoreReason> {
        if self.action != "created" {
            return Err(IgnoreReason::ActionNotHandled {
                event: "pull_request_review_comment".into(),
                action: self.action.clone(),
            });
        }
        let user = &self.comment.user;
        let by_bot = user.kind.as_deref() == Some("Bot") || user.login.ends_with("[bot]");
        let body = self.comment.body.clone().unwrap_or_default();
        let is_reply = self.comment.in_reply_to_id.is_some();
        let ask = thread_comment_ask(&body, by_bot, is_reply, mention)?;
        let change = ChangeRef {
            repository: self.repository.full_name.clone(),
            number: self.pull_request.number,
            ids: ForgeIds {
                installation: self.installation.map(|i| i.id),
                project: None,
            },
        };
        if change.owner_and_name().is_none() {
            return Err(IgnoreReason::RepositoryWithoutOwner);
        }
        let root_id = self.comment.in_reply_to_id.unwrap_or(self.comment.id);
        Ok(ThreadNote {
            change,
            comment: CommentRef {
                id: self.comment.id,
                author: user.login.clone(),
                role: self.comment.author_association.clone().unwrap_or_default(),
            },
            thread: root_id.to_string(),
            body,
            path: self.comment.path.clone().unwrap_or_default(),
            diff_hunk: self.comment.diff_hunk.clone().unwrap_or_default(),
            change_author: self.pull_request.user.as_ref().map(|u| u.login.clone()),
            ask,
        })
    }
}

impl ThreadComment {
    /// The GitHub review comment a forge-neutral note names; `None` when it cannot be
    /// one (a repository without an owner, a thread id that is not a comment id).
    pub(crate) fn from_note(note: ThreadNote) -> Option<ThreadComment> {
        let (owner, repo) = note.change.owner_and_name()?;
        Some(ThreadComment {
            owner: owner.to_string(),
            repo: repo.to_string(),
            pr_number: note.change.number,
            comment_id: note.comment.id,
            root_id: note.thread.parse().ok()?,
            author: note.comment.author,
            body: note.body,
            path: note.path,
            diff_hunk: note.diff_hunk,
            installation_id: note.change.ids.installation,
            author_association: note.comment.role,
            pr_author: note.change_author,
            ask: note.ask,
        })
    }
}

impl Thread {
    /// The thread whose first comment is `root_id`, from the pull request's review comments.
    pub(crate) fn from_comments(comments: &[Value], root_id: u64) -> Option<Thread> {
        let mut posts: Vec<ThreadPost> = comments
            .iter()
            .filter(|c| {
                let id = c.get("id").and_then(Value::as_u64);
                let parent = c.get("in_reply_to_id").and_then(Value::as_u64);
                id == Some(root_id) || parent == Some(root_id)
            })
            .filter_map(post_of)
            .collect();
        posts.sort_by_key(|p| (p.id != root_id, p.id));
        posts.first().filter(|p| p.id == root_id)?;
        Some(Thread { posts })
    }
}

fn post_of(comment: &Value) -> Option<ThreadPost> {
    let user = comment.get("user");
    let login = user
        .and_then(|u| u.get("login"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let by_bot = user.and_then(|u| u.get("type")).and_then(Value::as_str) == Some("Bot")
        || login.ends_with("[bot]");
    Some(ThreadPost {
        id: comment.get("id").and_then(Value::as_u64)?,
        author: login,
        by_bot,
        body: text_field(comment, "body"),
        path: text_field(comment, "path"),
    })
}

fn text_field(value: &Value, field: &str) -> String {
    value
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The thread of comment `root_id` on pull request `owner/repo#pr_number`; `None` when
/// its first comment is gone (deleted).
pub(crate) async fn load_thread(
    client: &GitHubClient,
    owner: &str,
    repo: &str,
    pr_number: u64,
    root_id: u64,
) -> Result<Option<Thread>, GitHubError> {
    let path = format!(
        "/repos/{}/{}/pulls/{pr_number}/comments",
        path_segment(owner),
        path_segment(repo)
    );
    let comments = client.get_all_pages(&path).await?;
    Ok(Thread::from_comments(&comments, root_id))
}

/// What `/redline ignore` is answered with.
const DISMISSED_REPLY: &str =
    "Understood: Redline will not raise this finding again on this pull request.";
/// What `/redline ignore` is answered with when the commenter may not dismiss.
const NOT_DISMISSED_REPLY: &str =
    "Only the pull request's author or someone with write access can dismiss a finding; it stays.";

/// The cheap checks: who asks, in which thread, answered before or not. Commands that
/// request a review ([`Ask::Review`]) are the caller's.
pub(crate) async fn gate(
    client: &GitHubClient,
    comment: &ThreadComment,
) -> Result<Gate, PublishError> {
    if matches!(comment.ask, Ask::Review { .. }) {
        return Ok(Gate::Skip("a review request, not a conversation".into()));
    }
    if !super::has_read_access(client, &comment.owner, &comment.repo, &comment.author).await? {
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
    let pull = GitHubPull::at(client, &comment.owner, &comment.repo, comment.pr_number);
    in_thread(thread, comment, &words, || may_dismiss(&pull, comment)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::thread::answer_body;
    use serde_json::json;

    fn event(body: &str, reply_to: Option<u64>, kind: &str, action: &str) -> ReviewCommentEvent {
        serde_json::from_value(json!({
            "action": action,
            "comment": {"id": 9, "in_reply_to_id": reply_to, "body": body,
                "user": {"login": "alice", "type": kind}, "path": "a.rs", "diff_hunk": "@@"},
            "pull_request": {"number": 3},
            "repository": {"full_name": "o/r"},
        }))
        .expect("event")
    }

    #[test]
    fn what_a_comment_asks() {
        let ask = |body: &str, reply: Option<u64>| {
            event(body, reply, "User", "created")
                .to_note(Some("@redline"))
                .map(|c| c.ask)
        };
        assert_eq!(ask("/redline ignore", Some(1)), Ok(Ask::Ignore));
        assert_eq!(
            ask("/redline review", None),
            Ok(Ask::Review {
                strategy: None,
                force: false
            })
        );
        assert!(matches!(ask("/redline bogus", None), Ok(Ask::Usage(_))));
        assert_eq!(ask("hey @Redline, why?", None), Ok(Ask::Answer));
        assert_eq!(ask("is this right?", Some(1)), Ok(Ask::ReplyInThread));
        assert!(ask("@redline-other look", None).is_err());
        assert!(ask("```\n@redline why\n```", None).is_err());
        assert!(ask("~~~~\nlet x = \"@redline\";\n~~~~\nok", None).is_err());
        assert!(ask("see `@redline` in the config", None).is_err());
        assert!(ask("mail me@redline.dev", None).is_err());
        assert_eq!(ask("```\ncode\n```\n@redline why?", None), Ok(Ask::Answer));
        assert!(ask("a note to self", None).is_err());
    }

    #[test]
    fn bots_edits_and_deletions_ask_nothing() {
        assert!(
            event("/redline ignore", Some(1), "Bot", "created")
                .to_note(None)
                .is_err()
        );
        let own = answer_body("/redline ignore\nas asked", 5);
        assert_eq!(
            event(&own, Some(1), "User", "created").to_note(Some("@redline")),
            Err(IgnoreReason::OwnAnswer)
        );
        for action in ["edited", "deleted"] {
            assert!(
                event("/redline ignore", Some(1), "User", action)
                    .to_note(None)
                    .is_err()
            );
        }
    }

    #[test]
    fn a_thread_counts_its_answers_and_knows_its_finding() {
        let root = json!({"id": 1, "path": "a.rs", "user": {"login": "redline[bot]", "type": "Bot"},
            "body": "**[major · bug] Division by zero**\n\nCheck.\n\n<!-- redline:fp=00ff -->"});
        let reply = json!({"id": 2, "in_reply_to_id": 1, "user": {"login": "alice", "type": "User"}, "body": "no"});
        let answer = json!({"id": 3, "in_reply_to_id": 1, "user": {"login": "redline[bot]", "type": "Bot"},
            "body": answer_body("It is.", 2)});
        let other = json!({"id": 4, "user": {"login": "bob", "type": "User"}, "body": "x"});
        let thread = Thread::from_comments(&[other, answer, reply, root], 1).expect("thread");
        assert_eq!(thread.posts.len(), 3);
        assert!(thread.is_redline_s());
        assert_eq!(thread.answers(), 1);
        assert!(thread.answered(2) && !thread.answered(3));
        let keys = thread.dismissal_keys();
        assert_eq!(keys[0], "00ff");
        assert!(keys[1].starts_with("c-"));
        assert!(Thread::from_comments(&[], 1).is_none());
    }
}
