use super::*;
use crate::forge::status::CHECK_NAME;
use serde_json::{Value, json};

fn pr_payload(action: &str, draft: bool) -> Value {
    json!({
        "action": action,
        "number": 5,
        "pull_request": {
            "draft": draft,
            "title": "Fix it",
            "body": null,
            "user": {"login": "author"},
            "head": {"sha": "abc", "ref": "feature", "repo": {"full_name": "fork/r"}},
            "base": {"sha": "def", "ref": "main", "repo": {"full_name": "o/r"}}
        },
        "repository": {"full_name": "o/r"},
        "installation": {"id": 9},
        "sender": {"login": "dev", "type": "User"}
    })
}

fn decide(event: &str, payload: &Value, options: &ClassifyOptions) -> ForgeEvent {
    let body = serde_json::to_vec(payload).expect("serialize");
    classify_github_event(event, body.as_slice(), options)
        .expect("classify")
        .event
}

#[test]
fn one_pass_and_two_pass_readings_of_pull_requests_agree() {
    let options = ClassifyOptions::default();
    let well_formed = [
        pr_payload("opened", false),
        pr_payload("synchronize", true),
        pr_payload("ready_for_review", true),
        pr_payload("closed", false),
        json!({"action": "closed", "pull_request": null}),
        json!({"number": 4}),
    ];
    let mut no_installation = pr_payload("opened", false);
    no_installation["installation"] = Value::Null;
    let mut no_head = pr_payload("reopened", false);
    no_head["pull_request"]["head"] = Value::Null;
    let mut odd_number = pr_payload("opened", false);
    odd_number["number"] = json!("five");
    let mut no_repository = pr_payload("opened", false);
    no_repository
        .as_object_mut()
        .expect("object")
        .remove("repository");
    let odd_pr_of_ignored_action = json!({"action": "closed", "pull_request": "odd"});
    let others = [
        no_installation,
        no_head,
        odd_number,
        no_repository,
        odd_pr_of_ignored_action,
        json!({"action": 5}),
    ];
    for (index, payload) in well_formed.iter().chain(&others).enumerate() {
        let body = serde_json::to_vec(payload).expect("serialize");
        let one = classify_github_event("pull_request", body.as_slice(), &options);
        let two = classify_in_two_passes("pull_request", body.as_slice(), &options);
        assert_eq!(format!("{one:?}"), format!("{two:?}"), "{payload}");
        // The parsed event file reads the same as the raw body.
        // (Errors differ only in the position they name.)
        match (
            &one,
            classify_github_event("pull_request", payload, &options),
        ) {
            (Ok(raw), Ok(parsed)) => assert_eq!(raw, &parsed, "{payload}"),
            (Err(_), Err(_)) => {}
            (raw, parsed) => panic!("{payload}: {raw:?} but {parsed:?}"),
        }
        if index < well_formed.len() {
            assert!(
                pull_request_in_one_pass(body.as_slice(), &options).is_some(),
                "read in one pass: {payload}"
            );
        }
    }
    for body in [&b"[1]"[..], b"{\"action\": \"opened\"", b" 7"] {
        let one = classify_github_event("pull_request", body, &options);
        let two = classify_in_two_passes("pull_request", body, &options);
        assert_eq!(format!("{one:?}"), format!("{two:?}"));
        assert!(one.is_err());
    }
}

#[test]
fn a_review_carries_the_change_its_commits_and_its_words() {
    let ForgeEvent::Review(review) = decide(
        "pull_request",
        &pr_payload("opened", false),
        &ClassifyOptions::default(),
    ) else {
        panic!("not a review");
    };
    assert_eq!(review.change.repository, "o/r");
    assert_eq!(review.change.number, 5);
    assert_eq!(review.change.ids.installation, Some(9));
    assert_eq!(
        (review.base.sha.as_str(), review.head.sha.as_str()),
        ("def", "abc")
    );
    assert_eq!(review.head.branch, "feature");
    assert!(review.is_fork);
    assert_eq!(review.author.as_deref(), Some("author"));
    assert_eq!(review.sender.as_deref(), Some("dev"));
    assert_eq!(
        (review.title.as_str(), review.description.as_str()),
        ("Fix it", "")
    );
}

#[test]
fn drafts_are_reviewed_when_ready_or_configured() {
    let skip = ClassifyOptions::default();
    let with_drafts = ClassifyOptions {
        review_drafts: true,
        ..ClassifyOptions::default()
    };
    for action in ["opened", "synchronize", "reopened"] {
        let draft = pr_payload(action, true);
        assert!(
            matches!(decide("pull_request", &draft, &skip), ForgeEvent::Draft(_)),
            "{action}"
        );
        assert!(matches!(
            decide("pull_request", &draft, &with_drafts),
            ForgeEvent::Review(_)
        ));
    }
    // Marked ready: reviewed, whatever the payload still says about the draft.
    let ready = pr_payload("ready_for_review", true);
    assert!(matches!(
        decide("pull_request", &ready, &skip),
        ForgeEvent::Review(_)
    ));
}

