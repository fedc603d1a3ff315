//! Searching a commit's tree: the blobs are listed first (path glob applied),
//! then searched in memory on several threads, each with its own repository
//! handle taken from the view's pool (opened only when the pool has none idle).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use git2::{ObjectType, Oid, TreeWalkMode, TreeWalkResult};

use super::{FileSink, Query, SearchError, SearchOptions, SearchOutput, TopMatches, new_searcher};
use crate::repo::RepoError;
use crate::repo::glob::PathFilter;
use crate::repo::handles::Handles;

/// Git's file mode for symbolic links, whose blobs hold a target, not content.
const LINK_MODE: i32 = 0o120000;

/// Most threads a tree search uses.
const MAX_THREADS: usize = 8;

/// Searches the files of the tree `tree` with the handles of a view (reused, not opened
/// per search).
pub(crate) fn search_tree_with(
    handles: &Handles,
    tree: Oid,
    options: &SearchOptions,
) -> Result<SearchOutput, SearchError> {
    let query = Query::new(options)?;
    let blobs = selected_blobs(handles, tree, &query.filter)?;
    let threads = thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_THREADS)
        .min(blobs.len().max(1));
    let next = AtomicUsize::new(0);
    let shares = thread::scope(|scope| {
        let mut workers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let worker = thread::Builder::new()
                .name("redline-search".into())
                .spawn_scoped(scope, || {
                    handles.with(|repo| search_blobs(repo, &blobs, &next, &query, options))
                })
                .map_err(|e| RepoError::Internal(format!("starting a search thread: {e}")))?;
            workers.push(worker);
        }
        workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .map_err(|_| RepoError::Internal("a search thread panicked".into()))?
            })
            .collect::<Result<Vec<_>, RepoError>>()
    })?;
    Ok(TopMatches::merge(shares, options.max_results))
}

/// The (path, blob) pairs of the tree's regular files that the filter selects.
fn selected_blobs(
    handles: &Handles,
    tree: Oid,
    filter: &PathFilter,
) -> Result<Vec<(String, Oid)>, RepoError> {
    handles.with(|repo| {
        let tree = repo.find_tree(tree)?;
        let mut blobs = Vec::new();
        tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(ObjectType::Blob) && entry.filemode() != LINK_MODE {
                let path = format!("{dir}{}", String::from_utf8_lossy(entry.name_bytes()));
                if filter.matches(&path) {
                    blobs.push((path, entry.id()));
                }
            }
            TreeWalkResult::Ok
        })?;
        Ok(blobs)
    })
}

/// One thread's loop: takes the next unsearched blob until none are left.
fn search_blobs(
    repo: &git2::Repository,
    blobs: &[(String, Oid)],
    next: &AtomicUsize,
    query: &Query,
    options: &SearchOptions,
) -> Result<TopMatches, RepoError> {
    let mut searcher = new_searcher();
    let mut top = TopMatches::new(options.max_results);
    loop {
        let index = next.fetch_add(1, Ordering::Relaxed);
        let Some((path, oid)) = blobs.get(index) else {
            return Ok(top);
        };
        let blob = repo.find_blob(*oid)?;
        let sink = FileSink {
            path,
            top: &mut top,
            max_line_chars: options.max_line_chars,
        };
        // The sink never fails and a slice cannot fail to read.
        let _ = searcher.search_slice(&query.matcher, blob.content(), sink);
    }
}
