//! What the planner is told about the change: every changed file with its
//! status and size, in the most detailed form that fits its share of the budget.
//!
//! Invariants: every changed file is accounted for (named, or counted under its
//! directory when there are too many to name); the text names no tool, since
//! the planner is offered only `submit_plan` (a person or a model cannot be
//! sent to a tool it does not have). The forms, most detailed first:
//! 1. one line per file (the review's own overview);
//! 2. one line per directory naming each file with a status letter and its size,
//!    or, for the directories whose names do not fit (the largest), counting
//!    their files with their statuses and size;
//! 3. counts only, per directory rolled up to the deepest level that fits.
//!
//! A task may name a directory to take its files (see [`super::plan::Plan::cover`]).

use std::collections::{BTreeMap, HashSet};

use crate::context::{ShapeStatus, ShapedContext, thousands};
use crate::llm::tokens::TokenCounter;
use crate::review::diff::{ChangeSet, FileChange, FileStatus};

/// The overview takes at most 1/SHARE of the task budget: the planner runs
/// once, and the list of files is all it reads.
pub(crate) const SHARE: usize = 4;

/// How a task may claim many files at once (what [`super::plan::Plan::cover`] reads).
const DIRECTORY_NOTE: &str = "A task's files may also name a directory ending in `/`: it covers every changed file under it that no task names one by one.";

/// `full` when it fits `cap` tokens, else the change by directory: every
/// directory's files named where they fit (smaller directories first), the
/// others counted; else counted by directory at the deepest level that fits.
pub(crate) fn planner_overview(
    full: &str,
    changes: &ChangeSet,
    shaped: &ShapedContext,
    cap: usize,
    counter: &TokenCounter,
) -> String {
    if counter.count(full) <= cap {
        return full.to_string();
    }
    let noise: HashSet<&str> = shaped
        .files
        .iter()
        .filter(|e| e.status == ShapeStatus::Excluded)
        .map(|e| e.path.as_str())
        .collect();
    let dirs = directories(changes, &noise);
    let header = header(changes.files.len(), dirs.len());
    let mut tokens = counter.count(&header);
    let mut costs: Vec<(usize, usize, usize)> = Vec::with_capacity(dirs.len());
    for (i, dir) in dirs.iter().enumerate() {
        let counted = counter.count(&dir.counted_line());
        tokens += counted;
        costs.push((
            counter.count(&dir.named_line()).saturating_sub(counted),
            i,
            counted,
        ));
    }
    if tokens <= cap {
        // Name the files of as many directories as fit, the cheapest first.
        costs.sort();
        let mut named = vec![false; dirs.len()];
        for (extra, i, _) in costs {
            if tokens + extra > cap {
                break;
            }
            tokens += extra;
            named[i] = true;
        }
        let mut out = header;
        for (dir, named) in dirs.iter().zip(named) {
            out.push_str(&match named {
                true => dir.named_line(),
                false => dir.counted_line(),
            });
        }
        return out;
    }
    let depth = changes
        .files
        .iter()
        .map(|f| f.path.matches('/').count())
        .max()
        .unwrap_or(0);
    for level in (1..depth).rev() {
        let counted = counted_by_directory(changes, &noise, level);
        if counter.count(&counted) <= cap {
            return counted;
        }
    }
    counted_by_directory(changes, &noise, 0)
}

fn header(files: usize, dirs: usize) -> String {
    format!(
        "The change touches {} file(s) in {} directories. Each directory lists its files (name, status, size) or, when they do not all fit here, counts them (status: A added, M modified, D deleted, R renamed, T type changed; size: +added -removed lines; noise: not under review). {DIRECTORY_NOTE}\n",
        thousands(files),
        thousands(dirs)
    )
}

/// One directory's changed files (not those of its subdirectories).
struct Directory {
    path: String,
    files: Vec<String>,
    count: Count,
}

impl Directory {
    /// `src/a/: b.rs M +3 -1, c.rs A +40`.
    fn named_line(&self) -> String {
        format!("{}: {}\n", shown_dir(&self.path), self.files.join(", "))
    }

    /// `src/a/: 2 files (1 A, 1 M), +43 -1`.
    fn counted_line(&self) -> String {
        self.count.line(&self.path)
    }
}

/// Files, statuses and size of a directory.
#[derive(Default)]
struct Count {
    files: usize,
    statuses: BTreeMap<char, usize>,
    added: usize,
    removed: usize,
    noise: usize,
}

impl Count {
    fn add(&mut self, file: &FileChange, noise: bool) {
        self.files += 1;
        *self.statuses.entry(letter(file.status)).or_default() += 1;
        self.added += file.additions();
        self.removed += file.deletions();
        self.noise += usize::from(noise);
    }

    fn line(&self, dir: &str) -> String {
        let statuses: Vec<String> = self
            .statuses
            .iter()
            .map(|(letter, n)| format!("{} {letter}", thousands(*n)))
            .collect();
        let noise = match self.noise {
            0 => String::new(),
            n => format!(", {} noise", thousands(n)),
        };
        format!(
            "{}: {} files ({}{noise}), +{} -{}\n",
            shown_dir(dir),
            thousands(self.files),
            statuses.join(", "),
            thousands(self.added),
            thousands(self.removed)
        )
    }
}

