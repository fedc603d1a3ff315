//! The endpoints of the GitLab mock that `redline serve` needs beyond `redline gitlab`'s:
//! a project and its clone URL, users and their roles, one discussion, replies in it.

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use super::{MockState, RecordedRequest, error};

impl MockState {
    /// The endpoints `redline serve` needs beyond `redline gitlab`'s.
    pub(super) fn answer_more(
        &mut self,
        req: &RecordedRequest,
        segments: &[&str],
    ) -> Option<ResponseTemplate> {
        Some(match (req.method.as_str(), segments) {
            ("GET", ["api", "v4", "projects", p]) => {
                let id: u64 = p.parse().unwrap_or_default();
                match self.projects.iter().find(|(_, (pid, _))| *pid == id) {
                    Some((path, (id, url))) => ResponseTemplate::new(200).set_body_json(
                        json!({"id": id, "path_with_namespace": path, "http_url_to_repo": url}),
                    ),
                    None => error(404, "404 Project Not Found"),
                }
            }
            (
                "GET",
                [
                    "api",
                    "v4",
                    "projects",
                    p,
                    "merge_requests",
                    iid,
                    "notes",
                    id,
                ],
            ) => {
                let key = format!("{p}/{iid}");
                let id: u64 = id.parse().unwrap_or_default();
                let in_discussions = self
                    .discussions
                    .get(&key)
                    .into_iter()
                    .flatten()
                    .flat_map(|d| d["notes"].as_array().cloned().unwrap_or_default());
                let commands = self.command_notes.get(&key).cloned().unwrap_or_default();
                match in_discussions
                    .chain(commands)
                    .find(|n| n["id"] == json!(id))
                {
                    Some(note) => ResponseTemplate::new(200).set_body_json(note),
                    None => error(404, "404 Not found"),
                }
            }
            ("GET", ["api", "v4", "users"]) => {
                let name = req
                    .query
                    .as_deref()
                    .unwrap_or_default()
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("username="))
                    .unwrap_or_default()
                    .to_string();
                let found: Vec<Value> = self
                    .members
                    .get(&name)
                    .map(|(id, _)| json!({"id": id, "username": name}))
                    .into_iter()
                    .collect();
                ResponseTemplate::new(200).set_body_json(found)
            }
            ("GET", ["api", "v4", "projects", p, "members", "all", user]) => {
                let (project, user): (u64, u64) = (
                    p.parse().unwrap_or_default(),
                    user.parse().unwrap_or_default(),
                );
                let level = self
                    .members
                    .values()
                    .find(|(id, _)| *id == user)
                    .and_then(|(_, levels)| levels.get(&project));
                match level {
                    Some(level) => ResponseTemplate::new(200)
                        .set_body_json(json!({"id": user, "access_level": level})),
                    None => error(404, "404 Not found"),
                }
            }
            (
                "GET",
                [
                    "api",
                    "v4",
                    "projects",
                    p,
                    "merge_requests",
                    iid,
                    "discussions",
                    d,
                ],
            ) => {
                let found = self
                    .discussions
                    .get(&format!("{p}/{iid}"))
                    .and_then(|list| list.iter().find(|x| x["id"] == json!(d)).cloned());
                match found {
                    Some(discussion) => ResponseTemplate::new(200).set_body_json(discussion),
                    None => error(404, "404 Discussion Not Found"),
                }
            }
            (
                "POST",
                [
                    "api",
                    "v4",
                    "projects",
                    p,
                    "merge_requests",
                    iid,
                    "discussions",
                    d,
                    "notes",
                ],
            ) => {
                let Some(body) = req.body["body"].as_str() else {
                    return Some(error(400, "400 Bad request - body is missing"));
                };
                let note = self.note(body, Value::Null);
                let list = self.discussions.entry(format!("{p}/{iid}")).or_default();
                let Some(discussion) = list.iter_mut().find(|x| x["id"] == json!(d)) else {
                    return Some(error(404, "404 Discussion Not Found"));
                };
                if let Some(notes) = discussion["notes"].as_array_mut() {
                    notes.push(note.clone());
                }
                ResponseTemplate::new(201).set_body_json(note)
            }
            _ => return None,
        })
    }
}
