//! What a GitLab webhook delivery asks of Redline: a `Merge Request Hook` that opens,
//! reopens or pushes to a merge request (a review), a `Note Hook` on a merge request (a
//! `/redline` command or a conversation in a discussion), or nothing, with the reason.
//!
//! Invariants: only the fields read here are parsed (serde skips the rest unbuilt); an
//! `update` is a review only when it brought new commits (`oldrev` present) or took the
//! merge request out of draft, so title, label and assignee edits cost nothing; drafts are
//! skipped unless the server reviews drafts (the GitHub rule); notes by the token's own
//! user, system notes and notes carrying Redline's answer marker never ask anything, so
//! Redline never answers itself. Payload text (titles, notes) is data, never executed.

use serde::Deserialize;

use crate::github::thread::{Ask, ThreadComment, ask_of, is_answer};

/// `X-Gitlab-Event` of a merge request event.
pub(crate) const MERGE_REQUEST_HOOK: &str = "Merge Request Hook";
/// `X-Gitlab-Event` of a comment event.
pub(crate) const NOTE_HOOK: &str = "Note Hook";

/// `object_attributes.action` values that start a review (with `update`'s own rule).
const REVIEW_ACTIONS: [&str; 3] = ["open", "reopen", "update"];

/// A merge request to review, from a `Merge Request Hook`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReviewRequest {
    /// The project's full path (`group/sub/project`).
    pub(crate) project: String,
    /// The merge request's iid.
    pub(crate) iid: u64,
    /// The head commit the event names.
    pub(crate) head_sha: Option<String>,
    /// The action (`open`, `reopen`, `update`).
    pub(crate) action: String,
    /// Who caused the event.
    pub(crate) sender: Option<String>,
    /// Target and source branches.
    pub(crate) target_branch: String,
    pub(crate) source_branch: String,
}

/// A note on a merge request that asks something of Redline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MergeRequestNote {
    /// The note, normalised as a thread comment (`owner` is the project's namespace,
    /// `repo` its path; `root_id` is the note itself until the discussion is read).
    pub(crate) comment: ThreadComment,
    /// The discussion the note is in (every note has one).
    pub(crate) discussion_id: String,
}

impl MergeRequestNote {
    /// The project's full path.
    pub(crate) fn project(&self) -> String {
        format!("{}/{}", self.comment.owner, self.comment.repo)
    }
}

/// What a delivery asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HookRequest {
    /// Review the merge request (a `/redline review` note sets `requested_by`).
    Review(ReviewRequest),
    /// `/redline review` in a note: a review the commenter must be allowed to ask for.
    Requested {
        /// The project's full path.
        project: String,
        /// The merge request's iid.
        iid: u64,
        /// The strategy asked for.
        strategy: Option<String>,
        /// The commenter's username.
        commenter: String,
        /// The note's id.
        note_id: u64,
    },
    /// A note to answer (or a command to run) in its discussion.
    Note(MergeRequestNote),
    /// Nothing to do, for this reason.
    Ignore(String),
}

/// Why a body was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HookError {
    /// Not JSON, or a handled event without the fields it must have.
    #[error("unexpected payload: {0}")]
    Payload(#[from] serde_json::Error),
    /// JSON, but not an object.
    #[error("the JSON body is not an object")]
    NotAnObject,
}

/// How the server reads hooks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HookConfig {
    /// Review draft merge requests too.
    pub(crate) review_drafts: bool,
    /// The username of the token's user: notes by it are Redline's own, and `@username`
    /// is a mention of Redline.
    pub(crate) own_username: Option<String>,
}

