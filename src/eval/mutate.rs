//! Cases planted in one real change (`--mutate`): the change `base..head` plus exactly
//! one bug ([`super::mutants`]) on one of its added source lines, per case.
//!
//! Choice: every candidate edit of the change's added source lines (files classified
//! source by [`crate::review::file_kind`], with a grammar) in a fixed order is shuffled by a
//! `StdRng` seeded with the seed, then picked greedily, each pick the first whose kind
//! and then file have been picked least so far and whose line is not yet used; a pick
//! whose mutant does not parse is skipped. So the same seed gives the same mutants, and
//! they spread across kinds and files.
//!
//! Invariants: each case's head is a commit whose parent is `base` and whose tree is
//! `head`'s with one file mutated; its message is neutral (it names neither the file
//! nor the bug); its author and time are fixed (the head's time), so the same seed
//! writes the same commits. The only references written are under
//! `refs/redline-eval/mutate/`; the user's branches, `HEAD`, index and work tree are
//! never written. The expected range is the mutated line on the head's side (for a
//! deletion, the lines around the place), one bug whose description says what changed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use git2::{Commit, Oid, Patch, Repository, Signature};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use serde::Serialize;

use super::EvalError;
use super::MAX_PARSED_BYTES;
use super::cases::{CASES_VERSION, Case, ExpectedRange};
use super::mine::{REF_NAMESPACE, delta_path, diff_of, short};
use super::mutants::{Edit, MutantKind, apply, candidates};
use super::verdict::{blob_size, size_text};
use crate::review::file_kind::{FileKind, file_kind};
use crate::review::finding::Side;
use crate::syntax::Lang;

/// What to plant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MutateOptions {
    /// The change's base revision.
    pub base: String,
    /// The change's head revision.
    pub head: String,
    /// Mutants at most.
    pub mutants: usize,
    /// The seed of the choice.
    pub seed: u64,
}

/// One planted bug.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mutant {
    /// The file.
    pub path: String,
    /// The first line touched (in the head).
    pub line: u32,
    /// What kind of bug.
    pub kind: MutantKind,
    /// What was changed.
    pub description: String,
    /// The expected range (head side of the mutant): first and last line.
    pub expected: (u32, u32),
    /// The mutated file's text.
    #[serde(skip)]
    pub text: String,
}

/// The mutants of a change and what was looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planted {
    /// The chosen mutants, in choice order.
    pub mutants: Vec<Mutant>,
    /// Candidate edits found on the added lines.
    pub candidates: usize,
    /// Added plus deleted lines of the change (all files but those skipped as too large).
    pub changed_lines: usize,
    /// Source files of the change not parsed, with why (too large to parse).
    pub skipped: Vec<SkippedFile>,
    /// The base and head commits (full ids).
    pub base: String,
    /// The head commit.
    pub head: String,
}

/// A source file of the change that was not looked at for mutants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedFile {
    /// The file.
    pub path: String,
    /// Why, as a sentence.
    pub reason: String,
}

/// One source file of the change: its head text and added lines.
struct Added {
    path: String,
    lang: Lang,
    text: String,
    lines: BTreeSet<u32>,
}

fn commit_of<'r>(repo: &'r Repository, revision: &str) -> Result<Commit<'r>, EvalError> {
    repo.revparse_single(revision)
        .and_then(|o| o.peel_to_commit())
        .map_err(|e| EvalError::Invalid(format!("{revision}: {}", e.message())))
}

/// The change's source files with a grammar: their added lines and the ones skipped.
struct Change {
    files: Vec<Added>,
    skipped: Vec<SkippedFile>,
    /// Added plus deleted lines of the change (all files).
    changed: usize,
}

