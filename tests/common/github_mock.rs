//! A stateful mock of the GitHub REST API, for tests of publishing and of
//! `redline action` end to end. It runs on a local port (wiremock), records
//! every request, and keeps what was created, so a second run sees the first
//! run's comments and markers.
//!
//! ```ignore
//! let gh = GitHubMock::start().await;
//! gh.add_pull("octo", "repo", 7, PullSpec::new("base-sha", "head-sha"));
//! // point the client at gh.url() (GITHUB_API_URL for the binary); any token works
//! gh.fail_next_review_with_422();            // next review POST: 422 "Line could not be resolved"
//! gh.forbid_writes();                        // every POST/PATCH: 403 "Resource not accessible by integration"
//! gh.rate_limit_next_write(1);               // next POST/PATCH: secondary rate limit 403, `retry-after: 1`
//! gh.fail_next(404, "Not Found");            // next request of any kind
//! gh.set_permission("alice", "write");       // collaborator permission endpoint
//! gh.set_token_ttl(chrono::Duration::minutes(2)); // lifetime of installation tokens
//! let reviews = gh.reviews();                // review POST bodies accepted, in order
//! let writes = gh.writes();                  // POST/PATCH requests, in order (token requests excluded)
//! ```
//!
//! Endpoints (anything else answers 404):
//! - `GET /repos/{o}/{r}/pulls/{n}` (from [`GitHubMock::add_pull`])
//! - `GET /repos/{o}/{r}/issues/{n}` (from [`GitHubMock::add_issue`]; 403 after
//!   [`GitHubMock::forbid_issue_reads`], as for a token without `issues: read`)
//! - `POST /repos/{o}/{r}/pulls/{n}/reviews` (checks `commit_id`, `event`, and that
//!   every comment has `path`, `line`, `body` and no `position`; stores its comments)
//! - `GET /repos/{o}/{r}/pulls/{n}/comments` (paginated: `per_page`, `page`, `Link`)
//! - `POST /repos/{o}/{r}/pulls/{n}/comments/{id}/replies` (a reply by `redline[bot]` in
//!   the thread of `id`, which must exist)
//! - `POST /graphql`: `reviewThreads` of a pull request (one thread per review comment
//!   that replies to none; resolved and outdated as set by [`GitHubMock::resolve_thread`]
//!   and [`GitHubMock::set_outdated`]) and the `resolveReviewThread` mutation
//! - `GET|POST /repos/{o}/{r}/issues/{n}/comments` (paginated list / create)
//! - `PATCH /repos/{o}/{r}/issues/comments/{id}`
//! - `GET /repos/{o}/{r}/collaborators/{user}/permission`
//! - `POST /repos/{o}/{r}/check-runs`, `PATCH .../check-runs/{id}`,
//!   `GET .../commits/{sha}/check-runs` (see `checks`; 403 after [`GitHubMock::forbid_checks`])
//! - `GET /user` (`redline[bot]`, the author of the mock's bot comments)
//! - `GET /app` (slug `redline`; needs a `Bearer` RS256 JWT that the TEST-ONLY App public key verifies,
//!   unexpired, with `iss` = [`GitHubMock::set_app_id`]'s id, `12345` by default)
//! - `POST /app/installations/{id}/access_tokens` (needs a `Bearer` JWT; hands out
//!   `ghs_mock_<id>_<n>` tokens expiring after the configured lifetime, 1 h by default)

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::any};

mod checks;
mod threads;

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// The `Authorization` header as sent.
    pub authorization: Option<String>,
    /// The JSON body (`null` when there was none).
    pub body: Value,
}

/// A pull request the mock knows.
#[derive(Debug, Clone)]
pub struct PullSpec {
    /// Base commit.
    pub base_sha: String,
    /// Head commit.
    pub head_sha: String,
    /// Base branch.
    pub base_ref: String,
    /// Head branch.
    pub head_ref: String,
    /// Head in another repository.
    pub is_fork: bool,
    /// Draft.
    pub draft: bool,
    /// `base.repo.clone_url`: where the App clones from (a local path in tests).
    pub clone_url: Option<String>,
    /// Title and description.
    pub title: String,
    pub body: Option<String>,
}

impl PullSpec {
    /// A same-repository, non-draft pull request from `feature` into `main`.
    pub fn new(base_sha: &str, head_sha: &str) -> Self {
        PullSpec {
            base_sha: base_sha.into(),
            head_sha: head_sha.into(),
            base_ref: "main".into(),
            head_ref: "feature".into(),
            is_fork: false,
            draft: false,
            clone_url: None,
            title: String::new(),
            body: None,
        }
    }

