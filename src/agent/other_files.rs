//! The rest of the change, as one plan-and-execute task sees it: the changed
//! files its own first message does not show, by path only and grouped by
//! directory.
//!
//! Every task pays for this list again, so it is kept small: no file of the
//! task itself (its diff names those), no sizes or statuses except deletions,
//! noise counted rather than named, and at most [`SHARE`] of the task budget
//! (the rest counted). The planner, which runs once, gets the full overview.

use std::collections::{BTreeMap, HashSet};

use crate::context::ShapeStatus;
use crate::context::ShapedContext;
use crate::llm::tokens::TokenCounter;

/// The list takes at most 1/SHARE of the task budget.
pub(crate) const SHARE: usize = 48;

/// The list for a task whose first message shows `own` (paths).
pub(crate) fn other_files(
    shaped: &ShapedContext,
    own: &HashSet<&str>,
    budget: usize,
    counter: &TokenCounter,
) -> String {
    let mut by_dir: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut noise = 0;
    for entry in &shaped.files {
        if own.contains(entry.path.as_str()) {
            continue;
        }
        if entry.status == ShapeStatus::Excluded {
            noise += 1;
            continue;
        }
        let (dir, name) = match entry.path.rsplit_once('/') {
            Some((dir, name)) => (dir, name),
            None => ("", entry.path.as_str()),
        };
        let deleted = entry.reason.as_deref() == Some("deleted");
        by_dir.entry(dir).or_default().push(match deleted {
            true => format!("{name} (deleted)"),
            false => name.to_string(),
        });
    }
    if by_dir.is_empty() && noise == 0 {
        return String::new();
    }
    let mut out = String::from(
        "Other files of this change (other tasks review them; read them only when you need them to judge this task's files):\n",
    );
    let cap = budget / SHARE;
    let mut tokens = counter.count(&out);
    let mut left_out = 0;
    for (dir, names) in &by_dir {
        let line = match *dir {
            "" => format!("{}\n", names.join(", ")),
            dir => format!("{dir}/: {}\n", names.join(", ")),
        };
        let cost = counter.count(&line);
        if left_out > 0 || tokens + cost > cap {
            left_out += names.len();
            continue;
        }
        tokens += cost;
        out.push_str(&line);
    }
    if left_out > 0 {
        out.push_str(&format!(
            "… and {left_out} more (the `diff` tool without a path lists every changed file)\n"
        ));
    }
    if noise > 0 {
        out.push_str(&format!(
            "{noise} more file(s) left out as noise (lockfiles, generated, vendored…)\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::FileEntry;
    use crate::llm::tokens::Encoding;

    fn entry(path: &str, status: ShapeStatus, reason: Option<&str>) -> FileEntry {
        FileEntry {
            path: path.into(),
            old_path: None,
            status,
            reason: reason.map(str::to_string),
            tokens: 0,
            tokens_exact: true,
            changed_lines: 1,
        }
    }

    fn shaped(files: Vec<FileEntry>) -> ShapedContext {
        ShapedContext {
            message: String::new(),
            files,
            naive_tokens: 0,
            naive_exact: true,
            shaped_tokens: 0,
            changed_lines_total: 0,
            changed_lines_shown: 0,
            sections: Vec::new(),
        }
    }

    #[test]
    fn lists_other_files_by_directory_without_the_tasks_own() {
        let shaped = shaped(vec![
            entry("src/a.rs", ShapeStatus::Shown, None),
            entry("src/b.rs", ShapeStatus::Shown, None),
            entry("src/old.rs", ShapeStatus::Listed, Some("deleted")),
            entry("README.md", ShapeStatus::Shown, None),
            entry("Cargo.lock", ShapeStatus::Excluded, Some("lockfile")),
        ]);
        let counter = TokenCounter::new(Encoding::O200kBase);
        let own: HashSet<&str> = ["src/a.rs"].into_iter().collect();
        let text = other_files(&shaped, &own, 24_000, &counter);
        assert!(text.contains("\nREADME.md\n"), "{text}");
        assert!(text.contains("src/: b.rs, old.rs (deleted)\n"), "{text}");
        assert!(!text.contains("a.rs,"), "{text}");
        assert!(text.contains("1 more file(s) left out as noise"), "{text}");
    }

    #[test]
    fn a_long_list_is_cut_to_its_share_of_the_budget() {
        let files = (0..2_000)
            .map(|i| entry(&format!("dir{i}/file{i}.rs"), ShapeStatus::Shown, None))
            .collect();
        let counter = TokenCounter::new(Encoding::O200kBase);
        let text = other_files(&shaped(files), &HashSet::new(), 24_000, &counter);
        assert!(
            counter.count(&text) <= 24_000 / SHARE + 60,
            "{}",
            counter.count(&text)
        );
        assert!(text.contains("more (the `diff` tool"), "{text}");
    }
}
