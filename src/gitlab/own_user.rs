//! The user GitLab's token acts as, learned once: `redline serve` asks `GET /user` at start,
//! and when that fails it asks again when a note needs it (and in the background) until
//! GitLab answers; the answer is kept for the process's life.
//!
//! Invariants: an empty username is never kept (it would match no author, and Redline would
//! take its own notes for someone else's); until the user is known, nothing that needs it
//! (telling Redline's own notes apart) goes ahead: the caller skips or retries.

use std::future::Future;
use std::sync::Arc;

use super::client::GitLabError;

/// The token's username, shared by the client that learns it and the hooks that read it.
#[derive(Clone, Default)]
pub(crate) struct OwnUser(Arc<tokio::sync::OnceCell<String>>);

impl OwnUser {
    /// A user known from the start.
    pub(crate) fn known(name: impl Into<String>) -> OwnUser {
        let name = name.into();
        let cell = if name.is_empty() {
            tokio::sync::OnceCell::new()
        } else {
            tokio::sync::OnceCell::new_with(Some(name))
        };
        OwnUser(Arc::new(cell))
    }

    /// The username, when known.
    pub(crate) fn name(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }

    /// The username, asked with `ask` unless known (an error or an empty name is not kept,
    /// so the next call asks again).
    pub(crate) async fn learn<F, Fut>(&self, ask: F) -> Result<String, GitLabError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<String, GitLabError>>,
    {
        self.0
            .get_or_try_init(|| async {
                let name = ask().await?;
                if name.is_empty() {
                    return Err(GitLabError::Setup("GET /user named no user".into()));
                }
                Ok(name)
            })
            .await
            .cloned()
    }
}

impl std::fmt::Debug for OwnUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("OwnUser").field(&self.name()).finish()
    }
}

impl PartialEq for OwnUser {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for OwnUser {}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failure_or_an_empty_name_is_asked_again_and_a_name_is_kept() {
        let user = OwnUser::default();
        let clone = user.clone();
        let failed = user
            .learn(|| async { Err(GitLabError::Setup("down".into())) })
            .await;
        assert!(failed.is_err() && user.name().is_none());
        assert!(user.learn(|| async { Ok(String::new()) }).await.is_err());
        assert_eq!(user.name(), None);
        let name = user.learn(|| async { Ok("redline-bot".to_string()) }).await;
        assert_eq!(name.unwrap(), "redline-bot");
        assert_eq!(
            clone.name(),
            Some("redline-bot"),
            "clones share what is learned"
        );
        let kept = user
            .learn(|| async { Ok("someone-else".to_string()) })
            .await;
        assert_eq!(kept.unwrap(), "redline-bot");
        assert_eq!(OwnUser::known("").name(), None);
    }
}
