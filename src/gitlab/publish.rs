//! Publishing a review on a merge request: one discussion per new finding on a line of
//! the diff, and one summary note found again by its hidden marker and edited in place.
//!
//! The plan is GitHub's ([`crate::github::publish::plan`]): the same fingerprints, dismissal
//! keys, limits and summary, so a change gets the same findings on either forge.
//! Idempotence rests on the hidden fingerprint markers in Redline's own notes (the token's
//! user's: a marker planted by anyone else counts for nothing); a rerun on the head
//! already recorded with nothing new writes nothing. Resolved discussions count as
//! dismissed. A position GitLab refuses (400) moves its finding to the summary.
//! GitLab has no "request changes" on notes: `request_changes_at` is not applied here.

use std::collections::HashSet;

use reqwest::Method;
use serde_json::json;

use super::client::{GitLabClient, GitLabError};
use super::merge_request::{DiffRefs, merge_request_path};
use super::position::{discussion_body, position};
use crate::github::dismissed::{Dismissals, parse_dismissed, with_dismissed};
use crate::github::fingerprint::{concern_of_comment, parse_markers};
use crate::github::publish::{Plan, plan};
use crate::github::summary::{
    SummaryEntry, SummaryInput, is_summary, parse_last_sha, render_summary,
};
use crate::github::{PublishError, PublishOutcome, PublishRequest};

/// Redline's summary note as it is on GitLab.
#[derive(Debug)]
pub(crate) struct ExistingNote {
    pub(crate) id: u64,
    pub(crate) body: String,
}

/// What Redline wrote on the merge request before this run.
#[derive(Debug, Default)]
pub(crate) struct Earlier {
    /// Fingerprints already posted (discussions and the summary note).
    pub(crate) known: HashSet<String>,
    /// The keys of Redline's resolved discussions.
    pub(crate) resolved: Dismissals,
    /// The summary note.
    pub(crate) summary: Option<ExistingNote>,
}

/// Redline's discussions and summary note on merge request `iid` of `project`.
pub(crate) async fn earlier(
    client: &GitLabClient,
    project: &str,
    iid: u64,
) -> Result<Earlier, GitLabError> {
    let own = client.own_username().await?;
    let path = format!("{}/discussions", merge_request_path(project, iid));
    let discussions = client.get_all_pages(&path).await?;
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
                earlier.summary = Some(ExistingNote {
                    id,
                    body: body.to_string(),
                });
            }
            continue;
        }
        let markers = parse_markers(body);
        earlier.known.extend(markers.iter().cloned());
        if first["resolved"] == json!(true) && !markers.is_empty() {
            let path = first["position"]["new_path"].as_str().unwrap_or_default();
            earlier.resolved.extend(markers);
            earlier.resolved.extend(concern_of_comment(path, body));
        }
    }
    if let Some(summary) = &earlier.summary {
        earlier.known.extend(parse_markers(&summary.body));
    }
    Ok(earlier)
}

/// Publishes one run's review on merge request `iid` of `project` (see the module docs).
pub(crate) async fn publish(
    client: &GitLabClient,
    project: &str,
    iid: u64,
    refs: Option<&DiffRefs>,
    req: PublishRequest<'_>,
) -> Result<PublishOutcome, PublishError> {
    let earlier = earlier(client, project, iid).await?;
    let mut dismissed = req.dismissed.clone();
    dismissed.extend(earlier.resolved.iter().cloned());
    if let Some(summary) = &earlier.summary {
        dismissed.extend(parse_dismissed(&summary.body));
    }
    let mut plan = plan(&req, &earlier.known, &dismissed);
    let mut outcome = PublishOutcome {
        skipped_duplicates: plan.duplicates,
        skipped_dismissed: plan.dismissed,
        ..PublishOutcome::default()
    };
    let nothing_new = plan.inline.is_empty() && plan.summary.is_empty();
    let same_head = earlier
        .summary
        .as_ref()
        .and_then(|s| parse_last_sha(&s.body))
        .is_some_and(|sha| sha == req.head_sha);
    if nothing_new && same_head {
        return Ok(outcome);
    }
    let base = merge_request_path(project, iid);
    post_discussions(client, &base, refs, &req, &mut plan, &mut outcome).await?;
    outcome.in_summary = plan.summary.len();
    write_summary(client, &base, &req, &plan.summary, earlier.summary.as_ref()).await?;
    Ok(outcome)
}

/// The head SHA the last review covered, from the summary note.
pub(crate) async fn last_reviewed_sha(
    client: &GitLabClient,
    project: &str,
    iid: u64,
) -> Result<Option<String>, GitLabError> {
    let earlier = earlier(client, project, iid).await?;
    Ok(earlier.summary.and_then(|s| parse_last_sha(&s.body)))
}

/// One discussion per inline finding; a finding GitLab cannot place (400, or no diff
/// refs to place it with) moves to the summary.
async fn post_discussions<'f>(
    client: &GitLabClient,
    base: &str,
    refs: Option<&DiffRefs>,
    req: &PublishRequest<'f>,
    plan: &mut Plan<'f>,
    outcome: &mut PublishOutcome,
) -> Result<(), PublishError> {
    let path = format!("{base}/discussions");
    let interval = req.config.min_write_interval;
    let mut refused = Vec::new();
    for (finding, fp) in plan.inline.drain(..) {
        let placed = refs.and_then(|refs| position(finding, refs, req.changes));
        let Some(position) = placed else {
            refused.push((finding, fp));
            continue;
        };
        let body = json!({ "body": discussion_body(finding, &fp), "position": position });
        match client
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
            }));
        plan.summary
            .sort_by_key(|entry| std::cmp::Reverse(entry.finding.severity));
    }
    Ok(())
}

/// Creates the summary note or edits it in place (not when unchanged).
async fn write_summary(
    client: &GitLabClient,
    base: &str,
    req: &PublishRequest<'_>,
    entries: &[SummaryEntry<'_>],
    existing: Option<&ExistingNote>,
) -> Result<(), GitLabError> {
    let mut rendered = render_summary(&SummaryInput {
        summary: req.summary,
        walkthrough: req.walkthrough,
        stats: req.stats,
        head_sha: req.head_sha,
        reviewed_range: req.reviewed_range.as_ref(),
        entries,
        previous_body: existing.map(|s| s.body.as_str()),
    });
    if let Some(previous) = existing.map(|s| parse_dismissed(&s.body))
        && !previous.is_empty()
    {
        rendered.body = with_dismissed(&rendered.body, &previous);
    }
    let body = json!({ "body": rendered.body });
    let interval = req.config.min_write_interval;
    match existing {
        Some(note) if note.body == rendered.body => Ok(()),
        Some(note) => {
            let path = format!("{base}/notes/{}", note.id);
            client
                .write_json(Method::PUT, &path, &body, interval)
                .await
                .map(|_| ())
        }
        None => {
            let path = format!("{base}/notes");
            client
                .write_json(Method::POST, &path, &body, interval)
                .await
                .map(|_| ())
        }
    }
}
