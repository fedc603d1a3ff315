//! Mining cases from a repository's history: every bug-fix commit becomes a case
//! whose change reverts the fix (the bug comes back), and, on request, ordinary
//! commits become clean cases.
//!
//! Selection: a non-merge commit whose message has one of the words of
//! [`is_fix_message`], touching 1 to [`MAX_CODE_FILES`] code files (tests included)
//! with at least one non-test source file, at most [`MAX_CHANGED_LINES`] changed
//! lines in all, and no binary file. Clean cases pass the same size rules without
//! the words.
//!
//! Invariants: the user's branches, `HEAD`, index and work tree are never written:
//! the revert is computed in memory ([`git2::Repository::revert_commit`]), its tree
//! and commit are written as objects, and the only reference created is
//! `refs/redline-eval/revert/<fix id>` (so the commit outlives garbage collection).
//! The revert commit's author, committer and time are fixed by the fix commit, so
//! mining twice yields the same commit ids.

use std::path::Path;
use std::sync::OnceLock;

use git2::{Commit, DiffOptions, Oid, Patch, Repository, Signature, Sort};

use super::EvalError;
use super::cases::{CASES_VERSION, Case, ExpectedRange};
use crate::review::finding::Side;

/// Where revert commits are kept (no branch, no tag: nothing the user looks at).
pub(crate) const REF_NAMESPACE: &str = "refs/redline-eval/";
/// Most code files a mined commit may touch.
pub(crate) const MAX_CODE_FILES: usize = 3;
/// Most changed lines (added plus deleted) a mined commit may have.
pub(crate) const MAX_CHANGED_LINES: usize = 60;

/// What to mine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MineOptions {
    /// Fix cases at most (newest first).
    pub limit: usize,
    /// Only commits made at or after this time (seconds since the epoch).
    pub since: Option<i64>,
    /// Clean cases to pick among ordinary commits.
    pub clean: usize,
}

/// The mined cases and what was looked at.
#[derive(Debug, Clone, PartialEq)]
pub struct Mined {
    /// Fix cases, then clean cases, each newest first.
    pub cases: Vec<Case>,
    /// Commits looked at.
    pub scanned: usize,
}

/// Whether a commit message says it fixes a bug (whole words, any case).
pub(crate) fn is_fix_message(message: &str) -> bool {
    static WORDS: OnceLock<Option<regex::Regex>> = OnceLock::new();
    let pattern = r"(?i)\b(hotfix(es)?|fix(es|ed|ing)?|bugs?|bugfix(es)?|crash(es|ed|ing)?|leak(s|ed|ing)?|overflow(s|ed|ing)?|races?|regressions?|panic(s|ked|king)?)\b";
    WORDS
        .get_or_init(|| regex::Regex::new(pattern).ok())
        .as_ref()
        .is_some_and(|words| words.is_match(message))
}

/// What a changed file is, for the selection rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// Program code.
    Source,
    /// Test code.
    Test,
    /// Documentation.
    Doc,
    /// Anything else (configuration, data, lock files).
    Other,
}

const CODE_EXTENSIONS: &[&str] = &[
    "rs", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "go", "py", "js", "jsx", "ts", "tsx", "mjs",
    "cjs", "java", "kt", "kts", "scala", "swift", "m", "mm", "rb", "php", "cs", "fs", "ex", "exs",
    "erl", "hs", "ml", "lua", "pl", "sh", "bash", "zig", "dart", "vue", "svelte", "sql", "r", "jl",
    "clj", "groovy", "nim", "v", "sv", "vhd",
];
const DOC_EXTENSIONS: &[&str] = &["md", "markdown", "rst", "txt", "adoc", "org"];

