//! The job a delivery queues, for every forge: what the classifier's [`ForgeEvent`] asks
//! for, as the queue stores it. The intake ([`super::intake`]) calls [`job_of`] with no
//! other type in between.
//!
//! Layering: knows no forge; the installation (GitHub's) is passed on as the event gives it.

use crate::forge::{CommandRequest, ForgeEvent, RerunRequest, ReviewRequest};
use crate::queue::{ForgeKind, JobKind, NewJob, ReviewTrigger};

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
