//! The mock's review threads: replies by Redline, and GraphQL `reviewThreads` and
//! `resolveReviewThread` over the stored review comments.

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use super::{GitHubMock, MockState, RecordedRequest, error, key};

impl GitHubMock {
    /// Stores a review comment by `login` (a `User`) on `owner/repo#number`, replying to
    /// `in_reply_to` when given; returns its id.
    pub fn add_review_comment(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        login: &str,
        body: &str,
        in_reply_to: Option<u64>,
    ) -> u64 {
        let mut state = self.state();
        let id = state.next_id();
        let list = state
            .review_comments
            .entry(format!("{owner}/{repo}/{number}"))
            .or_default();
        let path = in_reply_to
            .and_then(|root| list.iter().find(|c| c["id"] == json!(root)))
            .map_or(json!("src/calc.rs"), |root| root["path"].clone());
        list.push(json!({
            "id": id, "body": body, "path": path, "in_reply_to_id": in_reply_to,
            "user": {"login": login, "type": "User"},
        }));
        id
    }

    /// Marks the thread of review comment `first_comment_id` resolved.
    pub fn resolve_thread(&self, first_comment_id: u64) {
        self.state()
            .resolved_threads
            .insert(format!("T_{first_comment_id}"));
    }

    /// Marks the thread of review comment `first_comment_id` outdated (its lines changed).
    pub fn set_outdated(&self, first_comment_id: u64) {
        self.state()
            .outdated_threads
            .insert(format!("T_{first_comment_id}"));
    }

    /// Whether the thread of review comment `first_comment_id` is resolved.
    pub fn is_resolved(&self, first_comment_id: u64) -> bool {
        self.state()
            .resolved_threads
            .contains(&format!("T_{first_comment_id}"))
    }
}

impl MockState {
    /// `POST .../pulls/{n}/comments/{id}/replies`: a reply by Redline in the thread of `id`.
    pub(super) fn reply(
        &mut self,
        req: &RecordedRequest,
        o: &str,
        r: &str,
        n: &str,
        id: &str,
    ) -> ResponseTemplate {
        let Some(body) = req.body.get("body").and_then(Value::as_str) else {
            return error(422, "Invalid request: body is required");
        };
        let root: u64 = id.parse().unwrap_or(0);
        let new_id = self.next_id();
        let list = self.review_comments.entry(key(o, r, n)).or_default();
        let Some(parent) = list.iter().find(|c| c["id"] == json!(root)).cloned() else {
            return error(404, "Not Found");
        };
        let thread_root = parent["in_reply_to_id"].as_u64().unwrap_or(root);
        let comment = json!({
            "id": new_id, "body": body, "path": parent["path"], "in_reply_to_id": thread_root,
            "user": {"login": "redline[bot]", "type": "Bot"},
        });
        list.push(comment.clone());
        ResponseTemplate::new(201).set_body_json(comment)
    }

    /// `POST /graphql`: review threads of a pull request, or resolving one.
    pub(super) fn graphql(&mut self, req: &RecordedRequest) -> ResponseTemplate {
        let query = req.body["query"].as_str().unwrap_or_default();
        let variables = &req.body["variables"];
        if query.contains("resolveReviewThread") {
            let thread = variables["thread"].as_str().unwrap_or_default().to_string();
            self.resolved_threads.insert(thread.clone());
            return ResponseTemplate::new(200).set_body_json(json!({"data": {
                "resolveReviewThread": {"thread": {"id": thread, "isResolved": true}}}}));
        }
        let pr = key(
            variables["owner"].as_str().unwrap_or_default(),
            variables["repo"].as_str().unwrap_or_default(),
            &variables["number"].to_string(),
        );
        let comments = self.review_comments.get(&pr).cloned().unwrap_or_default();
        let nodes: Vec<Value> = comments
            .iter()
            .filter(|c| c["in_reply_to_id"].is_null())
            .map(|root| {
                let id = format!("T_{}", root["id"]);
                let login = root["user"]["login"].as_str().unwrap_or_default();
                let bot = root["user"]["type"] == json!("Bot");
                json!({
                    "id": id, "isResolved": self.resolved_threads.contains(&id),
                    "isOutdated": self.outdated_threads.contains(&id), "path": root["path"],
                    "comments": {"nodes": [{"body": root["body"], "author": {
                        "__typename": if bot { "Bot" } else { "User" },
                        "login": login.trim_end_matches("[bot]")}}]}
                })
            })
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({"data": {"repository": {"pullRequest": {
            "reviewThreads": {"pageInfo": {"hasNextPage": false, "endCursor": null}, "nodes": nodes}}}}}))
    }
}