/// Classifies a repository path by its directories, name and extension.
pub fn classify(path: &str) -> FileKind {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let extension = name.rsplit_once('.').map_or("", |(_, e)| e);
    let parts: Vec<&str> = lower.split('/').collect();
    let dirs = parts.split_last().map_or(&[][..], |(_, dirs)| dirs);
    let in_dir = |names: &[&str]| dirs.iter().any(|d| names.contains(d));
    if DOC_EXTENSIONS.contains(&extension) || in_dir(&["doc", "docs"]) {
        return FileKind::Doc;
    }
    if !CODE_EXTENSIONS.contains(&extension) {
        return FileKind::Other;
    }
    let test_name = name.starts_with("test_")
        || ["_test.", ".test.", "_spec.", ".spec.", "_tests."]
            .iter()
            .any(|marker| name.contains(marker));
    if test_name || in_dir(&["test", "tests", "spec", "__tests__", "testdata"]) {
        FileKind::Test
    } else {
        FileKind::Source
    }
}

/// What a commit changes, as far as the selection rules care.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommitShape {
    /// The changed files and their kinds.
    pub files: Vec<(String, FileKind)>,
    /// Added plus deleted lines over all files.
    pub changed_lines: usize,
    /// Whether some changed file is binary.
    pub binary: bool,
}

/// Whether a commit of this shape may become a case.
pub fn fits(shape: &CommitShape) -> bool {
    let code = shape
        .files
        .iter()
        .filter(|(_, k)| matches!(k, FileKind::Source | FileKind::Test))
        .count();
    let source = shape.files.iter().any(|(_, k)| *k == FileKind::Source);
    source
        && (1..=MAX_CODE_FILES).contains(&code)
        && shape.changed_lines <= MAX_CHANGED_LINES
        && !shape.binary
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

/// Mines cases from the history of `HEAD` of the repository at `repo_path`.
pub fn mine(repo_path: &Path, options: &MineOptions) -> Result<Mined, EvalError> {
    let repo = Repository::discover(repo_path)?;
    let root = repo
        .workdir()
        .unwrap_or_else(|| repo.path())
        .components()
        .collect::<std::path::PathBuf>();
    let root = root.display().to_string();
    let mut walk = repo.revwalk()?;
    walk.push_head()?;
    walk.set_sorting(Sort::TIME)?;
    let (mut fixes, mut cleans, mut scanned) = (Vec::new(), Vec::new(), 0);
    for oid in walk {
        if fixes.len() >= options.limit && cleans.len() >= options.clean {
            break;
        }
        scanned += 1;
        let commit = repo.find_commit(oid?)?;
        if commit.parent_count() != 1
            || options
                .since
                .is_some_and(|since| commit.time().seconds() < since)
        {
            continue;
        }
        let fix = is_fix_message(&String::from_utf8_lossy(commit.message_bytes()));
        let wanted = if fix {
            fixes.len() < options.limit
        } else {
            cleans.len() < options.clean
        };
        if !wanted || !fits(&shape_of(&repo, &commit)?) {
            continue;
        }
        if fix {
            fixes.extend(revert_case(&repo, &root, &commit)?);
        } else {
            cleans.push(clean_case(&root, &commit)?);
        }
    }
    fixes.extend(cleans);
    Ok(Mined {
        cases: fixes,
        scanned,
    })
}

/// The first line of a commit's message (lossy when it is not UTF-8).
fn summary_of(commit: &Commit<'_>) -> String {
    commit
        .summary_bytes()
        .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
        .unwrap_or_default()
}

fn short(oid: Oid) -> String {
    oid.to_string().chars().take(7).collect()
}

fn diff_of<'r>(
    repo: &'r Repository,
    old: &git2::Tree<'_>,
    new: &git2::Tree<'_>,
) -> Result<git2::Diff<'r>, EvalError> {
    let mut options = DiffOptions::new();
    options.context_lines(0);
    Ok(repo.diff_tree_to_tree(Some(old), Some(new), Some(&mut options))?)
}

fn delta_path(delta: &git2::DiffDelta<'_>) -> String {
    delta
        .new_file()
        .path()
        .or_else(|| delta.old_file().path())
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .unwrap_or_default()
}

