//! What the App does with a verified webhook delivery: GitHub's classifier
//! ([`crate::github::event`]) decides what it asks for; this maps that to a job or a hook.

use super::ServerConfig;
use crate::forge::{
    ChangeRef, CommandRequest, ForgeEvent, IgnoreReason, RerunRequest, ReviewRequest,
};
use crate::github;
use crate::github::event::ClassifyOptions;
pub(crate) use crate::github::event::PayloadError;
use crate::github::thread::ThreadComment;
use crate::queue::{ForgeKind, JobKind, NewJob, ReviewTrigger};

/// What to do with a delivery.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    /// Queue this review.
    Review(NewJob),
    /// Nothing to do, for this reason.
    Ignore(String),
    /// A draft, not reviewed: shown skipped in its checks.
    Draft(Box<ReviewRequest>),
    /// A `ping` from GitHub.
    Pong,
    /// An installation changed.
    Installation(InstallationChange),
    /// A malformed `/redline` command: answer it with the usage.
    Reply(CommandReply),
    /// A review comment that may get an answer in its thread.
    Thread(ThreadComment),
}

/// A reply to a `/redline` command that does not follow the grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandReply {
    /// The installation that can post it.
    pub installation_id: u64,
    /// `owner/name`.
    pub repo_full_name: String,
    /// The pull request commented on.
    pub pr_number: u64,
    /// The commenter (only users with write access get a reply).
    pub commenter: String,
    /// The reply: what is wrong and the usage.
    pub text: String,
}

/// An `installation` or `installation_repositories` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InstallationChange {
    /// The installation.
    pub id: u64,
    /// The event's action.
    pub action: String,
    /// The App lost access (deleted or suspended): cached tokens must go.
    pub access_removed: bool,
}

/// A delivery's action and what to do about it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Classified {
    /// The payload's `action`, if any.
    pub action: Option<String>,
    /// What to do.
    pub decision: Decision,
}

/// Reads the raw `body` of event `event` with GitHub's classifier (one typed reading, a
/// well-formed `pull_request` payload in a single pass) and maps what it asks for to what
/// the App does: a review to a job, a thread comment or a malformed command to its hook.
/// The App can act only through an installation: a request without one is ignored.
pub(crate) fn classify(
    event: &str,
    body: &[u8],
    config: &ServerConfig,
) -> Result<Classified, PayloadError> {
    let options = ClassifyOptions {
        review_drafts: config.review_drafts,
        mention: config.app_slug.as_ref().map(|slug| format!("@{slug}")),
        app_slug: config.app_slug.clone(),
    };
    let classified = github::event::classify(event, body, &options)?;
    let decision = decision_of(classified.event).map_err(PayloadError::Unexpected)?;
    Ok(Classified {
        action: classified.action,
        decision,
    })
}

fn ignore(reason: impl ToString) -> Decision {
    Decision::Ignore(reason.to_string())
}

/// The change a request names, for the requests the App acts on through an installation.
fn change_of(event: &ForgeEvent) -> Option<&ChangeRef> {
    match event {
        ForgeEvent::Review(review) => Some(&review.change),
        ForgeEvent::Command(command) => Some(&command.change),
        ForgeEvent::Rerun(rerun) => Some(&rerun.change),
        ForgeEvent::Usage(usage) => Some(&usage.change),
        ForgeEvent::Thread(note) => Some(&note.change),
        // A draft asks for nothing; its check, when it has an installation.
        ForgeEvent::Ping | ForgeEvent::Access(_) | ForgeEvent::Ignore(_) | ForgeEvent::Draft(_) => {
            None
        }
    }
}

