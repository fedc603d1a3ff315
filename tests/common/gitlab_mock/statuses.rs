//! The mock's commit statuses: `POST /projects/{id}/statuses/{sha}` (GitLab's states only;
//! a status set to the state it is in already is refused with 400, "Cannot transition
//! status", as GitLab does) and `GET /projects/{id}/repository/commits/{sha}/statuses`;
//! 403 after [`GitLabMock::forbid_statuses`].

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use super::{GitLabMock, MockState, RecordedRequest, error};

const STATES: &[&str] = &[
    "pending", "running", "success", "failed", "canceled", "skipped",
];

impl GitLabMock {
    /// The commit statuses set on `sha` of project `project`, oldest first.
    pub fn statuses(&self, project: u64, sha: &str) -> Vec<Value> {
        let project = project.to_string();
        self.state()
            .statuses
            .iter()
            .filter(|s| s["project"] == project.as_str() && s["sha"] == sha)
            .cloned()
            .collect()
    }

    /// Every later status request answers 403, as for a token without the Developer role.
    pub fn forbid_statuses(&self) {
        self.state().forbid_statuses = true;
    }
}

impl MockState {
    /// The statuses endpoints; `None` for other requests.
    pub(super) fn status_request(
        &mut self,
        req: &RecordedRequest,
        segments: &[&str],
    ) -> Option<ResponseTemplate> {
        let answer = match (req.method.as_str(), segments) {
            ("POST", ["api", "v4", "projects", p, "statuses", sha]) => self.set_status(req, p, sha),
            (
                "GET",
                [
                    "api",
                    "v4",
                    "projects",
                    p,
                    "repository",
                    "commits",
                    sha,
                    "statuses",
                ],
            ) => {
                let list: Vec<Value> = self
                    .statuses
                    .iter()
                    .rev()
                    .filter(|s| s["project"] == *p && s["sha"] == *sha)
                    .cloned()
                    .collect();
                ResponseTemplate::new(200).set_body_json(list)
            }
            _ => return None,
        };
        if self.forbid_statuses {
            return Some(error(403, "403 Forbidden"));
        }
        Some(answer)
    }

    fn set_status(&mut self, req: &RecordedRequest, project: &str, sha: &str) -> ResponseTemplate {
        let state = req.body["state"].as_str().unwrap_or_default();
        if !STATES.contains(&state) {
            return error(400, "400 Bad request - state does not have a valid value");
        }
        let name = req.body["name"].as_str().unwrap_or("default").to_string();
        if req.body["description"]
            .as_str()
            .is_some_and(|d| d.chars().count() > 255)
        {
            return error(400, "400 Bad request - description is too long");
        }
        let last = self
            .statuses
            .iter()
            .rev()
            .find(|s| s["project"] == project && s["sha"] == sha && s["name"] == name.as_str());
        if let Some(last) = last
            && last["status"] == state
            && ["pending", "running"].contains(&state)
        {
            return error(
                400,
                &format!("Cannot transition status via :run from :{state}"),
            );
        }
        self.next_id += 1;
        let status = json!({
            "id": self.next_id,
            "project": project,
            "sha": sha,
            "name": name,
            "status": state,
            "description": req.body["description"].clone(),
            "target_url": req.body["target_url"].clone(),
        });
        self.statuses.push(status.clone());
        ResponseTemplate::new(201).set_body_json(status)
    }
}
