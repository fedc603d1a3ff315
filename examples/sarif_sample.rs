//! Prints the SARIF of a sample review with one finding per category and per side, one
//! of them citing a project guideline
//! (`scripts/validate-sarif.sh` feeds it to Microsoft's SARIF validator).

use redline::agent::events::Stats;
use redline::review::finding::{Category, Finding, Severity, Side};
use redline::review::render::{Format, render};
use redline::review::report::ReviewReport;

fn finding(path: &str, line: u32, category: Category, severity: Severity) -> Finding {
    Finding {
        path: path.into(),
        line,
        start_line: line.saturating_sub(1).max(1),
        side: Side::Right,
        severity,
        category,
        title: format!("Sample {} finding", category.as_str()),
        body: "Why it matters, and what to do.".into(),
        suggestion: None,
        rule: None,
        unverified: false,
    }
}

fn main() {
    let categories = [
        (Category::Bug, Severity::Critical),
        (Category::Security, Severity::Major),
        (Category::Performance, Severity::Minor),
        (Category::Maintainability, Severity::Nit),
        (Category::Style, Severity::Nit),
        (Category::Test, Severity::Minor),
    ];
    let mut findings: Vec<Finding> = categories
        .iter()
        .enumerate()
        .map(|(i, (category, severity))| {
            finding(
                "src/dir with space/lib.rs",
                10 + i as u32 * 5,
                *category,
                *severity,
            )
        })
        .collect();
    let mut removed = finding("src/old.rs", 3, Category::Bug, Severity::Major);
    removed.side = Side::Left;
    removed.suggestion = Some("let checked = input.validate()?;".into());
    findings.push(removed);
    // A finding resting on a project guideline carries it in its properties and message.
    findings[0].rule = Some("AGENTS.md".into());
    let report = ReviewReport {
        findings,
        summary: "A sample review.".into(),
        stats: Stats {
            strategy: "react".into(),
            ..Stats::default()
        },
        ..ReviewReport::default()
    };
    print!("{}", render(&report, Format::Sarif));
}