/// What the App does for a classified GitHub delivery.
fn decision_of(event: ForgeEvent) -> Result<Decision, serde_json::Error> {
    let Some(change) = change_of(&event) else {
        return Ok(account_decision(event));
    };
    let Some(installation_id) = change.ids.installation else {
        return Ok(ignore("no installation in the payload"));
    };
    Ok(match event {
        ForgeEvent::Review(review) => Decision::Review(review_job(*review, ForgeKind::GitHub)?),
        ForgeEvent::Command(command) => Decision::Review(command_job(command, ForgeKind::GitHub)?),
        ForgeEvent::Rerun(rerun) => Decision::Review(rerun_job(rerun, ForgeKind::GitHub)?),
        ForgeEvent::Usage(usage) => Decision::Reply(CommandReply {
            installation_id,
            repo_full_name: usage.change.repository,
            pr_number: usage.change.number,
            commenter: usage.comment.author,
            text: usage.text,
        }),
        ForgeEvent::Thread(note) => match ThreadComment::from_note(*note) {
            Some(comment) => Decision::Thread(comment),
            None => ignore(IgnoreReason::RepositoryWithoutOwner),
        },
        other => account_decision(other),
    })
}

/// What the App does for a delivery that names no change.
fn account_decision(event: ForgeEvent) -> Decision {
    match event {
        ForgeEvent::Ping => Decision::Pong,
        ForgeEvent::Access(change) => Decision::Installation(InstallationChange {
            id: change.account,
            action: change.action,
            access_removed: change.access_removed,
        }),
        ForgeEvent::Ignore(reason) => ignore(reason),
        ForgeEvent::Draft(review) if review.change.ids.installation.is_some() => {
            Decision::Draft(review)
        }
        ForgeEvent::Draft(_) => ignore(IgnoreReason::Draft),
        // Requests name a change: decided with its installation, above.
        ForgeEvent::Review(_)
        | ForgeEvent::Command(_)
        | ForgeEvent::Rerun(_)
        | ForgeEvent::Usage(_)
        | ForgeEvent::Thread(_) => ignore("nothing to do"),
    }
}

/// The job that reviews `review` on `forge` (any forge: the installation is passed on as
/// the event gives it).
pub(crate) fn review_job(
    review: ReviewRequest,
    forge: ForgeKind,
) -> Result<NewJob, serde_json::Error> {
    let trigger = ReviewTrigger::PullRequest {
        action: review.action,
        sender: review.sender,
        base_ref: review.base.branch,
        head_ref: review.head.branch,
    };
    Ok(NewJob {
        forge,
        repo_full_name: review.change.repository,
        installation_id: review.change.ids.installation,
        pr_number: review.change.number,
        head_sha: Some(review.head.sha),
        kind: JobKind::Review {
            strategy: review.strategy,
        },
        payload: serde_json::to_value(trigger)?,
    })
}

/// The job of a `/redline review` comment on `forge` (the worker checks the commenter's
/// access before it replaces or stops anything).
pub(crate) fn command_job(
    command: CommandRequest,
    forge: ForgeKind,
) -> Result<NewJob, serde_json::Error> {
    let trigger = ReviewTrigger::Command {
        commenter: command.comment.author,
        author_association: command.comment.role,
        comment_id: command.comment.id,
        force: command.force,
    };
    Ok(NewJob {
        forge,
        repo_full_name: command.change.repository,
        installation_id: command.change.ids.installation,
        pr_number: command.change.number,
        head_sha: None,
        kind: JobKind::Requested {
            strategy: command.strategy,
        },
        payload: serde_json::to_value(trigger)?,
    })
}

/// The job of a re-run of Redline's check on `forge`: a review of the change at the
/// checked commit, which (as a command's) replaces nothing until the worker has checked
/// the requester's access.
pub(crate) fn rerun_job(
    rerun: RerunRequest,
    forge: ForgeKind,
) -> Result<NewJob, serde_json::Error> {
    let trigger = ReviewTrigger::Rerun {
        requested_by: rerun.requested_by,
    };
    Ok(NewJob {
        forge,
        repo_full_name: rerun.change.repository,
        installation_id: rerun.change.ids.installation,
        pr_number: rerun.change.number,
        head_sha: Some(rerun.head),
        kind: JobKind::Requested { strategy: None },
        payload: serde_json::to_value(trigger)?,
    })
}

#[cfg(test)]
mod agreement;
#[cfg(test)]
mod tests;
