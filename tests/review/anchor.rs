//! Anchoring rules of `check_findings`.

use redline::review::anchor::{Checked, check_findings, summary_with_notes};
use redline::review::diff::{ChangeSet, FileStatus};
use redline::review::finding::{Category, Finding, Severity, Side};

use super::{change, file, finding, hunk, ranged};

fn check(findings: Vec<Finding>) -> Checked {
    check_findings(findings, &change())
}

fn one(f: Finding) -> Finding {
    let checked = check(vec![f]);
    assert!(
        checked.notes.is_empty(),
        "unexpected notes: {:?}",
        checked.notes
    );
    assert_eq!(checked.findings.len(), 1);
    checked.findings.into_iter().next().unwrap()
}

fn note_reason(f: Finding) -> String {
    let checked = check(vec![f]);
    assert!(checked.findings.is_empty(), "{:?}", checked.findings);
    assert_eq!(checked.notes.len(), 1);
    checked.notes[0].reason.clone()
}

#[test]
fn a_finding_inside_a_hunk_is_kept_as_is() {
    let f = ranged("src/lib.rs", 13, 16, "Added code is wrong");
    assert_eq!(one(f.clone()), f);
}

#[test]
fn context_lines_of_a_hunk_are_valid_anchors() {
    assert_eq!(one(finding("src/lib.rs", 10, "x")).line, 10);
    assert_eq!(one(finding("src/lib.rs", 19, "x")).line, 19);
}

#[test]
fn one_to_three_lines_outside_a_hunk_are_moved_onto_it() {
    let after = one(finding("src/lib.rs", 22, "x"));
    assert_eq!((after.start_line, after.line), (19, 19));
    let before = one(finding("src/lib.rs", 7, "x"));
    assert_eq!((before.start_line, before.line), (10, 10));
    let straddling = one(ranged("src/lib.rs", 18, 21, "x"));
    assert_eq!((straddling.start_line, straddling.line), (18, 19));
    let range_after = one(ranged("src/lib.rs", 20, 21, "x"));
    assert_eq!((range_after.start_line, range_after.line), (19, 19));
}

#[test]
fn four_or_more_lines_outside_become_a_note_with_the_distance() {
    let reason = note_reason(finding("src/lib.rs", 23, "x"));
    assert_eq!(
        reason,
        "line 23 is 4 lines from the nearest changed hunk (lines 10-19)"
    );
    let reason = note_reason(finding("src/lib.rs", 120, "x"));
    assert!(
        reason.starts_with("line 120 is 73 lines from the nearest changed hunk"),
        "{reason}"
    );
    let reason = note_reason(ranged("src/lib.rs", 25, 30, "x"));
    assert!(
        reason.starts_with("lines 25-30 are 6 lines from"),
        "{reason}"
    );
}

#[test]
fn a_file_outside_the_change_becomes_a_note() {
    assert_eq!(
        note_reason(finding("src/other.rs", 3, "x")),
        "not in the change"
    );
}

#[test]
fn binary_files_and_line_zero_become_notes() {
    assert!(note_reason(finding("assets/logo.png", 1, "x")).contains("binary"));
    assert!(note_reason(finding("src/lib.rs", 0, "x")).contains("line 0"));
}

#[test]
fn paths_are_normalised_before_lookup() {
    for raw in [
        "./src/lib.rs",
        "b/src/lib.rs",
        "a/src/lib.rs",
        "/src/lib.rs",
        " src/lib.rs ",
    ] {
        assert_eq!(one(finding(raw, 14, "x")).path, "src/lib.rs", "{raw}");
    }
    // A real directory named `a` is not mistaken for a diff prefix.
    assert_eq!(one(finding("a/inner.rs", 3, "x")).path, "a/inner.rs");
    assert_eq!(one(finding("b/a/inner.rs", 3, "x")).path, "a/inner.rs");
}

