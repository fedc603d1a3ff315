//! A stateful mock of the GitLab REST v4 API, for `redline gitlab` end to end. It runs
//! on a local port (wiremock), records every request, keeps the discussions and notes
//! it accepted (so a second run sees the first run's), and rejects what GitLab rejects.
//!
//! ```ignore
//! let gl = GitLabMock::start(TOKEN).await;          // the token `PRIVATE-TOKEN` must carry
//! gl.add_merge_request(42, 7, MergeRequestSpec::new(&base, &head));
//! gl.set_diff(42, 7, vec![DiffLineSpec::context("src/calc.rs", 1, 1), DiffLineSpec::added("src/calc.rs", 5)]);
//! // point the binary at gl.api_url() (CI_API_V4_URL)
//! gl.discussions(42, 7);                            // stored discussions, oldest first
//! gl.writes();                                      // POST/PUT requests, in order
//! gl.resolve_discussions_with(42, 7, "marker text");// resolves the discussions whose body has it
//! gl.rate_limit_next_write(1);                      // next POST/PUT of a merge request: 429 with `Retry-After: 1`
//! gl.statuses(42, &head);                           // commit statuses set on `head`, oldest first
//! gl.fail_user_requests(1);                          // the next `GET /user` answers 500
//! ```
//!
//! Endpoints under `/api/v4` (anything else answers 404; no or a wrong `PRIVATE-TOKEN`: 401):
//! - `GET /user` (`redline-bot`, the author of what Redline posts)
//! - `GET /projects/{id}/merge_requests/{iid}` (title, description, `diff_refs`)
//! - `GET /projects/{id}/merge_requests/{iid}/closes_issues`
//! - `GET|POST /projects/{id}/merge_requests/{iid}/discussions` (paginated with `per_page`,
//!   `page`, `x-next-page`; a POST's `position` must be `position_type: text`, name the merge
//!   request's `diff_refs` exactly and a line of its diff (added: `new_line`; removed:
//!   `old_line`; unchanged: both), and a `line_range`'s line codes must be GitLab's; else 400)
//! - `POST /projects/{id}/merge_requests/{iid}/notes` (a note in a new individual discussion)
//! - `PUT /projects/{id}/merge_requests/{iid}/notes/{note_id}` (edits a stored note)
//! - `GET /projects/{id}` (`http_url_to_repo` of [`GitLabMock::add_project`])
//! - `GET /projects/{id}/merge_requests/{iid}/notes/{note_id}` (a note of a discussion, or
//!   of [`GitLabMock::add_command_note`])
//! - `GET /projects/{id}/merge_requests/{iid}/discussions/{discussion_id}`, and
//!   `POST .../discussions/{discussion_id}/notes` (a reply by the bot)
//! - `POST /projects/{id}/statuses/{sha}` and `GET /projects/{id}/repository/commits/{sha}/statuses`
//!   (see `statuses`)
//! - `GET /users?username=NAME` and `GET /projects/{id}/members/all/{user_id}` (the
//!   members of [`GitLabMock::add_member`]; anyone else is not a member: 404)
//!
//! A project added with [`GitLabMock::add_project`] is also found by its full path
//! (`group%2Fname`), as GitLab finds it.

mod serve;
mod statuses;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use sha1::{Digest, Sha1};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::any};

/// The user Redline's token acts as.
pub const BOT: &str = "redline-bot";

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub token: Option<String>,
    pub body: Value,
}

/// A merge request the mock knows.
#[derive(Debug, Clone)]
pub struct MergeRequestSpec {
    pub title: String,
    pub description: String,
    pub base_sha: String,
    pub start_sha: String,
    pub head_sha: String,
}

impl MergeRequestSpec {
    /// A merge request from `base` (also the start) to `head`.
    pub fn new(base: &str, head: &str) -> Self {
        MergeRequestSpec {
            title: String::new(),
            description: String::new(),
            base_sha: base.into(),
            start_sha: base.into(),
            head_sha: head.into(),
        }
    }

