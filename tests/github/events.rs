//! Actions events (copied webhook payloads) through `parse_action_event`.

use redline::github::{Trigger, TriggerOptions, parse_action_event};
use serde_json::Value;

fn fixture(path: &str) -> Value {
    let text = std::fs::read_to_string(format!("tests/fixtures/webhooks/{path}")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn skip_reason(trigger: Trigger) -> String {
    match trigger {
        Trigger::Skip { reason } => reason,
        other => panic!("expected Skip, got {other:?}"),
    }
}

#[test]
fn pull_request_events() {
    let opts = TriggerOptions::default();
    for name in ["opened", "synchronize", "ready_for_review"] {
        let trigger = parse_action_event(
            "pull_request",
            &fixture(&format!("pull_request/{name}.payload.json")),
            &opts,
        );
        let Trigger::Review {
            owner,
            repo,
            pr_number,
            base_sha,
            head_sha,
            base_ref,
            head_ref,
            is_fork,
            strategy,
            title,
            body,
        } = trigger
        else {
            panic!("{name}: expected Review, got {trigger:?}");
        };
        assert_eq!(
            (owner.as_str(), repo.as_str()),
            ("Codertocat", "Hello-World"),
            "{name}"
        );
        assert_eq!(pr_number, 2);
        assert_eq!(base_sha.len(), 40);
        assert_eq!(head_sha.len(), 40);
        assert!(!base_ref.is_empty() && !head_ref.is_empty());
        assert!(!is_fork);
        assert_eq!(strategy, None);
        // The author's words travel with the trigger, for the intent section.
        assert_eq!(title, "Update the README with new information.", "{name}");
        assert!(
            body.contains("This is a pretty simple change"),
            "{name}: {body}"
        );
    }
    let closed = parse_action_event(
        "pull_request",
        &fixture("pull_request/closed.payload.json"),
        &opts,
    );
    assert!(skip_reason(closed).contains("closed"));

    let mut draft = fixture("pull_request/opened.payload.json");
    draft["pull_request"]["draft"] = Value::Bool(true);
    assert!(skip_reason(parse_action_event("pull_request", &draft, &opts)).contains("draft"));
    let with_drafts = TriggerOptions {
        review_drafts: true,
    };
    assert!(matches!(
        parse_action_event("pull_request_target", &draft, &with_drafts),
        Trigger::Review { .. }
    ));

    let mut fork = fixture("pull_request/synchronize.payload.json");
    fork["pull_request"]["head"]["repo"]["full_name"] = Value::from("forker/Hello-World");
    assert!(matches!(
        parse_action_event("pull_request_target", &fork, &opts),
        Trigger::Review { is_fork: true, .. }
    ));
}

#[test]
fn issue_comment_and_other_events() {
    let opts = TriggerOptions::default();
    let command = parse_action_event(
        "issue_comment",
        &fixture("issue_comment/created.on-pull-request.redline-command.json"),
        &opts,
    );
    assert_eq!(
        command,
        Trigger::NeedsPullRequest {
            owner: "Codertocat".into(),
            repo: "Hello-World".into(),
            pr_number: 1,
            strategy: Some("deep".into()),
            force: false,
            requested_by: "Codertocat".into(),
        }
    );
    let chatter = parse_action_event(
        "issue_comment",
        &fixture("issue_comment/created.on-pull-request.no-command.json"),
        &opts,
    );
    assert!(skip_reason(chatter).contains("/redline"));
    let mut bogus = fixture("issue_comment/created.on-pull-request.redline-command.json");
    bogus["comment"]["body"] = Value::from("/redline review --bogus");
    let Trigger::Usage {
        pr_number,
        requested_by,
        reply,
        ..
    } = parse_action_event("issue_comment", &bogus, &opts)
    else {
        panic!("a malformed command gets the usage");
    };
    assert_eq!((pr_number, requested_by.as_str()), (1, "Codertocat"));
    assert!(reply.contains("--bogus") && reply.contains(redline::forge::USAGE));
    let plain_issue = parse_action_event(
        "issue_comment",
        &fixture("issue_comment/created.payload.json"),
        &opts,
    );
    assert!(skip_reason(plain_issue).contains("not on a pull request"));
    let ping = parse_action_event("ping", &fixture("ping/payload.json"), &opts);
    assert!(skip_reason(ping).contains("ping"));
}
