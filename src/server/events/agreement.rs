//! The App (`classify` on a raw body) and the Action (`parse_action_event` on a parsed
//! event file) decide the same for the same payload: every copied GitHub payload example,
//! as it is and with the variants that exercise the rules (a draft, a `/redline` command,
//! a malformed one, `/redline ignore`, a reply in a thread, a re-run of Redline's check),
//! drafts reviewed or not. Re-runs of Redline's check, like pings and installations, are
//! the App's alone (the Action's own check is its workflow's).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::*;
use crate::github::{Trigger, TriggerOptions, parse_action_event};
use crate::queue::JobKind;

/// What an entry point decided, in terms both share.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// Review `repository#number` at `head` (comment requests name no head).
    Review {
        repository: String,
        number: u64,
        head: Option<String>,
        strategy: Option<String>,
        requested_by: Option<String>,
    },
    /// Reply with the usage.
    Usage {
        repository: String,
        number: u64,
        commenter: String,
    },
    /// Consider answering in thread `root` of `repository#number`.
    Thread {
        repository: String,
        number: u64,
        comment: u64,
        root: u64,
    },
    /// Nothing to review, for this reason.
    Skip(String),
    /// What only the App handles (pings, installations).
    AppOnly,
}

fn app_verdict(event: &str, payload: &Value, review_drafts: bool) -> Verdict {
    let config = ServerConfig {
        review_drafts,
        app_slug: None,
    };
    let body = serde_json::to_vec(payload).expect("serialize");
    let decision = match classify(event, &body, &config) {
        Ok(classified) => classified.decision,
        Err(error) => return Verdict::Skip(format!("refused: {error}")),
    };
    match decision {
        Decision::Review(job) if job.payload["trigger"] == "rerun" => Verdict::AppOnly,
        Decision::Review(job) => {
            let requested_by = job.payload["commenter"].as_str().map(str::to_string);
            let is_request = matches!(job.kind, JobKind::Requested { .. });
            assert_eq!(is_request, requested_by.is_some(), "{job:?}");
            Verdict::Review {
                repository: job.repo_full_name,
                number: job.pr_number,
                strategy: job.kind.strategy().map(str::to_string),
                head: job.head_sha,
                requested_by,
            }
        }
        Decision::Reply(reply) => Verdict::Usage {
            repository: reply.repo_full_name,
            number: reply.pr_number,
            commenter: reply.commenter,
        },
        Decision::Thread(comment) => Verdict::Thread {
            repository: format!("{}/{}", comment.owner, comment.repo),
            number: comment.pr_number,
            comment: comment.comment_id,
            root: comment.root_id,
        },
        Decision::Ignore(reason) => Verdict::Skip(reason),
        Decision::Draft(_) => Verdict::Skip(IgnoreReason::Draft.to_string()),
        Decision::Pong | Decision::Installation(_) => Verdict::AppOnly,
    }
}

fn action_verdict(event: &str, payload: &Value, review_drafts: bool) -> Verdict {
    let options = TriggerOptions { review_drafts };
    match parse_action_event(event, payload, &options) {
        Trigger::Review {
            owner,
            repo,
            pr_number,
            head_sha,
            strategy,
            ..
        } => Verdict::Review {
            repository: format!("{owner}/{repo}"),
            number: pr_number,
            head: Some(head_sha),
            strategy,
            requested_by: None,
        },
        Trigger::NeedsPullRequest {
            owner,
            repo,
            pr_number,
            strategy,
            requested_by,
            ..
        } => Verdict::Review {
            repository: format!("{owner}/{repo}"),
            number: pr_number,
            head: None,
            strategy,
            requested_by: Some(requested_by),
        },
        Trigger::Usage {
            owner,
            repo,
            pr_number,
            requested_by,
            ..
        } => Verdict::Usage {
            repository: format!("{owner}/{repo}"),
            number: pr_number,
            commenter: requested_by,
        },
        Trigger::Thread(comment) => Verdict::Thread {
            repository: format!("{}/{}", comment.owner, comment.repo),
            number: comment.pr_number,
            comment: comment.comment_id,
            root: comment.root_id,
        },
        Trigger::Skip { reason }
            if matches!(event, "ping" | "installation" | "installation_repositories") =>
        {
            assert!(reason.contains(event), "{reason}");
            Verdict::AppOnly
        }
        Trigger::Skip { reason }
            if matches!(event, "check_run" | "check_suite")
                && reason == format!("event `{event}` not handled") =>
        {
            Verdict::AppOnly
        }
        Trigger::Skip { reason } => Verdict::Skip(reason),
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
fn the_app_and_the_action_decide_the_same_for_every_payload() {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let fixtures = fixtures();
    assert!(fixtures.len() >= 60, "{} fixtures", fixtures.len());
    for (event, path) in &fixtures {
        let text = std::fs::read_to_string(path).expect("fixture");
        let payload: Value = serde_json::from_str(&text).expect("JSON");
        for (variant, sent) in variants(event, &payload) {
            // The App acts through an installation, the Action through its token: with an
            // installation in the payload, both must decide alike.
            let mut installed = sent.clone();
            installed["installation"] = json!({"id": 7});
            for review_drafts in [false, true] {
                let case = format!("{} ({variant}, drafts {review_drafts})", path.display());
                let app = app_verdict(event, &installed, review_drafts);
                let action = action_verdict(event, &installed, review_drafts);
                assert_eq!(app, action, "{case}");
                // Without one, the App ignores what the Action would do.
                let uninstalled = app_verdict(event, &sent, review_drafts);
                if sent.get("installation").is_none_or(Value::is_null) {
                    let acts = !matches!(app, Verdict::Skip(_) | Verdict::AppOnly);
                    let expected = if acts {
                        Verdict::Skip("no installation in the payload".into())
                    } else {
                        app.clone()
                    };
                    assert_eq!(uninstalled, expected, "{case} without an installation");
                }
                *seen.entry(kind(&app)).or_default() += 1;
            }
        }
    }
    // Every kind of decision was compared, not only skips.
    for kind in ["review", "request", "usage", "thread", "skip", "app only"] {
        assert!(seen.get(kind).is_some_and(|n| *n > 0), "{kind}: {seen:?}");
    }
}

fn kind(verdict: &Verdict) -> &'static str {
    match verdict {
        Verdict::Review {
            requested_by: None, ..
        } => "review",
        Verdict::Review { .. } => "request",
        Verdict::Usage { .. } => "usage",
        Verdict::Thread { .. } => "thread",
        Verdict::Skip(_) => "skip",
        Verdict::AppOnly => "app only",
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
    let app = app_verdict("pull_request", &payload, false);
    assert!(matches!(app, Verdict::Review { .. }), "{app:?}");
    assert_eq!(app, action_verdict("pull_request", &payload, false));
}
