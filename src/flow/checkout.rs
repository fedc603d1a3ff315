//! Getting the commits a review needs into a local repository with git2:
//! a shallow Action checkout that lacks the base, or a bare mirror per
//! repository for the App. Repository code is only read, never run. Fetches over
//! `http(s)://` go through Redline's own transport ([`transport`]: reqwest and rustls, no
//! system OpenSSL), which sends the token.

use std::path::Path;

use git2::{FetchOptions, Repository};

use crate::llm::Secret;

mod transport;

/// libgit2's value for "fetch the whole history" (unshallow).
const UNSHALLOW: i32 = i32::MAX;

/// Every branch and pull-request (GitLab: merge-request) head: what is fetched when commits
/// cannot be fetched by id. A forge without one of these namespaces simply matches nothing.
const WIDE: [&str; 3] = [
    "+refs/heads/*:refs/remotes/origin/*",
    "+refs/pull/*/head:refs/remotes/origin/pull/*",
    "+refs/merge-requests/*/head:refs/remotes/origin/merge-requests/*",
];

/// Why commits could not be fetched. Messages never contain the token.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    /// A git operation failed.
    #[error("git: {0}")]
    Git(String),
    /// After fetching, a commit is still missing.
    #[error("commit {0} is not in the repository and could not be fetched")]
    Missing(String),
    /// Both commits exist but no history joins them, even after deepening a shallow clone.
    #[error("no merge base of {base} and {head}, even with the whole history fetched")]
    NoMergeBase {
        /// The base commit.
        base: String,
        /// The head commit.
        head: String,
    },
}

fn git_error(token: Option<&Secret>) -> impl Fn(git2::Error) -> CheckoutError + '_ {
    move |e| {
        let message = e.message().to_string();
        CheckoutError::Git(token.map(|t| t.redact(&message)).unwrap_or(message))
    }
}

/// Fetches `refspecs` (every branch and pull-request head when empty) from `remote`, with
/// `token` lent to the HTTP transport (`x-access-token`, as GitHub and GitLab take it) and
/// the whole history when `unshallow`.
fn fetch(
    remote: &mut git2::Remote<'_>,
    refspecs: &[&str],
    unshallow: bool,
    token: Option<&Secret>,
) -> Result<(), git2::Error> {
    transport::register()?;
    let mut options = FetchOptions::new();
    if unshallow {
        options.depth(UNSHALLOW);
    }
    let refspecs = if refspecs.is_empty() {
        &WIDE[..]
    } else {
        refspecs
    };
    transport::with_token(token, || remote.fetch(refspecs, Some(&mut options), None))
}

/// Makes sure every commit of `shas` exists in the repository at `root`, fetching
/// from `remote` (a remote name such as `origin`, or a URL) when one is missing:
/// first the commits themselves, then, if the server refuses that, all branches
/// and pull-request heads with the full history.
pub(crate) fn ensure_commits(
    root: &Path,
    remote: &str,
    shas: &[&str],
    token: Option<&Secret>,
) -> Result<(), CheckoutError> {
    let repo = Repository::open(root).map_err(git_error(token))?;
    let missing: Vec<&str> = shas
        .iter()
        .copied()
        .filter(|sha| !has_commit(&repo, sha))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut remote = match repo.find_remote(remote) {
        Ok(found) => found,
        Err(_) => repo.remote_anonymous(remote).map_err(git_error(token))?,
    };
    // Cheapest first: the commits alone; then, for a shallow clone, the whole history
    // (not every transport can deepen); then every branch and pull-request head.
    let shallow = repo.is_shallow();
    let attempts: [(&[&str], bool); 3] = [(&missing, false), (&missing, shallow), (&[], shallow)];
    let mut last_error = None;
    for (refspecs, unshallow) in attempts {
        if missing.iter().all(|sha| has_commit(&repo, sha)) {
            break;
        }
        last_error = fetch(&mut remote, refspecs, unshallow, token).err();
    }
    if let (Some(error), true) = (
        last_error,
        missing.iter().any(|sha| !has_commit(&repo, sha)),
    ) {
        return Err(git_error(token)(error));
    }
    match missing.iter().find(|sha| !has_commit(&repo, sha)) {
        Some(sha) => Err(CheckoutError::Missing(sha.to_string())),
        None => Ok(()),
    }
}