#[test]
fn reversed_ranges_are_swapped_and_zero_start_means_one_line() {
    let swapped = one(ranged("src/lib.rs", 16, 13, "x"));
    assert_eq!((swapped.start_line, swapped.line), (13, 16));
    let single = one(ranged("src/lib.rs", 0, 14, "x"));
    assert_eq!((single.start_line, single.line), (14, 14));
}

#[test]
fn deleted_files_take_left_side_findings_and_lose_suggestions() {
    let mut f = finding("src/old.rs", 3, "Removed validation");
    f.suggestion = Some("validate(input)?;".into());
    let anchored = one(f);
    assert_eq!(anchored.side, Side::Left);
    assert_eq!(anchored.suggestion, None);
    assert!(
        anchored.body.contains("validate(input)?;"),
        "{}",
        anchored.body
    );
    let reason = note_reason(finding("src/old.rs", 30, "x"));
    assert!(
        reason.contains("25 lines from") && reason.contains("base side"),
        "{reason}"
    );
}

#[test]
fn added_files_take_right_side_findings() {
    let mut f = finding("src/new.rs", 2, "x");
    f.side = Side::Left;
    assert_eq!(one(f).side, Side::Right);
}

#[test]
fn left_side_findings_lose_their_suggestion_but_keep_the_code_in_the_body() {
    let mut f = finding("src/lib.rs", 13, "Removed check");
    f.side = Side::Left;
    f.suggestion = Some("    check();".into());
    let anchored = one(f);
    assert_eq!(anchored.side, Side::Left);
    assert_eq!(anchored.suggestion, None);
    assert!(
        anchored.body.contains("```\n    check();\n```"),
        "{}",
        anchored.body
    );
}

#[test]
fn moved_findings_lose_their_suggestion_as_it_was_for_other_lines() {
    let mut f = finding("src/lib.rs", 21, "x");
    f.suggestion = Some("fixed();".into());
    let anchored = one(f);
    assert_eq!(anchored.line, 19);
    assert_eq!(anchored.suggestion, None);
    assert!(anchored.body.contains("line 21,") && anchored.body.contains("fixed();"));
    let mut kept = finding("src/lib.rs", 14, "x");
    kept.suggestion = Some("fixed();".into());
    assert_eq!(one(kept).suggestion.as_deref(), Some("fixed();"));
}

#[test]
fn a_range_spanning_two_hunks_shrinks_to_the_hunk_of_its_line() {
    let shrunk = one(ranged("src/lib.rs", 15, 42, "x"));
    assert_eq!((shrunk.start_line, shrunk.line), (40, 42));
    // The line itself is between hunks: the range keeps its part in the hunk it overlaps.
    let overlapping = one(ranged("src/lib.rs", 15, 30, "x"));
    assert_eq!((overlapping.start_line, overlapping.line), (15, 19));
}

#[test]
fn duplicates_of_one_concern_are_merged() {
    let mut first = finding("src/lib.rs", 13, "Unchecked unwrap may panic");
    first.body = "Short.".into();
    let mut second = finding("./src/lib.rs", 14, "unwrap() can panic on empty input");
    second.severity = Severity::Major;
    second.body = "A much longer explanation of the panic.".into();
    let checked = check(vec![first, second]);
    assert!(checked.notes.is_empty());
    assert_eq!(checked.findings.len(), 1, "{:?}", checked.findings);
    let merged = &checked.findings[0];
    assert_eq!(merged.severity, Severity::Major);
    assert_eq!(merged.title, "unwrap() can panic on empty input");
    assert_eq!(merged.body, "A much longer explanation of the panic.");
    assert_eq!((merged.start_line, merged.line), (13, 14));
}

#[test]
fn adjacent_duplicates_merge_but_distant_ones_do_not() {
    let adjacent = check(vec![
        finding("src/lib.rs", 13, "Leaks the token"),
        finding("src/lib.rs", 15, "Token leaks"),
    ]);
    assert_eq!(adjacent.findings.len(), 2, "a line apart is not adjacent");
    let touching = check(vec![
        finding("src/lib.rs", 13, "Leaks the token"),
        finding("src/lib.rs", 14, "Token leaks"),
    ]);
    assert_eq!(touching.findings.len(), 1);
}

