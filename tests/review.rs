//! Review checks, parsing and output formats, on change sets built by hand.

mod anchor;
mod parse;
mod render;

use redline::review::diff::{ChangeSet, DiffLine, FileChange, FileStatus, Hunk, LineKind};
use redline::review::finding::{Category, Finding, Severity, Side};

/// A hunk from a pattern of line kinds: `' '` context, `+` added, `-` removed.
pub fn hunk(old_start: u32, new_start: u32, pattern: &str) -> Hunk {
    let (mut old, mut new) = (old_start, new_start);
    let mut lines = Vec::new();
    for mark in pattern.chars() {
        let (kind, old_line, new_line) = match mark {
            '+' => (LineKind::Added, None, Some(new)),
            '-' => (LineKind::Removed, Some(old), None),
            _ => (LineKind::Context, Some(old), Some(new)),
        };
        old += u32::from(old_line.is_some());
        new += u32::from(new_line.is_some());
        lines.push(DiffLine {
            kind,
            old_line,
            new_line,
            text: format!("line {mark}"),
        });
    }
    Hunk {
        old_start,
        old_lines: old - old_start,
        new_start: if new == new_start { 0 } else { new_start },
        new_lines: new - new_start,
        header: String::new(),
        lines,
    }
}

pub fn file(path: &str, status: FileStatus, hunks: Vec<Hunk>) -> FileChange {
    FileChange {
        path: path.into(),
        old_path: None,
        status,
        binary: false,
        hunks,
    }
}

/// The change most tests use:
/// - `src/lib.rs` modified: hunk A = head lines 10-19 (10-12 context, 13-16 added,
///   17-19 context; base 10-16 with 13 removed), hunk B = head 40-47 (base 37-42);
/// - `src/old.rs` deleted (base lines 1-5);
/// - `src/new.rs` added (head lines 1-4);
/// - `assets/logo.png` binary;
/// - `a/inner.rs` modified (head 1-5), a real path starting with `a/`.
pub fn change() -> ChangeSet {
    let mut logo = file("assets/logo.png", FileStatus::Modified, vec![]);
    logo.binary = true;
    ChangeSet {
        base: "base".into(),
        head: Some("head".into()),
        files: vec![
            file(
                "a/inner.rs",
                FileStatus::Modified,
                vec![hunk(1, 1, "  +  ")],
            ),
            logo,
            file(
                "src/lib.rs",
                FileStatus::Modified,
                vec![hunk(10, 10, "   -++++   "), hunk(37, 40, "   ++   ")],
            ),
            file("src/new.rs", FileStatus::Added, vec![hunk(0, 1, "++++")]),
            file("src/old.rs", FileStatus::Deleted, vec![hunk(1, 0, "-----")]),
        ],
    }
}

/// A RIGHT-side single-line minor bug finding.
pub fn finding(path: &str, line: u32, title: &str) -> Finding {
    Finding {
        path: path.into(),
        line,
        start_line: line,
        side: Side::Right,
        severity: Severity::Minor,
        category: Category::Bug,
        title: title.into(),
        body: format!("Body of {title}."),
        suggestion: None,
        rule: None,
        unverified: false,
    }
}

/// `finding` with a range.
pub fn ranged(path: &str, start_line: u32, line: u32, title: &str) -> Finding {
    Finding {
        start_line,
        ..finding(path, line, title)
    }
}

#[test]
fn the_fixture_matches_its_description() {
    let change = change();
    let lib = change.file("src/lib.rs").unwrap();
    assert_eq!(lib.hunks[0].range(Side::Right), Some(10..=19));
    assert_eq!(lib.hunks[0].range(Side::Left), Some(10..=16));
    assert_eq!(lib.hunks[1].range(Side::Right), Some(40..=47));
    let old = change.file("src/old.rs").unwrap();
    assert_eq!(old.hunks[0].range(Side::Left), Some(1..=5));
    assert_eq!(old.hunks[0].range(Side::Right), None);
}
