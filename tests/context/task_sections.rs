//! The sections plan-and-execute cuts into tasks are laid out compactly: every
//! task pays for its text, and the padding of line numbers and git's `@@`
//! ranges were a fifth of it.

use redline::context::ShapeOptions;
use redline::llm::tokens::{Encoding, TokenCounter};

use super::support::Change;

/// A 1,200-line module with a one-line edit every 40 lines, plus a file too
/// large for the budget, so that the change does not fit one message.
fn scattered_change() -> Change {
    let old: String = (1..=1_200)
        .map(|n| format!("    let value_{n} = compute({n});\n"))
        .collect();
    let new: String = old
        .lines()
        .enumerate()
        .map(|(i, line)| match i % 40 {
            20 => format!("{}.max(1);\n", line.trim_end_matches(';')),
            _ => format!("{line}\n"),
        })
        .collect();
    let big: String = (1..=3_000).map(|n| format!("row_{n} = {n}\n")).collect();
    Change::default()
        .file("src/scattered.rs", &old, &new)
        .file("big.py", "", &big)
}

#[test]
fn task_sections_number_lines_unpadded_and_name_hunks_without_ranges() {
    let change = scattered_change();
    let shaped = change.shape(&ShapeOptions {
        budget_tokens: 3_000,
        ..ShapeOptions::default()
    });
    assert!(!shaped.fits_whole());
    let section = &shaped
        .sections
        .iter()
        .find(|s| s.path == "src/scattered.rs")
        .expect("section")
        .text;
    // One header line (`--- a/` only for renames), then the windows.
    assert!(
        section.starts_with("+++ b/src/scattered.rs\n@@"),
        "{section}"
    );
    let body: Vec<&str> = section.lines().skip(1).collect();
    assert!(body.iter().any(|l| l.starts_with("21 -")), "{section}");
    assert!(body.iter().any(|l| l.starts_with("21 +")), "{section}");
    for line in &body {
        assert!(!line.starts_with(' '), "padded: {line:?}");
        assert!(!line.starts_with("@@ -"), "ranges: {line:?}");
    }
    assert_eq!(body.iter().filter(|l| l.starts_with("@@")).count(), 30);
}

#[test]
fn task_sections_cost_a_bounded_number_of_tokens_per_changed_line() {
    let change = scattered_change();
    let shaped = change.shape(&ShapeOptions {
        budget_tokens: 3_000,
        ..ShapeOptions::default()
    });
    let counter = TokenCounter::new(Encoding::O200kBase);
    let section = &shaped
        .sections
        .iter()
        .find(|s| s.path == "src/scattered.rs")
        .expect("section")
        .text;
    let file = &change.files[0];
    let compact = counter.count(section);
    let git = counter.count(&file.render_numbered());
    // Each of the 30 edits shows 2 lines before, the removed and the added line
    // and 1 after: 5 of git's 8 lines, without padding or ranges.
    assert!(
        compact * 100 <= git * 60,
        "compact {compact} tokens against git's numbered {git}"
    );
}
