//! What a GitHub Actions event asks Redline to do, and the pull request
//! look-ups the caller needs to act on it.

use serde::Serialize;
use serde_json::Value;

use super::event::{ClassifyOptions, classify};
use super::thread::ThreadComment;
use crate::forge::{ChangeRef, ForgeEvent, IgnoreReason};

/// How events are filtered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TriggerOptions {
    /// Review draft pull requests too (default: skip them).
    pub review_drafts: bool,
}

/// What to do for one event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Trigger {
    /// Review this pull request.
    Review {
        /// Base repository owner.
        owner: String,
        /// Base repository name.
        repo: String,
        /// Pull request number.
        pr_number: u64,
        /// Base commit.
        base_sha: String,
        /// Head commit.
        head_sha: String,
        /// Base branch.
        base_ref: String,
        /// Head branch.
        head_ref: String,
        /// The head is in another repository (its token is read-only).
        is_fork: bool,
        /// A strategy named by the requester, if any.
        strategy: Option<String>,
        /// The pull request's title.
        title: String,
        /// The pull request's description.
        body: String,
    },
    /// A comment asked for a review; the payload has no SHAs, so the caller
    /// must check the commenter's access ([`super::has_write_access`]) and fetch the
    /// pull request ([`super::fetch_pull`]).
    NeedsPullRequest {
        /// Repository owner.
        owner: String,
        /// Repository name.
        repo: String,
        /// Pull request number.
        pr_number: u64,
        /// `--strategy NAME` from the command, if given.
        strategy: Option<String>,
        /// `--force`: review even a head already reviewed.
        force: bool,
        /// Login of the commenter, whose access the caller should check.
        requested_by: String,
    },
    /// A malformed `/redline` command: the caller replies with `reply` (after checking
    /// the commenter's access, as for a review request).
    Usage {
        /// Repository owner.
        owner: String,
        /// Repository name.
        repo: String,
        /// Pull request number.
        pr_number: u64,
        /// Login of the commenter.
        requested_by: String,
        /// What is wrong, and the usage.
        reply: String,
    },
    /// A review comment that may get an answer in its thread (see [`crate::flow::thread`]).
    Thread(Box<ThreadComment>),
    /// Nothing to do.
    Skip {
        /// One line saying why.
        reason: String,
    },
}

/// Reads an Actions event (`GITHUB_EVENT_NAME` and the `GITHUB_EVENT_PATH` JSON) with
/// the classifier the App uses ([`super::event`]), so both decide the same for the same
/// payload. `pull_request_target` carries a `pull_request` payload. A payload the
/// classifier refuses is skipped, with the reason.
pub fn parse_action_event(event_name: &str, payload: &Value, opts: &TriggerOptions) -> Trigger {
    let event_name = match event_name {
        "pull_request_target" => "pull_request",
        other => other,
    };
    let options = ClassifyOptions {
        review_drafts: opts.review_drafts,
        // The Action knows no App slug, so mentions alone do not count.
        mention: None,
        app_slug: None,
    };
    match classify(event_name, payload, &options) {
        Ok(classified) => {
            trigger_of(event_name, classified.event).unwrap_or_else(|reason| Trigger::Skip {
                reason: reason.to_string(),
            })
        }
        Err(error) => Trigger::Skip {
            reason: error.to_string(),
        },
    }
}

/// The Action's run for what an event asks; the reason when it asks nothing.
fn trigger_of(event_name: &str, event: ForgeEvent) -> Result<Trigger, IgnoreReason> {
    Ok(match event {
        ForgeEvent::Review(review) => {
            let (owner, repo) = owner_and_name(&review.change)?;
            Trigger::Review {
                owner,
                repo,
                pr_number: review.change.number,
                base_sha: review.base.sha,
                head_sha: review.head.sha,
                base_ref: review.base.branch,
                head_ref: review.head.branch,
                is_fork: review.is_fork,
                strategy: review.strategy,
                title: review.title,
                body: review.description,
            }
        }
        ForgeEvent::Command(command) => {
            let (owner, repo) = owner_and_name(&command.change)?;
            Trigger::NeedsPullRequest {
                owner,
                repo,
                pr_number: command.change.number,
                strategy: command.strategy,
                force: command.force,
                requested_by: command.comment.author,
            }
        }
        ForgeEvent::Usage(usage) => {
            let (owner, repo) = owner_and_name(&usage.change)?;
            Trigger::Usage {
                owner,
                repo,
                pr_number: usage.change.number,
                requested_by: usage.comment.author,
                reply: usage.text,
            }
        }
        ForgeEvent::Thread(note) => {
            let comment =
                ThreadComment::from_note(*note).ok_or(IgnoreReason::RepositoryWithoutOwner)?;
            Trigger::Thread(Box::new(comment))
        }
        ForgeEvent::Ignore(reason) => return Err(reason),
        ForgeEvent::Draft(_) => return Err(IgnoreReason::Draft),
        // Pings, installations and re-runs of the App's check are the App's.
        ForgeEvent::Ping | ForgeEvent::Access(_) | ForgeEvent::Rerun(_) => {
            return Err(IgnoreReason::EventNotHandled {
                event: event_name.to_string(),
            });
        }
    })
}

