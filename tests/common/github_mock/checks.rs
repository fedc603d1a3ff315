//! The mock's check runs (the Checks API): created, updated (annotations appended, at most
//! 50 per request, as GitHub allows) and listed per commit; refused with 403 after
//! [`GitHubMock::forbid_checks`], as for an App without `checks: write`.

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use super::{GitHubMock, MockState, RecordedRequest, error};

/// GitHub's conclusions of a completed check run.
const CONCLUSIONS: &[&str] = &[
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
];

impl GitHubMock {
    /// Every later check-run request answers 403, as for an App without `checks: write`.
    pub fn forbid_checks(&self) {
        self.state().forbid_checks = true;
    }

    /// The check runs stored (annotations included), oldest first.
    pub fn check_runs(&self) -> Vec<Value> {
        self.state().check_runs.clone()
    }

    /// The bodies of the check-run creations and updates accepted, in order, each with the
    /// check run's `id` added.
    pub fn check_run_writes(&self) -> Vec<Value> {
        self.state().check_run_writes.clone()
    }
}

impl MockState {
    /// `POST /repos/{o}/{r}/check-runs`, `PATCH .../check-runs/{id}` and
    /// `GET .../commits/{sha}/check-runs`; `None` for other requests.
    pub(super) fn check_run_request(
        &mut self,
        req: &RecordedRequest,
        segments: &[&str],
    ) -> Option<ResponseTemplate> {
        let answer = match (req.method.as_str(), segments) {
            ("POST", ["repos", o, r, "check-runs"]) => self.create_check_run(req, o, r),
            ("PATCH", ["repos", o, r, "check-runs", id]) => self.update_check_run(req, o, r, id),
            ("GET", ["repos", o, r, "commits", sha, "check-runs"]) => {
                self.list_check_runs(req, o, r, sha)
            }
            _ => return None,
        };
        if self.forbid_checks {
            return Some(error(403, "Resource not accessible by integration"));
        }
        Some(answer)
    }

    fn create_check_run(&mut self, req: &RecordedRequest, o: &str, r: &str) -> ResponseTemplate {
        let body = &req.body;
        let (Some(name), Some(head_sha)) = (body["name"].as_str(), body["head_sha"].as_str())
        else {
            return error(422, "name and head_sha are required");
        };
        if let Err(problem) = valid_update(body) {
            return error(422, &problem);
        }
        let id = self.next_id();
        let mut run = json!({
            "id": id,
            "repository": format!("{o}/{r}"),
            "name": name,
            "head_sha": head_sha,
            "external_id": body.get("external_id").cloned().unwrap_or(json!("")),
            "status": "queued",
            "conclusion": null,
            "output": {"title": null, "summary": null},
            "annotations": [],
            "app": {"slug": "redline"},
            "html_url": format!("https://github.com/{o}/{r}/runs/{id}"),
        });
        apply(&mut run, body);
        self.check_runs.push(run.clone());
        self.record_check_write(body, id);
        ResponseTemplate::new(201).set_body_json(without_annotations(&run))
    }

    fn update_check_run(
        &mut self,
        req: &RecordedRequest,
        o: &str,
        r: &str,
        id: &str,
    ) -> ResponseTemplate {
        if let Err(problem) = valid_update(&req.body) {
            return error(422, &problem);
        }
        let id: u64 = id.parse().unwrap_or(0);
        let repository = format!("{o}/{r}");
        let Some(run) = self
            .check_runs
            .iter_mut()
            .find(|run| run["id"] == json!(id) && run["repository"] == repository.as_str())
        else {
            return error(404, "Not Found");
        };
        apply(run, &req.body);
        let answer = without_annotations(run);
        self.record_check_write(&req.body, id);
        ResponseTemplate::new(200).set_body_json(answer)
    }

    fn list_check_runs(
        &self,
        req: &RecordedRequest,
        o: &str,
        r: &str,
        sha: &str,
    ) -> ResponseTemplate {
        let query: std::collections::HashMap<String, String> = req
            .query
            .as_deref()
            .map(|q| {
                url::form_urlencoded::parse(q.as_bytes())
                    .into_owned()
                    .collect()
            })
            .unwrap_or_default();
        let repository = format!("{o}/{r}");
        let runs: Vec<Value> = self
            .check_runs
            .iter()
            .rev()
            .filter(|run| run["repository"] == repository.as_str() && run["head_sha"] == sha)
            .filter(|run| {
                query
                    .get("check_name")
                    .is_none_or(|name| run["name"] == name.as_str())
            })
            .map(without_annotations)
            .collect();
        ResponseTemplate::new(200)
            .set_body_json(json!({"total_count": runs.len(), "check_runs": runs}))
    }

    fn record_check_write(&mut self, body: &Value, id: u64) {
        let mut write = body.clone();
        write["id"] = json!(id);
        self.check_run_writes.push(write);
    }
}

/// What GitHub checks of a creation or update: the status and conclusion, and the output
/// with at most 50 well-formed annotations.
fn valid_update(body: &Value) -> Result<(), String> {
    let status = body["status"].as_str();
    if let Some(status) = status
        && !["queued", "in_progress", "completed"].contains(&status)
    {
        return Err(format!("invalid status {status}"));
    }
    let conclusion = body["conclusion"].as_str();
    if status == Some("completed") && !conclusion.is_some_and(|c| CONCLUSIONS.contains(&c)) {
        return Err("a completed check run needs a conclusion".into());
    }
    let Some(output) = body.get("output") else {
        return Ok(());
    };
    if output["title"].as_str().is_none() || output["summary"].as_str().is_none() {
        return Err("output needs a title and a summary".into());
    }
    let annotations = output["annotations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if annotations.len() > 50 {
        return Err("Only 50 annotations are allowed per request".into());
    }
    for annotation in &annotations {
        let complete = annotation["path"].is_string()
            && annotation["start_line"].is_u64()
            && annotation["end_line"].is_u64()
            && annotation["message"].is_string();
        let level = annotation["annotation_level"].as_str().unwrap_or_default();
        if !complete || !["notice", "warning", "failure"].contains(&level) {
            return Err(format!("invalid annotation {annotation}"));
        }
    }
    Ok(())
}

/// Applies a creation's or an update's fields; annotations are appended.
fn apply(run: &mut Value, body: &Value) {
    for field in ["status", "conclusion", "details_url", "completed_at"] {
        if let Some(value) = body.get(field) {
            run[field] = value.clone();
        }
    }
    if let Some(output) = body.get("output") {
        run["output"]["title"] = output["title"].clone();
        run["output"]["summary"] = output["summary"].clone();
        if let (Some(list), Some(new)) = (
            run["annotations"].as_array_mut(),
            output["annotations"].as_array(),
        ) {
            list.extend(new.iter().cloned());
        }
    }
}

fn without_annotations(run: &Value) -> Value {
    let mut shown = run.clone();
    if let Some(object) = shown.as_object_mut() {
        object.remove("annotations");
    }
    shown
}
