//! Publishing reviews against the mock GitHub API; App authentication and
//! Actions events in the submodules.

mod app;
mod events;

use redline::forge::dismissed::Dismissals;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redline::forge::{
    ApiFailure, PublishConfig, PublishError, PublishOutcome, PublishRequest, RateLimitPolicy,
    Sleeper, parse_markers,
};
use redline::github::{GitHubClient, publish_review, pull_last_reviewed_sha};
use redline::llm::Secret;
use redline::review::diff::{ChangeSet, DiffLine, FileChange, FileStatus, Hunk, LineKind};
use redline::review::finding::{Category, Finding, Severity, Side};

use crate::common::github_mock::GitHubMock;

const TOKEN: &str = "ghp_test_token_do_not_print_0123456789";
const OWNER: &str = "octo";
const REPO: &str = "demo";
const PR: u64 = 7;
const HEAD_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const HEAD_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const PRIVATE_KEY: &str = include_str!("fixtures/github/TEST-ONLY-app-private-key.pem");
const PUBLIC_KEY: &str = include_str!("fixtures/github/TEST-ONLY-app-public-key.pem");

/// Waits requested by the client, recorded instead of slept.
type Waits = Arc<Mutex<Vec<Duration>>>;

fn fast_policy(waits: &Waits) -> RateLimitPolicy {
    let recorded = waits.clone();
    RateLimitPolicy {
        base_delay: Duration::from_millis(1),
        max_total_wait: Duration::from_secs(30),
        max_retries: 3,
        min_write_interval: Duration::from_millis(1),
        sleeper: Sleeper::new(move |d| {
            recorded.lock().unwrap().push(d);
            Box::pin(async {})
        }),
    }
}

fn client(gh: &GitHubMock) -> (GitHubClient, Waits) {
    let waits = Waits::default();
    let client = GitHubClient::with_token(&gh.url(), Secret::new(TOKEN))
        .unwrap()
        .with_rate_limit_policy(fast_policy(&waits));
    (client, waits)
}

/// `src/lib.rs` with head lines 10..=20 added; `src/gone.bin` binary.
fn changes() -> ChangeSet {
    let lines = (10..=20)
        .map(|n| DiffLine {
            kind: LineKind::Added,
            old_line: None,
            new_line: Some(n),
            text: format!("line {n}"),
        })
        .collect();
    ChangeSet {
        base: "base".into(),
        head: Some(HEAD_A.into()),
        files: vec![FileChange {
            path: "src/lib.rs".into(),
            old_path: None,
            status: FileStatus::Modified,
            binary: false,
            hunks: vec![Hunk {
                old_start: 9,
                old_lines: 0,
                new_start: 10,
                new_lines: 11,
                header: String::new(),
                lines,
            }],
        }],
    }
}

fn head_line(_path: &str, n: u32) -> Option<String> {
    Some(format!("line {n}"))
}

fn finding(path: &str, start_line: u32, line: u32, severity: Severity, title: &str) -> Finding {
    Finding {
        path: path.into(),
        line,
        start_line,
        side: Side::Right,
        severity,
        category: Category::Bug,
        title: title.into(),
        body: format!("Why {title} matters."),
        suggestion: None,
        rule: None,
        unverified: false,
    }
}

async fn publish(
    client: &GitHubClient,
    head: &str,
    findings: &[Finding],
    config: &PublishConfig,
) -> Result<PublishOutcome, PublishError> {
    let changes = changes();
    publish_review(
        client,
        OWNER,
        REPO,
        PR,
        PublishRequest {
            head_sha: head,
            findings,
            summary: "Overall fine.",
            walkthrough: &[],
            stats: None,
            changes: &changes,
            head_line_text: &head_line,
            config,
            reviewed_range: None,
            dismissed: &Dismissals::new(),
            resolve_outdated: false,
        },
    )
    .await
}

fn config() -> PublishConfig {
    PublishConfig {
        min_write_interval: Duration::from_millis(1),
        ..PublishConfig::default()
    }
}

