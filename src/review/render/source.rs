//! Where the code lines under a finding come from: the text of a file on one side of the
//! change (head for RIGHT-side findings, base for LEFT-side ones).

use std::cell::RefCell;
use std::collections::HashMap;

use crate::repo::{RepoView, Revision};
use crate::review::finding::Side;
use crate::tools::Workspace;

/// The text of files, as the review saw them. Returning `None` (unknown, binary, too
/// large) only means the finding is shown without its code lines.
pub trait SourceLookup {
    /// The whole text of `path` on `side`.
    fn text(&self, path: &str, side: Side) -> Option<String>;
}

/// No file text: findings are shown by location only.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSources;

impl SourceLookup for NoSources {
    fn text(&self, _: &str, _: Side) -> Option<String> {
        None
    }
}

impl<F: Fn(&str, Side) -> Option<String>> SourceLookup for F {
    fn text(&self, path: &str, side: Side) -> Option<String> {
        self(path, side)
    }
}

/// The files of a local review: the head version from the workspace's view, the base
/// version (of the file's old path when renamed) from the base commit. Each file is read
/// once, however many findings it has.
pub(crate) struct RepoSources<'a> {
    workspace: &'a Workspace,
    base: Option<RepoView>,
    read: RefCell<HashMap<(String, Side), Option<String>>>,
}

impl<'a> RepoSources<'a> {
    /// The sources of `workspace`; the base is read when it can be opened.
    pub(crate) fn new(workspace: &'a Workspace) -> Self {
        let base = RepoView::open(
            workspace.repo.root(),
            Revision::Commit(workspace.changes.base.clone()),
        )
        .ok();
        RepoSources {
            workspace,
            base,
            read: RefCell::default(),
        }
    }
}

impl SourceLookup for RepoSources<'_> {
    fn text(&self, path: &str, side: Side) -> Option<String> {
        let key = (path.to_string(), side);
        if let Some(text) = self.read.borrow().get(&key) {
            return text.clone();
        }
        let text = self.read_file(path, side);
        self.read.borrow_mut().insert(key, text.clone());
        text
    }
}

impl RepoSources<'_> {
    fn read_file(&self, path: &str, side: Side) -> Option<String> {
        match side {
            Side::Right => self.workspace.repo.read_text(path).ok(),
            Side::Left => {
                let old_path = self
                    .workspace
                    .changes
                    .files
                    .iter()
                    .find(|file| file.path == path)
                    .and_then(|file| file.old_path.as_deref())
                    .unwrap_or(path);
                self.base.as_ref()?.read_text(old_path).ok()
            }
        }
    }
}

/// Lines `first..=last` (1-based) of `text`, each without its line ending, or `None` when
/// the file is shorter than `last`.
pub(super) fn lines(text: &str, first: u32, last: u32) -> Option<Vec<&str>> {
    let first = usize::try_from(first.max(1)).ok()?;
    let last = usize::try_from(last).ok()?;
    let lines: Vec<&str> = text
        .lines()
        .skip(first - 1)
        .take(last.checked_sub(first)? + 1)
        .collect();
    (lines.len() == last - first + 1).then_some(lines)
}

/// The text with every control character but newline and tab removed: file text, titles
/// and bodies come from the repository and the model, and must not drive the terminal.
pub(super) fn printable(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_taken_whole_or_not_at_all() {
        let text = "a\nb\r\nc\n";
        assert_eq!(lines(text, 2, 3), Some(vec!["b", "c"]));
        assert_eq!(lines(text, 3, 4), None);
        assert_eq!(lines(text, 0, 1), Some(vec!["a"]));
    }

    #[test]
    fn escape_sequences_are_not_printable() {
        assert_eq!(printable("a\x1b[31mb\tc\n\u{9b}d"), "a[31mb\tc\nd");
    }
}
