//! [`Handles`]: open repository handles kept for reuse.
//!
//! Opening a repository reads git's config files, probes the `.git` layout
//! and, on the first object read, lists and maps the pack indexes: about a
//! hundred file-system calls. Doing that per file read made shaping a
//! 5,000-file change take seconds, so a view opens a handle once and reuses it.
//!
//! Invariants: `git2::Repository` is `Send` but not `Sync`, so a handle is used
//! by one thread at a time: [`Handles::with`] takes an idle handle out of the
//! pool (opening a new one only when every handle is busy) and puts it back
//! afterwards. The pool therefore holds at most as many handles as were ever
//! used at once, and sequential work opens exactly one.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use git2::Repository;

use super::{RepoError, open_repository};

/// Idle handles of the repository whose work tree (or git dir) is at `root`.
pub(crate) struct Handles {
    root: PathBuf,
    idle: Mutex<Vec<Repository>>,
}

impl Handles {
    /// A pool for the repository at `root`, holding `first` when one is already open.
    pub(crate) fn new(root: &Path, first: Option<Repository>) -> Self {
        Handles {
            root: root.to_path_buf(),
            idle: Mutex::new(first.into_iter().collect()),
        }
    }

    /// Runs `work` with a handle of its own, opened only if none is idle.
    pub(crate) fn with<T>(
        &self,
        work: impl FnOnce(&Repository) -> Result<T, RepoError>,
    ) -> Result<T, RepoError> {
        let repo = self.take()?;
        let result = work(&repo);
        self.put_back(repo);
        result
    }

    fn take(&self) -> Result<Repository, RepoError> {
        // A poisoned lock only means another thread panicked while pushing or
        // popping; the vector is still a valid list of handles.
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop();
        match idle {
            Some(repo) => Ok(repo),
            None => open_repository(&self.root),
        }
    }

    fn put_back(&self, repo: Repository) {
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(repo);
    }
}

impl fmt::Debug for Handles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let idle = self.idle.lock().map(|idle| idle.len()).unwrap_or(0);
        f.debug_struct("Handles")
            .field("root", &self.root)
            .field("idle", &idle)
            .finish()
    }
}
