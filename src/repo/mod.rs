//! The repository under review: finding it ([`discover`]), choosing the two
//! revisions to compare ([`resolve_range`]), computing the change
//! ([`load_change`]) and reading files at the reviewed revision ([`RepoView`]).
//!
//! `git2::Repository` is not `Sync`, so nothing here keeps one open: each
//! operation opens the repository itself (cheap), which keeps [`RepoView`]
//! `Send + Sync + Clone` and safe to share between tool calls.

mod change;
mod error;
pub mod glob;
mod paths;
mod range;
pub mod search;
mod view;

use std::path::{Path, PathBuf};

pub use change::{changes_from_patch, load_change};
pub use error::RepoError;
pub use paths::normalize_path;
pub use range::{ResolvedRange, resolve_range};
pub use view::{DEFAULT_MAX_FILE_BYTES, RepoView};

/// Which version of the files the tools see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revision {
    /// The tree of this commit (hex id).
    Commit(String),
    /// The work tree as it is on disk (`--uncommitted`).
    WorkTree,
}

/// The work-tree root of the repository containing `start`.
pub fn discover(start: &Path) -> Result<PathBuf, RepoError> {
    let not_a_repo = || RepoError::NotARepository {
        path: start.display().to_string(),
    };
    let repo = git2::Repository::discover(start).map_err(|_| not_a_repo())?;
    let workdir = repo.workdir().ok_or_else(not_a_repo)?;
    // Rebuilding from components drops the trailing `/` git2 leaves on workdirs.
    Ok(workdir.components().collect())
}

/// Opens the repository whose work tree is at `root`.
pub(crate) fn open_repository(root: &Path) -> Result<git2::Repository, RepoError> {
    git2::Repository::open(root).map_err(|_| RepoError::NotARepository {
        path: root.display().to_string(),
    })
}

/// Resolves `rev` (any revspec git understands) to a commit.
pub(crate) fn resolve_commit<'r>(
    repo: &'r git2::Repository,
    rev: &str,
) -> Result<git2::Commit<'r>, RepoError> {
    let unknown = || RepoError::UnknownRevision {
        rev: rev.to_string(),
    };
    repo.revparse_single(rev)
        .and_then(|object| object.peel_to_commit())
        .map_err(|_| unknown())
}
