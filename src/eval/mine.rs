//! Mining cases from a repository's history: every behaviour fix becomes a case whose
//! change puts the fix's source files back as they were (the bug comes back), and, on
//! request, ordinary commits become clean cases.
//!
//! Candidates are the non-merge commits whose message has one of the words of
//! [`is_fix_message`]. A candidate is kept unless (the reason is recorded, see
//! [`Skip`] and [`super::verdict`]): it changes no source file (only tests, docs, changelogs, lockfiles, CI
//! or packaging, see [`crate::review::file_kind`]); it changes more than [`MAX_SOURCE_FILES`]
//! source files or [`MAX_CHANGED_LINES`] source lines, or a binary source file; its
//! source change is formatting, comments or docstrings, or type annotations only (told
//! by the tree-sitter grammars of [`crate::syntax`]); or, with `require_test`, it
//! changes no test. Kept fixes that change a test rank first, then newest first; the
//! first `limit` become cases. Clean cases are ordinary commits with 1 to
//! [`MAX_SOURCE_FILES`] code files (tests included), one of them source, at most
//! [`MAX_CHANGED_LINES`] changed lines in all and no binary file.
//!
//! Invariants: surveying ([`survey`]) writes nothing; mining writes objects and
//! references under [`REF_NAMESPACE`] only (see [`super::revert`]): the user's
//! branches, `HEAD`, index and work tree are never written.

use std::path::Path;
use std::sync::OnceLock;

use git2::{Commit, DiffOptions, Oid, Patch, Repository, Sort};

use super::EvalError;
use super::cases::{CASES_VERSION, Case};
use super::revert::revert_case;
use super::verdict::judge;
pub use super::verdict::{Candidate, Skip};
pub use crate::review::file_kind::{FileKind, file_kind};

/// Where revert commits are kept (no branch, no tag: nothing the user looks at).
pub(crate) const REF_NAMESPACE: &str = "refs/redline-eval/";
/// Most source files a mined fix may change (and code files a clean case may).
pub(crate) const MAX_CODE_FILES: usize = 3;
/// Most source files a mined fix may change.
pub(crate) const MAX_SOURCE_FILES: usize = MAX_CODE_FILES;
/// Most changed lines (added plus deleted) of a fix's source files, or of a clean commit.
pub(crate) const MAX_CHANGED_LINES: usize = 60;
/// Past this many files in all, a commit is too large without reading its patches.
pub(crate) const MAX_FILES: usize = 40;

/// What to mine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MineOptions {
    /// Fix cases at most (fixes with a test change first, then newest first).
    pub limit: usize,
    /// Only commits made at or after this time (seconds since the epoch).
    pub since: Option<i64>,
    /// Clean cases to pick among ordinary commits.
    pub clean: usize,
    /// Keep only fixes that change a test too.
    pub require_test: bool,
}

/// The mined cases and what was looked at.
#[derive(Debug, Clone, PartialEq)]
pub struct Mined {
    /// Fix cases (ranked), then clean cases (newest first).
    pub cases: Vec<Case>,
    /// Commits looked at.
    pub scanned: usize,
}

/// The candidates of a history and the ordinary commits chosen as clean cases.
#[derive(Debug, Clone, PartialEq)]
pub struct Survey {
    /// Every candidate looked at, newest first.
    pub candidates: Vec<Candidate>,
    /// Indexes of the kept candidates, best first.
    pub selected: Vec<usize>,
    /// Ordinary commits chosen as clean cases, newest first.
    pub cleans: Vec<String>,
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

/// What a commit changes, as far as the clean-case rules care.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommitShape {
    /// The changed files and their kinds.
    pub files: Vec<(String, FileKind)>,
    /// Added plus deleted lines over all files.
    pub changed_lines: usize,
    /// Whether some changed file is binary.
    pub binary: bool,
}

fn is_code(kind: FileKind) -> bool {
    matches!(kind, FileKind::Source | FileKind::Test)
}

/// Whether an ordinary commit of this shape may become a clean case.
pub fn fits(shape: &CommitShape) -> bool {
    let code = shape.files.iter().filter(|(_, k)| is_code(*k)).count();
    let source = shape.files.iter().any(|(_, k)| *k == FileKind::Source);
    source
        && (1..=MAX_CODE_FILES).contains(&code)
        && shape.changed_lines <= MAX_CHANGED_LINES
        && !shape.binary
}

