use serde_json::{Value, json};

use super::*;

fn check(event: &str, payload: &Value) -> Result<(), EventShapeError> {
    check_action_event(event, &serde_json::to_vec(payload).expect("serialize"))
}

fn parse(event: &str, payload: &Value) -> ForgeEvent {
    let bytes = serde_json::to_vec(payload).expect("serialize");
    parse_action_event(event, &bytes, false).expect("classified")
}

#[test]
fn wrong_shapes_are_named() {
    let pr = json!({"pull_request": {"base": {"sha": "a"}, "head": {"sha": "b"}}});
    assert_eq!(check("pull_request", &pr), Ok(()));
    assert_eq!(check("push", &json!({"ref": "refs/heads/main"})), Ok(()));
    for (event, payload, expected) in [
        ("pull_request", json!([]), "an array"),
        ("pull_request", json!("x"), "a string"),
        ("push", json!(null), "null"),
        ("push", json!(true), "a boolean"),
        ("push", json!(7), "a number"),
        (
            "pull_request_target",
            json!({"action": "opened"}),
            "`pull_request`",
        ),
        (
            "pull_request",
            json!({"pull_request": [1, 2]}),
            "`pull_request`",
        ),
        (
            "pull_request",
            json!({"pull_request": null}),
            "`pull_request`",
        ),
        (
            "pull_request",
            json!({"pull_request": {"head": {"sha": "b"}}}),
            "base.sha",
        ),
        (
            "pull_request",
            json!({"pull_request": {"base": {"sha": 1}, "head": {"sha": "b"}}}),
            "base.sha",
        ),
        (
            "pull_request",
            json!({"pull_request": {"base": {"sha": "a"}, "head": ["b"]}}),
            "head.sha",
        ),
        ("issue_comment", json!({"issue": {}}), "`comment`"),
        (
            "issue_comment",
            json!({"comment": {}, "issue": 3}),
            "`issue`",
        ),
        (
            "pull_request_review_comment",
            json!({"pull_request": {}, "comment": "x"}),
            "`comment`",
        ),
    ] {
        let err = check(event, &payload).unwrap_err();
        assert!(err.to_string().contains(expected), "{payload}: {err}");
    }
}

#[test]
fn the_messages_are_those_the_workflow_author_reads() {
    assert_eq!(
        check("pull_request", &json!([])).unwrap_err().to_string(),
        "the event is an array, not a JSON object"
    );
    assert_eq!(
        check("issue_comment", &json!({"issue": {}}))
            .unwrap_err()
            .to_string(),
        "the event has no `comment` object"
    );
    assert_eq!(
        check("pull_request", &json!({"pull_request": {"base": {}}}))
            .unwrap_err()
            .to_string(),
        "the event's `pull_request` has no `base.sha`"
    );
}

#[test]
fn unknown_events_skip_with_a_reason() {
    let push = parse("push", &json!({"ref": "refs/heads/main"}));
    assert_eq!(
        push,
        ForgeEvent::Ignore(IgnoreReason::EventNotHandled {
            event: "push".into()
        })
    );
}

#[test]
fn the_app_s_own_events_and_drafts_are_skipped() {
    let ping = parse("ping", &json!({"zen": "hi"}));
    assert!(matches!(
        ping,
        ForgeEvent::Ignore(IgnoreReason::EventNotHandled { event }) if event == "ping"
    ));
    let draft = json!({"action": "opened", "number": 1,
        "pull_request": {"draft": true, "head": {"sha": "b", "ref": "f"},
            "base": {"sha": "a", "ref": "main"}},
        "repository": {"full_name": "o/r"}});
    assert_eq!(
        parse("pull_request_target", &draft),
        ForgeEvent::Ignore(IgnoreReason::Draft)
    );
    let mut ownerless = draft.clone();
    ownerless["pull_request"]["draft"] = json!(false);
    ownerless["repository"]["full_name"] = json!("r");
    assert_eq!(
        parse("pull_request", &ownerless),
        ForgeEvent::Ignore(IgnoreReason::RepositoryWithoutOwner)
    );
}

#[test]
fn review_comments_are_answers_review_requests_or_skipped() {
    let event = |body: &str, reply_to: Option<u64>, kind: &str| {
        let payload = json!({
            "action": "created",
            "comment": {"id": 5, "in_reply_to_id": reply_to, "body": body, "path": "a.rs",
                "user": {"login": "alice", "type": kind}},
            "pull_request": {"number": 3, "user": {"login": "alice"}},
            "repository": {"full_name": "o/r", "name": "r", "owner": {"login": "o"}}
        });
        assert_eq!(check("pull_request_review_comment", &payload), Ok(()));
        parse("pull_request_review_comment", &payload)
    };
    let ForgeEvent::Thread(note) = event("is this right?", Some(4), "User") else {
        panic!("not a thread comment");
    };
    assert_eq!((note.thread.as_str(), note.change.number), ("4", 3));
    assert!(matches!(
        event("/redline review --strategy plan", None, "User"),
        ForgeEvent::Command(command) if command.strategy.as_deref() == Some("plan")
    ));
    assert!(matches!(
        event("why?", Some(4), "Bot"),
        ForgeEvent::Ignore(_)
    ));
    assert!(matches!(
        event("a note", None, "User"),
        ForgeEvent::Ignore(_)
    ));
    assert!(check("pull_request_review_comment", &json!({"comment": {}})).is_err());
}
