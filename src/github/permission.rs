//! A user's access to a repository, from
//! `GET /repos/{owner}/{repo}/collaborators/{user}/permission`: who may ask for a
//! review (write) and who gets an answer in a thread (read).
//!
//! Both `permission` and `role_name` are read: `permission` folds `maintain` into
//! `write` and `triage` into `read`, `role_name` keeps them (and names custom roles,
//! which count for nothing here). A user who is not a collaborator (404) has no access.

use serde_json::Value;

use super::client::{GitHubClient, path_segment};
use super::error::GitHubError;

/// Roles that may write (ask for a review, dismiss a finding).
const WRITE_ROLES: &[&str] = &["admin", "maintain", "write"];
/// Roles that may read (get an answer in a review thread).
const READ_ROLES: &[&str] = &["admin", "maintain", "write", "triage", "read"];

/// Whether `user` may write to the repository (admin, maintain or write role).
pub async fn has_write_access(
    client: &GitHubClient,
    owner: &str,
    repo: &str,
    user: &str,
) -> Result<bool, GitHubError> {
    has_role(client, owner, repo, user, WRITE_ROLES).await
}

/// Whether `user` may read the repository (any collaborator role but `none`).
pub(crate) async fn has_read_access(
    client: &GitHubClient,
    owner: &str,
    repo: &str,
    user: &str,
) -> Result<bool, GitHubError> {
    has_role(client, owner, repo, user, READ_ROLES).await
}

async fn has_role(
    client: &GitHubClient,
    owner: &str,
    repo: &str,
    user: &str,
    roles: &[&str],
) -> Result<bool, GitHubError> {
    let path = format!(
        "/repos/{}/{}/collaborators/{}/permission",
        path_segment(owner),
        path_segment(repo),
        path_segment(user)
    );
    let answer = match client.get_json(&path).await {
        Ok(answer) => answer,
        Err(error) if error.status() == Some(404) => return Ok(false),
        Err(error) => return Err(error),
    };
    Ok(role_among(&answer, roles))
}

fn role_among(answer: &Value, roles: &[&str]) -> bool {
    ["permission", "role_name"].iter().any(|field| {
        answer
            .get(field)
            .and_then(Value::as_str)
            .is_some_and(|role| roles.contains(&role))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn maintain_and_triage_count_through_role_name() {
        let maintainer = json!({"permission": "write", "role_name": "maintain"});
        assert!(role_among(&maintainer, WRITE_ROLES));
        let triager = json!({"permission": "read", "role_name": "triage"});
        assert!(role_among(&triager, READ_ROLES) && !role_among(&triager, WRITE_ROLES));
        let outsider = json!({"permission": "none", "role_name": "custom-role"});
        assert!(!role_among(&outsider, READ_ROLES));
        assert!(!role_among(&json!({}), READ_ROLES));
    }
}
