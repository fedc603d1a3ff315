//! GitLab integration: a REST v4 client (gitlab.com and self-managed), reading a merge
//! request and its intent, publishing a review as discussions and one summary note, and
//! the Code Quality report. [`GitLabMergeRequest`] is GitLab's side of the forge seam
//! ([`crate::forge::Forge`]); [`hook`] reads the webhooks `redline serve` takes.
//! Layering: uses `forge` (the forge-neutral core) and `intent`; never `github`.

mod access;
mod client;
pub(crate) mod code_quality;
pub(crate) mod commit_status;
pub(crate) mod discussion;
pub(crate) mod hook;
mod hook_token;
pub(crate) mod merge_request;
pub(crate) mod own_user;
mod position;
pub(crate) mod project_path;
mod publish;

use async_trait::async_trait;

pub use client::GitLabError;
pub(crate) use client::{GitLabClient, api_url_from_env, path_segment};
pub(crate) use hook_token::is_project_token;
pub use hook_token::project_hook_token;
use merge_request::{DiffRefs, closed_issues, merge_request_path};
use reqwest::Method;
use serde_json::json;

use std::time::Duration;

use crate::forge::publish::Plan;
use crate::forge::status::{Conclusion, ReviewStatus, StatusError, StatusTarget};
use crate::forge::{Earlier, Forge, SummaryComment};
use crate::forge::{PublishConfig, PublishError, PublishOutcome, PublishRequest};
use crate::intent::{CommitMessage, Intent};

/// A merge request, to review and publish on.
pub(crate) struct GitLabMergeRequest<'a> {
    /// The client.
    pub(crate) client: &'a GitLabClient,
    /// The project's id or full path.
    pub(crate) project: &'a str,
    /// The merge request's iid (its number in the project).
    pub(crate) iid: u64,
    /// Its title and description, as the author wrote them.
    pub(crate) title: &'a str,
    pub(crate) description: &'a str,
    /// The SHAs discussion positions name (none: every finding goes to the summary).
    pub(crate) diff_refs: Option<&'a DiffRefs>,
}

#[async_trait]
impl Forge for GitLabMergeRequest<'_> {
    async fn intent(&self, commits: Vec<CommitMessage>) -> Intent {
        Intent {
            title: Some(self.title.to_string()).filter(|t| !t.trim().is_empty()),
            description: Some(self.description.to_string()).filter(|d| !d.trim().is_empty()),
            issues: closed_issues(self.client, self.project, self.iid).await,
            commits,
        }
    }

    async fn summary(&self) -> Result<Option<SummaryComment>, PublishError> {
        Ok(publish::earlier(self).await?.summary)
    }

    async fn earlier(&self) -> Result<Earlier, PublishError> {
        publish::earlier(self).await
    }

    async fn post_review<'f>(
        &self,
        req: &PublishRequest<'f>,
        plan: &mut Plan<'f>,
        _summary_url: Option<&str>,
        outcome: &mut PublishOutcome,
    ) -> Result<(), PublishError> {
        publish::post_discussions(self, req, plan, outcome).await
    }

    async fn write_summary(
        &self,
        existing: Option<&SummaryComment>,
        body: &str,
        interval: Duration,
    ) -> Result<Option<String>, PublishError> {
        publish::write_summary(self, existing, body, interval).await
    }

    async fn resolve(&self, thread: &str) -> Result<(), PublishError> {
        publish::resolve(self, thread).await
    }

    async fn reply(&self, thread: &str, body: &str) -> Result<(), PublishError> {
        let path = format!(
            "{}/discussions/{}/notes",
            merge_request_path(self.project, self.iid),
            path_segment(thread)
        );
        let body = json!({ "body": body });
        let interval = PublishConfig::default().min_write_interval;
        self.client
            .write_json(Method::POST, &path, &body, interval)
            .await?;
        Ok(())
    }

    async fn may_write(&self, user: &str) -> Result<bool, PublishError> {
        Ok(access::is_developer(self.client, self.project, user).await?)
    }

    async fn show_status(
        &self,
        target: &StatusTarget<'_>,
        status: &ReviewStatus,
    ) -> Result<Option<u64>, StatusError> {
        Ok(commit_status::show(self, target.head, status).await?)
    }

    async fn shown_conclusion(&self, head: &str) -> Result<Option<Conclusion>, StatusError> {
        Ok(commit_status::shown_conclusion(self, head).await?)
    }

    async fn comment_bodies(&self) -> Result<Vec<String>, PublishError> {
        let merge_request = merge_request_path(self.project, self.iid);
        let discussions = self
            .client
            .get_all_pages(&format!("{merge_request}/discussions"))
            .await?;
        let bodies = discussions
            .iter()
            .filter_map(|discussion| discussion["notes"].as_array())
            .flatten()
            .filter_map(|note| note["body"].as_str())
            .map(str::to_string)
            .collect();
        Ok(bodies)
    }

    async fn post_comment(&self, body: &str) -> Result<(), PublishError> {
        let merge_request = merge_request_path(self.project, self.iid);
        let body = json!({ "body": body });
        let interval = PublishConfig::default().min_write_interval;
        self.client
            .write_json(
                Method::POST,
                &format!("{merge_request}/notes"),
                &body,
                interval,
            )
            .await?;
        Ok(())
    }
}

