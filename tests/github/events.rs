//! Actions events (copied webhook payloads) through `parse_action_event`.

use redline::forge::{ForgeEvent, ReviewRequest};
use redline::github::parse_action_event;
use serde_json::Value;

fn fixture(path: &str) -> Value {
    let text = std::fs::read_to_string(format!("tests/fixtures/webhooks/{path}")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn parse(event: &str, payload: &Value, review_drafts: bool) -> ForgeEvent {
    let bytes = serde_json::to_vec(payload).unwrap();
    parse_action_event(event, &bytes, review_drafts).unwrap()
}

fn skip_reason(event: ForgeEvent) -> String {
    match event {
        ForgeEvent::Ignore(reason) => reason.to_string(),
        other => panic!("expected Ignore, got {other:?}"),
    }
}

fn review(event: ForgeEvent) -> Box<ReviewRequest> {
    match event {
        ForgeEvent::Review(review) => review,
        other => panic!("expected Review, got {other:?}"),
    }
}

#[test]
fn pull_request_events() {
    for name in ["opened", "synchronize", "ready_for_review"] {
        let payload = fixture(&format!("pull_request/{name}.payload.json"));
        let review = review(parse("pull_request", &payload, false));
        assert_eq!(
            review.change.owner_and_name(),
            Some(("Codertocat", "Hello-World")),
            "{name}"
        );
        assert_eq!(review.change.number, 2);
        assert_eq!(review.base.sha.len(), 40);
        assert_eq!(review.head.sha.len(), 40);
        assert!(!review.base.branch.is_empty() && !review.head.branch.is_empty());
        assert!(!review.is_fork);
        assert_eq!(review.strategy, None);
        // The author's words travel with the event, for the intent section.
        assert_eq!(
            review.title, "Update the README with new information.",
            "{name}"
        );
        assert!(
            review
                .description
                .contains("This is a pretty simple change"),
            "{name}: {}",
            review.description
        );
    }
    let closed = parse(
        "pull_request",
        &fixture("pull_request/closed.payload.json"),
        false,
    );
    assert!(skip_reason(closed).contains("closed"));

    let mut draft = fixture("pull_request/opened.payload.json");
    draft["pull_request"]["draft"] = Value::Bool(true);
    assert!(skip_reason(parse("pull_request", &draft, false)).contains("draft"));
    assert!(matches!(
        parse("pull_request_target", &draft, true),
        ForgeEvent::Review(_)
    ));

    let mut fork = fixture("pull_request/synchronize.payload.json");
    fork["pull_request"]["head"]["repo"]["full_name"] = Value::from("forker/Hello-World");
    assert!(review(parse("pull_request_target", &fork, false)).is_fork);
}

#[test]
fn issue_comment_and_other_events() {
    let command = parse(
        "issue_comment",
        &fixture("issue_comment/created.on-pull-request.redline-command.json"),
        false,
    );
    let ForgeEvent::Command(command) = command else {
        panic!("expected a command, got {command:?}");
    };
    assert_eq!(
        command.change.owner_and_name(),
        Some(("Codertocat", "Hello-World"))
    );
    assert_eq!(command.change.number, 1);
    assert_eq!(command.strategy.as_deref(), Some("deep"));
    assert!(!command.force);
    assert_eq!(command.comment.author, "Codertocat");
    let chatter = parse(
        "issue_comment",
        &fixture("issue_comment/created.on-pull-request.no-command.json"),
        false,
    );
    assert!(skip_reason(chatter).contains("/redline"));
    let mut bogus = fixture("issue_comment/created.on-pull-request.redline-command.json");
    bogus["comment"]["body"] = Value::from("/redline review --bogus");
    let ForgeEvent::Usage(usage) = parse("issue_comment", &bogus, false) else {
        panic!("a malformed command gets the usage");
    };
    assert_eq!(
        (usage.change.number, usage.comment.author.as_str()),
        (1, "Codertocat")
    );
    assert!(usage.text.contains("--bogus") && usage.text.contains(redline::forge::USAGE));
    let plain_issue = parse(
        "issue_comment",
        &fixture("issue_comment/created.payload.json"),
        false,
    );
    assert!(skip_reason(plain_issue).contains("not on a pull request"));
    let ping = parse("ping", &fixture("ping/payload.json"), false);
    assert!(skip_reason(ping).contains("ping"));
}
