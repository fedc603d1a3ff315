//! Each GitLab project's own webhook token, derived from `GITLAB_WEBHOOK_SECRET` (the
//! master secret) and the project's id: `hex(HMAC-SHA256(master, decimal project id))`.
//! `redline gitlab-hook-token <PROJECT_ID>` prints it for the project's hook settings.
//!
//! Invariants: the server keeps no list of tokens (it derives the one a delivery's project
//! must carry); a token is only ever compared in constant time; the master secret is never
//! a project's token, so a maintainer who configures one project's hook learns nothing that
//! opens another project's; an empty master secret matches nothing.

use ring::hmac;
use subtle::ConstantTimeEq;

use crate::llm::Secret;

/// Project `project_id`'s webhook token under master secret `master` (64 hex digits).
pub fn project_hook_token(master: &Secret, project_id: u64) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, master.expose().as_bytes());
    let tag = hmac::sign(&key, project_id.to_string().as_bytes());
    hex::encode(tag.as_ref())
}

/// Whether `given` is project `project_id`'s token, compared in constant time (every token
/// has the same length, so the length tells nothing).
pub(crate) fn is_project_token(master: &Secret, project_id: u64, given: &[u8]) -> bool {
    if master.is_empty() {
        return false;
    }
    let expected = project_hook_token(master, project_id);
    bool::from(expected.as_bytes().ct_eq(given))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_project_has_its_own_token_and_the_master_opens_none() {
        let master = Secret::new("gitlab-master-secret");
        let token = project_hook_token(&master, 42);
        assert_eq!(token.len(), 64);
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
        // RFC 2104 HMAC-SHA256 of "42", as `openssl dgst -sha256 -hmac` computes it.
        let key = hmac::Key::new(hmac::HMAC_SHA256, b"gitlab-master-secret");
        assert!(hmac::verify(&key, b"42", &hex::decode(&token).unwrap()).is_ok());
        assert!(is_project_token(&master, 42, token.as_bytes()));
        assert!(!is_project_token(&master, 43, token.as_bytes()));
        assert_ne!(project_hook_token(&master, 43), token);
        assert!(!is_project_token(&master, 42, b"gitlab-master-secret"));
        assert!(!is_project_token(
            &master,
            42,
            token.to_uppercase().as_bytes()
        ));
        assert!(!is_project_token(&master, 42, b""));
        let empty = Secret::new("");
        assert!(!is_project_token(
            &empty,
            42,
            project_hook_token(&empty, 42).as_bytes()
        ));
    }
}
