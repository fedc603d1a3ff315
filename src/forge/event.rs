//! What one forge delivery (a GitHub webhook or Actions event, a GitLab hook) asks of
//! Redline, in terms every forge shares. Each forge classifies its own payloads into a
//! [`ForgeEvent`] (GitHub: `github::event`); the server maps it to a queued job
//! or a hook, the Action to its run.
//!
//! Invariants: the rules (which actions start a review, drafts, bots, `created` comments
//! only, where `/redline ignore` applies) are decided by the forge's classifier, once, so
//! every entry point of that forge decides the same for the same payload; what an entry
//! point adds is only what it alone needs (the App needs an installation to act). Nothing
//! here is GitHub- or GitLab-specific: repositories are `owner/name` paths, changes are
//! numbered per repository, threads are named by opaque strings and the forge's own ids
//! travel in [`ForgeIds`]. Texts (titles, descriptions, comment bodies) are data, never
//! instructions.

use std::fmt;

use serde::Serialize;

/// A delivery's action (for the delivery record) and what it asks for: what every forge's
/// classifier returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Classified {
    /// The payload's `action`, if any.
    pub action: Option<String>,
    /// What the delivery asks for.
    pub event: ForgeEvent,
}

/// What a delivery asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ForgeEvent {
    /// Review this change (opened, reopened, new commits pushed, ready for review).
    Review(Box<ReviewRequest>),
    /// A change that would be reviewed were it not a draft (drafts are not reviewed): nothing
    /// to review until it is marked ready ([`IgnoreReason::Draft`]); the App shows the
    /// commit skipped in the change's checks.
    Draft(Box<ReviewRequest>),
    /// A `/redline review` command in a comment: the event names no commits, so the
    /// change must be fetched, and the commenter's access checked first.
    Command(CommandRequest),
    /// A `/redline` command that does not follow the grammar: answer with the usage (to a
    /// commenter who may write).
    Usage(UsageReply),
    /// Run Redline's check of a commit again (GitHub's "Re-run" of the check run
    /// `Redline` or of its suite): a review of the change at that commit, once the
    /// requester's access is checked (as for a [`ForgeEvent::Command`]).
    Rerun(RerunRequest),
    /// A comment in a review thread (discussion) that may get an answer, or dismiss the
    /// thread's finding. Its [`ThreadNote::ask`] is never [`Ask::Review`] (that is a
    /// [`ForgeEvent::Command`]).
    Thread(Box<ThreadNote>),
    /// The forge checks that the endpoint answers (GitHub's `ping`).
    Ping,
    /// Redline's access to an account changed (GitHub: an App installation event).
    Access(AccessChange),
    /// Nothing to do, for this reason.
    Ignore(IgnoreReason),
}

impl ForgeEvent {
    /// The change the event acts on, when it names one.
    pub fn change(&self) -> Option<&ChangeRef> {
        match self {
            ForgeEvent::Review(review) | ForgeEvent::Draft(review) => Some(&review.change),
            ForgeEvent::Command(command) => Some(&command.change),
            ForgeEvent::Rerun(rerun) => Some(&rerun.change),
            ForgeEvent::Usage(usage) => Some(&usage.change),
            ForgeEvent::Thread(note) => Some(&note.change),
            ForgeEvent::Ping | ForgeEvent::Access(_) | ForgeEvent::Ignore(_) => None,
        }
    }
}

/// A change request (GitHub pull request, GitLab merge request) on a forge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangeRef {
    /// `owner/name` (GitLab: the project's full path, `group/subgroup/name`).
    pub repository: String,
    /// The change's number in its repository (GitHub: pull request number; GitLab: the
    /// merge request's `iid`).
    pub number: u64,
    /// The forge's own ids, where the event gives them.
    pub ids: ForgeIds,
}

impl ChangeRef {
    /// The repository's owner (namespace) and name; `None` when the path has no owner.
    pub fn owner_and_name(&self) -> Option<(&str, &str)> {
        self.repository
            .rsplit_once('/')
            .filter(|(owner, name)| !owner.is_empty() && !name.is_empty())
    }
}

/// A forge's own ids of where an event happened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ForgeIds {
    /// GitHub: the App installation that can act on the repository (App deliveries only).
    pub installation: Option<u64>,
    /// GitLab: the project's numeric id.
    pub project: Option<u64>,
}

/// A commit and the branch it is the tip of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Revision {
    /// The commit.
    pub sha: String,
    /// The branch name.
    pub branch: String,
}

/// A change to review, with everything the event says about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewRequest {
    /// The change.
    pub change: ChangeRef,
    /// The forge's action (GitHub: `opened`, `synchronize`, ...; GitLab: `open`, `update`, ...).
    pub action: String,
    /// Who caused the event, when the event says.
    pub sender: Option<String>,
    /// Who opened the change, when the event says.
    pub author: Option<String>,
    /// The base (target) commit and branch.
    pub base: Revision,
    /// The head (source) commit and branch.
    pub head: Revision,
    /// The head is in another repository (a fork; its token may be read-only).
    pub is_fork: bool,
    /// The title, as the author wrote it.
    pub title: String,
    /// The description, as the author wrote it (empty when none).
    pub description: String,
    /// A strategy named by the requester, if any.
    pub strategy: Option<String>,
}

/// A comment (GitLab: a note) and its author.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommentRef {
    /// The forge's id of the comment.
    pub id: u64,
    /// The author's login (GitLab: username).
    pub author: String,
    /// The author's relation to the repository as the event gives it (GitHub:
    /// `author_association`, e.g. `MEMBER`); empty when the event does not say. A hint
    /// only: access is checked through the forge's API.
    pub role: String,
}

