//! Reading guideline files from one revision: a commit's tree (the base of the change)
//! or, for `redline review --uncommitted`, the work tree.
//!
//! Invariant: nothing here reads the head of a pull request unless the caller names it;
//! a file that is too large, binary or not UTF-8 is reported as unusable, never read
//! into a prompt. Paths are repository paths (callers drop `..` and absolute ones);
//! in the work tree a symlink is not read and nothing outside the root is.

use std::path::{Path, PathBuf};

/// Guideline files larger than this are named and skipped, never read whole.
pub(crate) const MAX_GUIDELINE_BYTES: usize = 256 * 1024;

/// Which version of the repository the guidelines come from.
#[derive(Debug, Clone, Copy)]
pub enum GuidelineSource<'a> {
    /// The tree of commit `rev` (the base of the change).
    Commit {
        /// The repository.
        root: &'a Path,
        /// Any revision git understands; its tree is read.
        rev: &'a str,
    },
    /// The files on disk under this work-tree root (`--uncommitted`).
    WorkTree(&'a Path),
}

impl<'a> GuidelineSource<'a> {
    /// Where `redline review` reads them: the work tree with `--uncommitted`, else `base`.
    pub(crate) fn of_review(root: &'a Path, base: &'a str, uncommitted: bool) -> Self {
        match uncommitted {
            true => GuidelineSource::WorkTree(root),
            false => GuidelineSource::Commit { root, rev: base },
        }
    }
}

/// One file as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileText {
    /// Nothing at that path (or not a file).
    Missing,
    /// The file's text.
    Text(String),
    /// There, but not usable: why.
    Unusable(String),
}

/// Why a revision could not be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    /// No repository at the root.
    #[error("cannot open the repository")]
    Repository(#[source] git2::Error),
    /// The revision does not name a commit with a tree.
    #[error("cannot read the tree of `{rev}`")]
    Revision {
        /// The revision asked for.
        rev: String,
        /// What git said.
        source: git2::Error,
    },
}

/// An open revision to read files from.
pub(crate) enum Revision {
    Commit {
        repo: git2::Repository,
        tree: git2::Oid,
    },
    WorkTree(PathBuf),
}

impl Revision {
    /// Opens `source`; the error says why (no repository, unknown revision).
    pub(crate) fn open(source: GuidelineSource<'_>) -> Result<Self, OpenError> {
        match source {
            GuidelineSource::Commit { root, rev } => {
                let repo = git2::Repository::open(root).map_err(OpenError::Repository)?;
                let tree = repo
                    .revparse_single(rev)
                    .and_then(|o| o.peel_to_tree())
                    .map_err(|source| OpenError::Revision {
                        rev: rev.to_string(),
                        source,
                    })?
                    .id();
                Ok(Revision::Commit { repo, tree })
            }
            GuidelineSource::WorkTree(root) => Ok(Revision::WorkTree(root.to_path_buf())),
        }
    }

    /// The file at repository path `path` (`/`-separated).
    pub(crate) fn read(&self, path: &str) -> FileText {
        match self {
            Revision::Commit { repo, tree } => read_blob(repo, *tree, path),
            Revision::WorkTree(root) => read_disk(root, path),
        }
    }

    /// Every file under directory `dir` (`""`: the root), recursively, sorted.
    pub(crate) fn files_under(&self, dir: &str) -> Vec<String> {
        let mut files = match self {
            Revision::Commit { repo, tree } => tree_files(repo, *tree, dir),
            Revision::WorkTree(root) => {
                let mut files = Vec::new();
                disk_files(root, dir, &mut files);
                files
            }
        };
        files.sort();
        files
    }
}

fn read_blob(repo: &git2::Repository, tree: git2::Oid, path: &str) -> FileText {
    let Ok(tree) = repo.find_tree(tree) else {
        return FileText::Missing;
    };
    let Ok(entry) = tree.get_path(Path::new(path)) else {
        return FileText::Missing;
    };
    if entry.kind() != Some(git2::ObjectType::Blob) || entry.filemode() == 0o120000 {
        return FileText::Missing;
    }
    match entry.to_object(repo).and_then(|o| o.peel_to_blob()) {
        Ok(blob) => text_of(blob.content()),
        Err(e) => FileText::Unusable(e.message().to_string()),
    }
}

fn read_disk(root: &Path, relative: &str) -> FileText {
    let path = root.join(relative);
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_file() => {}
        _ => return FileText::Missing,
    }
    // A linked directory on the way could lead out of the repository.
    let inside = match (path.canonicalize(), root.canonicalize()) {
        (Ok(path), Ok(root)) => path.starts_with(root),
        _ => false,
    };
    if !inside {
        return FileText::Missing;
    }
    match std::fs::read(&path) {
        Ok(bytes) => text_of(&bytes),
        Err(e) => FileText::Unusable(e.to_string()),
    }
}

fn text_of(bytes: &[u8]) -> FileText {
    if bytes.len() > MAX_GUIDELINE_BYTES {
        return FileText::Unusable(format!(
            "{} bytes, over the {MAX_GUIDELINE_BYTES}-byte limit",
            bytes.len()
        ));
    }
    if bytes.contains(&0) {
        return FileText::Unusable("binary".into());
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => FileText::Text(text.to_string()),
        Err(_) => FileText::Unusable("not UTF-8".into()),
    }
}

fn tree_files(repo: &git2::Repository, tree: git2::Oid, dir: &str) -> Vec<String> {
    let Ok(root) = repo.find_tree(tree) else {
        return Vec::new();
    };
    let subtree = if dir.is_empty() {
        root
    } else {
        match root
            .get_path(Path::new(dir))
            .and_then(|entry| entry.to_object(repo))
            .and_then(|object| object.peel_to_tree())
        {
            Ok(tree) => tree,
            Err(_) => return Vec::new(),
        }
    };
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{}/", dir.trim_end_matches('/'))
    };
    let mut files = Vec::new();
    let _ = subtree.walk(git2::TreeWalkMode::PreOrder, |parent, entry| {
        if entry.kind() == Some(git2::ObjectType::Blob)
            && let Ok(name) = entry.name()
        {
            files.push(format!("{prefix}{parent}{name}"));
        }
        git2::TreeWalkResult::Ok
    });
    files
}

fn disk_files(root: &Path, dir: &str, files: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = match dir.is_empty() {
            true => name.clone(),
            false => format!("{}/{name}", dir.trim_end_matches('/')),
        };
        if kind.is_dir() && name != ".git" {
            disk_files(root, &path, files);
        } else if kind.is_file() {
            files.push(path);
        }
    }
}
