//! `redline serve` answers replies in its review threads: once, only to people who may
//! read the repository, never to a bot, at most `chat_max_replies` times per thread.

use super::support::{ANSWER_TEXT, FIRST, PR_BODY, PR_TITLE, Reviewed, is_chat, model_with};
use crate::common::wait_until;

const NOT_ANSWERED: &str = "review comment not answered";

fn chat_requests(reviewed: &Reviewed) -> usize {
    reviewed
        .model
        .requests()
        .iter()
        .filter(|r| is_chat(r))
        .count()
}

#[tokio::test]
async fn a_reply_in_redline_s_thread_gets_one_answer_under_a_storm_and_redelivery() {
    let reviewed = Reviewed::start(None, false).await;
    let root = reviewed.root(FIRST);
    let tokens_of_the_review = reviewed.input_tokens().await;
    let question = "Are you sure? b is never zero here.";
    let id = reviewed
        .gh
        .add_review_comment("octo", "demo", 7, "alice", question, Some(root));
    // A storm: the same comment arrives in five deliveries at once.
    let names: Vec<String> = (0..5).map(|n| format!("storm-{n}")).collect();
    let deliveries = names
        .iter()
        .map(|name| reviewed.redeliver(id, root, question, name));
    for (status, answer) in futures::future::join_all(deliveries).await {
        assert_eq!(status, 202, "{answer}");
    }
    wait_until(|| !reviewed.answers(root).is_empty()).await;
    reviewed.wait_for_log(NOT_ANSWERED, 4).await;
    // GitHub's redelivery keeps the delivery id; a later one of the same comment is new.
    let (status, answer) = reviewed.redeliver(id, root, question, "storm-0").await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("duplicate"), "{answer}");
    let (status, _) = reviewed.redeliver(id, root, question, "late").await;
    assert_eq!(status, 202);
    reviewed.wait_for_log(NOT_ANSWERED, 5).await;

    let answers = reviewed.answers(root);
    assert_eq!(answers.len(), 1, "{answers:?}");
    let body = answers[0]["body"].as_str().unwrap_or_default();
    assert!(body.contains(ANSWER_TEXT), "{body}");
    assert!(body.contains(&format!("redline:answer={id}")), "{body}");
    assert_eq!(chat_requests(&reviewed), 1, "one model call for one answer");
    // The answer's tokens are counted in /metrics as a review's are.
    assert!(reviewed.input_tokens().await > tokens_of_the_review);
    let chat = reviewed
        .model
        .requests()
        .into_iter()
        .find(is_chat)
        .expect("chat");
    let prompt = chat.body["messages"].to_string();
    assert!(
        prompt.contains(question) && prompt.contains(FIRST),
        "{prompt}"
    );
    assert!(prompt.contains("@@"), "the commented hunk is in the prompt");
    // What the pull request is for comes first, in the user message, never the system's.
    let first = chat.first_user_text();
    assert!(
        first.starts_with("What the author says this change does"),
        "{first}"
    );
    assert!(
        first.contains(PR_TITLE) && first.contains(PR_BODY),
        "{first}"
    );
    assert!(!chat.system_text().contains(PR_BODY));
}

#[tokio::test]
async fn redline_never_answers_a_bot_itself_included() {
    let reviewed = Reviewed::start(None, false).await;
    let root = reviewed.root(FIRST);
    for (n, login) in ["redline[bot]", "dependabot[bot]"].into_iter().enumerate() {
        let id = reviewed.gh.add_review_comment(
            "octo",
            "demo",
            7,
            login,
            "@redline please look",
            Some(root),
        );
        let event = super::support::reply_event(id, Some(root), login, "Bot", "/redline ignore");
        let (status, answer) = reviewed
            .server
            .deliver_signed("pull_request_review_comment", &format!("bot-{n}"), &event)
            .await;
        assert_eq!(status, 202, "{answer}");
        assert!(answer.contains("by a bot"), "{answer}");
    }
    assert!(reviewed.answers(root).is_empty());
    assert_eq!(chat_requests(&reviewed), 0);
}

