//! Redline's check run on a commit (the Checks API): GitHub's side of
//! [`crate::forge::Forge::show_status`].
//!
//! Invariants: one check run per job: before one is created, the commit's check runs named
//! [`CHECK_NAME`] are searched for the job's (its `external_id`, not yet completed), so a
//! job whose first attempt created one and died before recording it does not make a
//! second; annotations go at most [`MAX_ANNOTATIONS`] per request (GitHub's limit), the
//! rest in further updates, which GitHub appends; a set of annotations GitHub refuses
//! (422) is dropped rather than the status. Check-run writes are not paced as comments
//! are: they create no notification.

use std::time::Duration;

use axum::http::Method;
use serde_json::{Value, json};

use super::GitHubPull;
use super::client::path_segment;
use super::error::GitHubError;
use crate::forge::status::{CHECK_NAME, Conclusion, ReviewStatus, StatusTarget};
use crate::review::finding::{Finding, Severity, Side};
use crate::review::report::FailOn;

/// GitHub's limit of annotations per request.
pub(crate) const MAX_ANNOTATIONS: usize = 50;

/// Most annotations one check run gets (the rest stay in the summary comment).
const MAX_TOTAL_ANNOTATIONS: usize = 500;

/// Creates (or finds) the job's check run and shows `status` on it; returns its id.
pub(crate) async fn show(
    pull: &GitHubPull<'_>,
    target: &StatusTarget<'_>,
    status: &ReviewStatus,
) -> Result<Option<u64>, GitHubError> {
    let known = match target.id {
        Some(id) => Some(id),
        None => find_open(pull, target).await?,
    };
    let annotations = annotations(status);
    let mut chunks = annotations.chunks(MAX_ANNOTATIONS);
    let first = chunks.next().unwrap_or(&[]);
    let body = check_body(status, first, known.is_none().then_some(target));
    let answer = match send(pull, known, &body).await {
        Err(error) if error.status() == Some(422) && !first.is_empty() => {
            tracing::warn!(%error, "GitHub refused the check run's annotations; sent without them");
            let bare = check_body(status, &[], known.is_none().then_some(target));
            return send(pull, known, &bare)
                .await
                .map(|answer| known.or(answer["id"].as_u64()));
        }
        other => other?,
    };
    let id = known.or(answer["id"].as_u64());
    if let Some(id) = id {
        for chunk in chunks {
            let more = json!({ "output": output(status, chunk) });
            if let Err(error) = send(pull, Some(id), &more).await {
                tracing::warn!(%error, "annotations of the check run not all sent");
                break;
            }
        }
    }
    Ok(id)
}

/// The conclusion of the last completed Redline check run on `head` that says something
/// of the commit (success, failure, timed out).
pub(crate) async fn shown_conclusion(
    pull: &GitHubPull<'_>,
    head: &str,
) -> Result<Option<Conclusion>, GitHubError> {
    let mut runs = check_runs(pull, head).await?;
    runs.sort_by_key(|run| std::cmp::Reverse(run["id"].as_u64().unwrap_or(0)));
    Ok(runs
        .iter()
        .filter(|run| run["status"] == "completed")
        .filter_map(|run| conclusion_of(run["conclusion"].as_str()?))
        .find(|conclusion| conclusion.is_decisive()))
}

fn conclusion_of(name: &str) -> Option<Conclusion> {
    [
        Conclusion::Success,
        Conclusion::Failure,
        Conclusion::Neutral,
        Conclusion::Cancelled,
        Conclusion::TimedOut,
    ]
    .into_iter()
    .find(|conclusion| conclusion.as_str() == name)
}

/// The job's check run on the commit that is not completed yet, if there is one.
async fn find_open(
    pull: &GitHubPull<'_>,
    target: &StatusTarget<'_>,
) -> Result<Option<u64>, GitHubError> {
    let runs = check_runs(pull, target.head).await?;
    Ok(runs
        .iter()
        .filter(|run| run["external_id"] == target.job && run["status"] != "completed")
        .filter_map(|run| run["id"].as_u64())
        .max())
}

