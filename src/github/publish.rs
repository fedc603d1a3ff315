//! Publishing a review on a pull request: one review with inline comments, one
//! summary comment edited in place, nothing posted twice. What is posted is decided by
//! [`crate::forge::publish`] (shared with GitLab); this module is GitHub's side of it.
//!
//! A run posts (each write paced by [`crate::forge::publish::PublishConfig::min_write_interval`]):
//! 1. one review (`POST .../pulls/{n}/reviews`, `commit_id` = head) holding the
//!    new findings whose anchors lie within one diff hunk, most severe first, at
//!    most [`crate::forge::publish::PublishConfig::max_comments`]; no review when there is no inline
//!    comment and no change request;
//! 2. the summary issue comment, created once and then edited in place, holding
//!    the run's walkthrough of the change and the engine's summary, the last reviewed head SHA and every finding not
//!    posted inline (outside the diff, over the limit, refused by GitHub),
//!    including earlier runs' entries.
//!
//! Idempotence rests on hidden fingerprint markers: any marker found in the
//! pull request's review comments or in the summary comment counts as posted.
//! A rerun on the head already recorded with nothing new writes nothing.
//!
//! Dismissed findings are not raised again, even when their line changed (their concern
//! key matches): those of [`PublishRequest::dismissed`] (the App's database), of the
//! summary comment's dismissal marker (the Action's store, carried over on every edit)
//! and of the review threads GitHub reports resolved (GraphQL; unknown when it fails).
//! With [`PublishRequest::resolve_outdated`], Redline's outdated threads whose finding
//! this run did not raise again are resolved.
//!
//! Base-side (`LEFT`) findings are anchored on the base side of their hunk,
//! without a suggestion block (a suggestion replaces head lines).

use std::collections::HashSet;
use std::time::Duration;

use axum::http::Method;
use serde_json::{Value, json};

use super::GitHubPull;
use super::client::GitHubClient;
use super::error::{GitHubError, as_publish_error};
use super::review_comment::review_comment;
use super::review_threads::review_threads;
use crate::forge::anchor::describe_anchor;
use crate::forge::dismissed::{ReviewThread, parse_dismissed, with_dismissed};
use crate::forge::fingerprint::parse_markers;
use crate::forge::publish::{Plan, PublishError, PublishOutcome, PublishRequest};
use crate::forge::summary::{SUMMARY_MARKER, SummaryEntry, is_summary, review_body};
use crate::forge::{Earlier, SummaryComment};

/// Publishes one run's review on pull request `owner/repo#number`. See the module
/// documentation for what is posted.
pub async fn publish_review(
    client: &GitHubClient,
    owner: &str,
    repo: &str,
    number: u64,
    req: PublishRequest<'_>,
) -> Result<PublishOutcome, PublishError> {
    let pull = GitHubPull::at(client, owner, repo, number);
    crate::forge::publish::publish(&pull, req).await
}

/// The head SHA the last published review covered, from the summary comment (the
/// forge-neutral reading, on pull request `pr_number`).
pub async fn pull_last_reviewed_sha(
    client: &GitHubClient,
    owner: &str,
    repo: &str,
    pr_number: u64,
) -> Result<Option<String>, PublishError> {
    let pull = GitHubPull::at(client, owner, repo, pr_number);
    crate::forge::publish::last_reviewed_sha(&pull).await
}

/// Adds `keys` to the dismissal marker of the pull request's summary comment (created when
/// there is none yet): the Action's store of dismissed findings.
pub(crate) async fn record_dismissed(
    client: &GitHubClient,
    owner: &str,
    repo: &str,
    pr_number: u64,
    keys: &[String],
) -> Result<(), GitHubError> {
    let pull = GitHubPull::at(client, owner, repo, pr_number);
    let repo_path = pull.repo_path();
    let existing = summary_comment(&pull).await?;
    let mut dismissed = existing
        .as_ref()
        .map(|s| parse_dismissed(&s.body))
        .unwrap_or_default();
    dismissed.extend(keys.iter().cloned());
    match existing {
        Some(summary) => {
            let body = with_dismissed(&summary.body, &dismissed);
            if body != summary.body {
                let path = format!("{repo_path}/issues/comments/{}", summary.id);
                client.patch_json(&path, &json!({ "body": body })).await?;
            }
        }
        None => {
            let body = with_dismissed(SUMMARY_MARKER, &dismissed);
            let path = format!("{repo_path}/issues/{pr_number}/comments");
            client.post_json(&path, &json!({ "body": body })).await?;
        }
    }
    Ok(())
}