    /// The same pull request with this title and description.
    pub fn with_text(mut self, title: &str, body: &str) -> Self {
        self.title = title.into();
        self.body = Some(body.into());
        self
    }

    /// The same pull request, clonable from `url`.
    pub fn with_clone_url(mut self, url: &str) -> Self {
        self.clone_url = Some(url.to_string());
        self
    }
}

#[derive(Default)]
struct MockState {
    base_url: String,
    requests: Vec<RecordedRequest>,
    next_id: u64,
    pulls: HashMap<String, Value>,
    issues: HashMap<String, Value>,
    forbid_issue_reads: bool,
    reviews: Vec<Value>,
    /// Keyed by `owner/repo/number`.
    review_comments: HashMap<String, Vec<Value>>,
    issue_comments: HashMap<String, Vec<Value>>,
    permissions: HashMap<String, String>,
    /// Thread ids (`T_{first comment id}`) resolved, and outdated.
    resolved_threads: std::collections::HashSet<String>,
    outdated_threads: std::collections::HashSet<String>,
    fail_next_review_422: bool,
    forbid_writes: bool,
    rate_limit_next_write: Option<u64>,
    fail_next: Option<(u16, String)>,
    token_ttl: Option<chrono::Duration>,
    tokens_issued: u64,
    app_id: String,
    /// Check runs (each with its `repository`), and the accepted writes of them.
    check_runs: Vec<Value>,
    check_run_writes: Vec<Value>,
    forbid_checks: bool,
}

/// The mock server. Dropping it stops the server.
pub struct GitHubMock {
    server: MockServer,
    state: Arc<Mutex<MockState>>,
}