impl<'a> GitLabMergeRequest<'a> {
    /// Merge request `iid` of `project`, its title and description not read (for
    /// statuses, notices and access checks; positions name no diff).
    pub(crate) fn at(client: &'a GitLabClient, project: &'a str, iid: u64) -> Self {
        GitLabMergeRequest {
            client,
            project,
            iid,
            title: "",
            description: "",
            diff_refs: None,
        }
    }
}

impl GitLabMergeRequest<'_> {
    /// Whether `user` may read the project's code (Reporter or above): who gets an answer
    /// in a discussion.
    pub(crate) async fn may_read(&self, user: &str) -> Result<bool, GitLabError> {
        access::is_reporter(self.client, self.project, user).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Secret;
    use wiremock::matchers::{body_json, header, method, path, query_param};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    async fn server() -> (MockServer, GitLabClient) {
        let server = MockServer::start().await;
        let url = format!("{}/api/v4", server.uri());
        let client = GitLabClient::new(&url, Secret::new("glpat-unit")).unwrap();
        (server, client)
    }

    fn merge_request(client: &GitLabClient) -> GitLabMergeRequest<'_> {
        GitLabMergeRequest {
            client,
            project: "group/app",
            iid: 3,
            title: "",
            description: "",
            diff_refs: None,
        }
    }

    #[tokio::test]
    async fn a_reply_is_a_note_in_the_discussion() {
        let (server, client) = server().await;
        Mock::given(method("POST"))
            .and(path(
                "/api/v4/projects/group%2Fapp/merge_requests/3/discussions/6a9c1/notes",
            ))
            .and(header("private-token", "glpat-unit"))
            .and(body_json(json!({"body": "Fixed, thanks."})))
            .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 1})))
            .expect(1)
            .mount(&server)
            .await;
        let forge = merge_request(&client);
        forge.reply("6a9c1", "Fixed, thanks.").await.unwrap();
    }

    #[tokio::test]
    async fn an_answer_holding_a_quick_action_is_posted_inert() {
        let (server, client) = server().await;
        let posted = "Sure.\n\u{2060}/approve\n  \u{2060}/merge\n```\n\u{2060}/close\n```";
        Mock::given(method("POST"))
            .and(path(
                "/api/v4/projects/group%2Fapp/merge_requests/3/discussions/d1/notes",
            ))
            .and(body_json(json!({ "body": posted })))
            .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 1})))
            .expect(1)
            .mount(&server)
            .await;
        let forge = merge_request(&client);
        let answer = "Sure.\n/approve\n  /merge\n```\n/close\n```";
        forge.reply("d1", answer).await.unwrap();
    }

    #[tokio::test]
    async fn developers_and_above_may_write_and_others_may_not() {
        let (server, client) = server().await;
        for (name, id, level) in [("dev", 1, Some(30)), ("rep", 2, Some(20)), ("out", 3, None)] {
            Mock::given(method("GET"))
                .and(path("/api/v4/users"))
                .and(query_param("username", name))
                .respond_with(
                    ResponseTemplate::new(200).set_body_json(json!([{"id": id, "username": name}])),
                )
                .mount(&server)
                .await;
            let member = path(format!("/api/v4/projects/group%2Fapp/members/all/{id}"));
            let answer = match level {
                Some(level) => ResponseTemplate::new(200)
                    .set_body_json(json!({"id": id, "access_level": level})),
                None => {
                    ResponseTemplate::new(404).set_body_json(json!({"message": "404 Not found"}))
                }
            };
            Mock::given(method("GET"))
                .and(member)
                .respond_with(answer)
                .mount(&server)
                .await;
        }
        Mock::given(method("GET"))
            .and(path("/api/v4/users"))
            .and(query_param("username", "nobody"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
            .mount(&server)
            .await;
        let forge = merge_request(&client);
        assert!(forge.may_write("dev").await.unwrap());
        assert!(!forge.may_write("rep").await.unwrap());
        assert!(!forge.may_write("out").await.unwrap());
        assert!(!forge.may_write("nobody").await.unwrap());
    }

    #[tokio::test]
    async fn errors_name_the_request_but_never_the_token() {
        let (server, client) = server().await;
        Mock::given(method("GET"))
            .respond_with(
                ResponseTemplate::new(401)
                    .set_body_json(json!({"message": "401 Unauthorized glpat-unit"})),
            )
            .mount(&server)
            .await;
        let error = client.get_json("/user").await.unwrap_err();
        assert_eq!(error.status(), Some(401));
        let text = error.to_string();
        assert!(
            text.contains("GET /user") && !text.contains("glpat-unit"),
            "{text}"
        );
    }
}
