//! The case of one fix: a commit on top of the fix that puts its source files back as
//! they were before it, and the lines where the bug is back.
//!
//! Invariants: only the fix's source files change (its tests, docs, changelog,
//! lockfiles and the rest stay as the fix left them); the commit's message and the
//! case's title are neutral: they name the files, never a word of the fix's message
//! and never "revert" (commit messages of a reviewed range reach the model). The
//! commit's author, committer and time are fixed by the fix, so mining twice yields the
//! same commit. The only reference written is `refs/redline-eval/revert/<fix id>`.

use git2::{Commit, DiffDelta, Patch, Repository, Signature};

use super::EvalError;
use super::cases::{CASES_VERSION, Case, ExpectedRange};
use super::mine::{REF_NAMESPACE, delta_path, diff_of, short, summary_of};
use crate::review::finding::Side;

/// A neutral title for a change of `paths`: what it touches, nothing of why.
pub(crate) fn neutral_title(paths: &[String]) -> String {
    match paths {
        [] => "Change files".to_string(),
        [one] => format!("Change {one}"),
        [init @ .., last] => format!("Change {} and {last}", init.join(", ")),
    }
}

/// Writes the source revert of `fix` and returns its case; `None` when the revert
/// changes no line (nothing to expect). `sources` are the fix's source deltas' paths.
pub(crate) fn revert_case(
    repo: &Repository,
    root: &str,
    fix: &Commit<'_>,
    sources: &[String],
) -> Result<Option<Case>, EvalError> {
    let parent = fix.parent(0)?;
    let fixed = fix.tree()?;
    let diff = diff_of(repo, &parent.tree()?, &fixed)?;
    let mut update = git2::build::TreeUpdateBuilder::new();
    for delta in diff.deltas() {
        if sources.contains(&delta_path(&delta)) {
            undo(&mut update, &delta);
        }
    }
    let tree = repo.find_tree(update.create_updated(repo, &fixed)?)?;
    let title = neutral_title(sources);
    let signature = Signature::new("redline eval", "eval@redline.invalid", &fix.time())?;
    let commit = repo.commit(
        None,
        &signature,
        &signature,
        &(title.clone() + "\n"),
        &tree,
        &[fix],
    )?;
    repo.reference(
        &format!("{REF_NAMESPACE}revert/{}", fix.id()),
        commit,
        true,
        "redline eval: source revert of a fix",
    )?;
    let bug = short(fix.id());
    let why = format!("putting back the code before {bug} \"{}\"", summary_of(fix));
    let expected = restored_lines(repo, &fixed, &tree, &bug, &why)?;
    if expected.is_empty() {
        return Ok(None);
    }
    Ok(Some(Case {
        version: CASES_VERSION,
        id: format!("fix-{bug}"),
        repo: root.to_string(),
        base: fix.id().to_string(),
        head: commit.to_string(),
        expected,
        clean: false,
        source: format!("source revert of {bug}: {}", summary_of(fix)),
        title: Some(title),
        body: None,
    }))
}

/// Puts one path of a parent-to-fix delta back as it was in the parent.
fn undo(update: &mut git2::build::TreeUpdateBuilder, delta: &DiffDelta<'_>) {
    let (old, new) = (delta.old_file(), delta.new_file());
    let path = |file: &git2::DiffFile<'_>| file.path().map(|p| p.to_path_buf());
    if !old.id().is_zero() {
        if let Some(path) = path(&old) {
            update.upsert(path, old.id(), old.mode());
        }
    } else if let Some(path) = path(&new) {
        update.remove(path);
    }
}

