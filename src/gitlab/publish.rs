//! GitLab's side of publishing ([`crate::forge::publish`] decides what is posted): Redline's
//! discussions and summary note read back, one discussion per inline finding on a line of
//! the diff, and the summary note created or edited in place.
//!
//! Invariants: only notes by the token's own user count as Redline's (a marker planted by
//! anyone else counts for nothing); resolved discussions count as dismissed; a position
//! GitLab refuses (400), or a finding without diff refs to place it with, moves to the
//! summary. GitLab has no "request changes" on notes: `request_changes_at` is not applied.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::GitLabMergeRequest;
use super::merge_request::merge_request_path;
use super::path_segment;
use super::position::{discussion_body, position};
use crate::forge::dismissed::ReviewThread;
use crate::forge::fingerprint::{concern_of_comment, parse_markers};
use crate::forge::publish::Plan;
use crate::forge::summary::{SummaryEntry, is_summary};
use crate::forge::{Earlier, SummaryComment};
use crate::forge::{PublishError, PublishOutcome, PublishRequest};

/// Redline's discussions and summary note on the merge request (one listing).
pub(crate) async fn earlier(mr: &GitLabMergeRequest<'_>) -> Result<Earlier, PublishError> {
    let own = mr.client.own_username().await?;
    let path = format!("{}/discussions", merge_request_path(mr.project, mr.iid));
    let discussions = mr.client.get_all_pages(&path).await?;
    let mut earlier = Earlier::default();
    for discussion in &discussions {
        let notes = discussion["notes"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let Some(first) = notes
            .first()
            .filter(|n| n["author"]["username"] == json!(own))
        else {
            continue;
        };
        let body = first["body"].as_str().unwrap_or_default();
        if is_summary(body) {
            if earlier.summary.is_none()
                && let Some(id) = first["id"].as_u64()
            {
                earlier.summary = Some(SummaryComment {
                    id,
                    body: body.to_string(),
                    url: None,
                });
            }
            continue;
        }
        let markers = parse_markers(body);
        if markers.is_empty() {
            continue;
        }
        earlier.known.extend(markers.iter().cloned());
        if let Some(id) = discussion["id"].as_str() {
            earlier.threads.push(thread_of(id, first, markers, body));
        }
    }
    Ok(earlier)
}

/// A discussion of Redline's with its keys (fingerprints and the concern key).
fn thread_of(id: &str, first: &Value, markers: Vec<String>, body: &str) -> ReviewThread {
    let path = first["position"]["new_path"].as_str().unwrap_or_default();
    let mut keys = markers;
    keys.extend(concern_of_comment(path, body));
    ReviewThread {
        id: id.to_string(),
        is_resolved: first["resolved"] == json!(true),
        // GitLab does not say; outdated discussions are not resolved by Redline here.
        is_outdated: false,
        keys,
    }
}

/// One discussion per inline finding; a finding GitLab cannot place (400, or no diff
/// refs to place it with) moves to the summary.
pub(crate) async fn post_discussions<'f>(
    mr: &GitLabMergeRequest<'_>,
    req: &PublishRequest<'f>,
    plan: &mut Plan<'f>,
    outcome: &mut PublishOutcome,
) -> Result<(), PublishError> {
    let path = format!("{}/discussions", merge_request_path(mr.project, mr.iid));
    let interval = req.config.min_write_interval;
    let mut refused = Vec::new();
    for (finding, fp) in plan.inline.drain(..) {
        let placed = mr
            .diff_refs
            .and_then(|refs| position(finding, refs, req.changes));
        let Some(position) = placed else {
            refused.push((finding, fp));
            continue;
        };
        let body = json!({ "body": discussion_body(finding, &fp), "position": position });
        match mr
            .client
            .write_json(Method::POST, &path, &body, interval)
            .await
        {
            Ok(_) => outcome.inline_posted += 1,
            Err(error) if error.status() == Some(400) => {
                tracing::warn!(%error, path = %finding.path, line = finding.line,
                    "GitLab refused the position; the finding goes to the summary");
                refused.push((finding, fp));
            }
            Err(error) => return Err(error.into()),
        }
    }
    if !refused.is_empty() {
        outcome.fell_back_to_summary_only = outcome.inline_posted == 0;
        plan.summary
            .extend(refused.into_iter().map(|(finding, fp)| SummaryEntry {
                finding,
                fp,
                reason: "GitLab could not place it on its diff".into(),
                quiet: false,
            }));
        plan.summary
            .sort_by_key(|entry| std::cmp::Reverse(entry.finding.severity));
    }
    Ok(())
}

/// Creates the summary note or edits it in place.
pub(crate) async fn write_summary(
    mr: &GitLabMergeRequest<'_>,
    existing: Option<&SummaryComment>,
    body: &str,
    interval: Duration,
) -> Result<Option<String>, PublishError> {
    let base = merge_request_path(mr.project, mr.iid);
    let body = json!({ "body": body });
    let (method, path) = match existing {
        Some(note) => (Method::PUT, format!("{base}/notes/{}", note.id)),
        None => (Method::POST, format!("{base}/notes")),
    };
    mr.client.write_json(method, &path, &body, interval).await?;
    // GitLab's answer names no page of the note.
    Ok(None)
}

/// Resolves discussion `id`.
pub(crate) async fn resolve(mr: &GitLabMergeRequest<'_>, id: &str) -> Result<(), PublishError> {
    let path = format!(
        "{}/discussions/{}?resolved=true",
        merge_request_path(mr.project, mr.iid),
        path_segment(id)
    );
    let interval = crate::forge::PublishConfig::default().min_write_interval;
    mr.client
        .write_json(Method::PUT, &path, &json!({}), interval)
        .await?;
    Ok(())
}
