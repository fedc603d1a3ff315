//! Computing the change under review with git2, shaped as GitHub shows it.

use std::path::Path;

use git2::{Delta, Diff, DiffFile, DiffFindOptions, DiffOptions, FileMode, Patch, Repository};

use super::{RepoError, RepoView, ResolvedRange, Revision, open_repository, resolve_commit};
use crate::review::diff::{ChangeSet, DiffLine, FileChange, FileStatus, Hunk, LineKind};

/// Lines of context around each change, as GitHub shows them.
const CONTEXT_LINES: u32 = 3;

/// Computes the change from `range.base` to `range.head`, or with `uncommitted`
/// to the work tree (staged, unstaged and untracked non-ignored files), and
/// the view of the files the tools will read.
pub fn load_change(
    root: &Path,
    range: &ResolvedRange,
    uncommitted: bool,
) -> Result<(RepoView, ChangeSet), RepoError> {
    let repo = open_repository(root)?;
    let files = changed_files(&repo, range, uncommitted)?;
    let (revision, head) = if uncommitted {
        (Revision::WorkTree, None)
    } else {
        (
            Revision::Commit(range.head.clone()),
            Some(range.head.clone()),
        )
    };
    // The view keeps the handle the diff was computed with for all its reads.
    let view = RepoView::with_repository(repo, root, revision)?;
    let changes = ChangeSet {
        base: range.base.clone(),
        head,
        files,
    };
    Ok((view, changes))
}

/// The changed files of the range, sorted by path.
fn changed_files(
    repo: &Repository,
    range: &ResolvedRange,
    uncommitted: bool,
) -> Result<Vec<FileChange>, RepoError> {
    let base_tree = resolve_commit(repo, &range.base)?.tree()?;
    let mut options = diff_options(uncommitted);
    let mut diff = if uncommitted {
        repo.diff_tree_to_workdir_with_index(Some(&base_tree), Some(&mut options))?
    } else {
        let head_tree = resolve_commit(repo, &range.head)?.tree()?;
        repo.diff_tree_to_tree(Some(&base_tree), Some(&head_tree), Some(&mut options))?
    };
    let mut find = DiffFindOptions::new();
    find.renames(true).for_untracked(uncommitted);
    diff.find_similar(Some(&mut find))?;

    files_of(&diff)
}

/// The file changes of a patch in unified format, as `git diff` prints it
/// (parsed by libgit2), shaped as [`load_change`] shapes them (the fuzzing suites' entry).
#[cfg(test)]
pub(crate) fn changes_from_patch(patch: &[u8]) -> Result<Vec<FileChange>, RepoError> {
    files_of(&Diff::from_buffer(patch)?)
}