/// Looks through the history of `HEAD` for candidates and clean commits; writes nothing.
pub fn survey(repo: &Repository, options: &MineOptions) -> Result<Survey, EvalError> {
    let mut walk = repo.revwalk()?;
    walk.push_head()?;
    // Children before parents, newest first among the rest: the same order every time,
    // even for commits made within one second.
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME)?;
    let (mut candidates, mut cleans, mut scanned) = (Vec::new(), Vec::new(), 0);
    for oid in walk {
        if enough(&candidates, cleans.len(), options) {
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
        if is_fix_message(&String::from_utf8_lossy(commit.message_bytes())) {
            candidates.push(judge(repo, &commit, options)?);
        } else if cleans.len() < options.clean && fits(&shape_of(repo, &commit)?) {
            cleans.push(commit.id().to_string());
        }
    }
    let selected = select(&mut candidates, options.limit);
    Ok(Survey {
        candidates,
        selected,
        cleans,
        scanned,
    })
}

/// Whether older commits can change the outcome no more: `limit` kept fixes with a
/// test change (nothing older ranks before them) and the clean cases found.
fn enough(candidates: &[Candidate], cleans: usize, options: &MineOptions) -> bool {
    let tested = candidates
        .iter()
        .filter(|c| c.skip.is_none() && c.with_test)
        .count();
    tested >= options.limit && cleans >= options.clean
}

/// Ranks the kept candidates (a test change first, then newest first), keeps the first
/// `limit` and marks the others [`Skip::OverLimit`]; returns the kept, best first.
fn select(candidates: &mut [Candidate], limit: usize) -> Vec<usize> {
    let mut kept: Vec<usize> = (0..candidates.len())
        .filter(|&i| candidates[i].skip.is_none())
        .collect();
    kept.sort_by_key(|&i| (!candidates[i].with_test, i));
    for &index in kept.iter().skip(limit) {
        candidates[index].skip = Some(Skip::OverLimit);
    }
    kept.truncate(limit);
    kept
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
    let survey = survey(&repo, options)?;
    let mut cases = Vec::new();
    for &index in &survey.selected {
        let candidate = &survey.candidates[index];
        let fix = repo.find_commit(Oid::from_str(&candidate.commit)?)?;
        cases.extend(revert_case(&repo, &root, &fix, &candidate.sources)?);
    }
    for id in &survey.cleans {
        cases.push(clean_case(&root, &repo.find_commit(Oid::from_str(id)?)?)?);
    }
    Ok(Mined {
        cases,
        scanned: survey.scanned,
    })
}

/// The candidates of the repository at `repo_path`, without writing anything.
pub fn list(repo_path: &Path, options: &MineOptions) -> Result<Survey, EvalError> {
    survey(&Repository::discover(repo_path)?, options)
}

/// The first line of a commit's message (lossy when it is not UTF-8).
pub(crate) fn summary_of(commit: &Commit<'_>) -> String {
    commit
        .summary_bytes()
        .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
        .unwrap_or_default()
}

pub(crate) fn short(oid: Oid) -> String {
    oid.to_string().chars().take(7).collect()
}

pub(crate) fn diff_of<'r>(
    repo: &'r Repository,
    old: &git2::Tree<'_>,
    new: &git2::Tree<'_>,
) -> Result<git2::Diff<'r>, EvalError> {
    let mut options = DiffOptions::new();
    options.context_lines(0);
    Ok(repo.diff_tree_to_tree(Some(old), Some(new), Some(&mut options))?)
}

pub(crate) fn delta_path(delta: &git2::DiffDelta<'_>) -> String {
    delta
        .new_file()
        .path()
        .or_else(|| delta.old_file().path())
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .unwrap_or_default()
}

/// Added plus deleted lines of `base..head` in the repository at `repo_path`; `None`
/// when a revision or the repository cannot be read.
pub(crate) fn change_size(repo_path: &Path, base: &str, head: &str) -> Option<usize> {
    let repo = Repository::discover(repo_path).ok()?;
    let tree = |rev: &str| repo.revparse_single(rev).ok()?.peel_to_tree().ok();
    let diff = diff_of(&repo, &tree(base)?, &tree(head)?).ok()?;
    let stats = diff.stats().ok()?;
    Some(stats.insertions() + stats.deletions())
}

