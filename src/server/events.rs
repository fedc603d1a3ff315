//! Deciding what a verified webhook delivery asks for.

use serde::Deserialize;

use super::ServerConfig;
use crate::github::thread::{Ask, ReviewCommentEvent, ThreadComment};
use crate::github::{Command, REVIEW_ACTIONS, parse_command};
use crate::queue::{ForgeKind, JobKind, NewJob, ReviewTrigger};

/// What to do with a delivery.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    /// Queue this review.
    Review(NewJob),
    /// Nothing to do, for this reason.
    Ignore(String),
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

/// Why a body was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PayloadError {
    /// Not JSON.
    #[error("malformed JSON body: {0}")]
    Malformed(serde_json::Error),
    /// JSON, but not an object.
    #[error("the JSON body is not an object")]
    NotAnObject,
    /// A handled event lacks fields it must have.
    #[error("unexpected payload: {0}")]
    Unexpected(serde_json::Error),
}

/// The field every event may have; parsing it also validates the whole document.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    action: Option<String>,
}

/// Reads the raw `body` of event `event`. Payloads are parsed straight into the few typed
/// fields needed (no JSON tree is built); a well-formed `pull_request` payload, the bulk of
/// the traffic, in a single pass ([`pull_request_in_one_pass`]).
pub(crate) fn classify(
    event: &str,
    body: &[u8],
    config: &ServerConfig,
) -> Result<Classified, PayloadError> {
    let is_object = body.trim_ascii_start().first() == Some(&b'{');
    if is_object
        && event == "pull_request"
        && let Some(classified) = pull_request_in_one_pass(body, config)
    {
        return Ok(classified);
    }
    classify_in_two_passes(event, body, config)
}

/// The reference reading: the envelope (which validates the whole document), then the
/// event's own fields.
fn classify_in_two_passes(
    event: &str,
    body: &[u8],
    config: &ServerConfig,
) -> Result<Classified, PayloadError> {
    let Envelope { action } = serde_json::from_slice(body).map_err(PayloadError::Malformed)?;
    // Serde would also read a JSON array into the envelope.
    if body.trim_ascii_start().first() != Some(&b'{') {
        return Err(PayloadError::NotAnObject);
    }
    let wanted = action.as_deref().unwrap_or("");
    let decision = match event {
        "ping" => Ok(Decision::Pong),
        "pull_request" => pull_request(wanted, body, config),
        "issue_comment" => issue_comment(wanted, body),
        "pull_request_review_comment" => review_comment(wanted, body, config),
        "installation" | "installation_repositories" => installation(event, body),
        _ => Ok(ignore("event not handled")),
    }
    .map_err(PayloadError::Unexpected)?;
    Ok(Classified { action, decision })
}

fn ignore(reason: impl Into<String>) -> Decision {
    Decision::Ignore(reason.into())
}

#[derive(Deserialize)]
struct Repository {
    full_name: String,
}

#[derive(Deserialize)]
struct InstallationRef {
    id: u64,
}