fn summary_body(gh: &GitHubMock) -> String {
    let comments = gh.issue_comments();
    assert_eq!(comments.len(), 1, "exactly one summary comment");
    comments[0]["body"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn posts_one_review_with_github_fields_and_suggestion() {
    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    let mut ranged = finding("src/lib.rs", 12, 14, Severity::Major, "Range issue");
    ranged.suggestion = Some("fixed 12\nfixed 13\nfixed 14\n".into());
    let single = finding("src/lib.rs", 18, 18, Severity::Minor, "Single line");
    let outcome = publish(&client, HEAD_A, &[single, ranged], &config())
        .await
        .unwrap();

    assert_eq!(outcome.inline_posted, 2);
    assert_eq!(outcome.in_summary, 0);
    assert!(!outcome.fell_back_to_summary_only);
    assert!(outcome.review_url.unwrap().contains("pullrequestreview"));
    let reviews = gh.reviews();
    assert_eq!(reviews.len(), 1);
    let review = &reviews[0];
    assert_eq!(review["commit_id"], HEAD_A);
    assert_eq!(review["event"], "COMMENT");
    assert!(review["body"].as_str().unwrap().contains("summary comment"));
    let comments = review["comments"].as_array().unwrap();
    // Most severe first.
    let range = &comments[0];
    assert_eq!(range["path"], "src/lib.rs");
    assert_eq!(range["line"], 14);
    assert_eq!(range["side"], "RIGHT");
    assert_eq!(range["start_line"], 12);
    assert_eq!(range["start_side"], "RIGHT");
    let body = range["body"].as_str().unwrap();
    assert!(body.contains("Range issue"));
    assert!(
        body.contains("```suggestion\nfixed 12\nfixed 13\nfixed 14\n```"),
        "{body}"
    );
    assert_eq!(parse_markers(body).len(), 1);
    let one = &comments[1];
    assert_eq!(one["line"], 18);
    assert!(one.get("start_line").is_none());
    for comment in comments {
        assert!(comment.get("position").is_none());
    }
    let summary = summary_body(&gh);
    assert!(summary.contains("Overall fine."));
    assert_eq!(
        pull_last_reviewed_sha(&client, OWNER, REPO, PR)
            .await
            .unwrap()
            .as_deref(),
        Some(HEAD_A)
    );
}

#[tokio::test]
async fn findings_outside_the_diff_go_to_the_summary() {
    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    let findings = [
        finding("src/lib.rs", 11, 11, Severity::Major, "Inside"),
        finding("src/lib.rs", 99, 99, Severity::Critical, "Below the hunk"),
        finding("src/other.rs", 3, 3, Severity::Minor, "Unchanged file"),
        finding("src/lib.rs", 19, 22, Severity::Minor, "Runs past the hunk"),
    ];
    let outcome = publish(&client, HEAD_A, &findings, &config())
        .await
        .unwrap();
    assert_eq!(outcome.inline_posted, 1);
    assert_eq!(outcome.in_summary, 3);
    let summary = summary_body(&gh);
    for location in ["src/lib.rs:99", "src/other.rs:3", "src/lib.rs:19-22"] {
        assert!(
            summary.contains(location),
            "{location} missing from {summary}"
        );
    }
    assert_eq!(parse_markers(&summary).len(), 3);
    assert_eq!(gh.reviews()[0]["comments"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn refused_anchors_fall_back_to_summary_only() {
    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    gh.fail_next_review_with_422();
    let findings = [
        finding("src/lib.rs", 11, 11, Severity::Major, "First"),
        finding("src/lib.rs", 15, 16, Severity::Minor, "Second"),
    ];
    let outcome = publish(&client, HEAD_A, &findings, &config())
        .await
        .unwrap();
    assert!(outcome.fell_back_to_summary_only);
    assert_eq!(outcome.inline_posted, 0);
    assert_eq!(outcome.in_summary, 2);
    assert!(outcome.review_url.is_some());
    let reviews = gh.reviews();
    assert_eq!(reviews.len(), 1, "only the fallback review was accepted");
    assert!(reviews[0]["comments"].as_array().unwrap().is_empty());
    let summary = summary_body(&gh);
    assert!(summary.contains("First") && summary.contains("Second"));
    assert_eq!(parse_markers(&summary).len(), 2);
}

#[tokio::test]
async fn rerun_on_the_same_head_posts_nothing() {
    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    let findings = [
        finding("src/lib.rs", 11, 11, Severity::Major, "Inline one"),
        finding("src/other.rs", 1, 1, Severity::Minor, "Summary one"),
    ];
    publish(&client, HEAD_A, &findings, &config())
        .await
        .unwrap();
    let writes_after_first = gh.writes().len();
    assert_eq!(writes_after_first, 2, "one review and one summary comment");

    let again = publish(&client, HEAD_A, &findings, &config())
        .await
        .unwrap();
    assert_eq!(gh.writes().len(), writes_after_first, "no write on rerun");
    assert_eq!(again.skipped_duplicates, 2);
    assert_eq!(again.inline_posted, 0);
    assert_eq!(again.review_url, None);
}

#[tokio::test]
async fn new_head_posts_only_the_new_finding_and_edits_the_summary() {
    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    let old = finding("src/lib.rs", 11, 11, Severity::Major, "Old issue");
    publish(&client, HEAD_A, std::slice::from_ref(&old), &config())
        .await
        .unwrap();
    let summary_id = gh.issue_comments()[0]["id"].clone();

    let new = finding("src/lib.rs", 13, 13, Severity::Minor, "New issue");
    let outcome = publish(&client, HEAD_B, &[old, new], &config())
        .await
        .unwrap();
    assert_eq!(outcome.inline_posted, 1);
    assert_eq!(outcome.skipped_duplicates, 1);

    let reviews = gh.reviews();
    assert_eq!(reviews.len(), 2);
    let second = reviews[1]["comments"].as_array().unwrap();
    assert_eq!(second.len(), 1);
    assert!(second[0]["body"].as_str().unwrap().contains("New issue"));
    assert_eq!(reviews[1]["commit_id"], HEAD_B);

    let writes = gh.writes();
    let summary_posts = writes
        .iter()
        .filter(|w| w.method == "POST" && w.path.ends_with("/issues/7/comments"))
        .count();
    assert_eq!(summary_posts, 1, "the summary is created once");
    let last = writes.last().unwrap();
    assert_eq!(last.method, "PATCH");
    assert!(
        last.path
            .ends_with(&format!("/issues/comments/{summary_id}"))
    );
    assert_eq!(gh.issue_comments()[0]["id"], summary_id);
    assert_eq!(
        pull_last_reviewed_sha(&client, OWNER, REPO, PR)
            .await
            .unwrap()
            .as_deref(),
        Some(HEAD_B)
    );
}

#[tokio::test]
async fn overflow_goes_to_the_summary_by_severity() {
    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    let config = PublishConfig {
        max_comments: 2,
        ..config()
    };
    let findings = [
        finding("src/lib.rs", 11, 11, Severity::Minor, "Least"),
        finding("src/lib.rs", 12, 12, Severity::Critical, "Worst"),
        finding("src/lib.rs", 13, 13, Severity::Major, "Bad"),
    ];
    let outcome = publish(&client, HEAD_A, &findings, &config).await.unwrap();
    assert_eq!((outcome.inline_posted, outcome.in_summary), (2, 1));
    let bodies: Vec<String> = gh.reviews()[0]["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["body"].as_str().unwrap().to_string())
        .collect();
    assert!(bodies[0].contains("Worst") && bodies[1].contains("Bad"));
    let summary = summary_body(&gh);
    assert!(summary.contains("Least") && summary.contains("over the limit of 2"));
}

#[tokio::test]
async fn severe_findings_request_changes() {
    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    let config = PublishConfig {
        request_changes_at: Some(Severity::Major),
        ..config()
    };
    let findings = [finding("src/lib.rs", 11, 11, Severity::Critical, "Hole")];
    publish(&client, HEAD_A, &findings, &config).await.unwrap();
    assert_eq!(gh.reviews()[0]["event"], "REQUEST_CHANGES");
}

#[tokio::test]
async fn read_only_token_is_forbidden() {
    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    gh.forbid_writes();
    let findings = [finding("src/lib.rs", 11, 11, Severity::Major, "X")];
    match publish(&client, HEAD_A, &findings, &config()).await {
        Err(PublishError::Forbidden { message }) => {
            assert!(
                message.contains("Resource not accessible by integration"),
                "{message}"
            );
        }
        other => panic!("expected Forbidden, got {other:?}"),
    }
}

#[tokio::test]
async fn secondary_rate_limit_is_waited_out() {
    let gh = GitHubMock::start().await;
    let (client, waits) = client(&gh);
    gh.rate_limit_next_write(1);
    let findings = [finding("src/lib.rs", 11, 11, Severity::Major, "X")];
    let outcome = publish(&client, HEAD_A, &findings, &config())
        .await
        .unwrap();
    assert_eq!(outcome.inline_posted, 1);
    assert_eq!(gh.reviews().len(), 1);
    let review_posts = gh
        .writes()
        .iter()
        .filter(|w| w.path.ends_with("/reviews"))
        .count();
    assert_eq!(review_posts, 2, "refused once, then accepted");
    assert!(
        waits.lock().unwrap().contains(&Duration::from_secs(1)),
        "waited retry-after"
    );
}

#[tokio::test]
async fn rate_limit_beyond_the_allowed_wait_gives_up() {
    let gh = GitHubMock::start().await;
    let waits = Waits::default();
    let policy = RateLimitPolicy {
        max_total_wait: Duration::from_millis(500),
        ..fast_policy(&waits)
    };
    let client = GitHubClient::with_token(&gh.url(), Secret::new(TOKEN))
        .unwrap()
        .with_rate_limit_policy(policy);
    gh.rate_limit_next_write(1);
    let findings = [finding("src/lib.rs", 11, 11, Severity::Major, "X")];
    let error = publish(&client, HEAD_A, &findings, &config())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, PublishError::Api(e) if matches!(e.failure(), ApiFailure::RateLimited { .. })),
        "{error:?}"
    );
    assert!(
        waits.lock().unwrap().is_empty(),
        "did not wait past the limit"
    );
}

#[tokio::test]
async fn writes_are_spaced_by_the_minimum_interval() {
    let gh = GitHubMock::start().await;
    let (client, waits) = client(&gh);
    let config = PublishConfig {
        min_write_interval: Duration::from_secs(3600),
        ..config()
    };
    let findings = [finding("src/lib.rs", 11, 11, Severity::Major, "X")];
    publish(&client, HEAD_A, &findings, &config).await.unwrap();
    assert_eq!(gh.writes().len(), 2);
    let waits = waits.lock().unwrap();
    assert_eq!(waits.len(), 1, "the second write waited for the first");
    assert!(waits[0] > Duration::from_secs(3500));
}

#[tokio::test]
async fn other_errors_carry_message_and_path_but_no_token() {
    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    gh.fail_next(400, &format!("Problems parsing JSON near {TOKEN}"));
    let findings = [finding("src/lib.rs", 11, 11, Severity::Major, "X")];
    let error = publish(&client, HEAD_A, &findings, &config())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(matches!(&error, PublishError::Api(e) if e.status() == Some(400)));
    assert!(text.contains("Problems parsing JSON"), "{text}");
    assert!(
        text.contains("GET /repos/octo/demo/pulls/7/comments"),
        "{text}"
    );
    assert!(
        !text.contains(TOKEN) && !format!("{error:?}").contains(TOKEN),
        "{text}"
    );
    assert!(!format!("{client:?}").contains(TOKEN));
}

#[tokio::test]
async fn finds_the_summary_on_a_later_page() {
    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    for i in 0..120 {
        gh.add_issue_comment(OWNER, REPO, PR, &format!("chatter {i}"));
    }
    publish(&client, HEAD_A, &[], &config()).await.unwrap();
    assert_eq!(
        pull_last_reviewed_sha(&client, OWNER, REPO, PR)
            .await
            .unwrap()
            .as_deref(),
        Some(HEAD_A)
    );
    let listed_pages = gh
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/issues/7/comments") && r.method == "GET")
        .filter(|r| r.query.as_deref().is_some_and(|q| q.contains("page=2")))
        .count();
    assert!(listed_pages >= 1, "followed the Link header");
    // No findings, no review: just the summary.
    assert!(gh.reviews().is_empty());
}

#[tokio::test]
async fn a_summary_forged_by_a_user_silences_nothing() {
    // Redline's real summary of a review, copied by a user into a comment of their own
    // before Redline's first review: its fingerprints and last head must not count.
    let findings = [finding("src/lib.rs", 11, 11, Severity::Major, "Inline one")];
    let elsewhere = GitHubMock::start().await;
    let (other, _) = client(&elsewhere);
    publish(&other, HEAD_A, &findings, &config()).await.unwrap();
    let forged = summary_body(&elsewhere);

    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    gh.add_issue_comment(OWNER, REPO, PR, &forged);
    let outcome = publish(&client, HEAD_A, &findings, &config())
        .await
        .unwrap();
    assert_eq!(outcome.inline_posted, 1, "{outcome:?}");
    assert_eq!(outcome.skipped_duplicates, 0);
    let comments = gh.issue_comments();
    assert_eq!(
        comments.len(),
        2,
        "Redline's own summary next to the user's"
    );
    assert_eq!(
        comments[0]["body"].as_str(),
        Some(forged.as_str()),
        "not edited"
    );
}

#[tokio::test]
async fn a_summary_planted_by_another_bot_silences_nothing() {
    let findings = [finding("src/lib.rs", 11, 11, Severity::Major, "Inline one")];
    let elsewhere = GitHubMock::start().await;
    let (other, _) = client(&elsewhere);
    publish(&other, HEAD_A, &findings, &config()).await.unwrap();
    let forged = summary_body(&elsewhere);

    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    gh.add_issue_comment_as(OWNER, REPO, PR, &forged, "other-app[bot]");
    let outcome = publish(&client, HEAD_A, &findings, &config())
        .await
        .unwrap();
    assert_eq!(outcome.inline_posted, 1, "{outcome:?}");
    assert_eq!(outcome.skipped_duplicates, 0);
    let comments = gh.issue_comments();
    assert_eq!(comments.len(), 2, "Redline's own summary next to the bot's");
    assert_eq!(comments[0]["body"].as_str(), Some(forged.as_str()));
    assert_eq!(
        pull_last_reviewed_sha(&client, OWNER, REPO, PR)
            .await
            .unwrap()
            .as_deref(),
        Some(HEAD_A)
    );
}

#[tokio::test]
async fn a_user_s_review_comment_with_a_copied_marker_silences_nothing() {
    let findings = [finding("src/lib.rs", 11, 11, Severity::Major, "Inline one")];
    let elsewhere = GitHubMock::start().await;
    let (other, _) = client(&elsewhere);
    publish(&other, HEAD_A, &findings, &config()).await.unwrap();
    let copied = elsewhere.review_comments()[0]["body"]
        .as_str()
        .unwrap()
        .to_string();

    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    gh.add_review_comment(OWNER, REPO, PR, "mallory", &copied, None);
    let outcome = publish(&client, HEAD_A, &findings, &config())
        .await
        .unwrap();
    assert_eq!(outcome.inline_posted, 1, "{outcome:?}");
    assert_eq!(outcome.skipped_duplicates, 0);
}

fn assert_send<T: Send>(_: &T) {}

#[tokio::test]
async fn publishing_can_run_on_spawned_tasks() {
    let gh = GitHubMock::start().await;
    let (client, _) = client(&gh);
    let config = config();
    let changes = changes();
    let dismissed = Dismissals::new();
    let future = publish_review(
        &client,
        OWNER,
        REPO,
        PR,
        PublishRequest {
            head_sha: HEAD_A,
            findings: &[],
            summary: "",
            walkthrough: &[],
            stats: None,
            changes: &changes,
            head_line_text: &head_line,
            config: &config,
            reviewed_range: None,
            dismissed: &dismissed,
            resolve_outdated: false,
        },
    );
    assert_send(&future);
    let lookup = pull_last_reviewed_sha(&client, OWNER, REPO, PR);
    assert_send(&lookup);
    assert_eq!(future.await.unwrap().inline_posted, 0);
    assert_eq!(lookup.await.unwrap().as_deref(), Some(HEAD_A));
}