impl GitHubMock {
    /// Starts a mock on a free local port.
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(MockState {
            base_url: server.uri(),
            next_id: 1000,
            app_id: "12345".into(),
            ..MockState::default()
        }));
        Mock::given(any())
            .respond_with(Responder {
                state: state.clone(),
            })
            .mount(&server)
            .await;
        GitHubMock { server, state }
    }

    /// The API base URL (use as `GITHUB_API_URL`).
    pub fn url(&self) -> String {
        self.server.uri()
    }

    fn state(&self) -> MutexGuard<'_, MockState> {
        self.state.lock().unwrap()
    }

    /// Makes `GET /repos/{owner}/{repo}/pulls/{number}` answer this pull request.
    pub fn add_pull(&self, owner: &str, repo: &str, number: u64, spec: PullSpec) {
        let full = format!("{owner}/{repo}");
        let head_repo = if spec.is_fork {
            format!("forker/{repo}")
        } else {
            full.clone()
        };
        let pull = json!({
            "number": number,
            "draft": spec.draft,
            "state": "open",
            "title": spec.title,
            "body": spec.body,
            "base": { "sha": spec.base_sha, "ref": spec.base_ref, "repo": { "full_name": full, "clone_url": spec.clone_url } },
            "head": { "sha": spec.head_sha, "ref": spec.head_ref, "repo": { "full_name": head_repo } },
        });
        self.state()
            .pulls
            .insert(format!("{owner}/{repo}/{number}"), pull);
    }

    /// Makes `GET /repos/{owner}/{repo}/issues/{number}` answer this issue.
    pub fn add_issue(&self, owner: &str, repo: &str, number: u64, title: &str, body: &str) {
        let issue = json!({"number": number, "state": "open", "title": title, "body": body});
        self.state()
            .issues
            .insert(format!("{owner}/{repo}/{number}"), issue);
    }

    /// Every later issue read answers 403, as for a token without `issues: read`.
    pub fn forbid_issue_reads(&self) {
        self.state().forbid_issue_reads = true;
    }

    /// The collaborator permission of `user` (`admin`, `write`, `read`, `none`); unknown users get 404.
    pub fn set_permission(&self, user: &str, permission: &str) {
        self.state()
            .permissions
            .insert(user.into(), permission.into());
    }

    /// The next review POST fails with 422 "Line could not be resolved".
    pub fn fail_next_review_with_422(&self) {
        self.state().fail_next_review_422 = true;
    }

    /// Every later POST/PATCH (not token requests) answers 403 "Resource not accessible by integration".
    pub fn forbid_writes(&self) {
        self.state().forbid_writes = true;
    }

    /// The next POST/PATCH (not token requests) answers a secondary rate limit
    /// 403 with `retry-after: {secs}`.
    pub fn rate_limit_next_write(&self, retry_after_secs: u64) {
        self.state().rate_limit_next_write = Some(retry_after_secs);
    }

    /// The next request of any kind answers `status` with `message`.
    pub fn fail_next(&self, status: u16, message: &str) {
        self.state().fail_next = Some((status, message.into()));
    }

    /// Lifetime of the installation tokens handed out from now on.
    pub fn set_token_ttl(&self, ttl: chrono::Duration) {
        self.state().token_ttl = Some(ttl);
    }

    /// The App id `GET /app` expects as the JWT's `iss`.
    pub fn set_app_id(&self, id: &str) {
        self.state().app_id = id.into();
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state().requests.clone()
    }

    /// The POST and PATCH requests received, in order, except installation token requests
    /// and GraphQL queries (reads sent as POST; GraphQL mutations are writes).
    pub fn writes(&self) -> Vec<RecordedRequest> {
        self.requests().into_iter().filter(is_write).collect()
    }

    /// How many installation tokens were requested.
    pub fn token_requests(&self) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.path.starts_with("/app/installations/"))
            .count()
    }

    /// The bodies of the reviews accepted, in order.
    pub fn reviews(&self) -> Vec<Value> {
        self.state().reviews.clone()
    }

    /// The review comments stored, over all pull requests.
    pub fn review_comments(&self) -> Vec<Value> {
        self.state()
            .review_comments
            .values()
            .flatten()
            .cloned()
            .collect()
    }

    /// The issue comments stored, over all pull requests.
    pub fn issue_comments(&self) -> Vec<Value> {
        self.state()
            .issue_comments
            .values()
            .flatten()
            .cloned()
            .collect()
    }

    /// Stores an issue comment as if someone had written it.
    pub fn add_issue_comment(&self, owner: &str, repo: &str, number: u64, body: &str) {
        self.add_issue_comment_as(owner, repo, number, body, "someone");
    }

    /// An issue comment by `login` (a `[bot]` login is a Bot).
    pub fn add_issue_comment_as(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        body: &str,
        login: &str,
    ) {
        let mut state = self.state();
        let comment = state.new_issue_comment(owner, repo, number, body, login);
        state
            .issue_comments
            .entry(format!("{owner}/{repo}/{number}"))
            .or_default()
            .push(comment);
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
            authorization: request
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            body: serde_json::from_slice(&request.body).unwrap_or(Value::Null),
        };
        state.requests.push(recorded.clone());
        state.answer(&recorded)
    }
}

fn error(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "message": message,
        "documentation_url": "https://docs.github.com/rest",
    }))
}