/// The merge base of `base` and `head` in the repository at `root`, fetching
/// from `remote` what is needed: the two commits when missing, then, while the
/// clone is shallow and no merge base is in reach (the history joining them is
/// cut at the shallow boundary), the whole history of both.
pub(crate) fn ensure_merge_base(
    root: &Path,
    remote: &str,
    base: &str,
    head: &str,
    token: Option<&Secret>,
) -> Result<String, CheckoutError> {
    ensure_commits(root, remote, &[base, head], token)?;
    let repo = Repository::open(root).map_err(git_error(token))?;
    if let Some(found) = merge_base(&repo, base, head) {
        return Ok(found);
    }
    if repo.is_shallow() {
        let mut remote = match repo.find_remote(remote) {
            Ok(found) => found,
            Err(_) => repo.remote_anonymous(remote).map_err(git_error(token))?,
        };
        // The commits by id where the server allows it, else every branch and
        // pull-request head; either way with their whole history.
        let mut last_error = None;
        for refspecs in [&[base, head][..], &WIDE[..]] {
            last_error = fetch(&mut remote, refspecs, true, token).err();
            if let Some(found) = merge_base(&repo, base, head) {
                return Ok(found);
            }
        }
        if let Some(error) = last_error {
            return Err(git_error(token)(error));
        }
    }
    Err(CheckoutError::NoMergeBase {
        base: base.to_string(),
        head: head.to_string(),
    })
}

fn merge_base(repo: &Repository, a: &str, b: &str) -> Option<String> {
    let a = git2::Oid::from_str(a).ok()?;
    let b = git2::Oid::from_str(b).ok()?;
    repo.merge_base(a, b).ok().map(|oid| oid.to_string())
}

/// Opens (or creates) a bare mirror of `url` at `path` and fetches the given commits.
pub fn mirror(
    path: &Path,
    url: &str,
    shas: &[&str],
    token: Option<&Secret>,
) -> Result<(), CheckoutError> {
    if !path.join("HEAD").exists() {
        std::fs::create_dir_all(path).map_err(|e| CheckoutError::Git(e.to_string()))?;
        Repository::init_bare(path).map_err(git_error(token))?;
    }
    ensure_commits(path, url, shas, token)
}

fn has_commit(repo: &Repository, sha: &str) -> bool {
    git2::Oid::from_str(sha)
        .ok()
        .and_then(|oid| repo.find_commit(oid).ok())
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit_file(repo: &Repository, name: &str, text: &str) -> git2::Oid {
        let root = repo.workdir().expect("workdir");
        std::fs::write(root.join(name), text).expect("write");
        let mut index = repo.index().expect("index");
        index.add_path(Path::new(name)).expect("add");
        let tree = repo
            .find_tree(index.write_tree().expect("tree"))
            .expect("tree");
        let sig = git2::Signature::now("t", "t@example.com").expect("sig");
        let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        repo.commit(Some("HEAD"), &sig, &sig, "c", &tree, &parents)
            .expect("commit")
    }

    #[test]
    fn mirror_fetches_missing_commits_from_a_url() {
        let upstream_dir = tempfile::tempdir().expect("tmp");
        let upstream = Repository::init(upstream_dir.path()).expect("init");
        let first = commit_file(&upstream, "a.txt", "1\n");
        let second = commit_file(&upstream, "a.txt", "2\n");
        let mirror_dir = tempfile::tempdir().expect("tmp");
        let url = upstream_dir.path().display().to_string();
        mirror(
            &mirror_dir.path().join("m.git"),
            &url,
            &[&first.to_string(), &second.to_string()],
            None,
        )
        .expect("mirror");
        let local = Repository::open(mirror_dir.path().join("m.git")).expect("open");
        assert!(local.find_commit(second).is_ok());
        let missing = "0123456789012345678901234567890123456789";
        let err =
            ensure_commits(&mirror_dir.path().join("m.git"), &url, &[missing], None).unwrap_err();
        assert!(err.to_string().contains(missing), "{err}");
    }
}
