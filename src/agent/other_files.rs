//! The rest of the change, as one plan-and-execute task sees it: the changed
//! files its own first message does not show, by name in the task's own
//! directories, as counts per directory elsewhere.
//!
//! Every task pays for this list again, so it is kept small: no file of the
//! task itself (its diff names those), no sizes or statuses except deletions,
//! noise counted rather than named, and at most 1/[`SHARE`] of the task budget
//! (the rest counted). The planner, which runs once, gets the full overview.

use std::collections::{BTreeMap, HashSet};

use crate::context::ShapeStatus;
use crate::context::ShapedContext;
use crate::llm::tokens::TokenCounter;

/// The list takes at most 1/SHARE of the task budget.
pub(crate) const SHARE: usize = 64;

/// The list for a task whose first message shows `own` (paths): files of the
/// task's own directories by name, the other directories with their counts.
pub(crate) fn other_files(
    shaped: &ShapedContext,
    own: &HashSet<&str>,
    budget: usize,
    counter: &TokenCounter,
) -> String {
    let own_dirs: HashSet<&str> = own.iter().map(|path| dir_and_name(path).0).collect();
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
        let (dir, name) = dir_and_name(&entry.path);
        let deleted = entry.reason.as_deref() == Some("deleted");
        by_dir.entry(dir).or_default().push(match deleted {
            true => format!("{name} (deleted)"),
            false => name.to_string(),
        });
    }
    if by_dir.is_empty() && noise == 0 {
        return String::new();
    }
    let mut lines: Vec<String> = Vec::new();
    let mut elsewhere: Vec<String> = Vec::new();
    for (dir, names) in &by_dir {
        match (own_dirs.contains(dir), *dir) {
            (true, "") => lines.push(format!("{}\n", names.join(", "))),
            (true, dir) => lines.push(format!("{dir}/: {}\n", names.join(", "))),
            (false, "") => elsewhere.push(format!("./ ({})", names.len())),
            (false, dir) => elsewhere.push(format!("{dir}/ ({})", names.len())),
        }
    }
    if !elsewhere.is_empty() {
        lines.push(format!(
            "In other directories (files): {}\n",
            elsewhere.join(", ")
        ));
    }
    let mut out = String::from(
        "Other files of this change (other tasks review them; read them only when you need them to judge this task's files):\n",
    );
    let cap = budget / SHARE;
    let mut tokens = counter.count(&out);
    let mut left_out = 0;
    for line in lines {
        let cost = counter.count(&line);
        if left_out > 0 || tokens + cost > cap {
            left_out += 1;
            continue;
        }
        tokens += cost;
        out.push_str(&line);
    }
    if left_out > 0 {
        out.push_str(&format!(
            "… and {left_out} more line(s) (the `diff` tool without a path lists every changed file)\n"
        ));
    }
    if noise > 0 {
        out.push_str(&format!(
            "{noise} more file(s) left out as noise (lockfiles, generated, vendored…)\n"
        ));
    }
    out
}

/// `("src/a", "b.rs")` for `src/a/b.rs`, `("", "b.rs")` for `b.rs`.
fn dir_and_name(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
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
            moves: Default::default(),
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
        assert!(
            text.contains("In other directories (files): ./ (1)\n"),
            "{text}"
        );
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
        let own_paths: Vec<String> = (0..2_000)
            .step_by(2)
            .map(|i| format!("dir{i}/own.rs"))
            .collect();
        let own: HashSet<&str> = own_paths.iter().map(String::as_str).collect();
        let text = other_files(&shaped(files), &own, 24_000, &counter);
        assert!(
            counter.count(&text) <= 24_000 / SHARE + 60,
            "{}",
            counter.count(&text)
        );
        assert!(text.contains("more line(s) (the `diff` tool"), "{text}");
    }
}
