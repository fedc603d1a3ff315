//! [`TempRepo`]: a throwaway git repository for integration tests.
//!
//! ```ignore
//! let repo = TempRepo::new();            // `git init` on branch `main`, user configured
//! repo.write("src/lib.rs", "fn a() {}\n");
//! let base = repo.commit("base");        // stages everything, returns the commit id
//! repo.checkout_new_branch("feature");
//! repo.write("src/lib.rs", "fn b() {}\n");
//! let head = repo.commit("change");
//! ```
//!
//! Everything is done with git2 in a `tempfile::TempDir`, removed when the
//! `TempRepo` is dropped. Helpers panic on failure: they are for tests only.

use std::path::{Path, PathBuf};

use git2::{IndexAddOption, Oid, Repository, RepositoryInitOptions, Signature};
use tempfile::TempDir;

/// A git repository in a temporary directory.
pub struct TempRepo {
    dir: TempDir,
    repo: Repository,
}

impl TempRepo {
    /// A new repository whose initial branch is `main`.
    pub fn new() -> Self {
        Self::with_initial_branch("main")
    }

    /// A new repository whose initial branch is `branch`.
    pub fn with_initial_branch(branch: &str) -> Self {
        let dir = TempDir::new().expect("create temp dir");
        let mut options = RepositoryInitOptions::new();
        options.initial_head(branch);
        let repo = Repository::init_opts(dir.path(), &options).expect("git init");
        let mut config = repo.config().expect("repo config");
        config
            .set_str("user.name", "Redline Test")
            .expect("set user.name");
        config
            .set_str("user.email", "test@redline.invalid")
            .expect("set user.email");
        TempRepo { dir, repo }
    }

    /// The work-tree root.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The git2 handle, for anything the helpers do not cover.
    pub fn git(&self) -> &Repository {
        &self.repo
    }

    /// Writes `contents` to `path` (relative to the root), creating directories.
    pub fn write(&self, path: &str, contents: impl AsRef<[u8]>) {
        let full = self.abs(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).expect("create parent dirs");
        }
        std::fs::write(full, contents).expect("write file");
    }

    /// Deletes the file at `path` from the work tree.
    pub fn remove(&self, path: &str) {
        std::fs::remove_file(self.abs(path)).expect("remove file");
    }

    /// Creates a symbolic link at `link` pointing to `target` (taken verbatim).
    pub fn symlink(&self, link: &str, target: &str) {
        let full = self.abs(link);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).expect("create parent dirs");
        }
        std::os::unix::fs::symlink(target, full).expect("create symlink");
    }

    /// Stages one path (added, changed or deleted) without committing.
    pub fn stage(&self, path: &str) {
        let mut index = self.repo.index().expect("index");
        if self.abs(path).symlink_metadata().is_ok() {
            index.add_path(Path::new(path)).expect("stage path");
        } else {
            index.remove_path(Path::new(path)).expect("unstage path");
        }
        index.write().expect("write index");
    }

    /// Stages every change in the work tree (like `git add -A`) and commits it
    /// on the current branch; returns the new commit's hex id.
    pub fn commit(&self, message: &str) -> String {
        let mut index = self.repo.index().expect("index");
        index
            .add_all(["*"], IndexAddOption::DEFAULT, None)
            .expect("stage all");
        index.update_all(["*"], None).expect("stage removals");
        index.write().expect("write index");
        let tree = self
            .repo
            .find_tree(index.write_tree().expect("write tree"))
            .expect("find tree");
        let signature = Signature::now("Redline Test", "test@redline.invalid").expect("signature");
        let parent = self.repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        self.repo
            .commit(
                Some("HEAD"),
                &signature,
                &signature,
                message,
                &tree,
                &parents,
            )
            .expect("commit")
            .to_string()
    }

    /// Creates branch `name` at the current commit and switches to it
    /// (the work tree is unchanged, as with `git checkout -b`).
    pub fn checkout_new_branch(&self, name: &str) {
        let head = self
            .repo
            .head()
            .and_then(|h| h.peel_to_commit())
            .expect("HEAD commit");
        self.repo.branch(name, &head, false).expect("create branch");
        self.repo
            .set_head(&format!("refs/heads/{name}"))
            .expect("switch branch");
    }

    /// Switches to the existing branch `name`, forcing the work tree to match it.
    pub fn checkout(&self, name: &str) {
        self.repo
            .set_head(&format!("refs/heads/{name}"))
            .expect("switch branch");
        let mut options = git2::build::CheckoutBuilder::new();
        options.force().remove_untracked(true);
        self.repo
            .checkout_head(Some(&mut options))
            .expect("checkout");
    }

    /// Points the reference `name` (e.g. `refs/remotes/origin/main`) at commit `oid`.
    pub fn set_ref(&self, name: &str, oid: &str) {
        let oid = Oid::from_str(oid).expect("hex oid");
        self.repo
            .reference(name, oid, true, "test")
            .expect("set reference");
    }

    /// Makes `refs/remotes/origin/HEAD` point at `refs/remotes/origin/<branch>`,
    /// which is set to commit `oid`, as a clone does.
    pub fn set_origin_head(&self, branch: &str, oid: &str) {
        let target = format!("refs/remotes/origin/{branch}");
        self.set_ref(&target, oid);
        self.repo
            .reference_symbolic("refs/remotes/origin/HEAD", &target, true, "test")
            .expect("set origin/HEAD");
    }

    /// Deletes the local branch `name`.
    pub fn delete_branch(&self, name: &str) {
        self.repo
            .find_branch(name, git2::BranchType::Local)
            .expect("find branch")
            .delete()
            .expect("delete branch");
    }

    /// The hex id of the current commit.
    pub fn head(&self) -> String {
        self.repo
            .head()
            .and_then(|h| h.peel_to_commit())
            .expect("HEAD commit")
            .id()
            .to_string()
    }

    fn abs(&self, path: &str) -> PathBuf {
        self.path().join(path)
    }
}

impl Default for TempRepo {
    fn default() -> Self {
        Self::new()
    }
}
