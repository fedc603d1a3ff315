//! GitHub's event classifier: what a webhook delivery (the App) or an Actions event (the
//! Action) asks for, as a forge-neutral [`ForgeEvent`]. Both entry points call
//! [`classify_github_event`]; the server maps its answer to a job, the Action to its run.
//!
//! The rules, one definition for both:
//! - `pull_request`: the actions of [`REVIEW_ACTIONS`] ask for a review; a draft is
//!   skipped unless drafts are reviewed, except on `ready_for_review` (the draft was just
//!   marked ready); every other action is ignored unread.
//! - `issue_comment`: only `created` comments, on a pull request (not an issue), not
//!   written by a bot (`type: Bot`), starting with `/redline`: `/redline review` asks for a
//!   review, a malformed command for the usage; `/redline ignore` applies in a review
//!   thread only.
//! - `pull_request_review_comment`: only `created` comments, read by
//!   [`ReviewCommentEvent::to_note`] (bots, Redline's own answers and comments asking
//!   nothing are ignored; `@slug` mentions count when the App's slug is known).
//! - `ping` is answered; `installation` and `installation_repositories` change access;
//!   every other event is ignored.
//!
//! Invariants: payloads are parsed straight into the few typed fields needed (no JSON
//! tree is built from raw bytes); a well-formed `pull_request` payload, the bulk of the
//! traffic, in a single pass ([`pull_request_in_one_pass`]), which always agrees with the
//! two-pass reference reading. Malformed JSON or a handled event lacking a field it must
//! have is a [`PayloadError`], never a guess.

use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::Value;

use super::pull::{ApiPull, PullInfo};
use super::thread::ReviewCommentEvent;
use crate::forge::command::{Command, REVIEW_ACTIONS, parse_command};
use crate::forge::status::CHECK_NAME;
use crate::forge::{
    AccessChange, Ask, ChangeRef, Classified, CommandRequest, CommentRef, ForgeEvent, ForgeIds,
    IgnoreReason, RerunRequest, ReviewRequest, Revision, UsageReply,
};

/// How events are filtered, where the entry points differ in what they know.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ClassifyOptions {
    /// Review draft pull requests too.
    pub review_drafts: bool,
    /// `@slug` of the App, when known: a review comment mentioning it asks for an answer.
    pub mention: Option<String>,
    /// The App's slug, when known: a re-run of another App's check suite is ignored.
    pub app_slug: Option<String>,
}

/// Why a payload was refused.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    /// Not JSON (or an `action` that is not text).
    #[error("malformed JSON body: {0}")]
    Malformed(#[source] serde_json::Error),
    /// JSON, but not an object.
    #[error("the JSON body is not an object")]
    NotAnObject,
    /// A handled event lacks fields it must have.
    #[error("unexpected payload: {0}")]
    Unexpected(#[source] serde_json::Error),
}

/// A payload as an entry point has it: the App's raw body, the Action's parsed event file.
pub(crate) trait Payload {
    /// Whether it is a JSON object.
    fn is_object(&self) -> bool;
    /// Reads the fields of `T` from it.
    fn read<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error>;
}

impl Payload for [u8] {
    fn is_object(&self) -> bool {
        self.trim_ascii_start().first() == Some(&b'{')
    }

    fn read<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(self)
    }
}

impl Payload for Value {
    fn is_object(&self) -> bool {
        Value::is_object(self)
    }

    fn read<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(self)
    }
}

/// What event `event` with `payload` asks for.
pub(crate) fn classify_github_event<P: Payload + ?Sized>(
    event: &str,
    payload: &P,
    options: &ClassifyOptions,
) -> Result<Classified, PayloadError> {
    if payload.is_object()
        && event == "pull_request"
        && let Some(classified) = pull_request_in_one_pass(payload, options)
    {
        return Ok(classified);
    }
    classify_in_two_passes(event, payload, options)
}

/// The field every event may have; parsing it also validates the whole document.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    action: Option<String>,
}

/// The reference reading: the envelope (which validates the whole document), then the
/// event's own fields.
pub(crate) fn classify_in_two_passes<P: Payload + ?Sized>(
    event: &str,
    payload: &P,
    options: &ClassifyOptions,
) -> Result<Classified, PayloadError> {
    let Envelope { action } = payload.read().map_err(PayloadError::Malformed)?;
    // Serde would also read a JSON array into the envelope.
    if !payload.is_object() {
        return Err(PayloadError::NotAnObject);
    }
    let wanted = action.as_deref().unwrap_or("");
    let decided = match event {
        "ping" => Ok(ForgeEvent::Ping),
        "pull_request" => pull_request(wanted, payload, options),
        "issue_comment" => issue_comment(wanted, payload),
        "pull_request_review_comment" => review_comment(wanted, payload, options),
        "installation" | "installation_repositories" => installation(event, payload),
        "check_run" => check_run(wanted, payload),
        "check_suite" => check_suite(wanted, payload, options),
        _ => Ok(ForgeEvent::Ignore(IgnoreReason::EventNotHandled {
            event: event.to_string(),
        })),
    };
    let event = decided.map_err(PayloadError::Unexpected)?;
    Ok(Classified { action, event })
}