/// The payload's action (for the delivery record) and what the delivery asks for.
pub(crate) fn classify(
    event: &str,
    body: &[u8],
    config: &HookConfig,
) -> Result<(Option<String>, HookRequest), HookError> {
    if body.trim_ascii_start().first() != Some(&b'{') {
        // Still a JSON error when it is not JSON at all.
        serde_json::from_slice::<serde::de::IgnoredAny>(body)?;
        return Err(HookError::NotAnObject);
    }
    match event {
        MERGE_REQUEST_HOOK => {
            let hook: MergeRequestHook = serde_json::from_slice(body)?;
            let action = hook.object_attributes.action.clone();
            Ok((action, merge_request(hook, config)))
        }
        NOTE_HOOK => {
            let hook: NoteHook = serde_json::from_slice(body)?;
            let action = hook.object_attributes.action.clone();
            Ok((action, note(hook, config)))
        }
        _ => {
            serde_json::from_slice::<serde::de::IgnoredAny>(body)?;
            Ok((None, ignore("event not handled")))
        }
    }
}

fn ignore(reason: impl Into<String>) -> HookRequest {
    HookRequest::Ignore(reason.into())
}

#[derive(Deserialize)]
struct User {
    #[serde(default)]
    id: Option<u64>,
    username: String,
}

#[derive(Deserialize)]
struct Project {
    path_with_namespace: String,
}

#[derive(Deserialize)]
struct LastCommit {
    id: String,
}

#[derive(Deserialize)]
struct MergeRequestAttributes {
    iid: u64,
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    oldrev: Option<String>,
    #[serde(default)]
    draft: Option<bool>,
    #[serde(default)]
    work_in_progress: Option<bool>,
    #[serde(default)]
    last_commit: Option<LastCommit>,
    #[serde(default)]
    target_branch: String,
    #[serde(default)]
    source_branch: String,
}

#[derive(Deserialize, Default)]
struct Change<T> {
    #[serde(default)]
    previous: Option<T>,
    #[serde(default)]
    current: Option<T>,
}

#[derive(Deserialize, Default)]
struct Changes {
    #[serde(default)]
    draft: Option<Change<bool>>,
}

#[derive(Deserialize)]
struct MergeRequestHook {
    user: Option<User>,
    project: Project,
    object_attributes: MergeRequestAttributes,
    #[serde(default)]
    changes: Option<Changes>,
}

/// What a `Merge Request Hook` asks for.
fn merge_request(hook: MergeRequestHook, config: &HookConfig) -> HookRequest {
    let attributes = hook.object_attributes;
    let action = attributes.action.unwrap_or_default();
    if !REVIEW_ACTIONS.contains(&action.as_str()) {
        return ignore(format!("merge request action {action:?} not handled"));
    }
    let draft_change = hook.changes.and_then(|c| c.draft);
    let left_draft = draft_change
        .as_ref()
        .is_some_and(|c| c.previous == Some(true) && c.current == Some(false));
    if action == "update" && attributes.oldrev.is_none() && !left_draft {
        return ignore("merge request update without new commits");
    }
    let draft = attributes.draft.or(attributes.work_in_progress) == Some(true);
    if draft && !config.review_drafts {
        return ignore("draft merge request");
    }
    HookRequest::Review(ReviewRequest {
        project: hook.project.path_with_namespace,
        iid: attributes.iid,
        head_sha: attributes.last_commit.map(|c| c.id),
        action,
        sender: hook.user.map(|u| u.username),
        target_branch: attributes.target_branch,
        source_branch: attributes.source_branch,
    })
}

#[derive(Deserialize)]
struct Position {
    #[serde(default)]
    new_path: Option<String>,
}

#[derive(Deserialize)]
struct NoteAttributes {
    id: u64,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    noteable_type: Option<String>,
    #[serde(default)]
    discussion_id: Option<String>,
    #[serde(default)]
    system: bool,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    position: Option<Position>,
    #[serde(default)]
    action: Option<String>,
}

#[derive(Deserialize)]
struct NoteMergeRequest {
    iid: u64,
    #[serde(default)]
    author_id: Option<u64>,
}

#[derive(Deserialize)]
struct NoteHook {
    user: User,
    project: Project,
    object_attributes: NoteAttributes,
    #[serde(default)]
    merge_request: Option<NoteMergeRequest>,
}