#[test]
fn distinct_concerns_on_the_same_lines_are_kept() {
    let mut security = finding("src/lib.rs", 14, "Unchecked unwrap may panic");
    security.category = Category::Security;
    let checked = check(vec![
        finding("src/lib.rs", 14, "Unchecked unwrap may panic"),
        security,
        finding("src/lib.rs", 14, "Unused variable"),
    ]);
    assert_eq!(checked.findings.len(), 3);
    let mut left = finding("src/lib.rs", 14, "Unchecked unwrap may panic");
    left.side = Side::Left;
    let sides = check(vec![
        finding("src/lib.rs", 14, "Unchecked unwrap may panic"),
        left,
    ]);
    assert_eq!(sides.findings.len(), 2);
}

#[test]
fn merged_ranges_stay_in_one_hunk_and_keep_a_suggestions_lines() {
    // Two touching hunks (10-14 and 15-19): a union would cross them.
    let change = ChangeSet {
        files: vec![file(
            "x.rs",
            FileStatus::Modified,
            vec![hunk(10, 10, "  +  "), hunk(15, 15, "  +  ")],
        )],
        ..ChangeSet::default()
    };
    let checked = check_findings(
        vec![
            ranged("x.rs", 12, 14, "Race on counter"),
            ranged("x.rs", 15, 16, "Counter race"),
        ],
        &change,
    );
    assert_eq!(checked.findings.len(), 1);
    assert_eq!(
        (checked.findings[0].start_line, checked.findings[0].line),
        (12, 14)
    );

    let mut with_fix = finding("src/lib.rs", 14, "Off by one");
    with_fix.suggestion = Some("i + 1".into());
    let checked = check(vec![ranged("src/lib.rs", 13, 15, "Off-by-one"), with_fix]);
    assert_eq!(checked.findings.len(), 1);
    let merged = &checked.findings[0];
    assert_eq!((merged.start_line, merged.line), (14, 14));
    assert_eq!(merged.suggestion.as_deref(), Some("i + 1"));
}

#[test]
fn nothing_is_lost_and_output_is_ordered() {
    let input = vec![
        finding("src/new.rs", 3, "c"),
        finding("src/lib.rs", 44, "b"),
        finding("src/lib.rs", 12, "a"),
        finding("nowhere.rs", 1, "gone"),
        finding("src/lib.rs", 200, "far"),
        finding("a/inner.rs", 2, "first"),
    ];
    let checked = check(input);
    let places: Vec<(String, u32)> = checked
        .findings
        .iter()
        .map(|f| (f.path.clone(), f.line))
        .collect();
    assert_eq!(
        places,
        [
            ("a/inner.rs".to_string(), 2),
            ("src/lib.rs".to_string(), 12),
            ("src/lib.rs".to_string(), 44),
            ("src/new.rs".to_string(), 3),
        ]
    );
    let noted: Vec<&str> = checked
        .notes
        .iter()
        .map(|n| n.finding.title.as_str())
        .collect();
    assert_eq!(noted, ["gone", "far"]);
}

#[test]
fn notes_reach_the_user_through_the_summary() {
    let checked = check(vec![
        finding("src/lib.rs", 120, "Overflow in sum"),
        finding("nowhere.rs", 5, "Ghost"),
    ]);
    let summary = summary_with_notes("The change looks mostly fine.", &checked.notes);
    assert!(summary.starts_with("The change looks mostly fine."));
    assert!(summary.contains(
        "src/lib.rs:120 (minor, bug) Overflow in sum — line 120 is 73 lines from the nearest changed hunk"
    ));
    assert!(summary.contains("nowhere.rs:5 (minor, bug) Ghost — not in the change"));
    assert!(summary.contains("Body of Ghost."));
}
