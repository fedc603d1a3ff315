//! The verdict on one candidate fix: kept, or skipped with the reason.
//!
//! A fix is judged by what it changes: the kinds of its files ([`crate::review::file_kind`]), the
//! size of its source change, and what its source change does ([`crate::syntax`]):
//! formatting, comments and docstrings, or type annotations only are no behaviour fix.
//! Invariant: judging reads objects only; it never writes to the repository.

use std::fmt;

use git2::{Commit, Oid, Patch, Repository};

use super::EvalError;
use super::mine::{
    MAX_CHANGED_LINES, MAX_FILES, MAX_SOURCE_FILES, MineOptions, delta_path, diff_of, summary_of,
};
use crate::review::file_kind::{FileKind, file_kind};
use crate::syntax::{ChangeKind, classify_change};

/// Why a candidate fix is not a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// No source file changed; the kinds of the files that did.
    NoSource(Vec<FileKind>),
    /// Too many source files, or (`lines`) too many changed source lines.
    TooLarge {
        /// Source files changed.
        sources: usize,
        /// Changed source lines, when counted.
        lines: Option<usize>,
    },
    /// A source file is binary.
    Binary,
    /// A source file is too large to parse ([`crate::eval::MAX_PARSED_BYTES`]).
    LargeFile {
        /// The file.
        path: String,
        /// Its size in bytes (the larger of before and after).
        bytes: usize,
    },
    /// The source files' text is the same (a mode change).
    Unchanged,
    /// Whitespace and line breaks only.
    Formatting,
    /// Comments or docstrings (and formatting) only.
    Comments,
    /// Type annotations (and comments, formatting) only.
    Annotations,
    /// No test changed and `require_test` is on.
    NoTest,
    /// Kept, but the limit was reached by better-ranked fixes.
    OverLimit,
}

impl Skip {
    /// A short stable name (`formatting`, `no_source`, ...), for JSON.
    pub fn code(&self) -> &'static str {
        match self {
            Skip::NoSource(_) => "no_source",
            Skip::TooLarge { .. } => "too_large",
            Skip::Binary => "binary",
            Skip::LargeFile { .. } => "large_file",
            Skip::Unchanged => "unchanged",
            Skip::Formatting => "formatting",
            Skip::Comments => "comments",
            Skip::Annotations => "annotations",
            Skip::NoTest => "no_test",
            Skip::OverLimit => "over_limit",
        }
    }
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::NoSource(kinds) => {
                let kinds: Vec<&str> = kinds.iter().map(|k| k.plural()).collect();
                write!(f, "no source change: only {}", kinds.join(", "))
            }
            Skip::TooLarge { sources, lines } => match lines {
                Some(lines) => write!(
                    f,
                    "too large: {lines} changed source lines (at most {MAX_CHANGED_LINES})"
                ),
                None if *sources <= MAX_SOURCE_FILES => {
                    write!(f, "too large: more than {MAX_FILES} files")
                }
                None => write!(
                    f,
                    "too large: {sources} source files (at most {MAX_SOURCE_FILES})"
                ),
            },
            Skip::Binary => f.write_str("a binary source file"),
            Skip::LargeFile { path, bytes } => write!(
                f,
                "{path} is too large to parse: {} (at most {})",
                size_text(*bytes),
                size_text(crate::eval::MAX_PARSED_BYTES)
            ),
            Skip::Unchanged => f.write_str("source text unchanged"),
            Skip::Formatting => f.write_str("formatting only"),
            Skip::Comments => f.write_str("comments or docstrings only"),
            Skip::Annotations => f.write_str("type annotations only"),
            Skip::NoTest => f.write_str("no test change (--require-test)"),
            Skip::OverLimit => f.write_str("over --limit"),
        }
    }
}

/// A commit whose message says it fixes something, and the verdict on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The commit id (hex).
    pub commit: String,
    /// The first line of its message.
    pub subject: String,
    /// Whether it changes a test too.
    pub with_test: bool,
    /// Its source files (the ones its case puts back).
    pub sources: Vec<String>,
    /// Why it is not a case; `None` when it is kept.
    pub skip: Option<Skip>,
}

impl Candidate {
    /// The case id its case has.
    pub fn case_id(&self) -> String {
        format!("fix-{}", &self.commit[..self.commit.len().min(7)])
    }
}

/// The verdict on one candidate fix.
pub(crate) fn judge(
    repo: &Repository,
    commit: &Commit<'_>,
    options: &MineOptions,
) -> Result<Candidate, EvalError> {
    let diff = diff_of(repo, &commit.parent(0)?.tree()?, &commit.tree()?)?;
    let files: Vec<(String, FileKind)> = diff
        .deltas()
        .map(|d| {
            let path = delta_path(&d);
            let kind = file_kind(&path);
            (path, kind)
        })
        .collect();
    let sources: Vec<String> = files
        .iter()
        .filter(|(_, k)| *k == FileKind::Source)
        .map(|(p, _)| p.clone())
        .collect();
    let with_test = files.iter().any(|(_, k)| *k == FileKind::Test);
    let mut skip = source_skip(repo, &diff, &files, &sources)?;
    if skip.is_none() && options.require_test && !with_test {
        skip = Some(Skip::NoTest);
    }
    Ok(Candidate {
        commit: commit.id().to_string(),
        subject: summary_of(commit),
        with_test,
        sources,
        skip,
    })
}