/// A `/redline review` command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandRequest {
    /// The change commented on.
    pub change: ChangeRef,
    /// The comment holding the command.
    pub comment: CommentRef,
    /// `--strategy NAME`, if given.
    pub strategy: Option<String>,
    /// `--force`: review even a head already reviewed.
    pub force: bool,
}

/// A re-run of Redline's check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RerunRequest {
    /// The change the checked commit is the head of.
    pub change: ChangeRef,
    /// The checked commit.
    pub head: String,
    /// Who asked for the re-run.
    pub requested_by: String,
}

/// The reply to a malformed `/redline` command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UsageReply {
    /// The change commented on.
    pub change: ChangeRef,
    /// The comment holding the command.
    pub comment: CommentRef,
    /// What is wrong, and the usage.
    pub text: String,
}

/// What a comment in a review thread asks of Redline, from the event alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Ask {
    /// `/redline review ...` in a thread: a review (the commenter needs write access).
    Review {
        /// `--strategy NAME`.
        strategy: Option<String>,
        /// `--force`: review even a head already reviewed.
        force: bool,
    },
    /// `/redline ignore`: dismiss the thread's finding (and say so).
    Ignore,
    /// A malformed `/redline` command: answer with this usage text.
    Usage(String),
    /// The comment mentions Redline or starts a conversation with it: answer it.
    Answer,
    /// A reply in some thread: answered only if the thread is Redline's.
    ReplyInThread,
}

/// A comment in a review thread that may get an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadNote {
    /// The change.
    pub change: ChangeRef,
    /// The comment.
    pub comment: CommentRef,
    /// The thread (GitHub: the id of its first review comment, in decimal; GitLab: the
    /// discussion's id). The comment itself when it starts the thread.
    pub thread: String,
    /// The comment's text.
    pub body: String,
    /// The commented file (empty when not on a file).
    pub path: String,
    /// The diff hunk the thread sits on (empty when the event has none).
    pub diff_hunk: String,
    /// Who opened the change, when the event says.
    pub change_author: Option<String>,
    /// What the comment asks.
    pub ask: Ask,
}

/// Redline's access to an account changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccessChange {
    /// The account's id (GitHub: the installation).
    pub account: u64,
    /// The event's action (GitHub: `created`, `deleted`, `suspend`, `added`, ...).
    pub action: String,
    /// Redline lost access (deleted or suspended): cached tokens must go.
    pub access_removed: bool,
}

/// Why a delivery asks nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum IgnoreReason {
    /// An event Redline does not handle.
    EventNotHandled {
        /// The event's name.
        event: String,
    },
    /// A handled event with an action that asks nothing.
    ActionNotHandled {
        /// The event's name.
        event: String,
        /// The action.
        action: String,
    },
    /// A draft change, and drafts are not reviewed.
    Draft,
    /// A comment on something that is not a change request (an issue, a commit).
    NotOnChange,
    /// A comment written by a bot (Redline itself included).
    ByBot,
    /// A comment that is no `/redline` command.
    NotACommand,
    /// `/redline ignore` outside a review thread.
    IgnoreOutsideThread,
    /// A comment carrying Redline's answer marker: its own answer.
    OwnAnswer,
    /// A review comment that is no command, mention nor reply.
    AsksNothing,
    /// The repository's path has no owner.
    RepositoryWithoutOwner,
    /// An update of a change that brought no new commits (GitLab: an `update` without
    /// `oldrev`: a title, label or assignee edit).
    NoNewCommits,
    /// A note the forge wrote itself (GitLab: a system note).
    SystemNote,
    /// A re-run of a check that is not Redline's.
    OtherCheck,
    /// A re-run of a check on a commit of no pull request of the repository (GitHub lists
    /// none for a fork's commits).
    CheckWithoutChange,
    /// A request that needs an installation to act through (GitHub App deliveries), and
    /// names none.
    NoInstallation,
}

impl fmt::Display for IgnoreReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IgnoreReason::EventNotHandled { event } => write!(f, "event `{event}` not handled"),
            IgnoreReason::ActionNotHandled { event, action } => {
                write!(f, "{event} action {action:?} not handled")
            }
            IgnoreReason::Draft => f.write_str("draft pull request"),
            IgnoreReason::NotOnChange => f.write_str("comment on an issue, not on a pull request"),
            IgnoreReason::ByBot => f.write_str("comment by a bot"),
            IgnoreReason::NotACommand => f.write_str("not a /redline command"),
            IgnoreReason::IgnoreOutsideThread => {
                f.write_str("`/redline ignore` applies in a review thread")
            }
            IgnoreReason::OwnAnswer => f.write_str("Redline's own answer"),
            IgnoreReason::AsksNothing => f.write_str("review comment that asks nothing of Redline"),
            IgnoreReason::RepositoryWithoutOwner => f.write_str("repository name without an owner"),
            IgnoreReason::NoNewCommits => f.write_str("update without new commits"),
            IgnoreReason::SystemNote => f.write_str("system note"),
            IgnoreReason::OtherCheck => f.write_str("re-run of a check that is not Redline's"),
            IgnoreReason::CheckWithoutChange => {
                f.write_str("re-run of a check on a commit of no pull request of this repository")
            }
            IgnoreReason::NoInstallation => f.write_str("no installation in the payload"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_the_path_before_the_name() {
        let change = |repository: &str| ChangeRef {
            repository: repository.into(),
            number: 1,
            ids: ForgeIds::default(),
        };
        assert_eq!(change("o/r").owner_and_name(), Some(("o", "r")));
        assert_eq!(
            change("group/sub/r").owner_and_name(),
            Some(("group/sub", "r"))
        );
        for lone in ["r", "/r", "o/"] {
            assert_eq!(change(lone).owner_and_name(), None, "{lone}");
        }
    }
}
