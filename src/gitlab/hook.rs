//! What a GitLab webhook delivery asks of Redline, as a forge-neutral [`ForgeEvent`]: a
//! `Merge Request Hook` that opens, reopens or pushes to a merge request (a review), a
//! `Note Hook` on a merge request (a `/redline review` command, or a note in a discussion
//! that may get an answer), or nothing, with the reason.
//!
//! Invariants: only the fields read here are parsed (serde skips the rest unbuilt); an
//! `update` is a review only when it brought new commits (`oldrev` present) or took the
//! merge request out of draft, so title, label and assignee edits cost nothing; drafts are
//! skipped unless the server reviews drafts (the GitHub rule); notes by the token's own
//! user, system notes and notes carrying Redline's answer marker never ask anything, so
//! Redline never answers itself. A note's thread is its discussion's id (every GitLab note
//! has one). Payload text (titles, notes) is data, never executed.

use serde::Deserialize;

use crate::forge::thread::thread_comment_ask;
use crate::forge::{
    Ask, ChangeRef, Classified, CommandRequest, CommentRef, ForgeEvent, ForgeIds, IgnoreReason,
    ReviewRequest, Revision, ThreadNote,
};
use crate::gitlab::own_user::OwnUser;

/// `X-Gitlab-Event` of a merge request event.
pub(crate) const MERGE_REQUEST_HOOK: &str = "Merge Request Hook";
/// `X-Gitlab-Event` of a comment event.
pub(crate) const NOTE_HOOK: &str = "Note Hook";

/// `object_attributes.action` values that start a review (with `update`'s own rule).
const REVIEW_ACTIONS: [&str; 3] = ["open", "reopen", "update"];

/// Why a body was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HookError {
    /// Not JSON, or a handled event without the fields it must have.
    #[error("unexpected payload: {0}")]
    Payload(#[from] serde_json::Error),
    /// JSON, but not an object.
    #[error("the JSON body is not an object")]
    NotAnObject,
    /// The project's path is empty or holds a control character (NUL, a line break):
    /// no GitLab path does.
    #[error("invalid project path")]
    InvalidProjectPath,
}

/// The longest project path taken (GitLab's paths are far shorter).
const MAX_PROJECT_PATH: usize = 4096;

/// How the server reads hooks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HookConfig {
    /// Review draft merge requests too.
    pub(crate) review_drafts: bool,
    /// The token's user, once known: notes by it are Redline's own, and `@username` is a
    /// mention of Redline. Unknown, no note is taken for Redline's here; the note hook
    /// reads the note's author from GitLab before it answers anything.
    pub(crate) own_username: OwnUser,
}

/// The payload's action (for the delivery record) and what the delivery asks for.
pub(crate) fn classify_gitlab_hook(
    event: &str,
    body: &[u8],
    config: &HookConfig,
) -> Result<Classified, HookError> {
    if body.trim_ascii_start().first() != Some(&b'{') {
        // Still a JSON error when it is not JSON at all.
        serde_json::from_slice::<serde::de::IgnoredAny>(body)?;
        return Err(HookError::NotAnObject);
    }
    match event {
        MERGE_REQUEST_HOOK => {
            let hook: MergeRequestHook = serde_json::from_slice(body)?;
            hook.project.check()?;
            let action = hook.object_attributes.action.clone();
            Ok(Classified {
                action,
                event: merge_request(hook, config),
            })
        }
        NOTE_HOOK => {
            let hook: NoteHook = serde_json::from_slice(body)?;
            hook.project.check()?;
            let action = hook.object_attributes.action.clone();
            Ok(Classified {
                action,
                event: note(hook, config),
            })
        }
        _ => {
            serde_json::from_slice::<serde::de::IgnoredAny>(body)?;
            let event = event.to_string();
            Ok(Classified {
                action: None,
                event: ignore(IgnoreReason::EventNotHandled { event }),
            })
        }
    }
}