/// The lines the revert puts back (head line numbers, side `RIGHT`), where it only
/// removes lines the line there, and those removed lines (side `LEFT`): all one bug.
fn restored_lines(
    repo: &Repository,
    fixed: &git2::Tree<'_>,
    reverted: &git2::Tree<'_>,
    bug: &str,
    why: &str,
) -> Result<Vec<ExpectedRange>, EvalError> {
    let diff = diff_of(repo, fixed, reverted)?;
    let mut expected = Vec::new();
    for index in 0..diff.deltas().len() {
        let Some(patch) = Patch::from_diff(&diff, index)? else {
            continue;
        };
        let path = delta_path(&patch.delta());
        let (mut added, mut removed_after, mut removed) = (Vec::new(), Vec::new(), Vec::new());
        for hunk_index in 0..patch.num_hunks() {
            let (hunk, lines) = patch.hunk(hunk_index)?;
            let only_removes = hunk.new_lines() == 0;
            if only_removes {
                removed_after.push(hunk.new_start());
            }
            for line_index in 0..lines {
                let line = patch.line_in_hunk(hunk_index, line_index)?;
                match line.origin() {
                    '+' => added.extend(line.new_lineno()),
                    '-' if only_removes => removed.extend(line.old_lineno()),
                    _ => {}
                }
            }
        }
        expected.extend(ranges_of(&path, &added, &removed_after, why));
        expected.extend(removed_ranges_of(&path, &removed, why));
    }
    for range in &mut expected {
        range.bug = bug.to_string();
    }
    Ok(expected)
}

/// The expected ranges of one file: runs of consecutive `added` lines, and for each
/// place where lines were only removed (`removed_after`: the head line before the
/// removal, 0 at the top) the line there.
pub(crate) fn ranges_of(
    path: &str,
    added: &[u32],
    removed_after: &[u32],
    why: &str,
) -> Vec<ExpectedRange> {
    let range = |start: u32, end: u32, what: &str| ExpectedRange {
        path: path.to_string(),
        start_line: start,
        end_line: end,
        side: Side::Right,
        description: format!("{why}: {what}"),
        bug: String::new(),
    };
    let mut ranges: Vec<ExpectedRange> = runs_of(added)
        .into_iter()
        .map(|(start, end)| range(start, end, "lines put back"))
        .collect();
    for &after in removed_after {
        let line = after.max(1);
        if !ranges
            .iter()
            .any(|r| (r.start_line..=r.end_line).contains(&line))
        {
            ranges.push(range(line, line, "lines of the fix removed here"));
        }
    }
    ranges.sort_by_key(|r| r.start_line);
    ranges
}

/// The lines of the fix a revert hunk only removes (base line numbers, side `LEFT`), as
/// runs: a reviewer pointing at the deleted check comments on them, not on the head.
pub(crate) fn removed_ranges_of(path: &str, removed: &[u32], why: &str) -> Vec<ExpectedRange> {
    runs_of(removed)
        .into_iter()
        .map(|(start, end)| ExpectedRange {
            path: path.to_string(),
            start_line: start,
            end_line: end,
            side: Side::Left,
            description: format!("{why}: lines of the fix removed"),
            bug: String::new(),
        })
        .collect()
}

/// `lines` (any order, repeats allowed) as runs of consecutive lines, first to last.
fn runs_of(lines: &[u32]) -> Vec<(u32, u32)> {
    let mut lines = lines.to_vec();
    lines.sort_unstable();
    lines.dedup();
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for line in lines {
        match runs.last_mut() {
            Some(last) if last.1.checked_add(1) == Some(line) => last.1 = line,
            _ => runs.push((line, line)),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restored_lines_become_ranges() {
        let ranges = ranges_of("a.rs", &[5, 3, 4, 9], &[20, 0, 4], "why");
        let spans: Vec<(u32, u32)> = ranges.iter().map(|r| (r.start_line, r.end_line)).collect();
        assert_eq!(spans, vec![(1, 1), (3, 5), (9, 9), (20, 20)]);
        assert!(
            ranges
                .iter()
                .all(|r| r.side == Side::Right && r.path == "a.rs")
        );
        assert!(ranges[1].description.starts_with("why: lines put back"));
    }

    #[test]
    fn titles_name_the_files_only() {
        let paths = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(neutral_title(&paths(&["src/a.py"])), "Change src/a.py");
        assert_eq!(
            neutral_title(&paths(&["a.rs", "b.rs", "c.rs"])),
            "Change a.rs, b.rs and c.rs"
        );
    }
}
