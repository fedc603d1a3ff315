use super::*;
use crate::queue::{ForgeKind, JobKind, NewJob, ReviewTrigger};
use crate::server::delivery_job::job_of;
use serde_json::{Value, json};

fn pr_payload(action: &str, draft: bool) -> Value {
    json!({
        "action": action,
        "number": 5,
        "pull_request": {
            "draft": draft,
            "head": {"sha": "abc", "ref": "feature"},
            "base": {"sha": "def", "ref": "main"}
        },
        "repository": {"full_name": "o/r"},
        "installation": {"id": 9},
        "sender": {"login": "dev", "type": "User"}
    })
}

fn comment_payload(body: &str, on_pr: bool, user_type: &str) -> Value {
    let mut issue = json!({"number": 3});
    if on_pr {
        issue["pull_request"] = json!({"url": "https://example.invalid/pr/3"});
    }
    json!({
        "action": "created",
        "issue": issue,
        "comment": {
            "id": 77,
            "body": body,
            "user": {"login": "alice", "type": user_type},
            "author_association": "MEMBER"
        },
        "repository": {"full_name": "o/r"},
        "installation": {"id": 9}
    })
}

fn classify_value(
    event: &str,
    payload: &Value,
    config: &ServerConfig,
) -> Result<ForgeEvent, PayloadError> {
    let body = serde_json::to_vec(payload).expect("serialize");
    classify_app_delivery(event, &body, config).map(|classified| classified.event)
}

fn decide(event: &str, payload: &Value) -> ForgeEvent {
    classify_value(event, payload, &ServerConfig::default()).expect("classify")
}

/// The job the App queues for `event` (GitHub's), if any.
fn queued(event: &ForgeEvent) -> Option<NewJob> {
    job_of(event, ForgeKind::GitHub).expect("job")
}

#[test]
fn review_actions_queue_a_job() {
    let Some(job) = queued(&decide("pull_request", &pr_payload("synchronize", false))) else {
        panic!("not queued");
    };
    assert_eq!(job.repo_full_name, "o/r");
    assert_eq!((job.installation_id, job.pr_number), (Some(9), 5));
    assert_eq!(job.forge, ForgeKind::GitHub);
    assert_eq!(job.head_sha.as_deref(), Some("abc"));
    assert_eq!(job.payload["head_ref"], "feature");
}

#[test]
fn drafts_are_skipped_unless_configured() {
    let draft = pr_payload("opened", true);
    let ForgeEvent::Draft(review) = decide("pull_request", &draft) else {
        panic!("not a draft");
    };
    assert_eq!(queued(&ForgeEvent::Draft(review.clone())), None);
    assert_eq!((review.change.number, review.head.sha.as_str()), (5, "abc"));
    let mut uninstalled = draft.clone();
    uninstalled["installation"] = Value::Null;
    assert_eq!(
        decide("pull_request", &uninstalled),
        ForgeEvent::Ignore(IgnoreReason::Draft)
    );
    let config = ServerConfig {
        review_drafts: true,
        ..ServerConfig::default()
    };
    assert!(matches!(
        classify_value("pull_request", &draft, &config),
        Ok(ForgeEvent::Review(_))
    ));
}

#[test]
fn other_pull_request_actions_are_ignored_without_full_parsing() {
    let decision = decide("pull_request", &json!({"action": "closed"}));
    assert!(matches!(decision, ForgeEvent::Ignore(_)));
}

#[test]
fn a_review_action_missing_fields_is_an_error() {
    let payload = json!({"action": "opened", "number": 1});
    assert!(matches!(
        classify_value("pull_request", &payload, &ServerConfig::default()),
        Err(PayloadError::Unexpected(_))
    ));
}

#[test]
fn comment_commands_on_prs_queue_with_the_commenter() {
    let payload = comment_payload("/redline review --strategy plan", true, "User");
    let Some(job) = queued(&decide("issue_comment", &payload)) else {
        panic!("not queued");
    };
    assert_eq!(job.kind.strategy(), Some("plan"));
    assert_eq!(job.head_sha, None);
    assert_eq!(job.payload["commenter"], "alice");
    assert_eq!(job.payload["author_association"], "MEMBER");
}

#[test]
fn other_comments_are_ignored() {
    for payload in [
        comment_payload("/redline review", false, "User"),
        comment_payload("/redline review", true, "Bot"),
        comment_payload("nice work", true, "User"),
    ] {
        assert!(matches!(
            decide("issue_comment", &payload),
            ForgeEvent::Ignore(_)
        ));
    }
}

#[test]
fn a_malformed_command_gets_the_usage() {
    let payload = comment_payload("/redline review --bogus", true, "User");
    let event = decide("issue_comment", &payload);
    assert_eq!(queued(&event), None);
    let ForgeEvent::Usage(reply) = event else {
        panic!("no reply");
    };
    assert_eq!(
        (reply.change.ids.installation, reply.change.number),
        (Some(9), 3)
    );
    assert_eq!(reply.comment.author, "alice");
    assert!(reply.text.contains("--bogus") && reply.text.contains(crate::forge::USAGE));
}