impl MockState {
    fn answer(&mut self, req: &RecordedRequest) -> ResponseTemplate {
        if let Some((status, message)) = self.fail_next.take() {
            return error(status, &message);
        }
        let is_write = is_write(req);
        if is_write && self.forbid_writes {
            return error(403, "Resource not accessible by integration");
        }
        if is_write && let Some(secs) = self.rate_limit_next_write.take() {
            return error(
                403,
                "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
            )
            .insert_header("retry-after", secs.to_string().as_str());
        }
        let segments: Vec<&str> = req.path.trim_matches('/').split('/').collect();
        if let Some(answer) = self.check_run_request(req, &segments) {
            return answer;
        }
        match (req.method.as_str(), segments.as_slice()) {
            ("GET", ["app"]) => self.app(req),
            // A token's own user: the bot the mock's comments are written by.
            ("GET", ["user"]) => ResponseTemplate::new(200)
                .set_body_json(json!({"login": "redline[bot]", "type": "Bot"})),
            ("POST", ["app", "installations", id, "access_tokens"]) => self.issue_token(req, id),
            ("GET", ["repos", o, r, "pulls", n]) => match self.pulls.get(&key(o, r, n)) {
                Some(pull) => ResponseTemplate::new(200).set_body_json(pull),
                None => error(404, "Not Found"),
            },
            ("GET", ["repos", _, _, "issues", _]) if self.forbid_issue_reads => {
                error(403, "Resource not accessible by integration")
            }
            ("GET", ["repos", o, r, "issues", n]) => match self.issues.get(&key(o, r, n)) {
                Some(issue) => ResponseTemplate::new(200).set_body_json(issue),
                None => error(404, "Not Found"),
            },
            ("POST", ["repos", o, r, "pulls", n, "reviews"]) => self.create_review(req, o, r, n),
            ("POST", ["repos", o, r, "pulls", n, "comments", id, "replies"]) => {
                self.reply(req, o, r, n, id)
            }
            ("POST", ["graphql"]) => self.graphql(req),
            ("GET", ["repos", o, r, "pulls", n, "comments"]) => {
                let items = self.review_comments.get(&key(o, r, n)).cloned();
                self.page(req, items.unwrap_or_default())
            }
            ("GET", ["repos", o, r, "issues", n, "comments"]) => {
                let items = self.issue_comments.get(&key(o, r, n)).cloned();
                self.page(req, items.unwrap_or_default())
            }
            ("POST", ["repos", o, r, "issues", n, "comments"]) => {
                let Some(body) = req.body.get("body").and_then(Value::as_str) else {
                    return error(422, "Invalid request: body is required");
                };
                let number = n.parse().unwrap_or(0);
                let comment = self.new_issue_comment(o, r, number, body, "redline[bot]");
                self.issue_comments
                    .entry(key(o, r, n))
                    .or_default()
                    .push(comment.clone());
                ResponseTemplate::new(201).set_body_json(comment)
            }
            ("PATCH", ["repos", _, _, "issues", "comments", id]) => self.edit_comment(req, id),
            ("GET", ["repos", _, _, "collaborators", user, "permission"]) => {
                match self.permissions.get(*user) {
                    Some(permission) => ResponseTemplate::new(200).set_body_json(json!({
                        "permission": permission,
                        "role_name": permission,
                        "user": { "login": user },
                    })),
                    None => error(404, "Not Found"),
                }
            }
            _ => error(404, "Not Found"),
        }
    }

    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// `GET /app`: the App, when the JWT is signed by its key and names it.
    fn app(&self, req: &RecordedRequest) -> ResponseTemplate {
        const PUBLIC_KEY: &str = include_str!("../fixtures/github/TEST-ONLY-app-public-key.pem");
        let Some(jwt) = req
            .authorization
            .as_deref()
            .and_then(|a| a.strip_prefix("Bearer "))
        else {
            return error(401, "A JSON web token could not be decoded");
        };
        let Ok(key) = jsonwebtoken::DecodingKey::from_rsa_pem(PUBLIC_KEY.as_bytes()) else {
            return error(500, "the mock's public key does not parse");
        };
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
        validation.set_required_spec_claims(&["exp", "iat", "iss"]);
        let Ok(token) = jsonwebtoken::decode::<Value>(jwt, &key, &validation) else {
            return error(401, "A JSON web token could not be decoded");
        };
        let iss = token.claims["iss"].as_str().unwrap_or_default();
        if iss != self.app_id {
            return error(401, "'Issuer' claim ('iss') must be an Integer");
        }
        ResponseTemplate::new(200).set_body_json(json!({
            "id": self.app_id.parse::<u64>().unwrap_or(0),
            // The App's bot user, `redline[bot]`, writes the mock's bot comments.
            "slug": "redline",
            "name": "Redline Test",
            "owner": { "login": "octo" },
        }))
    }

    fn issue_token(&mut self, req: &RecordedRequest, installation: &str) -> ResponseTemplate {
        let is_jwt = req
            .authorization
            .as_deref()
            .and_then(|a| a.strip_prefix("Bearer "))
            .is_some_and(|jwt| jwt.split('.').count() == 3);
        if !is_jwt {
            return error(401, "A JSON web token could not be decoded");
        }
        self.tokens_issued += 1;
        let ttl = self.token_ttl.unwrap_or_else(|| chrono::Duration::hours(1));
        let expires_at =
            (chrono::Utc::now() + ttl).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        ResponseTemplate::new(201).set_body_json(json!({
            "token": format!("ghs_mock_{installation}_{}", self.tokens_issued),
            "expires_at": expires_at,
            "permissions": { "pull_requests": "write" },
        }))
    }