/// The added lines of the change's source files with a grammar, and its size.
fn added_lines(
    repo: &Repository,
    base: &Commit<'_>,
    head: &Commit<'_>,
) -> Result<Change, EvalError> {
    let diff = diff_of(repo, &base.tree()?, &head.tree()?)?;
    let (mut files, mut skipped, mut changed) = (Vec::new(), Vec::new(), 0usize);
    for index in 0..diff.deltas().len() {
        let Some(delta) = diff.get_delta(index) else {
            continue;
        };
        // Before the patch is made: a file too large to parse is not even diffed.
        let path = delta_path(&delta);
        let parsed = Lang::of_path(&path).is_some()
            && file_kind(&path) == FileKind::Source
            && !delta.new_file().id().is_zero();
        let bytes = blob_size(repo, delta.new_file().id())?;
        if parsed && bytes > MAX_PARSED_BYTES {
            let reason = format!(
                "too large to parse: {} (at most {})",
                size_text(bytes),
                size_text(MAX_PARSED_BYTES)
            );
            skipped.push(SkippedFile { path, reason });
            continue;
        }
        let Some(patch) = Patch::from_diff(&diff, index)? else {
            continue;
        };
        let (_, added, deleted) = patch.line_stats()?;
        changed = changed.saturating_add(added + deleted);
        let Some(lang) = Lang::of_path(&path).filter(|_| parsed) else {
            continue;
        };
        let mut lines = BTreeSet::new();
        for hunk in 0..patch.num_hunks() {
            for line in 0..patch.num_lines_in_hunk(hunk)? {
                let line = patch.line_in_hunk(hunk, line)?;
                if line.origin() == '+' {
                    lines.extend(line.new_lineno());
                }
            }
        }
        let blob = repo.find_blob(patch.delta().new_file().id())?;
        let Ok(text) = std::str::from_utf8(blob.content()) else {
            continue;
        };
        if !lines.is_empty() {
            files.push(Added {
                path,
                lang,
                text: text.to_string(),
                lines,
            });
        }
    }
    Ok(Change {
        files,
        skipped,
        changed,
    })
}

/// Finds and chooses the mutants of `base..head`; writes nothing.
pub fn plant(repo: &Repository, options: &MutateOptions) -> Result<Planted, EvalError> {
    let base = commit_of(repo, &options.base)?;
    let head = commit_of(repo, &options.head)?;
    let Change {
        files,
        skipped,
        changed: changed_lines,
    } = added_lines(repo, &base, &head)?;
    let mut pool: Vec<(usize, Edit)> = files
        .iter()
        .enumerate()
        .flat_map(|(i, f)| {
            candidates(f.lang, &f.text, &f.lines)
                .into_iter()
                .map(move |e| (i, e))
        })
        .collect();
    let total = pool.len();
    pool.shuffle(&mut StdRng::seed_from_u64(options.seed));
    let mut mutants = Vec::new();
    let mut by_kind: BTreeMap<MutantKind, usize> = BTreeMap::new();
    let mut by_file: BTreeMap<usize, usize> = BTreeMap::new();
    let mut used: BTreeSet<(usize, u32)> = BTreeSet::new();
    while mutants.len() < options.mutants {
        let best = pool
            .iter()
            .enumerate()
            .filter(|(_, (f, e))| !used.contains(&(*f, e.line)))
            .min_by_key(|(order, (f, e))| {
                let kind = by_kind.get(&e.kind).copied().unwrap_or(0);
                let file = by_file.get(f).copied().unwrap_or(0);
                (kind, file, *order)
            })
            .map(|(order, _)| order);
        let Some(order) = best else { break };
        let (file, edit) = pool.remove(order);
        let added = &files[file];
        let Some(text) = apply(added.lang, &added.path, &added.text, &edit) else {
            continue;
        };
        used.insert((file, edit.line));
        *by_kind.entry(edit.kind).or_default() += 1;
        *by_file.entry(file).or_default() += 1;
        mutants.push(mutant(added, edit, text));
    }
    Ok(Planted {
        mutants,
        candidates: total,
        changed_lines,
        skipped,
        base: base.id().to_string(),
        head: head.id().to_string(),
    })
}