    /// The same merge request with this title and description.
    pub fn with_text(mut self, title: &str, description: &str) -> Self {
        self.title = title.into();
        self.description = description.into();
        self
    }
}

/// One line of a merge request's diff, as GitLab knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLineSpec {
    pub path: String,
    pub old_line: Option<u32>,
    pub new_line: Option<u32>,
    /// GitLab's line-code counters (the next line on the side a line lacks).
    pub old_pos: u32,
    pub new_pos: u32,
}

impl DiffLineSpec {
    /// An unchanged line.
    pub fn context(path: &str, old: u32, new: u32) -> Self {
        DiffLineSpec {
            path: path.into(),
            old_line: Some(old),
            new_line: Some(new),
            old_pos: old,
            new_pos: new,
        }
    }

    /// An added line at `new`, after old line `old_pos - 1`.
    pub fn added(path: &str, old_pos: u32, new: u32) -> Self {
        DiffLineSpec {
            path: path.into(),
            old_line: None,
            new_line: Some(new),
            old_pos,
            new_pos: new,
        }
    }
}

#[derive(Default)]
struct MockState {
    token: String,
    requests: Vec<RecordedRequest>,
    next_id: u64,
    merge_requests: HashMap<String, MergeRequestSpec>,
    diffs: HashMap<String, Vec<DiffLineSpec>>,
    closes_issues: HashMap<String, Vec<Value>>,
    discussions: HashMap<String, Vec<Value>>,
    rate_limit_next_write: Option<u64>,
    /// `GET /user` answers 500 this many more times.
    user_failures: usize,
    /// Notes written by users outside any discussion the mock lists (commands), by
    /// `{project}/{iid}`.
    command_notes: HashMap<String, Vec<Value>>,
    /// Full path -> (id, clone URL).
    projects: HashMap<String, (u64, String)>,
    /// Username -> (user id, access level per project id).
    members: HashMap<String, (u64, HashMap<u64, u64>)>,
    /// Commit statuses set, oldest first (each with its `project` id and `sha`).
    statuses: Vec<Value>,
    forbid_statuses: bool,
}

/// The mock server. Dropping it stops the server.
pub struct GitLabMock {
    server: MockServer,
    state: Arc<Mutex<MockState>>,
}