    fn create_review(
        &mut self,
        req: &RecordedRequest,
        o: &str,
        r: &str,
        n: &str,
    ) -> ResponseTemplate {
        if std::mem::take(&mut self.fail_next_review_422) {
            return ResponseTemplate::new(422).set_body_json(json!({
                "message": "Unprocessable Entity",
                "errors": ["Line could not be resolved"],
            }));
        }
        let body = &req.body;
        if body.get("commit_id").and_then(Value::as_str).is_none() {
            return error(422, "commit_id is required by this mock");
        }
        let event = body.get("event").and_then(Value::as_str).unwrap_or("");
        if !["COMMENT", "REQUEST_CHANGES", "APPROVE"].contains(&event) {
            return error(422, "Invalid event");
        }
        let comments = body
            .get("comments")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for comment in &comments {
            let complete = ["path", "line", "body"]
                .iter()
                .all(|f| comment.get(*f).is_some());
            if !complete || comment.get("position").is_some() {
                return error(422, "comments need path, line and body, and no position");
            }
        }
        let review_id = self.next_id();
        let html_url = format!("https://github.com/{o}/{r}/pull/{n}#pullrequestreview-{review_id}");
        for comment in comments {
            let id = self.next_id();
            let mut stored = comment.clone();
            stored["id"] = json!(id);
            stored["pull_request_review_id"] = json!(review_id);
            stored["commit_id"] = body["commit_id"].clone();
            stored["user"] = json!({ "login": "redline[bot]", "type": "Bot" });
            stored["html_url"] = json!(format!(
                "https://github.com/{o}/{r}/pull/{n}#discussion_r{id}"
            ));
            self.review_comments
                .entry(key(o, r, n))
                .or_default()
                .push(stored);
        }
        self.reviews.push(body.clone());
        ResponseTemplate::new(200).set_body_json(json!({
            "id": review_id,
            "state": if event == "REQUEST_CHANGES" { "CHANGES_REQUESTED" } else { "COMMENTED" },
            "html_url": html_url,
            "commit_id": body["commit_id"],
        }))
    }

    fn new_issue_comment(&mut self, o: &str, r: &str, n: u64, body: &str, login: &str) -> Value {
        let id = self.next_id();
        json!({
            "id": id,
            "body": body,
            "user": { "login": login, "type": if login.ends_with("[bot]") { "Bot" } else { "User" } },
            "html_url": format!("https://github.com/{o}/{r}/pull/{n}#issuecomment-{id}"),
        })
    }

    fn edit_comment(&mut self, req: &RecordedRequest, id: &str) -> ResponseTemplate {
        let Some(new_body) = req.body.get("body").and_then(Value::as_str) else {
            return error(422, "Invalid request: body is required");
        };
        let id: u64 = id.parse().unwrap_or(0);
        let found = self
            .issue_comments
            .values_mut()
            .flatten()
            .find(|c| c["id"] == json!(id));
        match found {
            Some(comment) => {
                comment["body"] = json!(new_body);
                ResponseTemplate::new(200).set_body_json(comment.clone())
            }
            None => error(404, "Not Found"),
        }
    }

    /// One page of `items`, with GitHub's `Link` header when more follow.
    fn page(&self, req: &RecordedRequest, items: Vec<Value>) -> ResponseTemplate {
        let query: HashMap<String, String> = req
            .query
            .as_deref()
            .map(|q| {
                url::form_urlencoded::parse(q.as_bytes())
                    .into_owned()
                    .collect()
            })
            .unwrap_or_default();
        let per_page = query
            .get("per_page")
            .and_then(|p| p.parse().ok())
            .unwrap_or(30usize)
            .clamp(1, 100);
        let page = query
            .get("page")
            .and_then(|p| p.parse().ok())
            .unwrap_or(1usize)
            .max(1);
        let chunk: Vec<Value> = items
            .iter()
            .skip((page - 1) * per_page)
            .take(per_page)
            .cloned()
            .collect();
        let mut response = ResponseTemplate::new(200).set_body_json(Value::Array(chunk));
        if page * per_page < items.len() {
            let next = format!(
                "{}{}?per_page={per_page}&page={}",
                self.base_url,
                req.path,
                page + 1
            );
            response = response.insert_header("link", format!("<{next}>; rel=\"next\"").as_str());
        }
        response
    }
}

/// A content-changing request: POST or PATCH, not a token request, not a GraphQL query.
fn is_write(req: &RecordedRequest) -> bool {
    let graphql_query = req.path == "/graphql"
        && !req.body["query"]
            .as_str()
            .is_some_and(|q| q.trim_start().starts_with("mutation"));
    (req.method == "POST" || req.method == "PATCH")
        && !req.path.starts_with("/app/")
        && !graphql_query
}

fn key(owner: &str, repo: &str, number: &str) -> String {
    format!("{owner}/{repo}/{number}")
}