/// What a `Note Hook` asks for.
fn note(hook: NoteHook, config: &HookConfig) -> HookRequest {
    let attributes = hook.object_attributes;
    if let Some(action) = attributes.action.as_deref().filter(|a| *a != "create") {
        return ignore(format!("note action {action:?} not handled"));
    }
    if attributes.noteable_type.as_deref() != Some("MergeRequest") {
        return ignore("note on something else than a merge request");
    }
    let Some(merge_request) = hook.merge_request else {
        return ignore("note without its merge request");
    };
    if attributes.system {
        return ignore("system note");
    }
    let own = config.own_username.as_deref();
    if own == Some(hook.user.username.as_str()) {
        return ignore("Redline's own note");
    }
    let body = attributes.note.unwrap_or_default();
    if is_answer(&body) {
        return ignore("Redline's own answer");
    }
    let mention = own.map(|name| format!("@{name}"));
    // A note of type DiffNote or DiscussionNote is in a discussion (a reply, or the
    // first note of one); an individual note (no type) starts nothing to reply in.
    let in_discussion = attributes.kind.is_some();
    let Some(ask) = ask_of(&body, in_discussion, mention.as_deref()) else {
        return ignore("note that asks nothing of Redline");
    };
    let Some((owner, repo)) = hook.project.path_with_namespace.rsplit_once('/') else {
        return ignore("project path without a namespace");
    };
    if let Ask::Review { strategy } = ask {
        return HookRequest::Requested {
            project: hook.project.path_with_namespace.clone(),
            iid: merge_request.iid,
            strategy,
            commenter: hook.user.username,
            note_id: attributes.id,
        };
    }
    let Some(discussion_id) = attributes.discussion_id else {
        return ignore("note without a discussion");
    };
    let is_author = hook.user.id.is_some() && hook.user.id == merge_request.author_id;
    let comment = ThreadComment {
        owner: owner.to_string(),
        repo: repo.to_string(),
        pr_number: merge_request.iid,
        comment_id: attributes.id,
        root_id: attributes.id,
        author: hook.user.username.clone(),
        body,
        path: attributes
            .position
            .and_then(|p| p.new_path)
            .unwrap_or_default(),
        diff_hunk: String::new(),
        installation_id: None,
        author_association: String::new(),
        pr_author: is_author.then(|| hook.user.username.clone()),
        ask,
    };
    HookRequest::Note(MergeRequestNote {
        comment,
        discussion_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn fixture(name: &str) -> Value {
        let path = format!(
            "{}/tests/fixtures/gitlab-webhooks/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn config() -> HookConfig {
        HookConfig {
            review_drafts: false,
            own_username: Some("redline-bot".into()),
        }
    }

    fn classify_value(event: &str, value: &Value) -> HookRequest {
        classify(event, value.to_string().as_bytes(), &config())
            .unwrap()
            .1
    }

    #[test]
    fn open_and_updates_with_new_commits_are_reviewed() {
        let opened = classify_value(MERGE_REQUEST_HOOK, &fixture("merge_request.open"));
        let HookRequest::Review(review) = opened else {
            panic!("{opened:?}");
        };
        assert_eq!(
            (review.project.as_str(), review.iid),
            ("numbers/calculator", 7)
        );
        assert_eq!(
            review.head_sha.as_deref(),
            Some("1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e")
        );
        let pushed = classify_value(
            MERGE_REQUEST_HOOK,
            &fixture("merge_request.update-new-commits"),
        );
        assert!(
            matches!(&pushed, HookRequest::Review(r) if r.head_sha.as_deref() == Some("2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f")),
            "{pushed:?}"
        );
        let mut reopened = fixture("merge_request.open");
        reopened["object_attributes"]["action"] = json!("reopen");
        assert!(matches!(
            classify_value(MERGE_REQUEST_HOOK, &reopened),
            HookRequest::Review(_)
        ));
    }

    #[test]
    fn edits_closes_and_drafts_are_ignored_with_a_reason() {
        for (name, reason) in [
            (
                "merge_request.update-title",
                "merge request update without new commits",
            ),
            (
                "merge_request.close",
                "merge request action \"close\" not handled",
            ),
        ] {
            assert_eq!(
                classify_value(MERGE_REQUEST_HOOK, &fixture(name)),
                ignore(reason)
            );
        }
        let mut draft = fixture("merge_request.open");
        draft["object_attributes"]["draft"] = json!(true);
        assert_eq!(
            classify_value(MERGE_REQUEST_HOOK, &draft),
            ignore("draft merge request")
        );
        let mut ready = fixture("merge_request.update-title");
        ready["changes"] = json!({"draft": {"previous": true, "current": false}});
        assert!(matches!(
            classify_value(MERGE_REQUEST_HOOK, &ready),
            HookRequest::Review(_)
        ));
    }

    #[test]
    fn a_reply_on_a_merge_request_is_a_note_to_answer_in_its_discussion() {
        let request = classify_value(NOTE_HOOK, &fixture("note.merge_request"));
        let HookRequest::Note(note) = request else {
            panic!("{request:?}");
        };
        assert_eq!(
            note.discussion_id,
            "6a9c1b0e3f2d4c5b6a7980f1e2d3c4b5a6978f0e"
        );
        assert_eq!(note.project(), "numbers/calculator");
        assert_eq!((note.comment.pr_number, note.comment.comment_id), (7, 1402));
        assert_eq!(note.comment.path, "src/calc.rs");
        assert_eq!(note.comment.ask, Ask::ReplyInThread);
        assert_eq!(note.comment.pr_author, None, "grace did not open !7");
    }

    #[test]
    fn commands_in_notes_and_what_is_ignored() {
        let mut review = fixture("note.merge_request");
        review["object_attributes"]["note"] = json!("/redline review --strategy plan");
        assert_eq!(
            classify_value(NOTE_HOOK, &review),
            HookRequest::Requested {
                project: "numbers/calculator".into(),
                iid: 7,
                strategy: Some("plan".into()),
                commenter: "grace".into(),
                note_id: 1402,
            }
        );
        assert_eq!(
            classify_value(NOTE_HOOK, &fixture("note.commit")),
            ignore("note on something else than a merge request")
        );
        let mut own = fixture("note.merge_request");
        own["user"]["username"] = json!("redline-bot");
        assert_eq!(
            classify_value(NOTE_HOOK, &own),
            ignore("Redline's own note")
        );
        let mut individual = fixture("note.merge_request");
        individual["object_attributes"]["type"] = Value::Null;
        assert_eq!(
            classify_value(NOTE_HOOK, &individual),
            ignore("note that asks nothing of Redline")
        );
        individual["object_attributes"]["note"] = json!("@redline-bot is this safe?");
        assert!(matches!(
            classify_value(NOTE_HOOK, &individual),
            HookRequest::Note(n) if n.comment.ask == Ask::Answer
        ));
        let mut system = fixture("note.merge_request");
        system["object_attributes"]["system"] = json!(true);
        assert_eq!(classify_value(NOTE_HOOK, &system), ignore("system note"));
    }

    #[test]
    fn bad_bodies_are_refused_and_other_events_ignored() {
        assert!(matches!(
            classify(MERGE_REQUEST_HOOK, b"[1]", &config()),
            Err(HookError::NotAnObject)
        ));
        assert!(classify(MERGE_REQUEST_HOOK, b"{not json", &config()).is_err());
        assert!(classify(MERGE_REQUEST_HOOK, b"{\"object_kind\":1}", &config()).is_err());
        let (_, push) = classify("Push Hook", b"{\"object_kind\":\"push\"}", &config()).unwrap();
        assert_eq!(push, ignore("event not handled"));
    }
}
