//! What the Action's two runs (a review, an answer in a review thread) share with their
//! workflow: the pull request's commits in its checkout, whether settings lacked a model
//! API key, and workflow commands (escaped as GitHub reads them).

use std::path::PathBuf;

use crate::config::ConfigError;
use crate::flow::pull::{CommitSource, PullCommits, load_commits};
use crate::llm::Secret;

/// Whether settings failed for want of a model API key.
pub(super) fn is_missing_key(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<ConfigError>(),
            Some(ConfigError::MissingApiKey { .. })
        )
    })
}

/// The pull request's commits in the workflow's checkout (`GITHUB_WORKSPACE`, else the
/// current directory); a shallow checkout is deepened until the history joining base and
/// head is there (git's work, off the async workers).
pub(crate) async fn workspace_commits(
    base: &str,
    head: &str,
    last: Option<&str>,
    token: &Secret,
) -> anyhow::Result<PullCommits> {
    let workspace_dir = match crate::config::env_var("GITHUB_WORKSPACE") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::current_dir()?,
    };
    let (base, head) = (base.to_string(), head.to_string());
    let (last, token) = (last.map(str::to_string), token.clone());
    tokio::task::spawn_blocking(move || {
        let root = crate::repo::discover(&workspace_dir)?;
        let source = CommitSource::Checkout {
            root: &root,
            remote: "origin",
        };
        Ok(load_commits(
            source,
            &base,
            &head,
            last.as_deref(),
            Some(&token),
        )?)
    })
    .await?
}

/// Shows `text` as a warning of the workflow run.
pub(super) fn workflow_warning(text: &str) {
    println!("::warning::Redline: {}", escape_data(text));
}

/// Workflow-command escaping of a message.
pub(super) fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Workflow-command escaping of a property value.
pub(super) fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_commands_are_escaped() {
        assert_eq!(escape_data("a\nb%"), "a%0Ab%25");
        assert_eq!(escape_property("x:y,z"), "x%3Ay%2Cz");
    }
}