/// Redline's review comments' fingerprints, its summary comment and the review threads
/// (GraphQL; none when it fails), read in that order.
pub(crate) async fn earlier(pull: &GitHubPull<'_>) -> Result<Earlier, PublishError> {
    let known = review_comment_markers(pull)
        .await
        .map_err(as_publish_error)?;
    let summary = find_summary(pull).await?;
    let threads = threads_or_none(pull).await;
    Ok(Earlier {
        known,
        summary,
        threads,
    })
}

/// Redline's summary comment, with GitHub's refusals mapped as publishing errors.
pub(crate) async fn find_summary(
    pull: &GitHubPull<'_>,
) -> Result<Option<SummaryComment>, PublishError> {
    summary_comment(pull).await.map_err(as_publish_error)
}

/// The review threads, when `GraphQL` answers (they are optional knowledge).
async fn threads_or_none(pull: &GitHubPull<'_>) -> Vec<ReviewThread> {
    let (owner, repo) = (pull.text.owner, pull.text.repo);
    match review_threads(pull.client, owner, repo, pull.number).await {
        Ok(threads) => threads,
        Err(error) => {
            tracing::info!(%error, "review threads not read; resolved threads are not known");
            Vec::new()
        }
    }
}

/// Posts the review; when GitHub refuses its anchors (422), posts it again
/// without inline comments and moves them to the summary.
pub(crate) async fn post_review<'f>(
    pull: &GitHubPull<'_>,
    req: &PublishRequest<'f>,
    plan: &mut Plan<'f>,
    summary_url: Option<&str>,
    outcome: &mut PublishOutcome,
) -> Result<(), PublishError> {
    let client = pull.client;
    let path = format!("{}/pulls/{}/reviews", pull.repo_path(), pull.number);
    let interval = req.config.min_write_interval;
    let mut event = if plan.request_changes {
        "REQUEST_CHANGES"
    } else {
        "COMMENT"
    };
    let comments: Vec<Value> = plan
        .inline
        .iter()
        .map(|(finding, fp)| review_comment(finding, fp))
        .collect();
    let mut review = json!({
        "commit_id": req.head_sha,
        "event": event,
        "body": review_body(comments.len(), summary_url, false, req.walkthrough),
        "comments": comments,
    });
    let mut answer = client
        .write_json(Method::POST, &path, &review, interval)
        .await;
    if event == "REQUEST_CHANGES" && refuses_own_pull_request(&answer) {
        // GitHub does not let authors request changes on their own pull request.
        event = "COMMENT";
        review["event"] = json!(event);
        answer = client
            .write_json(Method::POST, &path, &review, interval)
            .await;
    }
    match answer {
        Ok(posted) => {
            outcome.review_url = html_url(&posted);
            outcome.inline_posted = plan.inline.len();
            return Ok(());
        }
        Err(error) if error.status() == Some(422) && !plan.inline.is_empty() => {
            let anchors: Vec<String> = plan
                .inline
                .iter()
                .map(|(f, _)| describe_anchor(f))
                .collect();
            tracing::warn!(
                error = %error,
                anchors = %anchors.join(", "),
                "GitHub refused the inline comments; posting every finding in the summary"
            );
        }
        Err(error) if error.status() == Some(422) => {
            // A verdict-only review adds nothing the summary does not carry.
            tracing::warn!(error = %error, "GitHub refused the review; the summary carries the findings");
            return Ok(());
        }
        Err(error) => return Err(as_publish_error(error)),
    }

    post_summary_only(client, req, &path, plan, summary_url, event, outcome).await
}

