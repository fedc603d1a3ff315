//! Evaluation cases and their JSON Lines file (`version: 1`).
//!
//! A case is a change to review (`base..head` of a local repository) and the line
//! ranges of the head where its bugs are (`expected`); a clean case expects nothing and
//! counts false findings. Each range names its bug (`bug`): a bug may span several
//! ranges and is caught when a finding meets any of them; ranges without a bug id (files
//! written before bug ids) are all the case's one unnamed bug. A case may state its
//! intent (`title`, `body`), as a pull request would; the expected ranges'
//! `description`s are for people (and judges), never for the reviewer.
//!
//! Invariant: every case read has a unique id and a supported version; line ranges are
//! 1-based with `start_line <= end_line`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::EvalError;
use crate::review::finding::Side;

/// The version of the case format this build reads and writes.
pub(crate) const CASES_VERSION: u32 = 1;

/// Where a bug is: a line range of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedRange {
    /// Repository-relative path.
    pub path: String,
    /// First line (1-based).
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
    /// Which version the line numbers refer to (`RIGHT`: the head).
    #[serde(default)]
    pub side: Side,
    /// What is wrong there, for humans; never shown to the reviewer.
    #[serde(default)]
    pub description: String,
    /// The bug this range belongs to; empty: the case's one unnamed bug.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bug: String,
}

/// One change to review and what a good review of it finds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Case {
    /// Format version ([`CASES_VERSION`]).
    #[serde(default = "current_version")]
    pub version: u32,
    /// Unique name of the case.
    pub id: String,
    /// The local repository (a path).
    pub repo: String,
    /// The base revision.
    pub base: String,
    /// The head revision (the change that introduces the bug).
    pub head: String,
    /// Where the bug is; empty for a clean case.
    #[serde(default)]
    pub expected: Vec<ExpectedRange>,
    /// A case with no bug: every finding on it is false.
    #[serde(default)]
    pub clean: bool,
    /// Where the case comes from, for humans (e.g. the reverted commit).
    #[serde(default)]
    pub source: String,
    /// The change's stated intent, as a pull request title (mined cases: a neutral one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The change's stated intent, as a pull request description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

impl Case {
    /// The bug ids of the expected ranges, each once, in first-seen order (`""` is the
    /// unnamed bug).
    pub fn bugs(&self) -> Vec<&str> {
        let mut bugs: Vec<&str> = Vec::new();
        for range in &self.expected {
            if !bugs.contains(&range.bug.as_str()) {
                bugs.push(&range.bug);
            }
        }
        bugs
    }
}

fn current_version() -> u32 {
    CASES_VERSION
}

/// Parses a cases file's text; `path` names it in errors.
pub(crate) fn parse_cases(text: &str, path: &str) -> Result<Vec<Case>, EvalError> {
    let error = |line: usize, message: String| EvalError::CasesFile {
        path: path.to_string(),
        message: format!("line {line}: {message}"),
    };
    let mut cases: Vec<Case> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let case: Case =
            serde_json::from_str(line).map_err(|e| error(number, format!("not a case: {e}")))?;
        check_case(&case).map_err(|problem| error(number, problem.to_string()))?;
        if cases.iter().any(|c| c.id == case.id) {
            return Err(error(number, format!("duplicate case id `{}`", case.id)));
        }
        cases.push(case);
    }
    if cases.is_empty() {
        return Err(EvalError::CasesFile {
            path: path.to_string(),
            message: "no cases".into(),
        });
    }
    Ok(cases)
}

/// What is wrong with one case of a cases file.
#[derive(Debug, thiserror::Error)]
enum CaseProblem {
    #[error("unsupported case version {0} (expected {CASES_VERSION})")]
    Version(u32),
    #[error("empty case id")]
    NoId,
    #[error("case `{0}` is not clean and expects nothing")]
    ExpectsNothing(String),
    #[error("clean case `{0}` expects findings")]
    CleanExpects(String),
    #[error("case `{id}`: bad line range {start}-{end} in {path}")]
    BadRange {
        id: String,
        start: u32,
        end: u32,
        path: String,
    },
}