#[derive(Deserialize)]
struct Repository {
    full_name: String,
}

#[derive(Deserialize, Clone, Copy)]
struct InstallationRef {
    id: u64,
}

impl InstallationRef {
    fn ids(installation: Option<InstallationRef>) -> ForgeIds {
        ForgeIds {
            installation: installation.map(|i| i.id),
            project: None,
        }
    }
}

#[derive(Deserialize)]
struct User {
    login: String,
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

/// A `pull_request` event with a review action.
#[derive(Deserialize)]
struct PullRequestEvent {
    action: String,
    number: u64,
    pull_request: ApiPull,
    repository: Repository,
    installation: Option<InstallationRef>,
    sender: Option<User>,
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
    pull_request: Option<ApiPull>,
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
pub(crate) fn pull_request_in_one_pass<P: Payload + ?Sized>(
    payload: &P,
    options: &ClassifyOptions,
) -> Option<Classified> {
    let delivery: PullRequestDelivery = payload.read().ok()?;
    let action = delivery.action;
    let wanted = action.as_deref().unwrap_or("");
    if !REVIEW_ACTIONS.contains(&wanted) {
        let event = action_not_handled("pull_request", wanted);
        return Some(Classified { action, event });
    }
    let event = PullRequestEvent {
        action: action.clone()?,
        number: delivery.number?,
        pull_request: delivery.pull_request?,
        repository: delivery.repository?,
        installation: delivery.installation,
        sender: delivery.sender,
    };
    let event = review_pull_request(event, options);
    Some(Classified { action, event })
}

fn action_not_handled(event: &str, action: &str) -> ForgeEvent {
    ForgeEvent::Ignore(IgnoreReason::ActionNotHandled {
        event: event.to_string(),
        action: action.to_string(),
    })
}

fn pull_request<P: Payload + ?Sized>(
    action: &str,
    payload: &P,
    options: &ClassifyOptions,
) -> Result<ForgeEvent, serde_json::Error> {
    if !REVIEW_ACTIONS.contains(&action) {
        return Ok(action_not_handled("pull_request", action));
    }
    Ok(review_pull_request(payload.read()?, options))
}

/// What a `pull_request` event with a review action asks for.
fn review_pull_request(event: PullRequestEvent, options: &ClassifyOptions) -> ForgeEvent {
    let author = event.pull_request.author().map(str::to_string);
    let pull = PullInfo::from(event.pull_request);
    let skipped = pull.draft && event.action != "ready_for_review" && !options.review_drafts;
    let request = Box::new(ReviewRequest {
        change: ChangeRef {
            repository: event.repository.full_name,
            number: event.number,
            ids: InstallationRef::ids(event.installation),
        },
        action: event.action,
        sender: event.sender.map(|user| user.login),
        author,
        base: Revision {
            sha: pull.base_sha,
            branch: pull.base_ref,
        },
        head: Revision {
            sha: pull.head_sha,
            branch: pull.head_ref,
        },
        is_fork: pull.is_fork,
        title: pull.title,
        description: pull.body,
        strategy: None,
    });
    if skipped {
        ForgeEvent::Draft(request)
    } else {
        ForgeEvent::Review(request)
    }
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
    pull_request: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Comment {
    id: u64,
    body: Option<String>,
    user: User,
    author_association: String,
}

/// An `issue_comment`: a review request, a usage reply, or nothing. Only `created`
/// comments are parsed; edits and deletions are ignored unread.
fn issue_comment<P: Payload + ?Sized>(
    action: &str,
    payload: &P,
) -> Result<ForgeEvent, serde_json::Error> {
    if action != "created" {
        return Ok(action_not_handled("issue_comment", action));
    }
    let event: IssueCommentEvent = payload.read()?;
    let ignore = |reason| Ok(ForgeEvent::Ignore(reason));
    if event.issue.pull_request.is_none() {
        return ignore(IgnoreReason::NotOnChange);
    }
    if event.comment.user.kind.as_deref() == Some("Bot") {
        return ignore(IgnoreReason::ByBot);
    }
    let parsed = parse_command(event.comment.body.as_deref().unwrap_or(""));
    let change = ChangeRef {
        repository: event.repository.full_name,
        number: event.issue.number,
        ids: InstallationRef::ids(event.installation),
    };
    let comment = CommentRef {
        id: event.comment.id,
        author: event.comment.user.login,
        role: event.comment.author_association,
    };
    Ok(match parsed {
        Ok(None) => ForgeEvent::Ignore(IgnoreReason::NotACommand),
        Ok(Some(Command::Ignore)) => ForgeEvent::Ignore(IgnoreReason::IgnoreOutsideThread),
        Ok(Some(Command::Review { strategy, force })) => ForgeEvent::Command(CommandRequest {
            change,
            comment,
            strategy,
            force,
        }),
        Err(error) => ForgeEvent::Usage(UsageReply {
            change,
            comment,
            text: error.reply(),
        }),
    })
}

/// A `pull_request_review_comment`: a review request, a comment that may get an answer,
/// or nothing. Only `created` comments are parsed; edits and deletions are ignored unread.
fn review_comment<P: Payload + ?Sized>(
    action: &str,
    payload: &P,
    options: &ClassifyOptions,
) -> Result<ForgeEvent, serde_json::Error> {
    if action != "created" {
        return Ok(action_not_handled("pull_request_review_comment", action));
    }
    let event: ReviewCommentEvent = payload.read()?;
    let note = match event.to_note(options.mention.as_deref()) {
        Ok(note) => note,
        Err(reason) => return Ok(ForgeEvent::Ignore(reason)),
    };
    Ok(match note.ask {
        Ask::Review { strategy, force } => ForgeEvent::Command(CommandRequest {
            change: note.change,
            comment: note.comment,
            strategy,
            force,
        }),
        _ => ForgeEvent::Thread(Box::new(note)),
    })
}

/// A check run or suite, as far as a re-run needs it.
#[derive(Deserialize)]
struct Checked {
    #[serde(default)]
    name: Option<String>,
    head_sha: String,
    #[serde(default)]
    app: Option<CheckApp>,
    #[serde(default)]
    pull_requests: Vec<CheckedPull>,
}

#[derive(Deserialize)]
struct CheckApp {
    #[serde(default)]
    slug: Option<String>,
}

#[derive(Deserialize)]
struct CheckedPull {
    number: u64,
    #[serde(default)]
    head: Option<CheckedHead>,
}

#[derive(Deserialize)]
struct CheckedHead {
    sha: String,
}

#[derive(Deserialize)]
struct CheckRunEvent {
    check_run: Checked,
    repository: Repository,
    installation: Option<InstallationRef>,
    sender: User,
}

#[derive(Deserialize)]
struct CheckSuiteEvent {
    check_suite: Checked,
    repository: Repository,
    installation: Option<InstallationRef>,
    sender: User,
}

/// A `check_run` event: a re-run of Redline's check, or nothing.
fn check_run<P: Payload + ?Sized>(
    action: &str,
    payload: &P,
) -> Result<ForgeEvent, serde_json::Error> {
    if action != "rerequested" {
        return Ok(action_not_handled("check_run", action));
    }
    let event: CheckRunEvent = payload.read()?;
    if event.check_run.name.as_deref() != Some(CHECK_NAME) {
        return Ok(ForgeEvent::Ignore(IgnoreReason::OtherCheck));
    }
    Ok(rerun(
        event.check_run,
        event.repository,
        event.installation,
        event.sender,
    ))
}

/// A `check_suite` event: a re-run of the App's suite (its one check run is Redline's), or
/// nothing.
fn check_suite<P: Payload + ?Sized>(
    action: &str,
    payload: &P,
    options: &ClassifyOptions,
) -> Result<ForgeEvent, serde_json::Error> {
    if action != "rerequested" {
        return Ok(action_not_handled("check_suite", action));
    }
    let event: CheckSuiteEvent = payload.read()?;
    let suite_app = event
        .check_suite
        .app
        .as_ref()
        .and_then(|app| app.slug.as_deref());
    if let (Some(own), Some(suite_app)) = (options.app_slug.as_deref(), suite_app)
        && own != suite_app
    {
        return Ok(ForgeEvent::Ignore(IgnoreReason::OtherCheck));
    }
    Ok(rerun(
        event.check_suite,
        event.repository,
        event.installation,
        event.sender,
    ))
}

/// The re-run of `checked` on the first pull request GitHub lists whose head it is (else
/// the first listed).
fn rerun(
    checked: Checked,
    repository: Repository,
    installation: Option<InstallationRef>,
    sender: User,
) -> ForgeEvent {
    let head = checked.head_sha;
    let pulls = &checked.pull_requests;
    let of_head = pulls
        .iter()
        .find(|pull| pull.head.as_ref().is_some_and(|h| h.sha == head));
    let Some(pull) = of_head.or(pulls.first()) else {
        return ForgeEvent::Ignore(IgnoreReason::CheckWithoutChange);
    };
    ForgeEvent::Rerun(RerunRequest {
        change: ChangeRef {
            repository: repository.full_name,
            number: pull.number,
            ids: InstallationRef::ids(installation),
        },
        head,
        requested_by: sender.login,
    })
}

#[derive(Deserialize)]
struct InstallationEvent {
    action: String,
    installation: InstallationRef,
}

fn installation<P: Payload + ?Sized>(
    event: &str,
    payload: &P,
) -> Result<ForgeEvent, serde_json::Error> {
    let parsed: InstallationEvent = payload.read()?;
    let access_removed =
        event == "installation" && matches!(parsed.action.as_str(), "deleted" | "suspend");
    Ok(ForgeEvent::Access(AccessChange {
        account: parsed.installation.id,
        action: parsed.action,
        access_removed,
    }))
}

#[cfg(test)]
mod tests;
