//! Choosing the two revisions to compare.

use std::path::Path;

use super::{RepoError, open_repository, resolve_commit};

/// The two commits a review compares, resolved to full ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedRange {
    /// Base commit (hex oid).
    pub base: String,
    /// Head commit (hex oid).
    pub head: String,
    /// How the base was chosen, for people: e.g. "merge-base with origin/HEAD".
    pub base_label: String,
}

/// Branches tried, in order, when no base is given: (reference, label).
const DEFAULT_BASES: [(&str, &str); 5] = [
    ("refs/remotes/origin/HEAD", "origin/HEAD"),
    ("refs/heads/main", "main"),
    ("refs/remotes/origin/main", "origin/main"),
    ("refs/heads/master", "master"),
    ("refs/remotes/origin/master", "origin/master"),
];

/// Resolves the range to review.
///
/// An explicit `base` is resolved as given (revspec). Without one, the base is
/// the merge-base of `head` with the first of `origin/HEAD`, `main`, `master`
/// (local or `origin/`) that exists and shares history with `head`.
pub fn resolve_range(
    root: &Path,
    base: Option<&str>,
    head: &str,
) -> Result<ResolvedRange, RepoError> {
    let repo = open_repository(root)?;
    let head_id = resolve_commit(&repo, head)?.id();
    let (base_id, base_label) = match base {
        Some(rev) => (resolve_commit(&repo, rev)?.id(), rev.to_string()),
        None => default_base(&repo, head_id)?,
    };
    Ok(ResolvedRange {
        base: base_id.to_string(),
        head: head_id.to_string(),
        base_label,
    })
}

fn default_base(
    repo: &git2::Repository,
    head: git2::Oid,
) -> Result<(git2::Oid, String), RepoError> {
    for (reference, label) in DEFAULT_BASES {
        let Some(branch_tip) = branch_commit(repo, reference) else {
            continue;
        };
        if let Ok(merge_base) = repo.merge_base(head, branch_tip) {
            return Ok((merge_base, format!("merge-base with {label}")));
        }
    }
    Err(RepoError::NoDefaultBase)
}

fn branch_commit(repo: &git2::Repository, reference: &str) -> Option<git2::Oid> {
    let reference = repo.find_reference(reference).ok()?.resolve().ok()?;
    Some(reference.peel_to_commit().ok()?.id())
}