fn check_case(case: &Case) -> Result<(), CaseProblem> {
    if case.version != CASES_VERSION {
        return Err(CaseProblem::Version(case.version));
    }
    if case.id.trim().is_empty() {
        return Err(CaseProblem::NoId);
    }
    if !case.clean && case.expected.is_empty() {
        return Err(CaseProblem::ExpectsNothing(case.id.clone()));
    }
    if case.clean && !case.expected.is_empty() {
        return Err(CaseProblem::CleanExpects(case.id.clone()));
    }
    match case
        .expected
        .iter()
        .find(|r| r.start_line == 0 || r.start_line > r.end_line)
    {
        Some(bad) => Err(CaseProblem::BadRange {
            id: case.id.clone(),
            start: bad.start_line,
            end: bad.end_line,
            path: bad.path.clone(),
        }),
        None => Ok(()),
    }
}

/// Reads a cases file.
pub(crate) fn read_cases(path: &Path) -> Result<Vec<Case>, EvalError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::CasesFile {
        path: name.clone(),
        message: e.to_string(),
    })?;
    parse_cases(&text, &name)
}

/// The cases as JSON Lines, one case per line.
pub(crate) fn cases_to_jsonl(cases: &[Case]) -> String {
    cases
        .iter()
        .filter_map(|c| serde_json::to_string(c).ok())
        .map(|line| line + "\n")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(id: &str) -> Case {
        Case {
            version: 1,
            id: id.into(),
            repo: "/tmp/r".into(),
            base: "a".into(),
            head: "b".into(),
            expected: vec![ExpectedRange {
                path: "src/a.rs".into(),
                start_line: 3,
                end_line: 4,
                side: Side::Right,
                description: "bug".into(),
                bug: "b1".into(),
            }],
            clean: false,
            source: "test".into(),
            title: Some("Tidy the parser".into()),
            body: Some("Shorter code.".into()),
        }
    }

    #[test]
    fn cases_survive_a_round_trip() {
        let cases = vec![case("one"), case("two")];
        let text = cases_to_jsonl(&cases);
        assert_eq!(text.lines().count(), 2);
        assert!(text.contains("\"version\":1"));
        assert!(text.contains("\"side\":\"RIGHT\""));
        assert!(text.contains("\"bug\":\"b1\""));
        assert!(text.contains("\"title\":\"Tidy the parser\",\"body\":\"Shorter code.\""));
        assert_eq!(parse_cases(&text, "f").unwrap(), cases);
        // Without intent, the fields are left out.
        let mut plain = case("plain");
        (plain.title, plain.body) = (None, None);
        let text = cases_to_jsonl(&[plain.clone()]);
        assert!(!text.contains("title") && !text.contains("body"), "{text}");
        assert_eq!(parse_cases(&text, "f").unwrap(), vec![plain]);
    }

    #[test]
    fn ranges_without_a_bug_id_are_one_bug_and_named_bugs_count_once() {
        let old = r#"{"version":1,"id":"old","repo":".","base":"a","head":"b","expected":[
            {"path":"a.rs","start_line":1,"end_line":1},{"path":"b.rs","start_line":5,"end_line":6}]}"#;
        let cases = parse_cases(&old.replace('\n', ""), "f").unwrap();
        assert_eq!(cases[0].bugs(), [""]);
        assert_eq!(
            (cases[0].title.as_deref(), cases[0].body.as_deref()),
            (None, None)
        );
        let mut two = case("two");
        let mut other = two.expected[0].clone();
        other.bug = "b2".into();
        two.expected.extend([other, two.expected[0].clone()]);
        assert_eq!(two.bugs(), ["b1", "b2"]);
    }

    #[test]
    fn bad_cases_are_named_with_their_line() {
        let one = serde_json::to_string(&case("one")).unwrap();
        let duplicate = format!("{one}\n\n{one}\n");
        let message = parse_cases(&duplicate, "f.jsonl").unwrap_err().to_string();
        assert_eq!(message, "f.jsonl: line 3: duplicate case id `one`");
        let v2 = one.replace("\"version\":1", "\"version\":2");
        assert!(
            parse_cases(&v2, "f")
                .unwrap_err()
                .to_string()
                .contains("unsupported case version 2")
        );
        let mut empty = case("e");
        empty.expected.clear();
        let text = serde_json::to_string(&empty).unwrap();
        assert!(
            parse_cases(&text, "f")
                .unwrap_err()
                .to_string()
                .contains("expects nothing")
        );
        assert!(
            parse_cases("\n", "f")
                .unwrap_err()
                .to_string()
                .contains("no cases")
        );
    }
}