/// The shape of a one-parent commit; files are classified before any patch is made,
/// so large commits are dismissed cheaply.
fn shape_of(repo: &Repository, commit: &Commit<'_>) -> Result<CommitShape, EvalError> {
    let parent = commit.parent(0)?;
    let diff = diff_of(repo, &parent.tree()?, &commit.tree()?)?;
    let mut shape = CommitShape::default();
    for delta in diff.deltas() {
        let path = delta_path(&delta);
        let kind = classify(&path);
        shape.files.push((path, kind));
    }
    let code = shape
        .files
        .iter()
        .filter(|(_, k)| matches!(k, FileKind::Source | FileKind::Test))
        .count();
    if code > MAX_CODE_FILES || shape.files.len() > 4 * MAX_CODE_FILES {
        shape.changed_lines = usize::MAX;
        return Ok(shape);
    }
    for index in 0..shape.files.len() {
        let Some(patch) = Patch::from_diff(&diff, index)? else {
            shape.binary = true;
            continue;
        };
        shape.binary |= patch.delta().flags().is_binary();
        let (_, added, deleted) = patch.line_stats()?;
        shape.changed_lines = shape.changed_lines.saturating_add(added + deleted);
    }
    Ok(shape)
}

fn clean_case(root: &str, commit: &Commit<'_>) -> Result<Case, EvalError> {
    Ok(Case {
        version: CASES_VERSION,
        id: format!("clean-{}", short(commit.id())),
        repo: root.to_string(),
        base: commit.parent_id(0)?.to_string(),
        head: commit.id().to_string(),
        expected: Vec::new(),
        clean: true,
        source: format!("commit {}: {}", short(commit.id()), summary_of(commit)),
    })
}

/// Writes the revert of `fix` on top of `fix` and the case reviewing it; `None` when
/// the revert touches no source line (nothing to expect).
fn revert_case(repo: &Repository, root: &str, fix: &Commit<'_>) -> Result<Option<Case>, EvalError> {
    let mut index = repo.revert_commit(fix, fix, 0, None)?;
    if index.has_conflicts() {
        return Ok(None);
    }
    let tree = repo.find_tree(index.write_tree_to(repo)?)?;
    let signature = Signature::new("redline eval", "eval@redline.invalid", &fix.time())?;
    let summary = summary_of(fix);
    let message = format!(
        "Revert \"{summary}\"\n\nThis reverts commit {}.\n",
        fix.id()
    );
    let revert = repo.commit(None, &signature, &signature, &message, &tree, &[fix])?;
    repo.reference(
        &format!("{REF_NAMESPACE}revert/{}", fix.id()),
        revert,
        true,
        "redline eval: revert of a fix",
    )?;
    let expected = restored_lines(repo, &fix.tree()?, &tree, short(fix.id()))?;
    if expected.is_empty() {
        return Ok(None);
    }
    Ok(Some(Case {
        version: CASES_VERSION,
        id: format!("fix-{}", short(fix.id())),
        repo: root.to_string(),
        base: fix.id().to_string(),
        head: revert.to_string(),
        expected,
        clean: false,
        source: format!("revert of {}: {summary}", short(fix.id())),
    }))
}

