//! A user's role in a project: who may ask for a review or dismiss a finding on GitLab
//! (the Developer role, access level 30, or above; inherited group membership counts),
//! and who gets an answer in a discussion (the Reporter role, 20, or above: who can read
//! the code, as GitHub's read access).
//!
//! Invariants: a user GitLab does not know, or who is not a member (404), has no access;
//! the user is looked up by exact username.

use serde_json::Value;

use super::client::{GitLabClient, GitLabError};
use super::path_segment;

/// GitLab's Developer access level.
const DEVELOPER: u64 = 30;
/// GitLab's Reporter access level.
const REPORTER: u64 = 20;

/// Whether `username` has the Developer role or above in `project`.
pub(crate) async fn is_developer(
    client: &GitLabClient,
    project: &str,
    username: &str,
) -> Result<bool, GitLabError> {
    Ok(access_level(client, project, username).await? >= DEVELOPER)
}

/// Whether `username` has the Reporter role or above in `project`.
pub(crate) async fn is_reporter(
    client: &GitLabClient,
    project: &str,
    username: &str,
) -> Result<bool, GitLabError> {
    Ok(access_level(client, project, username).await? >= REPORTER)
}

/// `username`'s access level in `project` (0: unknown user or not a member).
async fn access_level(
    client: &GitLabClient,
    project: &str,
    username: &str,
) -> Result<u64, GitLabError> {
    let users = client
        .get_json(&format!("/users?username={}", path_segment(username)))
        .await?;
    let id = users.as_array().and_then(|users| {
        users
            .iter()
            .find(|u| u["username"].as_str() == Some(username))
            .and_then(|u| u["id"].as_u64())
    });
    let Some(id) = id else {
        return Ok(0);
    };
    let path = format!("/projects/{}/members/all/{id}", path_segment(project));
    match client.get_json(&path).await {
        Ok(member) => Ok(level(&member)),
        Err(error) if error.status() == Some(404) => Ok(0),
        Err(error) => Err(error),
    }
}

fn level(member: &Value) -> u64 {
    member["access_level"].as_u64().unwrap_or(0)
}