/// The commit's check runs named [`CHECK_NAME`] (the most recent 100).
async fn check_runs(pull: &GitHubPull<'_>, head: &str) -> Result<Vec<Value>, GitHubError> {
    let path = format!(
        "{}/commits/{}/check-runs?check_name={CHECK_NAME}&filter=all&per_page=100",
        pull.repo_path(),
        path_segment(head)
    );
    let answer = pull.client.get_json(&path).await?;
    Ok(answer["check_runs"].as_array().cloned().unwrap_or_default())
}

/// `PATCH .../check-runs/{id}`, or `POST .../check-runs` without an id.
async fn send(pull: &GitHubPull<'_>, id: Option<u64>, body: &Value) -> Result<Value, GitHubError> {
    let (method, path) = match id {
        Some(id) => (
            Method::PATCH,
            format!("{}/check-runs/{id}", pull.repo_path()),
        ),
        None => (Method::POST, format!("{}/check-runs", pull.repo_path())),
    };
    pull.client
        .write_json(method, &path, body, Duration::ZERO)
        .await
}

/// The request body showing `status` with `annotations`; `create` names the commit and
/// the job when the check run is created.
fn check_body(
    status: &ReviewStatus,
    annotations: &[Value],
    create: Option<&StatusTarget<'_>>,
) -> Value {
    let mut body = json!({ "output": output(status, annotations) });
    if let Some(target) = create {
        body["name"] = json!(CHECK_NAME);
        body["head_sha"] = json!(target.head);
        body["external_id"] = json!(target.job);
    }
    match status.conclusion() {
        None => {
            let state = match status {
                ReviewStatus::Running { .. } => "in_progress",
                _ => "queued",
            };
            body["status"] = json!(state);
        }
        Some(conclusion) => {
            body["status"] = json!("completed");
            body["conclusion"] = json!(conclusion.as_str());
            body["completed_at"] =
                json!(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
        }
    }
    if let ReviewStatus::Done(verdict) = status
        && let Some(link) = &verdict.link
    {
        body["details_url"] = json!(link);
    }
    body
}

fn output(status: &ReviewStatus, annotations: &[Value]) -> Value {
    let mut output = json!({ "title": status.title(), "summary": status.summary() });
    if !annotations.is_empty() {
        output["annotations"] = json!(annotations);
    }
    output
}

/// The status's findings as annotations (at most [`MAX_TOTAL_ANNOTATIONS`]).
fn annotations(status: &ReviewStatus) -> Vec<Value> {
    let fail_on = match status {
        ReviewStatus::Done(verdict) => verdict.fail_on,
        _ => FailOn::Never,
    };
    status
        .annotations()
        .iter()
        .take(MAX_TOTAL_ANNOTATIONS)
        .map(|finding| annotation(finding, fail_on))
        .collect()
}

/// One finding as an annotation on the head commit. A finding on removed lines is shown
/// at the file's first line, saying which base lines it means.
fn annotation(finding: &Finding, fail_on: FailOn) -> Value {
    let level = match fail_on {
        FailOn::At(threshold) if finding.severity >= threshold => "failure",
        _ if finding.severity >= Severity::Major => "warning",
        _ => "notice",
    };
    let range = finding.range();
    let (start, end, message) = match finding.side {
        Side::Right => (*range.start(), *range.end(), finding.body.clone()),
        Side::Left => (
            1,
            1,
            format!(
                "On removed lines {}-{} of the base version: {}",
                range.start(),
                range.end(),
                finding.body
            ),
        ),
    };
    let title: String = format!("[{}] {}", finding.severity, finding.title)
        .chars()
        .take(255)
        .collect();
    json!({
        "path": finding.path,
        "start_line": start.max(1),
        "end_line": end.max(1),
        "annotation_level": level,
        "title": title,
        "message": if message.trim().is_empty() { finding.title.clone() } else { message },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::status::{RunCost, Verdict};
    use crate::github::GitHubClient;
    use crate::llm::Secret;
    use crate::review::finding::Category;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    fn finding(line: u32) -> Finding {
        Finding {
            path: "README.md".into(),
            line,
            start_line: line,
            side: Side::Right,
            severity: Severity::Minor,
            category: Category::Style,
            title: format!("Note {line}"),
            body: "Say more.".into(),
            suggestion: None,
            rule: None,
            unverified: false,
        }
    }

    /// A GitHub with two check runs on `abc` (job 12's completed, job 13's queued) that makes
    /// check run 9 and takes every update.
    async fn check_runs_server() -> MockServer {
        let server = MockServer::start().await;
        let runs = json!({"total_count": 1, "check_runs": [
            {"id": 5, "external_id": "12", "status": "completed"},
            {"id": 6, "external_id": "13", "status": "queued"}]});
        Mock::given(method("GET"))
            .and(path("/repos/o/r/commits/abc/check-runs"))
            .respond_with(ResponseTemplate::new(200).set_body_json(runs))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/repos/o/r/check-runs"))
            .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 9})))
            .mount(&server)
            .await;
        Mock::given(method("PATCH"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({})))
            .mount(&server)
            .await;
        server
    }

    /// The paths and bodies of the requests that wrote.
    async fn writes(server: &MockServer) -> Vec<(String, Value)> {
        let requests = server.received_requests().await.expect("recorded");
        requests
            .iter()
            .filter(|r| r.method.as_str() != "GET")
            .map(|r| {
                let body: Value = serde_json::from_slice(&r.body).expect("JSON");
                (r.url.path().to_string(), body)
            })
            .collect()
    }

    #[tokio::test]
    async fn annotations_go_fifty_per_request_and_a_check_is_found_before_one_is_made() {
        let server = check_runs_server().await;
        let client = GitHubClient::with_token(&server.uri(), Secret::new("t")).expect("client");
        let pull = GitHubPull::at(&client, "o", "r", 7);
        let status = ReviewStatus::Done(Box::new(Verdict {
            conclusion: Conclusion::Success,
            fail_on: FailOn::Never,
            counts: [0, 0, 120, 0],
            cost: RunCost::default(),
            partial: None,
            link: None,
            unanchored: (1..=120).map(finding).collect(),
        }));
        // Job 12's check run is completed: a new one is made.
        let target = StatusTarget {
            head: "abc",
            job: "12",
            id: None,
        };
        assert_eq!(show(&pull, &target, &status).await.expect("shown"), Some(9));
        let writes = writes(&server).await;
        let sizes: Vec<usize> = writes
            .iter()
            .map(|(_, body)| body["output"]["annotations"].as_array().map_or(0, Vec::len))
            .collect();
        assert_eq!(sizes, [50, 50, 20]);
        assert_eq!(writes[0].0, "/repos/o/r/check-runs");
        assert_eq!(writes[0].1["conclusion"], "success");
        assert_eq!(writes[0].1["external_id"], "12");
        assert!(
            writes[1..]
                .iter()
                .all(|(p, _)| p == "/repos/o/r/check-runs/9")
        );

        // Job 13's queued check run is found and updated, not made again.
        let target = StatusTarget {
            head: "abc",
            job: "13",
            id: None,
        };
        let running = ReviewStatus::Running {
            strategy: "auto".into(),
            limits: "none".into(),
        };
        assert_eq!(
            show(&pull, &target, &running).await.expect("shown"),
            Some(6)
        );
        let requests = server.received_requests().await.expect("recorded");
        let last = requests.last().expect("a request");
        assert_eq!(
            (last.method.as_str(), last.url.path()),
            ("PATCH", "/repos/o/r/check-runs/6")
        );
    }
}