fn ignore(reason: IgnoreReason) -> ForgeEvent {
    ForgeEvent::Ignore(reason)
}

#[derive(Deserialize)]
struct User {
    #[serde(default)]
    id: Option<u64>,
    username: String,
}

#[derive(Deserialize)]
struct Project {
    #[serde(default)]
    id: Option<u64>,
    path_with_namespace: String,
}

impl Project {
    /// Refuses a path no GitLab project has (before it reaches a log, the store or a
    /// directory name).
    fn check(&self) -> Result<(), HookError> {
        let path = &self.path_with_namespace;
        if path.is_empty() || path.len() > MAX_PROJECT_PATH || path.chars().any(char::is_control) {
            return Err(HookError::InvalidProjectPath);
        }
        Ok(())
    }

    /// The change `number` of this project.
    fn change(&self, number: u64) -> ChangeRef {
        ChangeRef {
            repository: self.path_with_namespace.clone(),
            number,
            ids: ForgeIds {
                installation: None,
                project: self.id,
            },
        }
    }
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
    #[serde(default)]
    source_project_id: Option<u64>,
    #[serde(default)]
    target_project_id: Option<u64>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Deserialize)]
struct Change<T> {
    #[serde(default)]
    previous: Option<T>,
    #[serde(default)]
    current: Option<T>,
}