/// The file changes of `diff` a review looks at, in path order.
fn files_of(diff: &Diff<'_>) -> Result<Vec<FileChange>, RepoError> {
    let mut files = Vec::new();
    for index in 0..diff.deltas().len() {
        if let Some(file) = file_change(diff, index)? {
            files.push(file);
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

fn diff_options(uncommitted: bool) -> DiffOptions {
    let mut options = DiffOptions::new();
    options
        .context_lines(CONTEXT_LINES)
        .include_typechange(true)
        .ignore_submodules(true);
    if uncommitted {
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .show_untracked_content(true);
    }
    options
}

/// The file change at `index`, or `None` for entries a review skips (submodules, unchanged).
fn file_change(diff: &Diff<'_>, index: usize) -> Result<Option<FileChange>, RepoError> {
    let Some(delta) = diff.get_delta(index) else {
        return Ok(None);
    };
    let (old, new) = (delta.old_file(), delta.new_file());
    let submodule = i32::from(FileMode::Commit);
    if raw_mode(&old) == submodule || raw_mode(&new) == submodule {
        return Ok(None);
    }
    let Some(mut status) = file_status(delta.status()) else {
        return Ok(None);
    };
    let side = if status == FileStatus::Deleted {
        &old
    } else {
        &new
    };
    let path = git_path(side.path_bytes());
    let old_path = (status == FileStatus::Renamed).then(|| git_path(old.path_bytes()));
    let mode_changed = raw_mode(&old) != raw_mode(&new);

    // Generating the patch is what runs binary detection, so read the flag from it.
    let patch = Patch::from_diff(diff, index)?;
    let binary = match &patch {
        Some(patch) => patch.delta().flags().is_binary(),
        None => delta.flags().is_binary(),
    };
    let hunks = match patch {
        Some(patch) if !binary => hunks(&patch)?,
        _ => Vec::new(),
    };
    if status == FileStatus::Modified && hunks.is_empty() && !binary && mode_changed {
        status = FileStatus::TypeChange;
    }
    Ok(Some(FileChange {
        path,
        old_path,
        status,
        binary,
        hunks,
    }))
}

/// The mode bits of one side of a delta.
///
/// `DiffFile::mode` panics on bits outside git's canonical modes, and a crafted
/// tree or patch can hold any bits (the fuzz suite found one), so they are read
/// as they are.
fn raw_mode(file: &DiffFile<'_>) -> i32 {
    // SAFETY: `raw` is the pointer `file` wraps; it points into the diff that
    // `file` borrows, so it is valid for this read.
    i32::from(unsafe { (*git2::Binding::raw(file)).mode })
}

fn file_status(delta: Delta) -> Option<FileStatus> {
    match delta {
        Delta::Added | Delta::Untracked | Delta::Copied => Some(FileStatus::Added),
        Delta::Deleted => Some(FileStatus::Deleted),
        Delta::Modified | Delta::Conflicted => Some(FileStatus::Modified),
        Delta::Renamed => Some(FileStatus::Renamed),
        Delta::Typechange => Some(FileStatus::TypeChange),
        Delta::Unmodified | Delta::Ignored | Delta::Unreadable => None,
    }
}

fn hunks(patch: &Patch<'_>) -> Result<Vec<Hunk>, RepoError> {
    let mut hunks = Vec::with_capacity(patch.num_hunks());
    for hunk_index in 0..patch.num_hunks() {
        let (hunk, line_count) = patch.hunk(hunk_index)?;
        let mut lines = Vec::with_capacity(line_count);
        for line_index in 0..line_count {
            let line = patch.line_in_hunk(hunk_index, line_index)?;
            let kind = match line.origin() {
                ' ' => LineKind::Context,
                '+' => LineKind::Added,
                '-' => LineKind::Removed,
                // "\ No newline at end of file" markers are not lines of the file.
                _ => continue,
            };
            lines.push(DiffLine {
                kind,
                old_line: line.old_lineno(),
                new_line: line.new_lineno(),
                text: line_text(line.content()),
            });
        }
        hunks.push(Hunk {
            old_start: hunk.old_start(),
            old_lines: hunk.old_lines(),
            new_start: hunk.new_start(),
            new_lines: hunk.new_lines(),
            header: hunk_header_context(hunk.header()),
            lines,
        });
    }
    Ok(hunks)
}

/// The text after `@@ -a,b +c,d @@`, usually the enclosing function.
fn hunk_header_context(header: &[u8]) -> String {
    let header = String::from_utf8_lossy(header);
    let after_marker = header
        .strip_prefix("@@")
        .and_then(|rest| rest.split_once("@@"))
        .map_or("", |(_, context)| context);
    after_marker.trim().to_string()
}

fn line_text(content: &[u8]) -> String {
    let content = content.strip_suffix(b"\n").unwrap_or(content);
    let content = content.strip_suffix(b"\r").unwrap_or(content);
    String::from_utf8_lossy(content).into_owned()
}

/// Git paths are bytes; tools and findings use `/`-separated strings.
fn git_path(bytes: Option<&[u8]>) -> String {
    bytes
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_file_modes_do_not_panic() {
        let patch = "diff --git a/a.rs b/a.rs\nold mode 100604\nnew mode 100644\nindex 1111111..2222222\n--- a/a.rs\n+++ b/a.rs\n@@ -1 +1 @@\n-x\n+y\n";
        let files = changes_from_patch(patch.as_bytes()).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, "a.rs");
        assert_eq!(files[0].hunks[0].lines.len(), 2);
    }

    #[test]
    fn hunk_header_keeps_only_the_context() {
        assert_eq!(
            hunk_header_context(b"@@ -1,3 +1,4 @@ fn main() {\n"),
            "fn main() {"
        );
        assert_eq!(hunk_header_context(b"@@ -1 +1 @@\n"), "");
    }

    #[test]
    fn line_text_drops_the_line_ending() {
        assert_eq!(line_text(b"a\r\n"), "a");
        assert_eq!(line_text(b"b"), "b");
    }
}