/// The lines of source files (tests and docs left out) the revert puts back, in head
/// line numbers.
fn restored_lines(
    repo: &Repository,
    fixed: &git2::Tree<'_>,
    reverted: &git2::Tree<'_>,
    fix: String,
) -> Result<Vec<ExpectedRange>, EvalError> {
    let diff = diff_of(repo, fixed, reverted)?;
    let why = format!("the revert of {fix} puts the code before the fix back");
    let mut expected = Vec::new();
    for index in 0..diff.deltas().len() {
        let Some(patch) = Patch::from_diff(&diff, index)? else {
            continue;
        };
        let path = delta_path(&patch.delta());
        if classify(&path) != FileKind::Source {
            continue;
        }
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
        expected.extend(ranges_of(&path, &added, &removed_after, &why));
        expected.extend(removed_ranges_of(&path, &removed, &why));
    }
    Ok(expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fix_words_are_whole_words() {
        for message in [
            "Fix off-by-one in parser",
            "parser: fixes #12",
            "avoid a crash on empty input",
            "plug memory leak",
            "integer overflow in len",
            "data race in cache",
            "regression from 1.2",
            "do not panic on EOF",
            "Bug 1234: wrong total",
            "hotfix for login",
        ] {
            assert!(is_fix_message(message), "{message}");
        }
        for message in [
            "add prefix support",
            "debug logging",
            "new fixture files",
            "trace requests",
            "Bump version",
            "brace style",
        ] {
            assert!(!is_fix_message(message), "{message}");
        }
    }

    #[test]
    fn paths_are_classified() {
        assert_eq!(classify("src/parser.rs"), FileKind::Source);
        assert_eq!(classify("lib/util.py"), FileKind::Source);
        assert_eq!(classify("tests/parser.rs"), FileKind::Test);
        assert_eq!(classify("pkg/http_test.go"), FileKind::Test);
        assert_eq!(classify("web/app.spec.ts"), FileKind::Test);
        assert_eq!(classify("README.md"), FileKind::Doc);
        assert_eq!(classify("docs/guide.rs"), FileKind::Doc);
        assert_eq!(classify("Cargo.lock"), FileKind::Other);
        assert_eq!(classify("Makefile"), FileKind::Other);
    }

    fn shape(files: &[(&str, FileKind)], lines: usize) -> CommitShape {
        CommitShape {
            files: files.iter().map(|(p, k)| (p.to_string(), *k)).collect(),
            changed_lines: lines,
            binary: false,
        }
    }

    #[test]
    fn size_rules_select_small_source_changes() {
        use FileKind::*;
        assert!(fits(&shape(&[("a.rs", Source)], 60)));
        assert!(!fits(&shape(&[("a.rs", Source)], 61)));
        assert!(fits(&shape(
            &[
                ("a.rs", Source),
                ("t.rs", Test),
                ("b.rs", Source),
                ("N.md", Doc)
            ],
            10
        )));
        assert!(!fits(&shape(
            &[
                ("a.rs", Source),
                ("b.rs", Source),
                ("c.rs", Source),
                ("d.rs", Test)
            ],
            10
        )));
        assert!(!fits(&shape(&[("t.rs", Test), ("N.md", Doc)], 10)));
        assert!(!fits(&shape(&[("N.md", Doc)], 1)));
        let mut binary = shape(&[("a.rs", Source)], 1);
        binary.binary = true;
        assert!(!fits(&binary));
    }

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
    fn a_revert_that_only_removes_lines_expects_them_on_the_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(dir.path()).expect("init");
        let signature = Signature::now("t", "t@example.invalid").expect("signature");
        let mut parent: Option<Oid> = None;
        for (text, message) in [
            ("fn f(v: &[u8], i: usize) -> u8 {\n    v[i]\n}\n", "add f"),
            (
                "fn f(v: &[u8], i: usize) -> u8 {\n    if i >= v.len() {\n        return 0;\n    }\n    v[i]\n}\n",
                "fix panic on a short slice",
            ),
        ] {
            let blob = repo.blob(text.as_bytes()).expect("blob");
            let mut builder = repo.treebuilder(None).expect("treebuilder");
            builder.insert("lib.rs", blob, 0o100644).expect("insert");
            let tree = repo
                .find_tree(builder.write().expect("tree"))
                .expect("tree");
            let parents: Vec<Commit<'_>> = parent
                .iter()
                .map(|id| repo.find_commit(*id).expect("parent"))
                .collect();
            let refs: Vec<&Commit<'_>> = parents.iter().collect();
            let id = repo
                .commit(Some("HEAD"), &signature, &signature, message, &tree, &refs)
                .expect("commit");
            parent = Some(id);
        }
        let options = MineOptions {
            limit: 5,
            since: None,
            clean: 0,
        };
        let mined = mine(dir.path(), &options).expect("mine");
        assert_eq!(mined.cases.len(), 1);
        let spans: Vec<(Side, u32, u32)> = mined.cases[0]
            .expected
            .iter()
            .map(|r| (r.side, r.start_line, r.end_line))
            .collect();
        // The head keeps line 1, then `v[i]` where the check was; the fix's lines 2-4
        // are gone from the head and are on the left.
        assert_eq!(spans, vec![(Side::Right, 1, 1), (Side::Left, 2, 4)]);
    }
}
