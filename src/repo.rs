//! The repository under review: finding it ([`discover`]), choosing the two
//! revisions to compare ([`resolve_range`]), computing the change
//! ([`load_change`]) and reading files at the reviewed revision ([`RepoView`]).
//!
//! Opening a repository is not cheap (config files, `.git` probing, pack
//! indexes: about a hundred file-system calls), so it happens a bounded number
//! of times per command, never per file: [`load_change`] hands the handle it
//! diffed with to the [`RepoView`], whose clones share a pool of handles
//! (`git2::Repository` is `Send` but not `Sync`; see `handles`), which keeps
//! [`RepoView`] `Send + Sync + Clone` and safe to share between tool calls.

mod change;
mod error;
pub mod glob;
mod handles;
mod log;
mod paths;
mod range;
pub mod search;
#[cfg(test)]
pub(crate) mod test_repo;
mod view;

use std::path::{Path, PathBuf};

#[cfg(test)]
pub(crate) use change::changes_from_patch;
pub use change::load_change;
pub use error::RepoError;
pub use log::commit_messages;
pub(crate) use paths::normalize_path;
pub(crate) use range::ResolvedRange;
pub use range::resolve_range;
pub use view::RepoView;

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
    read_objects_without_rehashing();
    let repo = git2::Repository::discover(start).map_err(|_| not_a_repo())?;
    let workdir = repo.workdir().ok_or_else(not_a_repo)?;
    // Rebuilding from components drops the trailing `/` git2 leaves on workdirs.
    Ok(workdir.components().collect())
}

/// Opens the repository whose work tree is at `root`.
pub(crate) fn open_repository(root: &Path) -> Result<git2::Repository, RepoError> {
    #[cfg(test)]
    opened::count();
    read_objects_without_rehashing();
    git2::Repository::open(root).map_err(|_| RepoError::NotARepository {
        path: root.display().to_string(),
    })
}

/// Turns off libgit2's re-hashing of every object it reads (process-wide, once).
///
/// By default libgit2 recomputes the SHA-1 of each object read to check it
/// against its id; on a large change that was a fifth of `redline context`'s
/// time. Git itself does not verify on read either (only `git fsck` does);
/// objects are verified when they enter a repository (fetch, index-pack), and
/// a reviewer's read of a corrupted object yields wrong text, not unsafety.
fn read_objects_without_rehashing() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| git2::opts::strict_hash_verification(false));
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

/// Counts [`open_repository`] calls per thread, so that tests can assert that
/// a command opens the repository a bounded number of times, not once per file.
#[cfg(test)]
pub(crate) mod opened {
    use std::cell::Cell;

    thread_local! {
        static OPENED: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn count() {
        OPENED.with(|opened| opened.set(opened.get() + 1));
    }

    /// Repositories opened so far by the calling thread.
    pub(crate) fn on_this_thread() -> usize {
        OPENED.with(Cell::get)
    }
}
