//! The forge seam: what the pull-request flow ([`crate::flow::pull`]) needs from the
//! place a change request lives (GitHub pull requests, GitLab merge requests): the intent,
//! Redline's earlier comments and threads, a review with inline comments, the summary
//! created or edited in place, replies in threads, and users' access.
//!
//! Invariants: what is posted is decided once, in [`publish`], for every forge (the same
//! fingerprints, dismissal keys, limits and summary), so a change reviewed through GitHub
//! or GitLab gets the same model requests and the same findings; a forge only lists and
//! writes. Only Redline's own comments count as its earlier work (a copied marker
//! silences nothing). What the author wrote (title, description, closed issues) is data
//! for the intent section, never instructions.
//! The review's state beside the change (GitHub: the check run `Redline`; GitLab: the
//! commit status `redline`) is defined once in [`status`], with the conclusion it has
//! under `fail_on`; each forge only shows it ([`Forge::show_status`]).
//! Layering: used by `flow`, `cli` and `server`; implemented in `github` (`GitHubPull`)
//! and in `gitlab` (`GitLabMergeRequest`); never imports either. [`ForgeKind`] (which forge) is a leaf the queue stores;
//! [`event`] (what a delivery asks for) is a leaf too: each forge's classifier produces
//! it, the server and the Action consume it.

pub(crate) mod anchor;
mod api_error;
pub mod command;
pub mod dismissed;
pub(crate) mod event;
pub mod fingerprint;
mod kind;
pub mod notice;
mod path_segment;
pub(crate) mod publish;
pub(crate) mod ratelimit;
pub mod status;
pub(crate) mod summary;
pub mod thread;

pub use api_error::{ApiFailure, ForgeApiError};
pub use command::{Command, USAGE};
pub use fingerprint::{fingerprint, marker, parse_markers};
pub use kind::{ForgeKind, UnknownForge};
pub(crate) use path_segment::path_segment;
pub use publish::{PublishConfig, PublishError, PublishOutcome, PublishRequest};
pub use ratelimit::{RateLimitPolicy, Sleeper};

use std::collections::HashSet;
use std::time::Duration;

use async_trait::async_trait;

use crate::intent::{CommitMessage, Intent};
use dismissed::ReviewThread;
use publish::Plan;
use status::{Conclusion, ReviewStatus, StatusError, StatusTarget};

pub(crate) use event::Classified;
pub use event::{
    AccessChange, Ask, ChangeRef, CommandRequest, CommentRef, ForgeEvent, ForgeIds, IgnoreReason,
    RerunRequest, ReviewRequest, Revision, ThreadNote, UsageReply,
};

/// Redline's summary comment as the forge has it.
#[derive(Debug, Clone)]
pub(crate) struct SummaryComment {
    /// The forge's id of the comment (note).
    pub(crate) id: u64,
    /// Its body.
    pub(crate) body: String,
    /// Its page, when the forge says.
    pub(crate) url: Option<String>,
}

/// What Redline wrote on a change request before this run.
#[derive(Debug, Default)]
pub(crate) struct Earlier {
    /// Fingerprints in Redline's inline comments.
    pub(crate) known: HashSet<String>,
    /// Redline's summary comment.
    pub(crate) summary: Option<SummaryComment>,
    /// The review threads (discussions) with their state and Redline's keys; empty when
    /// the forge cannot say (then resolved threads are simply not known).
    pub(crate) threads: Vec<ReviewThread>,
}

/// A change request on a forge, and Redline's earlier work on it.
#[async_trait]
pub(crate) trait Forge: Send + Sync {
    /// What the author says the change does: title, description and the issues it
    /// closes, with `commits` (the reviewed commits' messages). Never fails: what cannot
    /// be read is left out.
    async fn intent(&self, commits: Vec<CommitMessage>) -> Intent;

    /// Redline's summary comment, if there is one.
    async fn summary(&self) -> Result<Option<SummaryComment>, PublishError>;

    /// Redline's earlier inline comments, summary and threads.
    async fn earlier(&self) -> Result<Earlier, PublishError>;

    /// Posts `plan.inline` (anchors checked, on lines of the diff) as one review; what the
    /// forge refuses to place moves to `plan.summary`.
    async fn post_review<'f>(
        &self,
        req: &PublishRequest<'f>,
        plan: &mut Plan<'f>,
        summary_url: Option<&str>,
        outcome: &mut PublishOutcome,
    ) -> Result<(), PublishError>;

    /// Creates the summary comment (`existing` is `None`) or edits it in place; returns
    /// its page when the forge says.
    async fn write_summary(
        &self,
        existing: Option<&SummaryComment>,
        body: &str,
        interval: Duration,
    ) -> Result<Option<String>, PublishError>;

    /// Resolves thread `thread` (one of [`Earlier::threads`]).
    async fn resolve(&self, thread: &str) -> Result<(), PublishError>;

    /// Posts `body` in thread `thread` (GitHub: the id of the thread's first review
    /// comment; GitLab: the discussion's id).
    async fn reply(&self, thread: &str, body: &str) -> Result<(), PublishError>;

    /// Whether `user` may ask for a review or dismiss a finding (GitHub: write access;
    /// GitLab: the Developer role or above). Not a member: no.
    async fn may_write(&self, user: &str) -> Result<bool, PublishError>;

    /// Shows `status` of the review of commit `target.head` beside the change (GitHub:
    /// the check run [`status::CHECK_NAME`], GitLab: the commit status `redline`); returns
    /// the forge's id of it, to pass as `target.id` next time (`None`: the forge has none).
    async fn show_status(
        &self,
        target: &StatusTarget<'_>,
        status: &ReviewStatus,
    ) -> Result<Option<u64>, StatusError>;

    /// The conclusion of the last finished review shown on commit `head`, when it says
    /// something of the commit ([`Conclusion::is_decisive`]).
    async fn shown_conclusion(&self, head: &str) -> Result<Option<Conclusion>, StatusError>;

    /// The bodies of the comments on the change, every page (GitHub: the pull request's
    /// issue comments; GitLab: the notes of every discussion).
    async fn comment_bodies(&self) -> Result<Vec<String>, PublishError>;

    /// Posts `body` as a comment on the change (GitHub: an issue comment; GitLab: a note).
    async fn post_comment(&self, body: &str) -> Result<(), PublishError>;
}
