//! Test helper: a temporary repository whose last commit changes many files.

use std::path::Path;

use git2::{Repository, Signature};

/// A repository with two commits, `base` and `head`; `head` changes every one
/// of `files` source files. Returns the directory and the two commit ids.
pub(crate) fn repo_with_changed_files(files: usize) -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let base = commit_all(&repo, dir.path(), files, "1", None);
    let head = commit_all(&repo, dir.path(), files, "2", Some(base));
    (dir, base.to_string(), head.to_string())
}

fn commit_all(
    repo: &Repository,
    root: &Path,
    files: usize,
    version: &str,
    parent: Option<git2::Oid>,
) -> git2::Oid {
    std::fs::create_dir_all(root.join("src")).unwrap();
    for i in 0..files {
        let text = format!("pub fn f{i}() -> u32 {{\n    {version}\n}}\n");
        std::fs::write(root.join(format!("src/f{i}.rs")), text).unwrap();
    }
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let who = Signature::now("test", "test@localhost").unwrap();
    let parents: Vec<git2::Commit<'_>> = parent
        .map(|id| repo.find_commit(id).unwrap())
        .into_iter()
        .collect();
    let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
    repo.commit(Some("HEAD"), &who, &who, version, &tree, &parents)
        .unwrap()
}