/// The shape of a one-parent commit; files are classified before any patch is made,
/// so large commits are dismissed cheaply.
fn shape_of(repo: &Repository, commit: &Commit<'_>) -> Result<CommitShape, EvalError> {
    let parent = commit.parent(0)?;
    let diff = diff_of(repo, &parent.tree()?, &commit.tree()?)?;
    let mut shape = CommitShape::default();
    for delta in diff.deltas() {
        let path = delta_path(&delta);
        let kind = file_kind(&path);
        shape.files.push((path, kind));
    }
    let code = shape.files.iter().filter(|(_, k)| is_code(*k)).count();
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
        title: None,
        body: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::finding::Side;
    use git2::Signature;

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

    fn shape(files: &[(&str, FileKind)], lines: usize) -> CommitShape {
        CommitShape {
            files: files.iter().map(|(p, k)| (p.to_string(), *k)).collect(),
            changed_lines: lines,
            binary: false,
        }
    }

    #[test]
    fn size_rules_select_small_source_changes_for_clean_cases() {
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
    fn fixes_with_a_test_rank_first_and_the_limit_keeps_the_best() {
        let candidate = |id: &str, with_test: bool, skip: Option<Skip>| Candidate {
            commit: id.into(),
            subject: String::new(),
            with_test,
            sources: vec![],
            skip,
        };
        let mut candidates = vec![
            candidate("new", false, None),
            candidate("skipped", true, Some(Skip::Formatting)),
            candidate("tested", true, None),
            candidate("old", false, None),
        ];
        let selected = select(&mut candidates, 2);
        let ids: Vec<&str> = selected
            .iter()
            .map(|&i| candidates[i].commit.as_str())
            .collect();
        assert_eq!(ids, ["tested", "new"]);
        assert_eq!(candidates[3].skip, Some(Skip::OverLimit));
        assert_eq!(candidates[1].skip, Some(Skip::Formatting));
    }

    /// Commits `files` (path, text) one commit per entry on a new repository.
    fn history(commits: &[(&str, &[(&str, &str)])]) -> (tempfile::TempDir, Vec<Oid>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(dir.path()).expect("init");
        let signature = Signature::now("t", "t@example.invalid").expect("signature");
        let mut ids: Vec<Oid> = Vec::new();
        for (message, files) in commits {
            let parent = ids.last().map(|id| repo.find_commit(*id).expect("parent"));
            let base = parent.as_ref().map(|p| p.tree().expect("tree"));
            let mut update = git2::build::TreeUpdateBuilder::new();
            for (path, text) in *files {
                let blob = repo.blob(text.as_bytes()).expect("blob");
                update.upsert(*path, blob, git2::FileMode::Blob);
            }
            let empty = repo
                .find_tree(repo.treebuilder(None).unwrap().write().unwrap())
                .unwrap();
            let tree = update
                .create_updated(&repo, base.as_ref().unwrap_or(&empty))
                .expect("tree");
            let tree = repo.find_tree(tree).expect("tree");
            let parents: Vec<&Commit<'_>> = parent.iter().collect();
            let id = repo
                .commit(
                    Some("HEAD"),
                    &signature,
                    &signature,
                    message,
                    &tree,
                    &parents,
                )
                .expect("commit");
            ids.push(id);
        }
        (dir, ids)
    }

    #[test]
    fn a_revert_that_only_removes_lines_expects_them_on_the_left() {
        let (dir, _) = history(&[
            (
                "add f",
                &[("lib.rs", "fn f(v: &[u8], i: usize) -> u8 {\n    v[i]\n}\n")],
            ),
            (
                "fix panic on a short slice",
                &[(
                    "lib.rs",
                    "fn f(v: &[u8], i: usize) -> u8 {\n    if i >= v.len() {\n        return 0;\n    }\n    v[i]\n}\n",
                )],
            ),
        ]);
        let options = MineOptions {
            limit: 5,
            since: None,
            clean: 0,
            require_test: false,
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