/// The change's directories, in path order, with their files.
fn directories(changes: &ChangeSet, noise: &HashSet<&str>) -> Vec<Directory> {
    let mut dirs: BTreeMap<&str, Directory> = BTreeMap::new();
    for file in &changes.files {
        let (dir, name) = split(&file.path);
        let is_noise = noise.contains(file.path.as_str());
        let renamed = file
            .old_path
            .as_deref()
            .map(|old| format!(" (from {old})"))
            .unwrap_or_default();
        let entry = dirs.entry(dir).or_insert_with(|| Directory {
            path: dir.to_string(),
            files: Vec::new(),
            count: Count::default(),
        });
        entry.files.push(format!(
            "{name} {}{renamed} {}{}",
            letter(file.status),
            size(file),
            if is_noise { " noise" } else { "" }
        ));
        entry.count.add(file, is_noise);
    }
    dirs.into_values().collect()
}

/// Counts per directory, directories cut to their first `level` components
/// (subdirectories counted with them).
fn counted_by_directory(changes: &ChangeSet, noise: &HashSet<&str>, level: usize) -> String {
    let mut dirs: BTreeMap<String, Count> = BTreeMap::new();
    for file in &changes.files {
        let (dir, _) = split(&file.path);
        let key = dir.split('/').take(level).collect::<Vec<_>>().join("/");
        dirs.entry(key)
            .or_default()
            .add(file, noise.contains(file.path.as_str()));
    }
    let mut out = format!(
        "The change touches {} file(s), too many to name here: they are counted by directory, subdirectories included (status: A added, M modified, D deleted, R renamed, T type changed; size: +added -removed lines; noise: not under review). {DIRECTORY_NOTE}\n",
        thousands(changes.files.len())
    );
    for (dir, count) in dirs {
        out.push_str(&count.line(&dir));
    }
    out
}

/// `("src/a", "b.rs")` for `src/a/b.rs`, `("", "b.rs")` for `b.rs`.
fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

fn shown_dir(dir: &str) -> String {
    match dir {
        "" => "./".into(),
        dir => format!("{dir}/"),
    }
}

fn letter(status: FileStatus) -> char {
    match status {
        FileStatus::Added => 'A',
        FileStatus::Modified => 'M',
        FileStatus::Deleted => 'D',
        FileStatus::Renamed => 'R',
        FileStatus::TypeChange => 'T',
    }
}

fn size(file: &FileChange) -> String {
    if file.binary {
        return "binary".into();
    }
    match (file.additions(), file.deletions()) {
        (a, 0) => format!("+{a}"),
        (0, d) => format!("-{d}"),
        (a, d) => format!("+{a} -{d}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::tokens::Encoding;

    fn change(count: usize) -> ChangeSet {
        ChangeSet {
            base: "b".into(),
            head: None,
            files: (0..count)
                .map(|i| FileChange {
                    path: format!("area{}/sub{}/file_{i}.rs", i % 7, i % 3),
                    old_path: None,
                    status: if i % 5 == 0 {
                        FileStatus::Added
                    } else {
                        FileStatus::Modified
                    },
                    binary: false,
                    hunks: Vec::new(),
                })
                .collect(),
        }
    }

    fn shaped() -> ShapedContext {
        ShapedContext {
            message: String::new(),
            files: Vec::new(),
            naive_tokens: 0,
            naive_exact: true,
            shaped_tokens: 0,
            changed_lines_total: 0,
            changed_lines_shown: 0,
            sections: Vec::new(),
            moves: Default::default(),
        }
    }

    fn full(changes: &ChangeSet) -> String {
        changes
            .files
            .iter()
            .map(|f| format!("- {} [{:?}] +0 -0\n", f.path, f.status))
            .collect()
    }

    #[test]
    fn names_every_file_by_directory_when_the_lines_do_not_fit() {
        let counter = TokenCounter::new(Encoding::O200kBase);
        let changes = change(300);
        let full = full(&changes);
        let cap = counter.count(&full) * 2 / 3;
        let text = planner_overview(&full, &changes, &shaped(), cap, &counter);
        assert!(counter.count(&text) <= cap, "{}", counter.count(&text));
        for file in &changes.files {
            let (dir, name) = split(&file.path);
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("{dir}/: ")))
                .unwrap_or_default();
            assert!(line.contains(&format!("{name} ")), "{name} in {line}");
        }
        assert!(!text.contains("tool"), "{text}");
    }

    #[test]
    fn thousands_of_files_are_counted_by_directory_within_the_cap() {
        let counter = TokenCounter::new(Encoding::O200kBase);
        let changes = change(5_000);
        let full = full(&changes);
        let text = planner_overview(&full, &changes, &shaped(), 1_500, &counter);
        assert!(counter.count(&text) <= 1_500, "{}", counter.count(&text));
        assert!(text.contains("5,000 file(s)"), "{text}");
        assert!(text.contains("area3/sub0/: "), "{text}");
        let counted: usize = text
            .lines()
            .skip(1)
            .filter_map(|l| {
                l.split(": ")
                    .nth(1)?
                    .split(' ')
                    .next()?
                    .replace(',', "")
                    .parse::<usize>()
                    .ok()
            })
            .sum();
        assert_eq!(counted, 5_000, "{text}");
        // Too small even for that: rolled up to the top directories.
        let text = planner_overview(&full, &changes, &shaped(), 300, &counter);
        assert!(text.contains("area3/: "), "{text}");
    }
}