impl GitLabMock {
    /// Starts a mock on a free local port that accepts `token` only.
    pub async fn start(token: &str) -> Self {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(MockState {
            token: token.into(),
            next_id: 500,
            ..MockState::default()
        }));
        Mock::given(any())
            .respond_with(Responder {
                state: state.clone(),
            })
            .mount(&server)
            .await;
        GitLabMock { server, state }
    }

    /// The API base URL (use as `CI_API_V4_URL`).
    pub fn api_url(&self) -> String {
        format!("{}/api/v4", self.server.uri())
    }

    fn state(&self) -> MutexGuard<'_, MockState> {
        self.state.lock().unwrap()
    }

    /// Makes `GET /projects/{project}/merge_requests/{iid}` answer this merge request.
    pub fn add_merge_request(&self, project: u64, iid: u64, spec: MergeRequestSpec) {
        self.state()
            .merge_requests
            .insert(format!("{project}/{iid}"), spec);
    }

    /// The lines of the merge request's diff (positions elsewhere are refused).
    pub fn set_diff(&self, project: u64, iid: u64, lines: Vec<DiffLineSpec>) {
        self.state().diffs.insert(format!("{project}/{iid}"), lines);
    }

    /// The issues the merge request closes.
    pub fn set_closes_issues(&self, project: u64, iid: u64, issues: Vec<Value>) {
        self.state()
            .closes_issues
            .insert(format!("{project}/{iid}"), issues);
    }

    /// Project `id` at full path `path`, cloned from `clone_url`.
    pub fn add_project(&self, id: u64, path: &str, clone_url: &str) {
        self.state()
            .projects
            .insert(path.into(), (id, clone_url.into()));
    }

    /// User `username` (id `user_id`) with access level `level` in project `project`.
    pub fn add_member(&self, project: u64, username: &str, user_id: u64, level: u64) {
        let mut state = self.state();
        let entry = state
            .members
            .entry(username.into())
            .or_insert_with(|| (user_id, HashMap::new()));
        entry.1.insert(project, level);
    }

    /// Adds a note by `author` to discussion `discussion_id` (a new diff discussion when
    /// there is none with that id yet) and returns the note's id.
    pub fn add_user_note(
        &self,
        project: u64,
        iid: u64,
        discussion_id: &str,
        author: &str,
        body: &str,
    ) -> u64 {
        let mut state = self.state();
        state.next_id += 1;
        let id = state.next_id;
        let note = json!({"id": id, "body": body, "author": {"username": author},
            "system": false, "resolvable": true, "resolved": false});
        let list = state
            .discussions
            .entry(format!("{project}/{iid}"))
            .or_default();
        match list.iter_mut().find(|d| d["id"] == json!(discussion_id)) {
            Some(discussion) => {
                if let Some(notes) = discussion["notes"].as_array_mut() {
                    notes.push(note);
                }
            }
            None => {
                list.push(json!({"id": discussion_id, "individual_note": false, "notes": [note]}))
            }
        }
        id
    }

    /// The next POST/PUT of a merge request (notes, discussions) answers 429 with
    /// `Retry-After: {secs}`.
    pub fn rate_limit_next_write(&self, secs: u64) {
        self.state().rate_limit_next_write = Some(secs);
    }

    /// A note by `author` on the merge request that no discussion listing shows (a
    /// `/redline review` command); `GET .../notes/{id}` finds it. Returns its id.
    pub fn add_command_note(&self, project: u64, iid: u64, author: &str, body: &str) -> u64 {
        let mut state = self.state();
        state.next_id += 1;
        let id = state.next_id;
        let note = json!({"id": id, "body": body, "author": {"username": author}, "system": false});
        state
            .command_notes
            .entry(format!("{project}/{iid}"))
            .or_default()
            .push(note);
        id
    }

    /// The next `times` requests for `GET /user` answer 500 (GitLab down at start).
    pub fn fail_user_requests(&self, times: usize) {
        self.state().user_failures = times;
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state().requests.clone()
    }

    /// The POST and PUT requests received, in order.
    pub fn writes(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "POST" || r.method == "PUT")
            .collect()
    }

    /// The stored discussions of a merge request, oldest first.
    pub fn discussions(&self, project: u64, iid: u64) -> Vec<Value> {
        self.state()
            .discussions
            .get(&format!("{project}/{iid}"))
            .cloned()
            .unwrap_or_default()
    }

    /// The discussions on lines of the diff (not individual notes).
    pub fn diff_discussions(&self, project: u64, iid: u64) -> Vec<Value> {
        self.discussions(project, iid)
            .into_iter()
            .filter(|d| d["individual_note"] == json!(false))
            .collect()
    }

    /// The individual notes (Redline's summary among them).
    pub fn notes(&self, project: u64, iid: u64) -> Vec<Value> {
        self.discussions(project, iid)
            .into_iter()
            .filter(|d| d["individual_note"] == json!(true))
            .map(|d| d["notes"][0].clone())
            .collect()
    }

    /// Resolves the diff discussions whose first note's body contains `text`.
    pub fn resolve_discussions_with(&self, project: u64, iid: u64, text: &str) {
        let mut state = self.state();
        let Some(discussions) = state.discussions.get_mut(&format!("{project}/{iid}")) else {
            return;
        };
        for discussion in discussions.iter_mut() {
            let body = discussion["notes"][0]["body"].as_str().unwrap_or_default();
            if discussion["individual_note"] == json!(false) && body.contains(text) {
                discussion["notes"][0]["resolved"] = json!(true);
            }
        }
    }
}

struct Responder {
    state: Arc<Mutex<MockState>>,
}