fn owner_and_name(change: &ChangeRef) -> Result<(String, String), IgnoreReason> {
    change
        .owner_and_name()
        .map(|(owner, name)| (owner.to_string(), name.to_string()))
        .ok_or(IgnoreReason::RepositoryWithoutOwner)
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
    MissingCommit(String),
}

/// Checks that an event file has the shape GitHub gives the named event: a JSON object;
/// for `pull_request` / `pull_request_target` one with a `pull_request` object holding
/// the base and head commits; for `issue_comment` one with an `issue` and a `comment`.
/// A wrong shape means a broken workflow, not an event to skip.
pub(crate) fn check_action_event(event_name: &str, payload: &Value) -> Result<(), EventShapeError> {
    if !payload.is_object() {
        return Err(EventShapeError::NotAnObject(json_kind(payload)));
    }
    match event_name {
        "pull_request" | "pull_request_target" => {
            let pr = payload
                .get("pull_request")
                .filter(|pr| pr.is_object())
                .ok_or(EventShapeError::MissingObject("pull_request"))?;
            for field in [["base", "sha"], ["head", "sha"]] {
                if text(pr, &field).is_none() {
                    return Err(EventShapeError::MissingCommit(field.join(".")));
                }
            }
            Ok(())
        }
        "pull_request_review_comment" => {
            for field in ["pull_request", "comment"] {
                if !payload.get(field).is_some_and(Value::is_object) {
                    return Err(EventShapeError::MissingObject(field));
                }
            }
            Ok(())
        }
        "issue_comment" => {
            for field in ["issue", "comment"] {
                if !payload.get(field).is_some_and(Value::is_object) {
                    return Err(EventShapeError::MissingObject(field));
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn text<'v>(value: &'v Value, path: &[&str]) -> Option<&'v str> {
    path.iter().try_fold(value, |v, key| v.get(key))?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_shapes_are_named() {
        let pr = serde_json::json!({"pull_request": {"base": {"sha": "a"}, "head": {"sha": "b"}}});
        assert_eq!(check_action_event("pull_request", &pr), Ok(()));
        for (event, payload, expected) in [
            ("pull_request", serde_json::json!([]), "an array"),
            ("pull_request", serde_json::json!("x"), "a string"),
            ("push", serde_json::json!(null), "null"),
            (
                "pull_request_target",
                serde_json::json!({"action": "opened"}),
                "`pull_request`",
            ),
            (
                "pull_request",
                serde_json::json!({"pull_request": {"head": {"sha": "b"}}}),
                "base.sha",
            ),
            (
                "issue_comment",
                serde_json::json!({"issue": {}}),
                "`comment`",
            ),
        ] {
            let err = check_action_event(event, &payload).unwrap_err();
            assert!(err.to_string().contains(expected), "{payload}: {err}");
        }
    }

    #[test]
    fn unknown_events_skip_with_a_reason() {
        let push = serde_json::json!({"ref": "refs/heads/main"});
        let trigger = parse_action_event("push", &push, &TriggerOptions::default());
        assert!(matches!(trigger, Trigger::Skip { reason } if reason.contains("push")));
    }

    #[test]
    fn review_comments_are_answers_review_requests_or_skipped() {
        let event = |body: &str, reply_to: Option<u64>, kind: &str| {
            let payload = serde_json::json!({
                "action": "created",
                "comment": {"id": 5, "in_reply_to_id": reply_to, "body": body, "path": "a.rs",
                    "user": {"login": "alice", "type": kind}},
                "pull_request": {"number": 3, "user": {"login": "alice"}},
                "repository": {"full_name": "o/r", "name": "r", "owner": {"login": "o"}}
            });
            assert_eq!(
                check_action_event("pull_request_review_comment", &payload),
                Ok(())
            );
            parse_action_event(
                "pull_request_review_comment",
                &payload,
                &TriggerOptions::default(),
            )
        };
        let Trigger::Thread(comment) = event("is this right?", Some(4), "User") else {
            panic!("not a thread comment");
        };
        assert_eq!((comment.root_id, comment.pr_number), (4, 3));
        assert!(matches!(
            event("/redline review --strategy plan", None, "User"),
            Trigger::NeedsPullRequest { strategy: Some(s), .. } if s == "plan"
        ));
        assert!(matches!(
            event("why?", Some(4), "Bot"),
            Trigger::Skip { .. }
        ));
        assert!(matches!(
            event("a note", None, "User"),
            Trigger::Skip { .. }
        ));
        let shapeless = serde_json::json!({"comment": {}});
        assert!(check_action_event("pull_request_review_comment", &shapeless).is_err());
    }
}