/// Why the source change of a fix does not make a case, if it does not.
fn source_skip(
    repo: &Repository,
    diff: &git2::Diff<'_>,
    files: &[(String, FileKind)],
    sources: &[String],
) -> Result<Option<Skip>, EvalError> {
    if sources.is_empty() {
        let mut kinds: Vec<FileKind> = files.iter().map(|(_, k)| *k).collect();
        kinds.sort();
        kinds.dedup();
        return Ok(Some(Skip::NoSource(kinds)));
    }
    if sources.len() > MAX_SOURCE_FILES || files.len() > MAX_FILES {
        let lines = None;
        let sources = sources.len();
        return Ok(Some(Skip::TooLarge { sources, lines }));
    }
    // Sizes first: a fix too large is skipped before any blob is read or parsed.
    let mut lines = 0usize;
    let mut patches = Vec::new();
    for (index, (path, kind)) in files.iter().enumerate() {
        if *kind != FileKind::Source {
            continue;
        }
        let Some(patch) = Patch::from_diff(diff, index)? else {
            return Ok(Some(Skip::Binary));
        };
        if patch.delta().flags().is_binary() {
            return Ok(Some(Skip::Binary));
        }
        let (_, added, deleted) = patch.line_stats()?;
        lines = lines.saturating_add(added + deleted);
        patches.push((path, patch));
    }
    for (path, patch) in &patches {
        let delta = patch.delta();
        let bytes =
            blob_size(repo, delta.old_file().id())?.max(blob_size(repo, delta.new_file().id())?);
        if lines <= MAX_CHANGED_LINES && bytes > crate::eval::MAX_PARSED_BYTES {
            let path = (*path).clone();
            return Ok(Some(Skip::LargeFile { path, bytes }));
        }
    }
    let mut change = ChangeKind::None;
    if lines <= MAX_CHANGED_LINES {
        for (path, patch) in &patches {
            let (old, new) = (
                text_of(repo, patch.delta().old_file().id())?,
                text_of(repo, patch.delta().new_file().id())?,
            );
            change = change.max(match (old, new) {
                (Some(old), Some(new)) => classify_change(path, &old, &new),
                _ => ChangeKind::Behaviour,
            });
            // Nothing ranks above a behaviour change: the other files need not be parsed.
            if change == ChangeKind::Behaviour {
                break;
            }
        }
    }
    if lines > MAX_CHANGED_LINES {
        let sources = sources.len();
        return Ok(Some(Skip::TooLarge {
            sources,
            lines: Some(lines),
        }));
    }
    Ok(match change {
        ChangeKind::None => Some(Skip::Unchanged),
        ChangeKind::Formatting => Some(Skip::Formatting),
        ChangeKind::Comments => Some(Skip::Comments),
        ChangeKind::Annotations => Some(Skip::Annotations),
        ChangeKind::Behaviour => None,
    })
}

/// A blob's size in bytes, read from its header (0 for the zero id: no file).
pub(crate) fn blob_size(repo: &Repository, id: Oid) -> Result<usize, EvalError> {
    if id.is_zero() {
        return Ok(0);
    }
    let (size, _) = repo.odb()?.read_header(id)?;
    Ok(size)
}

/// A size for people: bytes, KiB or MiB.
pub(crate) fn size_text(bytes: usize) -> String {
    const KIB: usize = 1024;
    match bytes {
        b if b < KIB => format!("{b} bytes"),
        b if b < KIB * KIB => format!("{} KiB", b / KIB),
        b => format!("{:.1} MiB", b as f64 / (KIB * KIB) as f64),
    }
}

/// A blob's text (empty for the zero id: the file did not exist); `None` when it is
/// not UTF-8.
fn text_of(repo: &Repository, id: Oid) -> Result<Option<String>, EvalError> {
    if id.is_zero() {
        return Ok(Some(String::new()));
    }
    let blob = repo.find_blob(id)?;
    Ok(std::str::from_utf8(blob.content()).ok().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_reasons_read_as_sentences() {
        use FileKind::*;
        let reasons = [
            (
                Skip::NoSource(vec![Test, Changelog]),
                "no source change: only tests, changelogs",
            ),
            (
                Skip::TooLarge {
                    sources: 4,
                    lines: None,
                },
                "too large: 4 source files (at most 3)",
            ),
            (
                Skip::TooLarge {
                    sources: 1,
                    lines: Some(61),
                },
                "too large: 61 changed source lines (at most 60)",
            ),
            (
                Skip::TooLarge {
                    sources: 1,
                    lines: None,
                },
                "too large: more than 40 files",
            ),
            (
                Skip::LargeFile {
                    path: "web/app.min.js".into(),
                    bytes: 2_000_000,
                },
                "web/app.min.js is too large to parse: 1.9 MiB (at most 512 KiB)",
            ),
            (Skip::Formatting, "formatting only"),
            (Skip::Comments, "comments or docstrings only"),
            (Skip::NoTest, "no test change (--require-test)"),
        ];
        for (skip, text) in reasons {
            assert_eq!(skip.to_string(), text);
        }
    }

    #[test]
    fn a_fix_in_a_file_too_large_to_parse_is_skipped_with_its_reason() {
        let line = "value = compute(value) + 1\n";
        let big = line.repeat(crate::eval::MAX_PARSED_BYTES / line.len() + 1);
        let fixed = big.replacen("+ 1", "- 1", 1);
        let (dir, _, head) = crate::eval::mutate::tests::change_of(
            vec![("src/big.py", big)],
            vec![("src/big.py", fixed)],
        );
        let repo = Repository::open(dir.path()).unwrap();
        let commit = repo.find_commit(Oid::from_str(&head).unwrap()).unwrap();
        let options = MineOptions {
            limit: 5,
            since: None,
            clean: 0,
            require_test: false,
        };
        let candidate = judge(&repo, &commit, &options).unwrap();
        let skip = candidate.skip.expect("skipped");
        assert_eq!(skip.code(), "large_file");
        assert!(
            skip.to_string()
                .starts_with("src/big.py is too large to parse: "),
            "{skip}"
        );
    }
}
