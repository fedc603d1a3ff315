//! The App (its intake's classifier on a raw body) and the Action (`parse_action_event`
//! on its event file) act on the same [`ForgeEvent`] for the same payload: every copied
//! GitHub payload example, as it is and with the variants that exercise the rules (a
//! draft, a `/redline` command, a malformed one, `/redline ignore`, a reply in a thread, a
//! re-run of Redline's check), drafts reviewed or not. Pings, installations and re-runs of
//! Redline's check are the App's alone (the Action's own check is its workflow's); a draft
//! is shown skipped by the App, skipped by the Action.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::*;
use crate::github::parse_action_event;

/// What the App acts on (a classifier's refusal as its message).
fn app_event(event: &str, payload: &Value, review_drafts: bool) -> Result<ForgeEvent, String> {
    let config = ServerConfig {
        review_drafts,
        app_slug: None,
    };
    let body = serde_json::to_vec(payload).expect("serialize");
    classify_app_delivery(event, &body, &config)
        .map(|classified| classified.event)
        .map_err(|error| error.to_string())
}

/// What the Action acts on.
fn action_event(event: &str, payload: &Value, review_drafts: bool) -> Result<ForgeEvent, String> {
    let body = serde_json::to_vec(payload).expect("serialize");
    parse_action_event(event, &body, review_drafts).map_err(|error| error.to_string())
}

/// What the Action does with what the App acts on: the same, but for the App's own events
/// and drafts, which it skips.
fn as_the_action_takes_it(
    event: &str,
    app: &Result<ForgeEvent, String>,
) -> Result<ForgeEvent, String> {
    let skip = |reason| Ok(ForgeEvent::Ignore(reason));
    match app {
        Ok(ForgeEvent::Ping | ForgeEvent::Access(_) | ForgeEvent::Rerun(_)) => {
            skip(IgnoreReason::EventNotHandled {
                event: event.to_string(),
            })
        }
        Ok(ForgeEvent::Draft(_)) => skip(IgnoreReason::Draft),
        other => other.clone(),
    }
}

/// Every copied payload example, with its event (the directory's name).
fn fixtures() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/webhooks");
    let mut found = Vec::new();
    for dir in std::fs::read_dir(&root).expect("fixtures") {
        let dir = dir.expect("entry").path();
        if !dir.is_dir() {
            continue;
        }
        let event = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        for file in std::fs::read_dir(&dir).expect("event dir") {
            let file = file.expect("entry").path();
            if file.extension().is_some_and(|ext| ext == "json") {
                found.push((event.clone(), file));
            }
        }
    }
    found.sort();
    found
}

/// The payload and the variants of it that exercise the rules, each named.
fn variants(event: &str, payload: &Value) -> Vec<(&'static str, Value)> {
    let mut all = vec![("as sent", payload.clone())];
    let mut edited = |name, edit: &dyn Fn(&mut Value)| {
        let mut changed = payload.clone();
        edit(&mut changed);
        all.push((name, changed));
    };
    if payload["pull_request"].is_object() && event == "pull_request" {
        edited("a draft", &|p| p["pull_request"]["draft"] = json!(true));
    }
    if payload["comment"].is_object() {
        for (name, body) in [
            ("a review command", "/redline review --strategy plan"),
            ("a malformed command", "/redline review --bogus"),
            ("an ignore command", "/redline ignore"),
        ] {
            edited(name, &|p| p["comment"]["body"] = json!(body));
        }
        edited("a reply", &|p| p["comment"]["in_reply_to_id"] = json!(41));
        edited("by a bot", &|p| p["comment"]["user"]["type"] = json!("Bot"));
    }
    if event == "check_run" && payload["action"] == "rerequested" {
        edited("a re-run of Redline's check", &|p| {
            let head = p["check_run"]["head_sha"].clone();
            p["check_run"]["name"] = json!("Redline");
            p["check_run"]["pull_requests"] =
                json!([{"number": 9, "head": {"sha": head, "ref": "feature"}}]);
        });
        edited("a re-run of Redline's check on no pull request", &|p| {
            p["check_run"]["name"] = json!("Redline");
        });
    }
    if event == "issue_comment" {
        edited("on a pull request with a command", &|p| {
            p["issue"]["pull_request"] = json!({"url": "https://example.invalid/pulls/1"});
            p["comment"]["body"] = json!("/redline review");
        });
    }
    all
}

#[test]
fn the_app_and_the_action_act_on_the_same_event_for_every_payload() {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let fixtures = fixtures();
    assert!(fixtures.len() >= 60, "{} fixtures", fixtures.len());
    for (event, path) in &fixtures {
        let text = std::fs::read_to_string(path).expect("fixture");
        let payload: Value = serde_json::from_str(&text).expect("JSON");
        for (variant, sent) in variants(event, &payload) {
            // The App acts through an installation, the Action through its token: with an
            // installation in the payload, both must act alike.
            let mut installed = sent.clone();
            installed["installation"] = json!({"id": 7});
            for review_drafts in [false, true] {
                let case = format!("{} ({variant}, drafts {review_drafts})", path.display());
                let app = app_event(event, &installed, review_drafts);
                let action = action_event(event, &installed, review_drafts);
                assert_eq!(as_the_action_takes_it(event, &app), action, "{case}");
                // Without one, the App ignores what it would act on.
                let uninstalled = app_event(event, &sent, review_drafts);
                if sent.get("installation").is_none_or(Value::is_null) {
                    let expected = match &app {
                        Ok(ForgeEvent::Draft(_)) => Ok(ForgeEvent::Ignore(IgnoreReason::Draft)),
                        Ok(asked) if asked.change().is_some() => {
                            Ok(ForgeEvent::Ignore(IgnoreReason::NoInstallation))
                        }
                        other => other.clone(),
                    };
                    assert_eq!(uninstalled, expected, "{case} without an installation");
                }
                *seen.entry(kind(&app)).or_default() += 1;
            }
        }
    }
    // Every kind of event was compared, not only skips.
    for kind in [
        "review", "draft", "command", "usage", "rerun", "thread", "ping", "access", "ignore",
    ] {
        assert!(seen.get(kind).is_some_and(|n| *n > 0), "{kind}: {seen:?}");
    }
}

fn kind(app: &Result<ForgeEvent, String>) -> &'static str {
    match app {
        Ok(ForgeEvent::Review(_)) => "review",
        Ok(ForgeEvent::Draft(_)) => "draft",
        Ok(ForgeEvent::Command(_)) => "command",
        Ok(ForgeEvent::Usage(_)) => "usage",
        Ok(ForgeEvent::Rerun(_)) => "rerun",
        Ok(ForgeEvent::Thread(_)) => "thread",
        Ok(ForgeEvent::Ping) => "ping",
        Ok(ForgeEvent::Access(_)) => "access",
        Ok(ForgeEvent::Ignore(_)) => "ignore",
        Err(_) => "refused",
    }
}

#[test]
fn a_draft_marked_ready_is_reviewed_by_both() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/fixtures/webhooks/pull_request/ready_for_review.with-installation.payload.json",
    );
    let text = std::fs::read_to_string(path).expect("fixture");
    let mut payload: Value = serde_json::from_str(&text).expect("JSON");
    // The App's rule: `ready_for_review` is reviewed whatever the payload says of the
    // draft (the Action used to skip it).
    payload["pull_request"]["draft"] = json!(true);
    let app = app_event("pull_request", &payload, false);
    assert!(matches!(app, Ok(ForgeEvent::Review(_))), "{app:?}");
    assert_eq!(app, action_event("pull_request", &payload, false));
}