fn mutant(added: &Added, edit: Edit, text: String) -> Mutant {
    let expected = if edit.deletes_lines {
        // The lines are gone: the bug is between the line before and the one after.
        let count = u32::try_from(text.lines().count())
            .unwrap_or(u32::MAX)
            .max(1);
        let after = edit.line.min(count);
        (edit.line.saturating_sub(1).clamp(1, after), after)
    } else {
        (edit.line, edit.line)
    };
    Mutant {
        path: added.path.clone(),
        line: edit.line,
        kind: edit.kind,
        description: format!(
            "{} (line {} of {})",
            edit.description, edit.line, added.path
        ),
        expected,
        text,
    }
}

/// Plants the mutants of a change in the repository at `repo_path` and returns one case
/// per mutant (its commit under `refs/redline-eval/mutate/`).
pub fn mutate(
    repo_path: &Path,
    options: &MutateOptions,
) -> Result<(Planted, Vec<Case>), EvalError> {
    let repo = Repository::discover(repo_path)?;
    let root = repo
        .workdir()
        .unwrap_or_else(|| repo.path())
        .components()
        .collect::<std::path::PathBuf>()
        .display()
        .to_string();
    let planted = plant(&repo, options)?;
    let base = repo.find_commit(Oid::from_str(&planted.base)?)?;
    let head = repo.find_commit(Oid::from_str(&planted.head)?)?;
    let mut cases = Vec::new();
    for (index, mutant) in planted.mutants.iter().enumerate() {
        let id = format!("mut-{}-s{}-{}", short(head.id()), options.seed, index + 1);
        let commit = write_mutant(&repo, &base, &head, mutant, &id)?;
        cases.push(Case {
            version: CASES_VERSION,
            id: id.clone(),
            repo: root.clone(),
            base: base.id().to_string(),
            head: commit.to_string(),
            expected: vec![ExpectedRange {
                path: mutant.path.clone(),
                start_line: mutant.expected.0,
                end_line: mutant.expected.1,
                side: Side::Right,
                description: mutant.description.clone(),
                bug: id,
            }],
            clean: false,
            source: format!(
                "{} mutant of {}..{}: {}:{}",
                mutant.kind,
                short(base.id()),
                short(head.id()),
                mutant.path,
                mutant.line
            ),
            title: None,
            body: None,
        });
    }
    Ok((planted, cases))
}

/// The neutral commit of one mutant (parent: the base) and its reference.
fn write_mutant(
    repo: &Repository,
    base: &Commit<'_>,
    head: &Commit<'_>,
    mutant: &Mutant,
    id: &str,
) -> Result<Oid, EvalError> {
    let head_tree = head.tree()?;
    let mode = head_tree
        .get_path(Path::new(&mutant.path))
        .map(|e| e.filemode())
        .unwrap_or(0o100644);
    let blob = repo.blob(mutant.text.as_bytes())?;
    let mut update = git2::build::TreeUpdateBuilder::new();
    let mode = if mode == 0o100755 {
        git2::FileMode::BlobExecutable
    } else {
        git2::FileMode::Blob
    };
    update.upsert(&mutant.path, blob, mode);
    let tree = repo.find_tree(update.create_updated(repo, &head_tree)?)?;
    let signature = Signature::new("redline eval", "eval@redline.invalid", &head.time())?;
    let message = format!("Update from {} to {}\n", short(base.id()), short(head.id()));
    let commit = repo.commit(None, &signature, &signature, &message, &tree, &[base])?;
    repo.reference(
        &format!("{REF_NAMESPACE}mutate/{id}"),
        commit,
        true,
        "redline eval: a mutant of a change",
    )?;
    Ok(commit)
}