#[test]
fn malformed_bodies_are_refused_for_every_event() {
    for event in ["pull_request", "ping", "star"] {
        for body in [&b"{"[..], b"[]", b"", b"{\"action\": 7}"] {
            let result = classify_app_delivery(event, body, &ServerConfig::default());
            assert!(
                matches!(
                    result,
                    Err(PayloadError::Malformed(_) | PayloadError::NotAnObject)
                ),
                "{event} {body:?}"
            );
        }
    }
}

#[test]
fn the_action_is_reported_for_ignored_events() {
    let body = br#"{"action": "created", "starred_at": null}"#;
    let classified =
        classify_app_delivery("star", body, &ServerConfig::default()).expect("classify");
    assert_eq!(classified.action.as_deref(), Some("created"));
    assert!(matches!(classified.event, ForgeEvent::Ignore(_)));
}

fn review_comment_payload(body: &str, reply_to: Option<u64>, user_type: &str) -> Value {
    json!({
        "action": "created",
        "comment": {"id": 80, "in_reply_to_id": reply_to, "body": body, "path": "a.rs",
            "diff_hunk": "@@ -1 +1 @@", "author_association": "MEMBER",
            "user": {"login": "alice", "type": user_type}},
        "pull_request": {"number": 4},
        "repository": {"full_name": "o/r"},
        "installation": {"id": 9}
    })
}

#[test]
fn review_comments_become_answers_reviews_or_nothing() {
    let config = ServerConfig {
        app_slug: Some("redline".into()),
        ..ServerConfig::default()
    };
    let decide = |payload: &Value| classify_value("pull_request_review_comment", payload, &config);
    let Ok(ForgeEvent::Thread(note)) = decide(&review_comment_payload("why?", Some(70), "User"))
    else {
        panic!("not a thread comment");
    };
    assert_eq!((note.thread.as_str(), note.change.number), ("70", 4));
    assert_eq!(queued(&ForgeEvent::Thread(note)), None);
    assert!(matches!(
        decide(&review_comment_payload("@redline why?", None, "User")),
        Ok(ForgeEvent::Thread(_))
    ));
    let Some(job) = queued(
        &decide(&review_comment_payload("/redline review", None, "User")).expect("classify"),
    ) else {
        panic!("not a review");
    };
    assert_eq!(job.payload["commenter"], "alice");
    for payload in [
        review_comment_payload("why?", Some(70), "Bot"),
        review_comment_payload("a note", None, "User"),
    ] {
        assert!(matches!(decide(&payload), Ok(ForgeEvent::Ignore(_))));
    }
    let mut edited = review_comment_payload("why?", Some(70), "User");
    edited["action"] = json!("edited");
    assert!(matches!(decide(&edited), Ok(ForgeEvent::Ignore(_))));
}

#[test]
fn installation_removal_is_flagged() {
    let payload = json!({"action": "suspend", "installation": {"id": 4}});
    let ForgeEvent::Access(change) = decide("installation", &payload) else {
        panic!("not an installation change");
    };
    assert!(change.access_removed);
    let payload = json!({"action": "removed", "installation": {"id": 4}});
    let ForgeEvent::Access(change) = decide("installation_repositories", &payload) else {
        panic!("not an installation change");
    };
    assert!(!change.access_removed);
}

#[test]
fn a_re_run_of_redline_s_check_queues_a_requested_review_of_its_commit() {
    let payload = json!({"action": "rerequested",
        "check_run": {"name": "Redline", "head_sha": "abc", "external_id": "12",
            "pull_requests": [{"number": 5, "head": {"sha": "abc"}}]},
        "repository": {"full_name": "o/r"}, "installation": {"id": 9},
        "sender": {"login": "dev", "type": "User"}});
    let Some(job) = queued(&decide("check_run", &payload)) else {
        panic!("not queued");
    };
    assert_eq!((job.pr_number, job.head_sha.as_deref()), (5, Some("abc")));
    assert_eq!(job.kind, JobKind::Requested { strategy: None });
    assert_eq!(
        serde_json::from_value::<ReviewTrigger>(job.payload).ok(),
        Some(ReviewTrigger::Rerun {
            requested_by: "dev".into()
        })
    );
}

#[test]
fn requests_without_an_installation_ask_nothing_of_the_app() {
    let mut review = pr_payload("opened", false);
    review["installation"] = Value::Null;
    let mut command = comment_payload("/redline review", true, "User");
    command["installation"] = Value::Null;
    for (event, payload) in [("pull_request", review), ("issue_comment", command)] {
        let asked = decide(event, &payload);
        assert_eq!(asked, ForgeEvent::Ignore(IgnoreReason::NoInstallation));
        assert_eq!(queued(&asked), None);
    }
}

#[test]
fn a_review_naming_no_head_queues_a_job_that_reads_it() {
    let ForgeEvent::Review(mut review) = decide("pull_request", &pr_payload("opened", false))
    else {
        panic!("not a review");
    };
    review.head.sha.clear();
    let job = job_of(&ForgeEvent::Review(review), ForgeKind::GitLab)
        .expect("job")
        .expect("queued");
    assert_eq!((job.forge, job.head_sha), (ForgeKind::GitLab, None));
}
