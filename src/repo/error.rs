//! Errors reading the repository, worded for the model and for users.

/// Errors reading the repository.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RepoError {
    /// The directory is not inside a git work tree.
    #[error(
        "`{path}` is not inside a git repository with a work tree; run Redline from inside one"
    )]
    NotARepository {
        /// The directory that was looked at.
        path: String,
    },
    /// A revision that does not name a commit.
    #[error(
        "unknown revision `{rev}`: it does not name a commit, branch or tag in this repository"
    )]
    UnknownRevision {
        /// The revision as given.
        rev: String,
    },
    /// No base was given and none of the usual default branches exists.
    #[error(
        "no base revision to compare against: found no origin/HEAD, main or master branch; pass `--base REV` to choose one"
    )]
    NoDefaultBase,
    /// A path that leaves the repository.
    #[error("path `{path}` is outside the repository; use a path relative to the repository root")]
    OutsideRepository {
        /// The path as given.
        path: String,
    },
    /// A path that cannot be used for another reason (NUL byte, submodule, link chain).
    #[error("path `{path}` cannot be read: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// Why, in a few words.
        reason: String,
    },
    /// No such file or directory at the reviewed revision.
    #[error(
        "`{path}` does not exist at the reviewed revision; check the spelling or use list_files"
    )]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// A directory where a file was expected.
    #[error("`{path}` is a directory, not a file; use list_files to see what it contains")]
    IsDirectory {
        /// The path as given.
        path: String,
    },
    /// An untracked file excluded by `.gitignore` (work-tree mode).
    #[error("`{path}` is ignored by .gitignore and not tracked, so it is not part of the review")]
    Ignored {
        /// The path as given.
        path: String,
    },
    /// A file that is not text.
    #[error("`{path}` is a binary file; it cannot be shown as text")]
    Binary {
        /// The path as given.
        path: String,
    },
    /// A file over the size limit for reading.
    #[error(
        "`{path}` is {size} bytes, over the {limit}-byte limit for reading whole files; use search to find the lines you need"
    )]
    TooLarge {
        /// The path as given.
        path: String,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// Git failed.
    #[error("git: {0}")]
    Git(String),
    /// Reading a file failed.
    #[error("i/o error: {0}")]
    Io(String),
    /// A background task failed (a bug, not bad input).
    #[error("internal error: {0}")]
    Internal(String),
}

impl RepoError {
    /// Whether the repository itself cannot be read, so no other call would do better.
    pub(crate) fn is_fatal(&self) -> bool {
        matches!(
            self,
            RepoError::NotARepository { .. }
                | RepoError::UnknownRevision { .. }
                | RepoError::Git(_)
                | RepoError::Internal(_)
        )
    }
}

impl From<git2::Error> for RepoError {
    fn from(e: git2::Error) -> Self {
        RepoError::Git(e.message().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_default_base_tells_the_user_what_to_pass() {
        assert!(RepoError::NoDefaultBase.to_string().contains("--base REV"));
    }
}
