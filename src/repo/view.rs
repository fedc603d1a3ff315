//! [`RepoView`]: the files at the reviewed revision, read-only and confined to
//! the repository.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};

use super::handles::Handles;
use super::paths::{is_git_dir, resolve_link_target};
use super::search::{SearchError, SearchOptions, SearchOutput, search_dir, search_tree_with};
use super::{RepoError, Revision, normalize_path, open_repository, resolve_commit};

/// Default limit for [`RepoView::read_text`]: 2 MiB.
pub(crate) const DEFAULT_MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// How much of a file is sniffed for NUL bytes to call it binary (as git does).
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// Git's file mode for symbolic links.
const LINK_MODE: i32 = 0o120000;

/// The repository as the tools see it: cheap to clone, `Send + Sync`.
/// Clones share their open repository handles (opened once, not per read).
#[derive(Debug, Clone)]
pub struct RepoView {
    root: PathBuf,
    handles: Arc<Handles>,
    revision: Revision,
    /// The tree of the commit, in commit mode.
    tree: Option<Oid>,
    max_file_bytes: u64,
}

/// Where a file's content lives.
enum Content {
    Blob(Oid),
    Disk(PathBuf),
}

impl RepoView {
    /// Opens the view of the repository whose work tree is at `root`.
    /// A `Commit` revision may be any revspec; it is stored as the full commit id.
    pub fn open(root: &Path, revision: Revision) -> Result<Self, RepoError> {
        RepoView::with_repository(open_repository(root)?, root, revision)
    }

    /// The view of `repo`, already open at `root`, which it keeps for its reads.
    pub(crate) fn with_repository(
        repo: Repository,
        root: &Path,
        revision: Revision,
    ) -> Result<Self, RepoError> {
        let root = fs::canonicalize(root).map_err(|e| RepoError::Io(e.to_string()))?;
        let (revision, tree) = match revision {
            Revision::Commit(rev) => {
                let commit = resolve_commit(&repo, &rev)?;
                (
                    Revision::Commit(commit.id().to_string()),
                    Some(commit.tree_id()),
                )
            }
            Revision::WorkTree => (Revision::WorkTree, None),
        };
        Ok(RepoView {
            handles: Arc::new(Handles::new(&root, Some(repo))),
            root,
            revision,
            tree,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        })
    }

    /// The same repository at commit `rev` (the base of a change, say), sharing
    /// this view's open handles and size limit.
    pub(crate) fn at_commit(&self, rev: &str) -> Result<RepoView, RepoError> {
        let (id, tree) = self.handles.with(|repo| {
            let commit = resolve_commit(repo, rev)?;
            Ok((commit.id().to_string(), commit.tree_id()))
        })?;
        Ok(RepoView {
            revision: Revision::Commit(id),
            tree: Some(tree),
            ..self.clone()
        })
    }

    /// The same view with another size limit for [`RepoView::read_text`].
    pub fn with_max_file_bytes(mut self, limit: u64) -> Self {
        self.max_file_bytes = limit;
        self
    }

    /// Root of the work tree (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The revision the tools see.
    pub fn revision(&self) -> &Revision {
        &self.revision
    }

