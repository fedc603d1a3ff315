//! Searching a directory on disk: a parallel walk that honours `.gitignore`,
//! each walker thread searching the files it finds.

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use grep_searcher::Searcher;
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};

use super::{FileSink, Query, SearchError, SearchOptions, SearchOutput, TopMatches, new_searcher};
use crate::repo::RepoError;
use crate::repo::view::work_tree_walker;

/// Searches the files under `root` (any directory, git repository or not):
/// `.gitignore`d files and `.git` directories are skipped, hidden files are
/// searched, binary files are abandoned at their first NUL byte.
pub fn search_dir(root: &Path, options: &SearchOptions) -> Result<SearchOutput, SearchError> {
    if !root.is_dir() {
        return Err(RepoError::NotFound {
            path: root.display().to_string(),
        }
        .into());
    }
    let query = Query::new(options)?;
    let shares = Mutex::new(Vec::new());
    let mut builder = VisitorBuilder {
        root,
        query: &query,
        options,
        shares: &shares,
    };
    work_tree_walker(root).build_parallel().visit(&mut builder);
    let shares = shares.into_inner().unwrap_or_else(PoisonError::into_inner);
    Ok(TopMatches::merge(shares, options.max_results))
}

/// Makes one [`Visitor`] per walker thread.
struct VisitorBuilder<'s> {
    root: &'s Path,
    query: &'s Query,
    options: &'s SearchOptions,
    shares: &'s Mutex<Vec<TopMatches>>,
}

impl<'s> ParallelVisitorBuilder<'s> for VisitorBuilder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            root: self.root,
            query: self.query,
            max_line_chars: self.options.max_line_chars,
            searcher: new_searcher(),
            top: TopMatches::new(self.options.max_results),
            shares: self.shares,
        })
    }
}

/// One walker thread: searches each file it is handed, and hands in its share when dropped.
struct Visitor<'s> {
    root: &'s Path,
    query: &'s Query,
    max_line_chars: usize,
    searcher: Searcher,
    top: TopMatches,
    shares: &'s Mutex<Vec<TopMatches>>,
}

impl Visitor<'_> {
    fn search_file(&mut self, entry: &DirEntry) {
        let Ok(relative) = entry.path().strip_prefix(self.root) else {
            return;
        };
        let relative = relative.to_string_lossy();
        if !self.query.filter.matches(&relative) {
            return;
        }
        let sink = FileSink {
            path: &relative,
            top: &mut self.top,
            max_line_chars: self.max_line_chars,
        };
        // An unreadable file is skipped, as ripgrep does; the rest of the search goes on.
        let _ = self
            .searcher
            .search_path(&self.query.matcher, entry.path(), sink);
    }
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if let Ok(entry) = entry
            && entry.file_type().is_some_and(|t| t.is_file())
        {
            self.search_file(&entry);
        }
        WalkState::Continue
    }
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let share = std::mem::replace(&mut self.top, TopMatches::new(0));
        self.shares
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(share);
    }
}
