//! Checking findings against the diff before they are reported.
//!
//! GitHub accepts a review comment only on a line it shows in the pull request's diff:
//! a line of one hunk (context lines included) on the side the comment names. A model
//! cites lines from memory and gets them slightly wrong, so every finding is checked
//! here: fixable mistakes are fixed, the rest become [`Note`]s that still reach the
//! user through [`summary_with_notes`].
//!
//! Rules, in the order they apply to each finding:
//! 1. The path is normalised (`./`, a leading `/`, `\` separators; `a/` and `b/` diff
//!    prefixes when the path as given is not in the change) and must name a file of
//!    the change (its head path, or its base path for deletions and renames; findings
//!    are reported on the head path). Binary files cannot carry findings.
//! 2. `line` 0 is no line. A `start_line` of 0 means "single line"; a `start_line`
//!    after `line` is swapped with it.
//! 3. A deleted file only has base lines: its findings become side LEFT. Likewise an
//!    added file only has head lines: its findings become side RIGHT.
//! 4. The range must lie in one hunk on its side. The hunk nearest to the range is
//!    chosen (one that contains `line` wins a tie, which shrinks a range spanning two
//!    hunks to the hunk of `line`). A range up to [`MOVE_TOLERANCE`] lines outside it is
//!    clamped into it; further away the finding becomes a note.
//! 5. A suggestion replaces head lines, so a LEFT-side finding keeps none; nor does a
//!    finding whose range was moved, as the suggestion was written for other lines. The
//!    suggested code is kept in the body as a plain code block so nothing is lost.
//! 6. Duplicates are merged (rules in the `merge` submodule), and findings are ordered by path,
//!    then line.

mod merge;

use std::ops::RangeInclusive;

use super::diff::{ChangeSet, FileChange, FileStatus};
use super::finding::{Finding, Side};
use super::verification::MergedFinding;

pub(crate) use merge::title_words;

/// How many lines outside a hunk a finding may be and still be moved into it.
pub(crate) const MOVE_TOLERANCE: u32 = 3;

/// A finding that could not be anchored on the diff, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The finding, with its path normalised.
    pub finding: Finding,
    /// Why it could not be anchored, for humans.
    pub reason: String,
}

/// The outcome of [`check_findings`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// Findings anchored on the diff, merged, ordered by path then line.
    pub findings: Vec<Finding>,
    /// Findings that could not be anchored, ordered by path then line.
    pub notes: Vec<Note>,
    /// Duplicates merged into one of `findings`, each with the one it went into.
    pub merged: Vec<MergedFinding>,
}

/// Checks raw findings against `changes`: fixes what can be fixed, turns the rest into
/// notes and merges duplicates. See the module documentation for the rules.
pub fn check_findings(raw: Vec<Finding>, changes: &ChangeSet) -> Checked {
    let mut anchored = Vec::new();
    let mut notes = Vec::new();
    for finding in raw {
        match anchor(finding, changes) {
            Outcome::Anchored(finding) => anchored.push(finding),
            Outcome::Noted(note) => notes.push(note),
        }
    }
    sort_findings(&mut anchored);
    let (mut findings, merged) = merge::merge_duplicates(anchored, changes);
    sort_findings(&mut findings);
    notes.sort_by(|a, b| order_key(&a.finding).cmp(&order_key(&b.finding)));
    Checked {
        findings,
        notes,
        merged,
    }
}

/// The summary followed by a list of every note as
/// `path:line (severity, category) title — reason`, each with its body indented below,
/// so findings that could not be anchored still reach the user. Unchanged without notes.
pub fn summary_with_notes(summary: &str, notes: &[Note]) -> String {
    if notes.is_empty() {
        return summary.to_string();
    }
    let mut out = summary.trim_end().to_string();
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(&format!(
        "Findings that could not be placed on the diff ({}):\n",
        notes.len()
    ));
    for note in notes {
        let f = &note.finding;
        out.push_str(&format!(
            "\n- {}:{} ({}, {}) {} — {}",
            f.path,
            f.line,
            f.severity,
            f.category.as_str(),
            f.title,
            note.reason
        ));
        for body_line in f.body.trim().lines() {
            out.push_str("\n  ");
            out.push_str(body_line);
        }
    }
    out
}

fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| order_key(a).cmp(&order_key(b)));
}

fn order_key(f: &Finding) -> (&str, u32, u32, bool) {
    (&f.path, f.line, f.start_line, f.side == Side::Right)
}

/// Anchors one finding, or says why it cannot be.
fn anchor(mut finding: Finding, changes: &ChangeSet) -> Outcome {
    let (path, file) = resolve_file(&finding.path, changes);
    finding.path = path;
    let Some(file) = file else {
        return noted(finding, "not in the change");
    };
    finding.path = file.path.clone();
    if file.binary {
        return noted(finding, "binary file; there are no lines to comment on");
    }
    if finding.line == 0 {
        return noted(finding, "line 0 does not exist (lines start at 1)");
    }
    order_range(&mut finding);
    fix_side(&mut finding, file);
    let original = finding.range();
    if let Err(reason) = fit_into_hunk(&mut finding, file) {
        return noted(finding, reason.to_string());
    }
    if finding.side == Side::Left {
        demote_suggestion(
            &mut finding,
            "it is on deleted lines, which a suggestion cannot replace",
        );
    } else if finding.range() != original {
        let why = format!(
            "it was written for {}, not the lines this comment is on",
            describe_lines(&original)
        );
        demote_suggestion(&mut finding, &why);
    }
    Outcome::Anchored(finding)
}

/// What became of one finding.
enum Outcome {
    Anchored(Finding),
    Noted(Note),
}

fn noted(finding: Finding, reason: impl Into<String>) -> Outcome {
    Outcome::Noted(Note {
        finding,
        reason: reason.into(),
    })
}

/// The normalised path and the changed file it names, trying the path as given before
/// stripping an `a/` or `b/` prefix (a repository may have a top-level `a/` directory).
fn resolve_file<'a>(raw: &str, changes: &'a ChangeSet) -> (String, Option<&'a FileChange>) {
    let cleaned = clean_path(raw);
    if let Some(file) = changes.file(&cleaned) {
        return (cleaned, Some(file));
    }
    match cleaned
        .strip_prefix("a/")
        .or_else(|| cleaned.strip_prefix("b/"))
    {
        Some(rest) => {
            let rest = clean_path(rest);
            let file = changes.file(&rest);
            (rest, file)
        }
        None => (cleaned, None),
    }
}

fn clean_path(raw: &str) -> String {
    let mut path = raw.trim().replace('\\', "/");
    loop {
        if let Some(rest) = path.strip_prefix("./") {
            path = rest.to_string();
        } else if let Some(rest) = path.strip_prefix('/') {
            path = rest.to_string();
        } else {
            return path;
        }
    }
}

/// `start_line` 0 means a single line; a reversed range is swapped.
fn order_range(finding: &mut Finding) {
    if finding.start_line == 0 {
        finding.start_line = finding.line;
    }
    if finding.start_line > finding.line {
        std::mem::swap(&mut finding.start_line, &mut finding.line);
    }
}

/// A deleted file only shows base lines and an added file only head lines.
fn fix_side(finding: &mut Finding, file: &FileChange) {
    match file.status {
        FileStatus::Deleted => finding.side = Side::Left,
        FileStatus::Added => finding.side = Side::Right,
        _ => {}
    }
}

/// Why a finding cannot be moved into a hunk of its file (the note on the finding).
#[derive(Debug, thiserror::Error)]
enum Unfit {
    #[error("the change shows no {side} lines of this file")]
    NoLines { side: &'static str },
    #[error(
        "{lines} {verb} {distance} lines from the nearest changed hunk (lines {start}-{end}{base})"
    )]
    FarFromHunk {
        lines: String,
        verb: &'static str,
        distance: u32,
        start: u32,
        end: u32,
        base: &'static str,
    },
}

