//! What a verified delivery asks for, as the App reads it, and the job it queues.
//!
//! GitHub's classifier ([`crate::github::event`]) decides what a delivery asks for; the
//! App adds the one rule only it has: it acts through an installation, so a request naming
//! a change without one asks nothing of it ([`IgnoreReason::NoInstallation`]), and a draft
//! without one is shown to no check. The [`ForgeEvent`] that comes out is what the intake
//! ([`super::intake`]) acts on, for every forge: [`job_of`] is the job it queues.

use super::ServerConfig;
use crate::forge::{
    ChangeRef, CommandRequest, ForgeEvent, IgnoreReason, RerunRequest, ReviewRequest,
};
use crate::github;
use crate::github::event::ClassifyOptions;
pub(crate) use crate::github::event::{Classified, PayloadError};
use crate::queue::{ForgeKind, JobKind, NewJob, ReviewTrigger};

/// A reply to a `/redline` command that does not follow the grammar, for the hook that
/// posts it.
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

/// Reads the raw `body` of GitHub event `event` with GitHub's classifier (one typed
/// reading, a well-formed `pull_request` payload in a single pass), under the App's rule:
/// a request without an installation is ignored.
pub(crate) fn classify_app_delivery(
    event: &str,
    body: &[u8],
    config: &ServerConfig,
) -> Result<Classified, PayloadError> {
    let options = ClassifyOptions {
        review_drafts: config.review_drafts,
        mention: config.app_slug.as_ref().map(|slug| format!("@{slug}")),
        app_slug: config.app_slug.clone(),
    };
    let classified = github::event::classify_github_event(event, body, &options)?;
    Ok(Classified {
        action: classified.action,
        event: through_installation(classified.event),
    })
}

/// The App can act only through an installation: without one, a request asks nothing of
/// it, and a draft is only ignored (no check can show it skipped).
fn through_installation(event: ForgeEvent) -> ForgeEvent {
    let installed = |change: &ChangeRef| change.ids.installation.is_some();
    match event {
        ForgeEvent::Draft(review) if !installed(&review.change) => {
            ForgeEvent::Ignore(IgnoreReason::Draft)
        }
        event => match event.change() {
            Some(change) if !installed(change) => ForgeEvent::Ignore(IgnoreReason::NoInstallation),
            _ => event,
        },
    }
}

/// The job `event` queues on `forge`, if it queues one: a review, a `/redline review`
/// command, a re-run of Redline's check. The rest is answered, or handed to a hook, by
/// the intake.
pub(crate) fn job_of(
    event: &ForgeEvent,
    forge: ForgeKind,
) -> Result<Option<NewJob>, serde_json::Error> {
    Ok(match event {
        ForgeEvent::Review(review) => {
            let mut job = review_job((**review).clone(), forge)?;
            // A GitLab hook without its last commit names no head; the worker reads it.
            job.head_sha = job.head_sha.filter(|sha| !sha.is_empty());
            Some(job)
        }
        ForgeEvent::Command(command) => Some(command_job(command.clone(), forge)?),
        ForgeEvent::Rerun(rerun) => Some(rerun_job(rerun.clone(), forge)?),
        ForgeEvent::Draft(_)
        | ForgeEvent::Usage(_)
        | ForgeEvent::Thread(_)
        | ForgeEvent::Ping
        | ForgeEvent::Access(_)
        | ForgeEvent::Ignore(_) => None,
    })
}

/// The job that reviews `review` on `forge` (any forge: the installation is passed on as
/// the event gives it).
fn review_job(review: ReviewRequest, forge: ForgeKind) -> Result<NewJob, serde_json::Error> {
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
fn command_job(command: CommandRequest, forge: ForgeKind) -> Result<NewJob, serde_json::Error> {
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
fn rerun_job(rerun: RerunRequest, forge: ForgeKind) -> Result<NewJob, serde_json::Error> {
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
