//! A pull request as the REST API and event payloads describe it, read into typed
//! fields (not a JSON tree): its commits, branches, fork status and clone URL.

use serde::{Deserialize, Serialize};

use super::client::{GitHubClient, path_segment};
use super::error::GitHubError;

/// A pull request's commits and branches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullInfo {
    /// Base commit.
    pub base_sha: String,
    /// Head commit.
    pub head_sha: String,
    /// Base branch.
    pub base_ref: String,
    /// Head branch.
    pub head_ref: String,
    /// The head is in another repository (or its repository was deleted).
    pub is_fork: bool,
    /// Draft pull request.
    pub draft: bool,
    /// Where the base repository can be cloned from, when given.
    pub clone_url: Option<String>,
    /// The title, as the author wrote it.
    #[serde(default)]
    pub title: String,
    /// The description, as the author wrote it (empty when none).
    #[serde(default)]
    pub body: String,
}

/// The fields read from GitHub's pull request object (a REST answer or an event's
/// `pull_request`).
#[derive(Deserialize)]
pub(crate) struct ApiPull {
    #[serde(default)]
    draft: Option<bool>,
    #[serde(default)]
    user: Option<ApiUser>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    body: Option<String>,
    base: ApiRef,
    head: ApiRef,
}

#[derive(Deserialize)]
struct ApiUser {
    login: String,
}

#[derive(Deserialize)]
struct ApiRef {
    sha: String,
    #[serde(rename = "ref")]
    name: String,
    #[serde(default)]
    repo: Option<ApiRepo>,
}

#[derive(Deserialize)]
struct ApiRepo {
    #[serde(default)]
    full_name: Option<String>,
    #[serde(default)]
    clone_url: Option<String>,
}

impl From<ApiPull> for PullInfo {
    fn from(pull: ApiPull) -> Self {
        let full_name = |r: &ApiRef| r.repo.as_ref().and_then(|repo| repo.full_name.clone());
        let (base_repo, head_repo) = (full_name(&pull.base), full_name(&pull.head));
        PullInfo {
            // A deleted head repository (`null`) can only have been a fork.
            is_fork: head_repo.is_none() || head_repo != base_repo,
            draft: pull.draft.unwrap_or(false),
            title: pull.title.unwrap_or_default(),
            body: pull.body.unwrap_or_default(),
            clone_url: pull.base.repo.and_then(|repo| repo.clone_url),
            base_sha: pull.base.sha,
            head_sha: pull.head.sha,
            base_ref: pull.base.name,
            head_ref: pull.head.name,
        }
    }
}

impl ApiPull {
    /// The login of who opened the pull request, when given.
    pub(crate) fn author(&self) -> Option<&str> {
        self.user.as_ref().map(|user| user.login.as_str())
    }
}

/// `GET /repos/{owner}/{repo}/pulls/{n}`.
pub async fn fetch_pull(
    client: &GitHubClient,
    owner: &str,
    repo: &str,
    pr_number: u64,
) -> Result<PullInfo, GitHubError> {
    let path = format!(
        "/repos/{}/{}/pulls/{pr_number}",
        path_segment(owner),
        path_segment(repo)
    );
    let answer = client.get_json(&path).await?;
    ApiPull::deserialize(&answer)
        .map(PullInfo::from)
        .map_err(|e| GitHubError::Decode {
            method: "GET".into(),
            path,
            message: format!("the pull request lacks its base or head: {e}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    impl PullInfo {
        /// Reads an event payload's `pull_request` object; `None` without its base or head.
        fn from_payload(pr: &Value) -> Option<PullInfo> {
            ApiPull::deserialize(pr).ok().map(PullInfo::from)
        }
    }

    #[test]
    fn forks_and_clone_urls_are_read() {
        let pr = serde_json::json!({
            "draft": true,
            "base": {"sha": "b", "ref": "main", "repo": {"full_name": "o/r", "clone_url": "https://x/o/r.git"}},
            "head": {"sha": "h", "ref": "f", "repo": null}
        });
        let info = PullInfo::from_payload(&pr).unwrap();
        assert!(info.is_fork && info.draft);
        assert_eq!(info.clone_url.as_deref(), Some("https://x/o/r.git"));
        assert_eq!((info.base_sha.as_str(), info.head_ref.as_str()), ("b", "f"));
        let same = serde_json::json!({
            "base": {"sha": "b", "ref": "main", "repo": {"full_name": "o/r"}},
            "head": {"sha": "h", "ref": "f", "repo": {"full_name": "o/r"}}
        });
        assert!(!PullInfo::from_payload(&same).unwrap().is_fork);
        assert_eq!(
            PullInfo::from_payload(&serde_json::json!({"base": {"sha": "b"}})),
            None
        );
    }
}