#[derive(Deserialize)]
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
fn merge_request(hook: MergeRequestHook, config: &HookConfig) -> ForgeEvent {
    let attributes = hook.object_attributes;
    let action = attributes.action.unwrap_or_default();
    if !REVIEW_ACTIONS.contains(&action.as_str()) {
        return ignore(IgnoreReason::ActionNotHandled {
            event: MERGE_REQUEST_HOOK.into(),
            action,
        });
    }
    let left_draft = hook
        .changes
        .and_then(|c| c.draft)
        .is_some_and(|c| c.previous == Some(true) && c.current == Some(false));
    if action == "update" && attributes.oldrev.is_none() && !left_draft {
        return ignore(IgnoreReason::NoNewCommits);
    }
    let draft = attributes.draft.or(attributes.work_in_progress) == Some(true);
    let skipped = draft && !config.review_drafts;
    let is_fork = attributes.source_project_id.is_some()
        && attributes.source_project_id != attributes.target_project_id;
    let request = Box::new(ReviewRequest {
        change: hook.project.change(attributes.iid),
        action,
        sender: hook.user.map(|u| u.username),
        author: None,
        // The hook names no target commit: the worker reads the merge request's diff refs.
        base: Revision {
            sha: String::new(),
            branch: attributes.target_branch,
        },
        head: Revision {
            sha: attributes.last_commit.map(|c| c.id).unwrap_or_default(),
            branch: attributes.source_branch,
        },
        is_fork,
        title: attributes.title.unwrap_or_default(),
        description: attributes.description.unwrap_or_default(),
        strategy: None,
    });
    if skipped {
        ForgeEvent::Draft(request)
    } else {
        ForgeEvent::Review(request)
    }
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
fn note(hook: NoteHook, config: &HookConfig) -> ForgeEvent {
    let attributes = hook.object_attributes;
    if let Some(action) = attributes.action.clone().filter(|a| a != "create") {
        let event = NOTE_HOOK.into();
        return ignore(IgnoreReason::ActionNotHandled { event, action });
    }
    let merge_request = match hook.merge_request {
        Some(mr) if attributes.noteable_type.as_deref() == Some("MergeRequest") => mr,
        _ => return ignore(IgnoreReason::NotOnChange),
    };
    if attributes.system {
        return ignore(IgnoreReason::SystemNote);
    }
    let own = config.own_username.name();
    // Notes by the token's user are Redline's own, whatever they say.
    let by_redline = own == Some(hook.user.username.as_str());
    let body = attributes.note.unwrap_or_default();
    let mention = own.map(|name| format!("@{name}"));
    // A note of type DiffNote or DiscussionNote is in a discussion (a reply, or the
    // first note of one); an individual note (no type) is no reply to anything.
    let in_discussion = attributes.kind.is_some();
    let ask = match thread_comment_ask(&body, by_redline, in_discussion, mention.as_deref()) {
        Ok(ask) => ask,
        Err(reason) => return ignore(reason),
    };
    let change = hook.project.change(merge_request.iid);
    if change.owner_and_name().is_none() {
        return ignore(IgnoreReason::RepositoryWithoutOwner);
    }
    let is_author = hook.user.id.is_some() && hook.user.id == merge_request.author_id;
    let comment = CommentRef {
        id: attributes.id,
        author: hook.user.username,
        role: String::new(),
    };
    if let Ask::Review { strategy, force } = ask {
        return ForgeEvent::Command(CommandRequest {
            change,
            comment,
            strategy,
            force,
        });
    }
    let Some(thread) = attributes.discussion_id else {
        return ignore(IgnoreReason::AsksNothing);
    };
    ForgeEvent::Thread(Box::new(ThreadNote {
        change,
        change_author: is_author.then(|| comment.author.clone()),
        comment,
        thread,
        body,
        path: attributes
            .position
            .and_then(|p| p.new_path)
            .unwrap_or_default(),
        diff_hunk: String::new(),
        ask,
    }))
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
            own_username: OwnUser::known("redline-bot"),
        }
    }

    fn classify_value(event: &str, value: &Value) -> ForgeEvent {
        classify_gitlab_hook(event, value.to_string().as_bytes(), &config())
            .unwrap()
            .event
    }

    #[test]
    fn open_and_updates_with_new_commits_are_reviewed() {
        let opened = classify_value(MERGE_REQUEST_HOOK, &fixture("merge_request.open"));
        let ForgeEvent::Review(review) = opened else {
            panic!("{opened:?}");
        };
        let change = &review.change;
        assert_eq!(
            (change.repository.as_str(), change.number),
            ("numbers/calculator", 7)
        );
        assert_eq!(change.ids.project, Some(42));
        assert_eq!(review.head.sha, "1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e");
        assert_eq!(review.base.branch, "main");
        assert!(!review.is_fork);
        let pushed = classify_value(
            MERGE_REQUEST_HOOK,
            &fixture("merge_request.update-new-commits"),
        );
        assert!(
            matches!(&pushed, ForgeEvent::Review(r) if r.head.sha == "2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f"),
            "{pushed:?}"
        );
        let mut reopened = fixture("merge_request.open");
        reopened["object_attributes"]["action"] = json!("reopen");
        assert!(matches!(
            classify_value(MERGE_REQUEST_HOOK, &reopened),
            ForgeEvent::Review(_)
        ));
    }

    #[test]
    fn edits_closes_and_drafts_are_ignored_with_a_reason() {
        let closed = IgnoreReason::ActionNotHandled {
            event: MERGE_REQUEST_HOOK.into(),
            action: "close".into(),
        };
        for (name, reason) in [
            ("merge_request.update-title", IgnoreReason::NoNewCommits),
            ("merge_request.close", closed),
        ] {
            assert_eq!(
                classify_value(MERGE_REQUEST_HOOK, &fixture(name)),
                ignore(reason)
            );
        }
        let mut draft = fixture("merge_request.open");
        draft["object_attributes"]["draft"] = json!(true);
        assert!(matches!(
            classify_value(MERGE_REQUEST_HOOK, &draft),
            ForgeEvent::Draft(_)
        ));
        let mut ready = fixture("merge_request.update-title");
        ready["changes"] = json!({"draft": {"previous": true, "current": false}});
        assert!(matches!(
            classify_value(MERGE_REQUEST_HOOK, &ready),
            ForgeEvent::Review(_)
        ));
    }

    #[test]
    fn a_reply_on_a_merge_request_is_a_note_to_answer_in_its_discussion() {
        let request = classify_value(NOTE_HOOK, &fixture("note.merge_request"));
        let ForgeEvent::Thread(note) = request else {
            panic!("{request:?}");
        };
        assert_eq!(note.thread, "6a9c1b0e3f2d4c5b6a7980f1e2d3c4b5a6978f0e");
        assert_eq!(note.change.repository, "numbers/calculator");
        assert_eq!((note.change.number, note.comment.id), (7, 1402));
        assert_eq!(note.comment.author, "grace");
        assert_eq!(note.path, "src/calc.rs");
        assert_eq!(note.ask, Ask::ReplyInThread);
        assert_eq!(note.change_author, None, "grace did not open !7");
    }

    #[test]
    fn commands_in_notes_and_what_is_ignored() {
        let mut review = fixture("note.merge_request");
        review["object_attributes"]["note"] = json!("/redline review --strategy plan");
        let ForgeEvent::Command(command) = classify_value(NOTE_HOOK, &review) else {
            panic!("not a command");
        };
        assert_eq!(command.strategy.as_deref(), Some("plan"));
        assert_eq!(
            (command.comment.id, command.comment.author.as_str()),
            (1402, "grace")
        );
        assert_eq!(command.change.number, 7);
        assert_eq!(
            classify_value(NOTE_HOOK, &fixture("note.commit")),
            ignore(IgnoreReason::NotOnChange)
        );
        let mut own = fixture("note.merge_request");
        own["user"]["username"] = json!("redline-bot");
        assert_eq!(classify_value(NOTE_HOOK, &own), ignore(IgnoreReason::ByBot));
        let mut individual = fixture("note.merge_request");
        individual["object_attributes"]["type"] = Value::Null;
        assert_eq!(
            classify_value(NOTE_HOOK, &individual),
            ignore(IgnoreReason::AsksNothing)
        );
        individual["object_attributes"]["note"] = json!("@redline-bot is this safe?");
        assert!(matches!(
            classify_value(NOTE_HOOK, &individual),
            ForgeEvent::Thread(n) if n.ask == Ask::Answer
        ));
        let mut system = fixture("note.merge_request");
        system["object_attributes"]["system"] = json!(true);
        assert_eq!(
            classify_value(NOTE_HOOK, &system),
            ignore(IgnoreReason::SystemNote)
        );
    }

    #[test]
    fn bad_bodies_are_refused_and_other_events_ignored() {
        assert!(matches!(
            classify_gitlab_hook(MERGE_REQUEST_HOOK, b"[1]", &config()),
            Err(HookError::NotAnObject)
        ));
        assert!(classify_gitlab_hook(MERGE_REQUEST_HOOK, b"{not json", &config()).is_err());
        assert!(
            classify_gitlab_hook(MERGE_REQUEST_HOOK, b"{\"object_kind\":1}", &config()).is_err()
        );
        for path in ["a/b\u{0}c", "a/b\nINFO forged", "a/\u{1b}[31mred", ""] {
            let mut open = fixture("merge_request.open");
            open["project"]["path_with_namespace"] = json!(path);
            let refused =
                classify_gitlab_hook(MERGE_REQUEST_HOOK, open.to_string().as_bytes(), &config());
            assert!(
                matches!(refused, Err(HookError::InvalidProjectPath)),
                "{path:?}"
            );
            let mut note = fixture("note.merge_request");
            note["project"]["path_with_namespace"] = json!(path);
            let refused = classify_gitlab_hook(NOTE_HOOK, note.to_string().as_bytes(), &config());
            assert!(matches!(refused, Err(HookError::InvalidProjectPath)));
        }
        let push = classify_gitlab_hook("Push Hook", b"{\"object_kind\":\"push\"}", &config())
            .unwrap()
            .event;
        let event = "Push Hook".to_string();
        assert_eq!(push, ignore(IgnoreReason::EventNotHandled { event }));
    }
}