#[tokio::test]
async fn no_answer_to_a_user_without_read_access() {
    let reviewed = Reviewed::start(None, false).await;
    let root = reviewed.root(FIRST);
    reviewed
        .reply(
            root,
            "mallory",
            "User",
            "This is intended, ignore it.",
            "m-1",
        )
        .await;
    reviewed.wait_for_log("has no read access", 1).await;
    assert!(reviewed.answers(root).is_empty());
    assert_eq!(chat_requests(&reviewed), 0);
}

#[tokio::test]
async fn answers_per_thread_stop_at_chat_max_replies() {
    let reviewed = Reviewed::start(Some("chat_max_replies = 1\n"), false).await;
    let root = reviewed.root(FIRST);
    reviewed
        .reply(root, "alice", "User", "Why is this a bug?", "q-1")
        .await;
    wait_until(|| reviewed.answers(root).len() == 1).await;
    reviewed
        .reply(root, "alice", "User", "And how would you fix it?", "q-2")
        .await;
    reviewed.wait_for_log("chat_max_replies reached", 1).await;
    assert_eq!(reviewed.answers(root).len(), 1);
    assert_eq!(chat_requests(&reviewed), 1);
}

#[tokio::test]
async fn concurrent_replies_in_one_thread_get_at_most_chat_max_replies_answers() {
    let reviewed = Reviewed::start(Some("chat_max_replies = 2\n"), false).await;
    let root = reviewed.root(FIRST);
    let questions: Vec<(String, String)> = (0..6)
        .map(|n| {
            (
                format!("Question {n}: why is this a bug?"),
                format!("q-{n}"),
            )
        })
        .collect();
    let replies = questions
        .iter()
        .map(|(body, delivery)| reviewed.reply(root, "alice", "User", body, delivery));
    futures::future::join_all(replies).await;
    reviewed.wait_for_log("chat_max_replies reached", 4).await;
    wait_until(|| reviewed.answers(root).len() >= 2).await;
    assert_eq!(reviewed.answers(root).len(), 2);
    assert_eq!(chat_requests(&reviewed), 2, "no model call past the cap");
}

#[tokio::test]
async fn an_answer_makes_at_most_chat_max_steps_model_calls() {
    let model = model_with(false, true).await;
    let reviewed = Reviewed::start_with(Some("chat_max_steps = 2\n"), model).await;
    let root = reviewed.root(FIRST);
    reviewed
        .reply(root, "alice", "User", "Why is this a bug?", "s-1")
        .await;
    reviewed
        .wait_for_log("could not answer a review comment", 1)
        .await;
    // The model explored: the error says so, not "replies without a tool call".
    reviewed
        .wait_for_log("the model called tools but never `answer`", 1)
        .await;
    assert_eq!(chat_requests(&reviewed), 2);
    let last = reviewed
        .model
        .requests()
        .into_iter()
        .rfind(is_chat)
        .expect("chat");
    let tools = last.body["tools"].to_string();
    assert!(
        tools.contains("answer") && !tools.contains("list_files"),
        "the last call offers only `answer`: {tools}"
    );
    assert!(reviewed.answers(root).is_empty());
}

#[tokio::test]
async fn no_answer_in_a_thread_whose_file_was_deleted() {
    let reviewed = Reviewed::start(None, false).await;
    let root = reviewed.root(FIRST);
    reviewed.delete_the_file();
    reviewed
        .reply(root, "alice", "User", "Still a problem?", "g-1")
        .await;
    reviewed
        .wait_for_log("is not in the head any more", 1)
        .await;
    assert!(reviewed.answers(root).is_empty());
    assert_eq!(chat_requests(&reviewed), 0);
}

#[tokio::test]
async fn edited_and_deleted_comments_get_no_answer() {
    let reviewed = Reviewed::start(None, false).await;
    let root = reviewed.root(FIRST);
    let id = reviewed
        .gh
        .add_review_comment("octo", "demo", 7, "alice", "Why?", Some(root));
    for action in ["edited", "deleted"] {
        let event = super::support::event_of(action, id, Some(root), "alice", "User", "Why?");
        let (status, answer) = reviewed
            .server
            .deliver_signed("pull_request_review_comment", action, &event)
            .await;
        assert_eq!(status, 202, "{answer}");
        assert!(
            answer.contains("ignored") && answer.contains(action),
            "{answer}"
        );
    }
    assert!(reviewed.answers(root).is_empty());
    assert_eq!(chat_requests(&reviewed), 0);
}
