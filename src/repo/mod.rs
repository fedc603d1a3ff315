//! A read-only view of the repository at the reviewed revision.

use std::path::{Path, PathBuf};

/// Which version of the files the tools see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revision {
    /// The tree of this commit (hex id).
    Commit(String),
    /// The work tree as it is on disk (`--uncommitted`).
    WorkTree,
}

/// Errors reading the repository.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// Git failed.
    #[error("git: {0}")]
    Git(String),
}

/// The repository as the tools see it.
#[derive(Debug, Clone)]
pub struct RepoView {
    root: PathBuf,
    revision: Revision,
}

impl RepoView {
    /// Root of the work tree.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The revision the tools see.
    pub fn revision(&self) -> &Revision {
        &self.revision
    }
}