#[derive(Deserialize)]
struct User {
    login: String,
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

#[derive(Deserialize)]
struct PullRequestEvent {
    action: String,
    number: u64,
    pull_request: PullRequest,
    repository: Repository,
    installation: Option<InstallationRef>,
    sender: Option<User>,
}

#[derive(Deserialize)]
struct PullRequest {
    #[serde(default)]
    draft: bool,
    head: GitRef,
    base: GitRef,
}

#[derive(Deserialize)]
struct GitRef {
    sha: String,
    #[serde(rename = "ref")]
    name: String,
}

/// Every field a `pull_request` delivery may need, each optional, so that one parse of the
/// document serves every action.
#[derive(Deserialize)]
struct PullRequestDelivery {
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    number: Option<u64>,
    #[serde(default)]
    pull_request: Option<PullRequest>,
    #[serde(default)]
    repository: Option<Repository>,
    #[serde(default)]
    installation: Option<InstallationRef>,
    #[serde(default)]
    sender: Option<User>,
}

/// A `pull_request` payload read in one pass. `None` when the payload is not well-formed
/// (not JSON, a field missing or of another shape): the two-pass reading then gives the
/// answer or error, so both readings always agree.
fn pull_request_in_one_pass(body: &[u8], config: &ServerConfig) -> Option<Classified> {
    let delivery: PullRequestDelivery = serde_json::from_slice(body).ok()?;
    let action = delivery.action;
    let wanted = action.as_deref().unwrap_or("");
    if !REVIEW_ACTIONS.contains(&wanted) {
        let decision = action_not_handled(wanted);
        return Some(Classified { action, decision });
    }
    let event = PullRequestEvent {
        action: action.clone()?,
        number: delivery.number?,
        pull_request: delivery.pull_request?,
        repository: delivery.repository?,
        installation: delivery.installation,
        sender: delivery.sender,
    };
    let decision = review_pull_request(event, config).ok()?;
    Some(Classified { action, decision })
}

fn action_not_handled(action: &str) -> Decision {
    ignore(format!("pull_request action {action:?} not handled"))
}

fn pull_request(
    action: &str,
    body: &[u8],
    config: &ServerConfig,
) -> Result<Decision, serde_json::Error> {
    if !REVIEW_ACTIONS.contains(&action) {
        return Ok(action_not_handled(action));
    }
    review_pull_request(serde_json::from_slice(body)?, config)
}

/// What a `pull_request` event with a review action asks for.
fn review_pull_request(
    event: PullRequestEvent,
    config: &ServerConfig,
) -> Result<Decision, serde_json::Error> {
    if event.pull_request.draft && event.action != "ready_for_review" && !config.review_drafts {
        return Ok(ignore("draft pull request"));
    }
    let Some(installation) = event.installation else {
        return Ok(ignore("no installation in the payload"));
    };
    let trigger = ReviewTrigger::PullRequest {
        action: event.action,
        sender: event.sender.map(|user| user.login),
        base_ref: event.pull_request.base.name,
        head_ref: event.pull_request.head.name,
    };
    Ok(Decision::Review(NewJob {
        forge: ForgeKind::GitHub,
        repo_full_name: event.repository.full_name,
        installation_id: Some(installation.id),
        pr_number: event.number,
        head_sha: Some(event.pull_request.head.sha),
        kind: JobKind::Review { strategy: None },
        payload: serde_json::to_value(trigger)?,
    }))
}

#[derive(Deserialize)]
struct IssueCommentEvent {
    issue: Issue,
    comment: Comment,
    repository: Repository,
    installation: Option<InstallationRef>,
}

#[derive(Deserialize)]
struct Issue {
    number: u64,
    /// Present (an object of links) only when the issue is a pull request.
    pull_request: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Comment {
    id: u64,
    body: Option<String>,
    user: User,
    author_association: String,
}

fn issue_comment(action: &str, body: &[u8]) -> Result<Decision, serde_json::Error> {
    if action != "created" {
        return Ok(ignore(format!(
            "issue_comment action {action:?} not handled"
        )));
    }
    let event: IssueCommentEvent = serde_json::from_slice(body)?;
    if event.issue.pull_request.is_none() {
        return Ok(ignore("comment on an issue, not a pull request"));
    }
    if event.comment.user.kind.as_deref() == Some("Bot") {
        return Ok(ignore("comment by a bot"));
    }
    let parsed = parse_command(event.comment.body.as_deref().unwrap_or(""));
    if matches!(parsed, Ok(None)) {
        return Ok(ignore("not a /redline command"));
    }
    let Some(installation) = event.installation else {
        return Ok(ignore("no installation in the payload"));
    };
    let strategy = match parsed {
        Ok(Some(Command::Review { strategy })) => strategy,
        Ok(Some(Command::Ignore)) => {
            return Ok(ignore("`/redline ignore` applies in a review thread"));
        }
        Ok(None) => None,
        Err(error) => {
            return Ok(Decision::Reply(CommandReply {
                installation_id: installation.id,
                repo_full_name: event.repository.full_name,
                pr_number: event.issue.number,
                commenter: event.comment.user.login,
                text: error.reply(),
            }));
        }
    };
    let trigger = ReviewTrigger::Command {
        commenter: event.comment.user.login,
        author_association: event.comment.author_association,
        comment_id: event.comment.id,
    };
    Ok(Decision::Review(NewJob {
        forge: ForgeKind::GitHub,
        repo_full_name: event.repository.full_name,
        installation_id: Some(installation.id),
        pr_number: event.issue.number,
        head_sha: None,
        kind: JobKind::Requested { strategy },
        payload: serde_json::to_value(trigger)?,
    }))
}

/// A `pull_request_review_comment`: a review request, an answer to give, or nothing.
/// Only `created` comments are parsed; edits and deletions are ignored unread.
fn review_comment(
    action: &str,
    body: &[u8],
    config: &ServerConfig,
) -> Result<Decision, serde_json::Error> {
    if action != "created" {
        return Ok(ignore(format!(
            "pull_request_review_comment action {action:?} not handled"
        )));
    }
    let event: ReviewCommentEvent = serde_json::from_slice(body)?;
    let mention = config.app_slug.as_ref().map(|slug| format!("@{slug}"));
    let comment = match event.to_comment(mention.as_deref()) {
        Ok(comment) => comment,
        Err(reason) => return Ok(ignore(reason)),
    };
    let Some(installation_id) = comment.installation_id else {
        return Ok(ignore("no installation in the payload"));
    };
    let Ask::Review { strategy } = &comment.ask else {
        return Ok(Decision::Thread(comment));
    };
    let trigger = ReviewTrigger::Command {
        commenter: comment.author.clone(),
        author_association: comment.author_association.clone(),
        comment_id: comment.comment_id,
    };
    Ok(Decision::Review(NewJob {
        forge: ForgeKind::GitHub,
        repo_full_name: event.repository.full_name,
        installation_id: Some(installation_id),
        pr_number: comment.pr_number,
        head_sha: None,
        kind: JobKind::Requested {
            strategy: strategy.clone(),
        },
        payload: serde_json::to_value(trigger)?,
    }))
}

#[derive(Deserialize)]
struct InstallationEvent {
    action: String,
    installation: InstallationRef,
}

fn installation(event: &str, body: &[u8]) -> Result<Decision, serde_json::Error> {
    let parsed: InstallationEvent = serde_json::from_slice(body)?;
    let access_removed =
        event == "installation" && matches!(parsed.action.as_str(), "deleted" | "suspend");
    Ok(Decision::Installation(InstallationChange {
        id: parsed.installation.id,
        action: parsed.action,
        access_removed,
    }))
}

#[cfg(test)]
mod tests;
