//! What a GitHub Actions event asks the Action to do, and whether its event file has the
//! shape GitHub gives the event.
//!
//! Invariants: the Action reads its event file's bytes with the classifier the App uses
//! ([`super::event`]), so both act on the same [`ForgeEvent`] for the same payload; what
//! the Action adds is only which events it acts on ([`parse_action_event`]). The shape
//! check reads typed structs in which every field is optional, so a wrong shape is named,
//! never a parse error.

use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};

use super::event::{ClassifyOptions, PayloadError, classify_github_event};
use crate::forge::{ForgeEvent, IgnoreReason};

/// Reads an Actions event (`GITHUB_EVENT_NAME` and the bytes of the `GITHUB_EVENT_PATH`
/// file) with the classifier the App uses, drafts reviewed when `review_drafts`.
/// `pull_request_target` carries a `pull_request` payload.
///
/// The Action acts on a [`ForgeEvent::Review`], a [`ForgeEvent::Command`] (the caller
/// checks the commenter's access and fetches the pull request), a [`ForgeEvent::Usage`]
/// (the caller replies, after the same check) and a [`ForgeEvent::Thread`]; anything else
/// comes back as [`ForgeEvent::Ignore`] with the reason: a draft, the App's own events
/// (pings, installations and re-runs of the App's check: the Action's check is its
/// workflow's), a change in a repository without an owner. A payload the classifier
/// refuses is the error.
pub fn parse_action_event(
    event_name: &str,
    event: &[u8],
    review_drafts: bool,
) -> Result<ForgeEvent, PayloadError> {
    let event_name = match event_name {
        "pull_request_target" => "pull_request",
        other => other,
    };
    let options = ClassifyOptions {
        review_drafts,
        // The Action knows no App slug, so mentions alone do not count.
        mention: None,
        app_slug: None,
    };
    let classified = classify_github_event(event_name, event, &options)?;
    let skip = |reason| Ok(ForgeEvent::Ignore(reason));
    match classified.event {
        ForgeEvent::Draft(_) => skip(IgnoreReason::Draft),
        ForgeEvent::Ping | ForgeEvent::Access(_) | ForgeEvent::Rerun(_) => {
            skip(IgnoreReason::EventNotHandled {
                event: event_name.to_string(),
            })
        }
        event => match event.change() {
            Some(change) if change.owner_and_name().is_none() => {
                skip(IgnoreReason::RepositoryWithoutOwner)
            }
            _ => Ok(event),
        },
    }
}

/// Why an event file does not have the shape GitHub gives its event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EventShapeError {
    /// The file holds JSON that is not an object.
    #[error("the event is {0}, not a JSON object")]
    NotAnObject(&'static str),
    /// A required object is missing.
    #[error("the event has no `{0}` object")]
    MissingObject(&'static str),
    /// The `pull_request` object lacks a commit.
    #[error("the event's `pull_request` has no `{0}`")]
    MissingCommit(&'static str),
    /// The object cannot be read (a field named twice).
    #[error("the event cannot be read: {0}")]
    Unreadable(String),
}

/// Checks that an event file (JSON) has the shape GitHub gives the named event: a JSON
/// object; for `pull_request` / `pull_request_target` one with a `pull_request` object
/// holding the base and head commits; for `issue_comment` one with an `issue` and a
/// `comment`, for `pull_request_review_comment` a `pull_request` and a `comment`. A wrong
/// shape means a broken workflow, not an event to skip.
pub(crate) fn check_action_event(event_name: &str, event: &[u8]) -> Result<(), EventShapeError> {
    match event_name {
        "pull_request" | "pull_request_target" => {
            let event: PullRequestShape = object(event)?;
            let pull = required(event.pull_request, "pull_request")?;
            for (side, name) in [(pull.base, "base.sha"), (pull.head, "head.sha")] {
                let sha = side.and_then(Field::fits).and_then(|commit| commit.sha);
                if sha.and_then(Field::fits).is_none() {
                    return Err(EventShapeError::MissingCommit(name));
                }
            }
        }
        "pull_request_review_comment" => {
            let event: CommentShape = object(event)?;
            required(event.pull_request, "pull_request")?;
            required(event.comment, "comment")?;
        }
        "issue_comment" => {
            let event: CommentShape = object(event)?;
            required(event.issue, "issue")?;
            required(event.comment, "comment")?;
        }
        _ => {
            object::<AnyObject>(event)?;
        }
    }
    Ok(())
}

/// A JSON document, by its kind; an object read as `T`.
#[derive(Deserialize)]
#[serde(untagged)]
#[allow(dead_code, reason = "a variant's value only selects the variant")]
enum Document<T> {
    Null(()),
    Boolean(bool),
    Number(f64),
    Text(String),
    List(Vec<IgnoredAny>),
    Object(T),
}

/// A field's value: `T` when it has that shape (an object, for a struct), else anything.
#[derive(Deserialize)]
#[serde(untagged)]
#[allow(dead_code, reason = "a variant's value only selects the variant")]
enum Field<T> {
    /// An array, which a struct would also read.
    List(Vec<IgnoredAny>),
    Fits(T),
    Other(IgnoredAny),
}

impl<T> Field<T> {
    fn fits(self) -> Option<T> {
        match self {
            Field::Fits(value) => Some(value),
            Field::List(_) | Field::Other(_) => None,
        }
    }
}

/// Any JSON object.
#[derive(Deserialize)]
struct AnyObject {}

#[derive(Deserialize)]
struct PullRequestShape {
    #[serde(default)]
    pull_request: Option<Field<PullShape>>,
}

#[derive(Deserialize)]
struct PullShape {
    #[serde(default)]
    base: Option<Field<CommitShape>>,
    #[serde(default)]
    head: Option<Field<CommitShape>>,
}

#[derive(Deserialize)]
struct CommitShape {
    #[serde(default)]
    sha: Option<Field<String>>,
}

/// The objects of a comment event (`issue_comment`, `pull_request_review_comment`).
#[derive(Deserialize)]
struct CommentShape {
    #[serde(default)]
    issue: Option<Field<AnyObject>>,
    #[serde(default)]
    pull_request: Option<Field<AnyObject>>,
    #[serde(default)]
    comment: Option<Field<AnyObject>>,
}

/// The document read as the object `T`; its kind when it is no object.
fn object<T: DeserializeOwned>(event: &[u8]) -> Result<T, EventShapeError> {
    let document = serde_json::from_slice::<Document<T>>(event)
        .map_err(|error| EventShapeError::Unreadable(error.to_string()))?;
    Err(EventShapeError::NotAnObject(match document {
        Document::Object(object) => return Ok(object),
        Document::Null(()) => "null",
        Document::Boolean(_) => "a boolean",
        Document::Number(_) => "a number",
        Document::Text(_) => "a string",
        Document::List(_) => "an array",
    }))
}

/// The object `field` holds, or the error naming it.
fn required<T>(field: Option<Field<T>>, name: &'static str) -> Result<T, EventShapeError> {
    field
        .and_then(Field::fits)
        .ok_or(EventShapeError::MissingObject(name))
}

#[cfg(test)]
mod tests;
