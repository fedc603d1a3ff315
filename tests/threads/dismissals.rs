//! Findings turned down in their thread, or whose thread was resolved on GitHub, are not
//! raised again by the App after a push that edits their line; the other finding, whose
//! line was edited too, is (the control). With `resolve_outdated`, Redline resolves its
//! outdated threads that the new review did not raise again. A refused or malformed
//! command is answered once per thread, however often it is repeated.

use super::support::{FIRST, Reviewed, SECOND};
use crate::common::wait_until;

/// Replies `body` in the first finding's thread, waits for the answer, then pushes.
async fn reply_then_push(body: &str) -> Reviewed {
    let reviewed = Reviewed::start(None, false).await;
    let root = reviewed.root(FIRST);
    reviewed.reply(root, "alice", "User", body, "d-1").await;
    wait_until(|| !reviewed.answers(root).is_empty()).await;
    assert_eq!(reviewed.answers(root).len(), 1, "{}", reviewed.server.log());
    reviewed.push().await;
    reviewed
}

#[tokio::test]
async fn a_finding_ignored_in_its_thread_is_not_raised_after_a_push() {
    let reviewed = reply_then_push("/redline ignore").await;
    let root = reviewed.root(FIRST);
    let ack = reviewed.answers(root)[0]["body"].to_string();
    assert!(ack.contains("will not raise this finding again"), "{ack}");
    assert_eq!(reviewed.raised(FIRST), 1, "dismissed: not raised again");
    assert_eq!(
        reviewed.raised(SECOND),
        2,
        "the edited line's other finding is"
    );
}

#[tokio::test]
async fn a_rejection_the_model_accepts_is_remembered() {
    let reviewed = reply_then_push("This is intended: callers check b.").await;
    assert_eq!(reviewed.raised(FIRST), 1);
    assert_eq!(reviewed.raised(SECOND), 2);
}

#[tokio::test]
async fn a_resolved_thread_s_finding_is_not_raised_again() {
    let reviewed = Reviewed::start(None, false).await;
    reviewed.gh.resolve_thread(reviewed.root(FIRST));
    reviewed.push().await;
    assert_eq!(reviewed.raised(FIRST), 1);
    assert_eq!(reviewed.raised(SECOND), 2);
}

#[tokio::test]
async fn outdated_threads_the_new_review_did_not_raise_are_resolved() {
    let reviewed = Reviewed::start(Some("resolve_outdated = true\n"), true).await;
    let (first, second) = (reviewed.root(FIRST), reviewed.root(SECOND));
    reviewed.gh.set_outdated(first);
    reviewed.gh.set_outdated(second);
    reviewed.push().await;
    assert!(reviewed.gh.is_resolved(first), "not raised again: resolved");
    assert!(!reviewed.gh.is_resolved(second), "raised again: kept open");
}

#[tokio::test]
async fn only_the_author_or_a_writer_dismisses() {
    let reviewed = Reviewed::start(None, false).await;
    reviewed.gh.set_permission("bob", "read");
    let root = reviewed.root(FIRST);
    reviewed
        .reply(root, "bob", "User", "/redline ignore", "b-1")
        .await;
    wait_until(|| !reviewed.answers(root).is_empty()).await;
    let reply = reviewed.answers(root)[0]["body"].to_string();
    assert!(reply.contains("Only the pull request's author"), "{reply}");
    reviewed.push().await;
    assert_eq!(reviewed.raised(FIRST), 2, "not dismissed: raised again");
}

#[tokio::test]
async fn a_storm_of_refused_or_bad_commands_gets_one_reply_each_kind() {
    let reviewed = Reviewed::start(None, false).await;
    reviewed.gh.set_permission("bob", "read");
    let root = reviewed.root(FIRST);
    for n in 0..3 {
        reviewed
            .reply(root, "bob", "User", "/redline ignore", &format!("i-{n}"))
            .await;
        wait_until(|| reviewed.answers(root).len() == 1).await;
    }
    for n in 0..3 {
        reviewed
            .reply(root, "bob", "User", "/redline bogus", &format!("u-{n}"))
            .await;
        wait_until(|| reviewed.answers(root).len() == 2).await;
    }
    reviewed
        .wait_for_log("the same reply is already in the thread", 4)
        .await;
    let answers = reviewed.answers(root);
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(
        answers[0]["body"]
            .to_string()
            .contains("Only the pull request's author")
    );
}