/// Clamps the finding's range into the nearest hunk on its side, or says why it cannot.
fn fit_into_hunk(finding: &mut Finding, file: &FileChange) -> Result<(), Unfit> {
    let side = finding.side;
    let range = finding.range();
    let line = finding.line;
    let nearest = file
        .hunks
        .iter()
        .filter_map(|hunk| hunk.range(side))
        .min_by_key(|hunk| (gap(&range, hunk), gap(&(line..=line), hunk)));
    let Some(hunk) = nearest else {
        return Err(Unfit::NoLines {
            side: side_name(side),
        });
    };
    let distance = gap(&range, &hunk);
    if distance > MOVE_TOLERANCE {
        let verb = if range.start() == range.end() {
            "is"
        } else {
            "are"
        };
        return Err(Unfit::FarFromHunk {
            lines: describe_lines(&range),
            verb,
            distance,
            start: *hunk.start(),
            end: *hunk.end(),
            base: if side == Side::Left {
                ", base side"
            } else {
                ""
            },
        });
    }
    finding.start_line = (*range.start()).clamp(*hunk.start(), *hunk.end());
    finding.line = line.clamp(*hunk.start(), *hunk.end());
    Ok(())
}

/// `line 4` or `lines 4-6`.
fn describe_lines(range: &RangeInclusive<u32>) -> String {
    if range.start() == range.end() {
        format!("line {}", range.start())
    } else {
        format!("lines {}-{}", range.start(), range.end())
    }
}

/// Lines between two ranges; 0 when they overlap.
fn gap(a: &RangeInclusive<u32>, b: &RangeInclusive<u32>) -> u32 {
    if a.end() < b.start() {
        b.start() - a.end()
    } else if b.end() < a.start() {
        a.start() - b.end()
    } else {
        0
    }
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Left => "base (LEFT)",
        Side::Right => "head (RIGHT)",
    }
}

/// Moves the suggestion into the body as a plain code block, saying why.
fn demote_suggestion(finding: &mut Finding, why: &str) {
    let Some(code) = finding.suggestion.take() else {
        return;
    };
    let fence = fence_for(&code);
    let body = finding.body.trim_end();
    let separator = if body.is_empty() { "" } else { "\n\n" };
    finding.body = format!(
        "{body}{separator}Suggested code (not offered as a suggestion because {why}):\n{fence}\n{}\n{fence}",
        code.trim_end_matches('\n')
    );
}

/// A backtick fence longer than any backtick run in `code`, at least three long.
pub(crate) fn fence_for(code: &str) -> String {
    let longest = code.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat((longest + 1).max(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_counts_lines_between_ranges() {
        assert_eq!(gap(&(1..=3), &(5..=9)), 2);
        assert_eq!(gap(&(12..=12), &(5..=9)), 3);
        assert_eq!(gap(&(4..=6), &(5..=9)), 0);
    }

    #[test]
    fn paths_lose_dot_slash_and_leading_slash() {
        assert_eq!(clean_path(" ./src/a.rs"), "src/a.rs");
        assert_eq!(clean_path("/./src\\a.rs"), "src/a.rs");
    }

    #[test]
    fn fences_outgrow_backticks_in_the_code() {
        assert_eq!(fence_for("let a = 1;"), "```");
        assert_eq!(fence_for("```rust\nx\n```"), "````");
    }

    #[test]
    fn summary_lists_notes_with_reason_and_body() {
        let finding = Finding {
            path: "src/a.rs".into(),
            line: 120,
            start_line: 120,
            side: Side::Right,
            severity: crate::review::finding::Severity::Major,
            category: crate::review::finding::Category::Bug,
            title: "Overflow".into(),
            body: "Adds without checking.".into(),
            suggestion: None,
            rule: None,
            unverified: false,
        };
        let notes = [Note {
            finding,
            reason: "too far".into(),
        }];
        let text = summary_with_notes("All fine otherwise.", &notes);
        assert!(text.starts_with("All fine otherwise.\n\n"));
        assert!(
            text.contains(
                "- src/a.rs:120 (major, bug) Overflow — too far\n  Adds without checking."
            )
        );
        assert_eq!(summary_with_notes("s", &[]), "s");
    }
}