impl Respond for Responder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.state.lock().unwrap();
        let recorded = RecordedRequest {
            method: request.method.to_string(),
            path: request.url.path().to_string(),
            query: request.url.query().map(str::to_string),
            token: request
                .headers
                .get("private-token")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            body: serde_json::from_slice(&request.body).unwrap_or(Value::Null),
        };
        state.requests.push(recorded.clone());
        state.answer(&recorded)
    }
}

fn error(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({ "message": message }))
}

impl MockState {
    fn answer(&mut self, req: &RecordedRequest) -> ResponseTemplate {
        if req.token.as_deref() != Some(self.token.as_str()) {
            return error(401, "401 Unauthorized");
        }
        // Rate limits hit merge requests' notes and discussions (not commit statuses).
        let is_write =
            (req.method == "POST" || req.method == "PUT") && req.path.contains("/merge_requests/");
        if is_write && let Some(secs) = self.rate_limit_next_write.take() {
            return error(429, "429 Too Many Requests")
                .insert_header("retry-after", secs.to_string().as_str())
                .insert_header("ratelimit-remaining", "0");
        }
        let mut segments: Vec<String> = req
            .path
            .trim_matches('/')
            .split('/')
            .map(str::to_string)
            .collect();
        if segments.len() > 3 && segments[2] == "projects" {
            let path = segments[3].replace("%2F", "/").replace("%2f", "/");
            if let Some((id, _)) = self.projects.get(&path) {
                segments[3] = id.to_string();
            }
        }
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        if let Some(answer) = self.answer_more(req, &segments) {
            return answer;
        }
        if let Some(answer) = self.status_request(req, &segments) {
            return answer;
        }
        match (req.method.as_str(), segments.as_slice()) {
            ("GET", ["api", "v4", "user"]) if self.user_failures > 0 => {
                self.user_failures -= 1;
                error(500, "500 Internal Server Error")
            }
            ("GET", ["api", "v4", "user"]) => ResponseTemplate::new(200)
                .set_body_json(json!({"id": 99, "username": BOT, "bot": true})),
            ("GET", ["api", "v4", "projects", p, "merge_requests", iid]) => {
                match self.merge_requests.get(&format!("{p}/{iid}")) {
                    Some(spec) => ResponseTemplate::new(200).set_body_json(json!({
                        "iid": iid.parse::<u64>().unwrap_or_default(),
                        "title": spec.title,
                        "description": spec.description,
                        "sha": spec.head_sha,
                        "diff_refs": {"base_sha": spec.base_sha, "start_sha": spec.start_sha, "head_sha": spec.head_sha},
                    })),
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
                    "closes_issues",
                ],
            ) => {
                let issues = self.closes_issues.get(&format!("{p}/{iid}")).cloned();
                ResponseTemplate::new(200).set_body_json(issues.unwrap_or_default())
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
                ],
            ) => {
                let all = self.discussions.get(&format!("{p}/{iid}")).cloned();
                paginated(all.unwrap_or_default(), req.query.as_deref())
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
                ],
            ) => self.create_discussion(&format!("{p}/{iid}"), &req.body),
            ("POST", ["api", "v4", "projects", p, "merge_requests", iid, "notes"]) => {
                let key = format!("{p}/{iid}");
                let Some(body) = req.body["body"].as_str() else {
                    return error(400, "400 Bad request - body is missing");
                };
                let note = self.note(body, Value::Null);
                self.store(&key, true, note.clone());
                ResponseTemplate::new(201).set_body_json(note)
            }
            (
                "PUT",
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
            ) => self.edit_note(&format!("{p}/{iid}"), id, &req.body),
            _ => error(404, "404 Not found"),
        }
    }

    fn note(&mut self, body: &str, position: Value) -> Value {
        self.next_id += 1;
        json!({
            "id": self.next_id,
            "body": body,
            "author": {"id": 99, "username": BOT},
            "system": false,
            "resolvable": !position.is_null(),
            "resolved": false,
            "position": position,
        })
    }

    fn store(&mut self, key: &str, individual: bool, note: Value) -> Value {
        self.next_id += 1;
        let discussion = json!({
            "id": format!("d{:039x}", self.next_id),
            "individual_note": individual,
            "notes": [note],
        });
        self.discussions
            .entry(key.to_string())
            .or_default()
            .push(discussion.clone());
        discussion
    }

    fn create_discussion(&mut self, key: &str, body: &Value) -> ResponseTemplate {
        let Some(text) = body["body"].as_str() else {
            return error(400, "400 Bad request - body is missing");
        };
        let position = body["position"].clone();
        if !position.is_null()
            && let Err(message) = self.check_position(key, &position)
        {
            return error(
                400,
                &format!("400 Bad request - Note {{:line_code=>[\"{message}\"]}}"),
            );
        }
        let note = self.note(text, position.clone());
        let discussion = self.store(key, position.is_null(), note);
        ResponseTemplate::new(201).set_body_json(discussion)
    }

    /// What GitLab checks of a text position: the diff refs, and a line of the diff.
    fn check_position(&self, key: &str, position: &Value) -> Result<(), String> {
        let spec = self.merge_requests.get(key).ok_or("no merge request")?;
        if position["position_type"] != json!("text") {
            return Err("position_type must be text".into());
        }
        for (field, sha) in [
            ("base_sha", &spec.base_sha),
            ("start_sha", &spec.start_sha),
            ("head_sha", &spec.head_sha),
        ] {
            if position[field].as_str() != Some(sha.as_str()) {
                return Err(format!(
                    "{field} does not match the merge request's diff_refs"
                ));
            }
        }
        let path = position["new_path"].as_str().ok_or("new_path is missing")?;
        if position["old_path"].as_str().is_none() {
            return Err("old_path is missing".into());
        }
        let number = |v: &Value| v.as_u64().map(|n| n as u32);
        let (old, new) = (number(&position["old_line"]), number(&position["new_line"]));
        let line = self
            .diffs
            .get(key)
            .into_iter()
            .flatten()
            .find(|l| l.path == path && l.old_line == old && l.new_line == new)
            .ok_or("must be a valid line code")?;
        if let Some(range) = position.get("line_range").filter(|r| !r.is_null()) {
            let code = |l: &DiffLineSpec| format!("{}_{}_{}", hex(path), l.old_pos, l.new_pos);
            if range["end"]["line_code"] != json!(code(line)) {
                return Err("line_range end is not the position's line".into());
            }
            let start = range["start"]["line_code"].as_str().unwrap_or_default();
            if !self.diffs[key]
                .iter()
                .any(|l| l.path == path && code(l) == start)
            {
                return Err("line_range start is not a line of the diff".into());
            }
        }
        Ok(())
    }

    fn edit_note(&mut self, key: &str, id: &str, body: &Value) -> ResponseTemplate {
        let Some(text) = body["body"].as_str() else {
            return error(400, "400 Bad request - body is missing");
        };
        let id: u64 = id.parse().unwrap_or_default();
        for discussion in self.discussions.get_mut(key).into_iter().flatten() {
            if discussion["notes"][0]["id"] == json!(id) {
                discussion["notes"][0]["body"] = json!(text);
                return ResponseTemplate::new(200).set_body_json(discussion["notes"][0].clone());
            }
        }
        error(404, "404 Note Not Found")
    }
}

fn hex(path: &str) -> String {
    Sha1::digest(path.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// GitLab's offset pagination: `per_page` (default 20), `page`, `x-next-page`.
fn paginated(items: Vec<Value>, query: Option<&str>) -> ResponseTemplate {
    let param = |name: &str| {
        query?
            .split('&')
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse::<usize>().ok())
    };
    let per_page = param("per_page").unwrap_or(20).clamp(1, 100);
    let page = param("page").unwrap_or(1).max(1);
    let slice: Vec<Value> = items
        .iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .cloned()
        .collect();
    let next = if page * per_page < items.len() {
        (page + 1).to_string()
    } else {
        String::new()
    };
    ResponseTemplate::new(200)
        .set_body_json(slice)
        .insert_header("x-next-page", next.as_str())
}