    /// The size limit of [`RepoView::read_text`], in bytes.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
    }

    /// The raw bytes of the file at `path` (no size limit).
    pub fn read(&self, path: &str) -> Result<Vec<u8>, RepoError> {
        let content = self.locate(path)?;
        self.load(path, &content)
    }

    /// The file at `path` as text; refuses binary files (a NUL byte in the
    /// first 8 KiB) and files over [`RepoView::max_file_bytes`].
    pub fn read_text(&self, path: &str) -> Result<String, RepoError> {
        let content = self.locate(path)?;
        let size = match &content {
            Content::Blob(oid) => self
                .handles
                .with(|repo| Ok(repo.odb()?.read_header(*oid)?.0 as u64))?,
            Content::Disk(file) => fs::metadata(file).map_err(|e| io_error(path, e))?.len(),
        };
        if size > self.max_file_bytes {
            return Err(RepoError::TooLarge {
                path: path.to_string(),
                size,
                limit: self.max_file_bytes,
            });
        }
        let bytes = self.load(path, &content)?;
        if bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
            return Err(RepoError::Binary {
                path: path.to_string(),
            });
        }
        Ok(String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// Whether `path` names a file or directory at the revision, inside the repository.
    pub fn exists(&self, path: &str) -> bool {
        match self.locate(path) {
            Ok(_) | Err(RepoError::IsDirectory { .. }) => true,
            Err(_) => false,
        }
    }

    /// All files at the revision, `/`-separated and sorted. In work-tree mode
    /// files excluded by `.gitignore` are left out.
    pub fn list_files(&self) -> Result<Vec<String>, RepoError> {
        let mut files = match self.tree {
            Some(tree) => self.tree_files(tree)?,
            None => self.work_tree_files(),
        };
        files.sort();
        Ok(files)
    }

    /// Searches the files at the revision (see [`super::search`]).
    pub fn search(&self, options: &SearchOptions) -> Result<SearchOutput, SearchError> {
        match self.tree {
            Some(tree) => search_tree_with(&self.handles, tree, options),
            None => search_dir(&self.root, options),
        }
    }

    /// Runs blocking repository work on tokio's blocking pool with a clone of this view.
    pub(crate) async fn blocking<T, E, F>(&self, work: F) -> Result<T, E>
    where
        F: FnOnce(&RepoView) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<RepoError> + Send + 'static,
    {
        let view = self.clone();
        tokio::task::spawn_blocking(move || work(&view))
            .await
            .map_err(|e| E::from(RepoError::Internal(format!("repository task failed: {e}"))))?
    }

    fn load(&self, path: &str, content: &Content) -> Result<Vec<u8>, RepoError> {
        match content {
            Content::Blob(oid) => self
                .handles
                .with(|repo| Ok(repo.find_blob(*oid)?.content().to_vec())),
            Content::Disk(file) => fs::read(file).map_err(|e| io_error(path, e)),
        }
    }

    fn locate(&self, path: &str) -> Result<Content, RepoError> {
        let normalized = normalize_path(path)?;
        if is_git_dir(&normalized) {
            return Err(not_found(path));
        }
        if normalized.is_empty() {
            return Err(RepoError::IsDirectory {
                path: path.to_string(),
            });
        }
        match self.tree {
            Some(tree) => self.handles.with(|repo| {
                let tree = repo.find_tree(tree)?;
                blob_at(repo, &tree, path, &normalized, true).map(Content::Blob)
            }),
            None => self.file_on_disk(path, &normalized).map(Content::Disk),
        }
    }

    fn file_on_disk(&self, path: &str, normalized: &str) -> Result<PathBuf, RepoError> {
        let joined = self.root.join(normalized);
        let canonical = fs::canonicalize(&joined).map_err(|e| io_error(path, e))?;
        let inside = canonical
            .strip_prefix(&self.root)
            .map_err(|_| outside(path))?
            .to_string_lossy()
            .replace('\\', "/");
        if is_git_dir(&inside) {
            return Err(outside(path));
        }
        if canonical.is_dir() {
            return Err(RepoError::IsDirectory {
                path: path.to_string(),
            });
        }
        let ignored = self.handles.with(|repo| {
            Ok(is_ignored_untracked(repo, normalized)? || is_ignored_untracked(repo, &inside)?)
        })?;
        if ignored {
            return Err(RepoError::Ignored {
                path: path.to_string(),
            });
        }
        Ok(canonical)
    }

    fn tree_files(&self, tree: Oid) -> Result<Vec<String>, RepoError> {
        self.handles.with(|repo| {
            let tree = repo.find_tree(tree)?;
            let mut files = Vec::new();
            tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
                if entry.kind() == Some(ObjectType::Blob) {
                    files.push(format!(
                        "{dir}{}",
                        String::from_utf8_lossy(entry.name_bytes())
                    ));
                }
                TreeWalkResult::Ok
            })?;
            Ok(files)
        })
    }

    fn work_tree_files(&self) -> Vec<String> {
        let mut files = Vec::new();
        for entry in work_tree_walker(&self.root).build().flatten() {
            let is_file = entry
                .file_type()
                .is_some_and(|t| t.is_file() || t.is_symlink());
            if is_file && let Ok(relative) = entry.path().strip_prefix(&self.root) {
                files.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
        files
    }
}

/// The walker used for the work tree: honours `.gitignore`, shows hidden files,
/// never enters a `.git` directory.
pub(crate) fn work_tree_walker(root: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}

/// Finds the blob at `normalized`, following a symbolic link once when `follow`.
fn blob_at(
    repo: &Repository,
    tree: &git2::Tree<'_>,
    path: &str,
    normalized: &str,
    follow: bool,
) -> Result<Oid, RepoError> {
    let entry = tree
        .get_path(Path::new(normalized))
        .map_err(|e| match e.code() {
            git2::ErrorCode::NotFound => not_found(path),
            _ => RepoError::from(e),
        })?;
    match entry.kind() {
        Some(ObjectType::Tree) => Err(RepoError::IsDirectory {
            path: path.to_string(),
        }),
        Some(ObjectType::Blob) if entry.filemode() == LINK_MODE => {
            if !follow {
                return Err(RepoError::InvalidPath {
                    path: path.to_string(),
                    reason: "it is a symbolic link to another symbolic link".into(),
                });
            }
            let link = repo.find_blob(entry.id())?;
            let target = String::from_utf8_lossy(link.content());
            let resolved = resolve_link_target(normalized, &target).map_err(|_| outside(path))?;
            if is_git_dir(&resolved) {
                return Err(outside(path));
            }
            blob_at(repo, tree, path, &resolved, false)
        }
        Some(ObjectType::Blob) => Ok(entry.id()),
        _ => Err(RepoError::InvalidPath {
            path: path.to_string(),
            reason: "it is a git submodule, whose files are not part of this repository".into(),
        }),
    }
}

fn is_ignored_untracked(repo: &Repository, normalized: &str) -> Result<bool, RepoError> {
    if !repo.is_path_ignored(normalized)? {
        return Ok(false);
    }
    let index = repo.index()?;
    Ok(index.get_path(Path::new(normalized), 0).is_none())
}

fn not_found(path: &str) -> RepoError {
    RepoError::NotFound {
        path: path.to_string(),
    }
}

fn outside(path: &str) -> RepoError {
    RepoError::OutsideRepository {
        path: path.to_string(),
    }
}

fn io_error(path: &str, e: std::io::Error) -> RepoError {
    match e.kind() {
        ErrorKind::NotFound => not_found(path),
        _ => RepoError::Io(format!("reading `{path}`: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_can_be_shared_between_threads() {
        fn assert_shareable<T: Send + Sync + Clone>() {}
        assert_shareable::<RepoView>();
    }

    #[test]
    fn reads_reuse_one_repository_handle_instead_of_opening_one_per_file() {
        let (dir, _, head) = crate::repo::test_repo::repo_with_changed_files(30);
        let before = crate::repo::opened::on_this_thread();
        let view = RepoView::open(dir.path(), Revision::Commit(head)).unwrap();
        let clone = view.clone();
        for i in 0..30 {
            let path = format!("src/f{i}.rs");
            assert!(view.read_text(&path).unwrap().contains('2'));
            assert!(clone.read(&path).is_ok());
            assert!(view.exists(&path));
        }
        assert_eq!(view.list_files().unwrap().len(), 30);
        assert_eq!(crate::repo::opened::on_this_thread() - before, 1);
    }
}