/// Mutants per kind, in kind order.
pub fn per_kind(mutants: &[Mutant]) -> Vec<(MutantKind, usize)> {
    let mut counts: BTreeMap<MutantKind, usize> = BTreeMap::new();
    for m in mutants {
        *counts.entry(m.kind).or_default() += 1;
    }
    counts.into_iter().collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const BASE_PY: &str = "def keep(a):\n    return a\n";
    const HEAD_PY: &str = "def keep(a):\n    return a\n\n\ndef pick(items, n):\n    if not items:\n        return None\n    items = sorted(items)\n    log(n)\n    return items[n - 1] if n > 0 and n < len(items) else take(items, n)\n";
    const HEAD_RS: &str = "pub fn get(v: &[u8], i: usize) -> u8 {\n    if i >= v.len() {\n        return 0;\n    }\n    let i = clamp(i, v);\n    v[i..v.len() - 1].iter().sum()\n}\n";

    /// A repository whose second commit adds the Python and Rust code (and a test).
    fn change() -> (tempfile::TempDir, String, String) {
        change_of(
            vec![("src/pick.py", BASE_PY.to_string())],
            vec![
                ("src/pick.py", HEAD_PY.to_string()),
                ("src/get.rs", HEAD_RS.to_string()),
                (
                    "tests/test_pick.py",
                    "def test_pick():\n    assert pick([1], 1) == 1\n".to_string(),
                ),
            ],
        )
    }

    /// A repository whose first commit writes `base` and whose second (`fix a crash`)
    /// writes `head`: the directory, the two commit ids.
    pub(crate) fn change_of(
        base: Vec<(&str, String)>,
        head: Vec<(&str, String)>,
    ) -> (tempfile::TempDir, String, String) {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(dir.path()).expect("init");
        let signature = Signature::now("t", "t@example.invalid").expect("signature");
        let mut parent: Option<Oid> = None;
        let mut ids = Vec::new();
        for files in [base, head] {
            let mut index = repo.index().expect("index");
            for (path, text) in files {
                let blob = repo.blob(text.as_bytes()).expect("blob");
                let entry = git2::IndexEntry {
                    ctime: git2::IndexTime::new(0, 0),
                    mtime: git2::IndexTime::new(0, 0),
                    dev: 0,
                    ino: 0,
                    mode: 0o100644,
                    uid: 0,
                    gid: 0,
                    file_size: 0,
                    id: blob,
                    flags: 0,
                    flags_extended: 0,
                    path: path.as_bytes().to_vec(),
                };
                index.add(&entry).expect("add");
            }
            let tree = repo
                .find_tree(index.write_tree().expect("tree"))
                .expect("tree");
            let parents: Vec<Commit<'_>> = parent
                .iter()
                .map(|p| repo.find_commit(*p).unwrap())
                .collect();
            let refs: Vec<&Commit<'_>> = parents.iter().collect();
            let id = repo
                .commit(
                    Some("HEAD"),
                    &signature,
                    &signature,
                    "fix a crash",
                    &tree,
                    &refs,
                )
                .expect("commit");
            parent = Some(id);
            ids.push(id.to_string());
        }
        (dir, ids[0].clone(), ids[1].clone())
    }

    fn options(base: &str, head: &str, mutants: usize, seed: u64) -> MutateOptions {
        MutateOptions {
            base: base.into(),
            head: head.into(),
            mutants,
            seed,
        }
    }

    #[test]
    fn mutants_parse_sit_on_added_source_lines_and_repeat_per_seed() {
        let (dir, base, head) = change();
        let repo = Repository::open(dir.path()).unwrap();
        let planted = plant(&repo, &options(&base, &head, 6, 7)).unwrap();
        assert_eq!(planted.mutants.len(), 6);
        assert!(planted.candidates > 6, "{}", planted.candidates);
        for m in &planted.mutants {
            assert_ne!(m.path, "tests/test_pick.py");
            let lang = Lang::of_path(&m.path).unwrap();
            let tree = crate::syntax::parse(lang, &m.text).unwrap();
            assert!(!tree.root_node().has_error(), "{}", m.text);
            // Python's lines 1-2 were already there: never mutated.
            assert!(m.path != "src/pick.py" || m.line >= 5, "{m:?}");
        }
        // Spread: both files and at least five kinds.
        let files: BTreeSet<&str> = planted.mutants.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(files.len(), 2);
        assert!(
            per_kind(&planted.mutants).len() >= 5,
            "{:?}",
            per_kind(&planted.mutants)
        );
        let again = plant(&repo, &options(&base, &head, 6, 7)).unwrap();
        assert_eq!(again, planted);
        let other = plant(&repo, &options(&base, &head, 6, 8)).unwrap();
        assert_ne!(other.mutants, planted.mutants);
    }

    #[test]
    fn each_case_is_a_neutral_commit_under_the_namespace() {
        let (dir, base, head) = change();
        let repo = Repository::open(dir.path()).unwrap();
        let head_before = repo.head().unwrap().target().unwrap();
        let (planted, cases) = mutate(dir.path(), &options(&base, &head, 3, 1)).unwrap();
        assert_eq!(cases.len(), 3);
        assert_eq!(repo.head().unwrap().target().unwrap(), head_before);
        let head_tree = repo
            .find_commit(Oid::from_str(&head).unwrap())
            .unwrap()
            .tree()
            .unwrap();
        for (case, mutant) in cases.iter().zip(&planted.mutants) {
            let commit = repo
                .find_commit(Oid::from_str(&case.head).unwrap())
                .unwrap();
            assert_eq!(commit.parent_id(0).unwrap().to_string(), base);
            let message = commit.message().unwrap();
            assert!(!message.contains(&mutant.path) && !message.contains(mutant.kind.code()));
            let diff = diff_of(&repo, &head_tree, &commit.tree().unwrap()).unwrap();
            let changed: Vec<String> = diff.deltas().map(|d| delta_path(&d)).collect();
            assert_eq!(changed, std::slice::from_ref(&mutant.path));
            let reference = format!("refs/redline-eval/mutate/{}", case.id);
            assert_eq!(repo.refname_to_id(&reference).unwrap(), commit.id());
            let range = &case.expected[0];
            assert_eq!(
                (range.bug.as_str(), range.side),
                (case.id.as_str(), Side::Right)
            );
            assert!(range.description.contains(&mutant.path));
        }
        // The same seed writes the same commits.
        let (_, again) = mutate(dir.path(), &options(&base, &head, 3, 1)).unwrap();
        assert_eq!(again, cases);
    }

    #[test]
    fn a_file_too_large_to_parse_is_skipped_with_its_reason() {
        let line = "if (a === b) { return; }\n";
        let big = format!(
            "function f(a, b) {{\n{}}}\n",
            line.repeat(MAX_PARSED_BYTES / line.len() + 1)
        );
        let (dir, base, head) = change_of(
            vec![("src/pick.py", BASE_PY.to_string())],
            vec![("src/pick.py", HEAD_PY.to_string()), ("web/app.js", big)],
        );
        let repo = Repository::open(dir.path()).unwrap();
        let planted = plant(&repo, &options(&base, &head, 3, 1)).unwrap();
        assert_eq!(planted.skipped.len(), 1, "{:?}", planted.skipped);
        assert_eq!(planted.skipped[0].path, "web/app.js");
        let reason = &planted.skipped[0].reason;
        assert!(
            reason.starts_with("too large to parse: ") && reason.ends_with("(at most 512 KiB)"),
            "{reason}"
        );
        // The other file is still mutated; the large one never is.
        assert_eq!(planted.mutants.len(), 3);
        assert!(planted.mutants.iter().all(|m| m.path == "src/pick.py"));
        let summary = crate::eval::render::planted_summary(&planted);
        assert!(
            summary.contains("skipped web/app.js: too large to parse"),
            "{summary}"
        );
    }
}