#[test]
fn unread_actions_and_events_name_themselves() {
    let options = ClassifyOptions::default();
    assert_eq!(
        reason(decide(
            "pull_request",
            &json!({"action": "closed"}),
            &options
        )),
        "pull_request action \"closed\" not handled"
    );
    assert_eq!(
        reason(decide("push", &json!({}), &options)),
        "event `push` not handled"
    );
    assert_eq!(
        decide("ping", &json!({"zen": "z"}), &options),
        ForgeEvent::Ping
    );
}

fn reason(event: ForgeEvent) -> String {
    match event {
        ForgeEvent::Ignore(reason) => reason.to_string(),
        other => panic!("not ignored: {other:?}"),
    }
}

#[test]
fn review_comments_with_a_command_are_review_requests() {
    let payload = json!({
        "action": "created",
        "comment": {"id": 80, "body": "/redline review --strategy plan", "path": "a.rs",
            "author_association": "MEMBER", "user": {"login": "alice", "type": "User"}},
        "pull_request": {"number": 4},
        "repository": {"full_name": "o/r"}
    });
    let event = decide(
        "pull_request_review_comment",
        &payload,
        &ClassifyOptions::default(),
    );
    let ForgeEvent::Command(command) = event else {
        panic!("not a command: {event:?}");
    };
    assert_eq!(command.strategy.as_deref(), Some("plan"));
    assert_eq!(
        (command.comment.id, command.comment.role.as_str()),
        (80, "MEMBER")
    );
    assert_eq!(command.change.ids, ForgeIds::default());
}

fn rerun_payload(event: &str, name: &str, pulls: Value, app_slug: &str) -> Value {
    let checked = json!({"name": name, "head_sha": "abc", "app": {"slug": app_slug},
        "pull_requests": pulls});
    let mut payload = json!({"action": "rerequested", "repository": {"full_name": "o/r"},
        "installation": {"id": 9}, "sender": {"login": "dev", "type": "User"}});
    payload[event] = checked;
    payload
}

#[test]
fn a_re_run_of_redline_s_check_asks_for_a_review_of_its_commit() {
    let options = ClassifyOptions {
        app_slug: Some("redline".into()),
        ..ClassifyOptions::default()
    };
    let pulls =
        json!([{"number": 3, "head": {"sha": "zzz"}}, {"number": 4, "head": {"sha": "abc"}}]);
    let rerun = decide(
        "check_run",
        &rerun_payload("check_run", CHECK_NAME, pulls.clone(), "redline"),
        &options,
    );
    let ForgeEvent::Rerun(rerun) = rerun else {
        panic!("not a re-run: {rerun:?}");
    };
    assert_eq!(
        (
            rerun.change.number,
            rerun.head.as_str(),
            rerun.requested_by.as_str()
        ),
        (4, "abc", "dev"),
        "the pull request whose head is the checked commit"
    );
    assert_eq!(rerun.change.ids.installation, Some(9));
    let suite = rerun_payload("check_suite", "", pulls.clone(), "redline");
    assert!(matches!(
        decide("check_suite", &suite, &options),
        ForgeEvent::Rerun(_)
    ));

    let other = rerun_payload("check_run", "lint", pulls.clone(), "redline");
    assert_eq!(
        decide("check_run", &other, &options),
        ForgeEvent::Ignore(IgnoreReason::OtherCheck)
    );
    let other_suite = rerun_payload("check_suite", "", pulls, "another-app");
    assert_eq!(
        decide("check_suite", &other_suite, &options),
        ForgeEvent::Ignore(IgnoreReason::OtherCheck)
    );
    let on_no_pull = rerun_payload("check_run", CHECK_NAME, json!([]), "redline");
    assert_eq!(
        decide("check_run", &on_no_pull, &options),
        ForgeEvent::Ignore(IgnoreReason::CheckWithoutChange)
    );
    for action in ["created", "completed", "requested_action"] {
        let mut payload = rerun_payload("check_run", CHECK_NAME, json!([]), "redline");
        payload["action"] = json!(action);
        assert_eq!(
            reason(decide("check_run", &payload, &options)),
            format!("check_run action {action:?} not handled")
        );
    }
    // GitHub's own example of a re-run of some other App's check run.
    let example: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/webhooks/check_run/rerequested.payload.json"
        ))
        .expect("fixture"),
    )
    .expect("JSON");
    assert_eq!(
        decide("check_run", &example, &options),
        ForgeEvent::Ignore(IgnoreReason::OtherCheck)
    );
}