/// After GitHub refused the inline comments: every finding moves to the summary and
/// the review is posted again without comments.
async fn post_summary_only<'f>(
    client: &GitHubClient,
    req: &PublishRequest<'f>,
    path: &str,
    plan: &mut Plan<'f>,
    summary_url: Option<&str>,
    event: &str,
    outcome: &mut PublishOutcome,
) -> Result<(), PublishError> {
    let interval = req.config.min_write_interval;
    outcome.fell_back_to_summary_only = true;
    let moved = plan.inline.drain(..).map(|(finding, fp)| SummaryEntry {
        finding,
        fp,
        reason: "GitHub could not place it on its diff".into(),
        quiet: false,
    });
    let moved: Vec<SummaryEntry<'f>> = moved.collect();
    plan.summary.splice(0..0, moved);
    plan.summary
        .sort_by_key(|entry| std::cmp::Reverse(entry.finding.severity));
    let fallback = json!({
        "commit_id": req.head_sha,
        "event": event,
        "body": review_body(0, summary_url, true, req.walkthrough),
        "comments": [],
    });
    match client
        .write_json(Method::POST, path, &fallback, interval)
        .await
    {
        Ok(posted) => outcome.review_url = html_url(&posted),
        // The summary still carries every finding; a missing review loses nothing.
        Err(error) if error.status() == Some(422) => {
            tracing::warn!(error = %error, "GitHub refused the summary-only review too");
        }
        Err(error) => return Err(as_publish_error(error)),
    }
    Ok(())
}

fn refuses_own_pull_request(answer: &Result<Value, GitHubError>) -> bool {
    matches!(answer, Err(e) if e.status() == Some(422)
        && e.api_message().is_some_and(|m| m.contains("own pull request")))
}

/// Creates the summary comment or edits it in place.
pub(crate) async fn write_summary(
    pull: &GitHubPull<'_>,
    existing: Option<&SummaryComment>,
    body: &str,
    interval: Duration,
) -> Result<Option<String>, PublishError> {
    let body = json!({ "body": body });
    let repo_path = pull.repo_path();
    let written = match existing {
        Some(summary) => {
            let path = format!("{repo_path}/issues/comments/{}", summary.id);
            pull.client
                .write_json(Method::PATCH, &path, &body, interval)
                .await
        }
        None => {
            let path = format!("{repo_path}/issues/{}/comments", pull.number);
            pull.client
                .write_json(Method::POST, &path, &body, interval)
                .await
        }
    };
    written
        .map(|comment| html_url(&comment))
        .map_err(as_publish_error)
}

/// Fingerprints in the pull request's review comments.
async fn review_comment_markers(pull: &GitHubPull<'_>) -> Result<HashSet<String>, GitHubError> {
    let path = format!("{}/pulls/{}/comments", pull.repo_path(), pull.number);
    let comments = pull.client.get_all_pages(&path).await?;
    // A user's (or another bot's) comment carrying a copied marker must not pass for
    // Redline's finding.
    let own = pull.client.own_logins().await;
    Ok(comments
        .iter()
        .filter(|c| is_own(c, own.as_deref()))
        .filter_map(|c| c.get("body").and_then(Value::as_str))
        .flat_map(parse_markers)
        .collect())
}

/// Redline's summary comment on the pull request (the oldest, if several).
async fn summary_comment(pull: &GitHubPull<'_>) -> Result<Option<SummaryComment>, GitHubError> {
    let path = format!("{}/issues/{}/comments", pull.repo_path(), pull.number);
    let comments = pull.client.get_all_pages(&path).await?;
    // Only Redline's own comment is its summary: anyone who may comment (another bot
    // included) could otherwise plant the marker with forged fingerprints, dismissals or
    // a last reviewed head, and silence findings.
    let own = pull.client.own_logins().await;
    Ok(comments
        .iter()
        .filter(|c| is_own(c, own.as_deref()))
        .find_map(|c| {
            let body = c.get("body").and_then(Value::as_str)?;
            let id = c.get("id").and_then(Value::as_u64)?;
            is_summary(body).then(|| SummaryComment {
                id,
                body: body.to_string(),
                url: html_url(c),
            })
        }))
}

/// Whether Redline wrote `comment`: one of its `own` logins (see
/// [`GitHubClient::own_logins`]); while those are unknown, any bot.
fn is_own(comment: &Value, own: Option<&[String]>) -> bool {
    match own {
        Some(logins) => comment["user"]["login"]
            .as_str()
            .is_some_and(|login| logins.iter().any(|own| own.eq_ignore_ascii_case(login))),
        None => by_bot(comment),
    }
}

/// Whether a bot (an App, or the Action's `github-actions[bot]`) wrote `comment`.
fn by_bot(comment: &Value) -> bool {
    let user = &comment["user"];
    user["type"] == "Bot" || user["login"].as_str().is_some_and(|l| l.ends_with("[bot]"))
}

fn html_url(value: &Value) -> Option<String> {
    value
        .get("html_url")
        .and_then(Value::as_str)
        .map(str::to_string)
}
