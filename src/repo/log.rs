//! The commit messages of a reviewed range, for the intent section of a review.
//!
//! Invariants: only commits reachable from the head and not from the base are listed,
//! oldest first; merge commits are left out (their messages say which branch, not what
//! changed); at most [`MAX_COMMITS`] are read, the newest kept when there are more.

use std::path::Path;

use super::{RepoError, open_repository};
use crate::intent::CommitMessage;

/// Commits whose messages are read at most.
pub(crate) const MAX_COMMITS: usize = 100;

/// The messages of the commits in `base..head` (commit ids or revisions), oldest first.
pub fn commit_messages(
    root: &Path,
    base: &str,
    head: &str,
) -> Result<Vec<CommitMessage>, RepoError> {
    let repo = open_repository(root)?;
    let git = |e: git2::Error| RepoError::Git(e.message().to_string());
    let base = super::resolve_commit(&repo, base)?.id();
    let head = super::resolve_commit(&repo, head)?.id();
    let mut walk = repo.revwalk().map_err(git)?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)
        .map_err(git)?;
    walk.push(head).map_err(git)?;
    walk.hide(base).map_err(git)?;
    let mut messages = Vec::new();
    for oid in walk {
        let commit = repo.find_commit(oid.map_err(git)?).map_err(git)?;
        if commit.parent_count() > 1 {
            continue;
        }
        let id = commit.id().to_string();
        messages.push(CommitMessage {
            id: id.get(..7).unwrap_or(&id).to_string(),
            message: String::from_utf8_lossy(commit.message_bytes()).into_owned(),
        });
        if messages.len() == MAX_COMMITS {
            break;
        }
    }
    messages.reverse();
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use git2::{Repository, Signature};

    fn commit(repo: &Repository, message: &str) -> String {
        let who = Signature::now("test", "test@localhost").unwrap();
        let tree = repo
            .find_tree(repo.index().unwrap().write_tree().unwrap())
            .unwrap();
        let parent = repo.head().ok().map(|h| h.peel_to_commit().unwrap());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        repo.commit(Some("HEAD"), &who, &who, message, &tree, &parents)
            .unwrap()
            .to_string()
    }

    #[test]
    fn lists_the_range_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let base = commit(&repo, "start");
        commit(
            &repo,
            "Keep the newest window\n\nThe slice ended one early.",
        );
        let head = commit(&repo, "Second step");
        let messages = commit_messages(dir.path(), &base, &head).unwrap();
        let subjects: Vec<&str> = messages
            .iter()
            .map(|m| m.message.lines().next().unwrap())
            .collect();
        assert_eq!(subjects, vec!["Keep the newest window", "Second step"]);
        assert!(messages[0].message.contains("The slice ended one early."));
        assert_eq!(messages[1].id, &head[..7]);
        assert!(
            commit_messages(dir.path(), &head, &head)
                .unwrap()
                .is_empty()
        );
    }
}
