//! Plain text for a terminal, without colour codes.

use crate::review::finding::{Finding, Side};
use crate::review::report::ReviewReport;

const INDENT: &str = "    ";

/// The walkthrough, one block per finding, then the summary and a line of counters.
pub(super) fn render(report: &ReviewReport) -> String {
    let mut out = crate::review::walkthrough::text_lines(&report.walkthrough, INDENT);
    if !out.is_empty() {
        out.push('\n');
    }
    for finding in super::ordered(&report.findings) {
        out.push_str(&finding_block(finding));
        out.push('\n');
    }
    if !report.summary.trim().is_empty() {
        out.push_str("Summary:\n");
        out.push_str(&indented(report.summary.trim(), INDENT));
        out.push('\n');
    }
    let counts = if report.findings.is_empty() {
        super::findings_count(0)
    } else {
        format!(
            "{} ({})",
            super::findings_count(report.findings.len()),
            super::severity_counts(report)
        )
    };
    out.push_str(&format!(
        "{counts} · {}\n",
        super::stats_line(&report.stats)
    ));
    out
}

fn finding_block(finding: &Finding) -> String {
    let side = match finding.side {
        Side::Left => " (base)",
        Side::Right => "",
    };
    let mut out = format!(
        "{}{side}  {}  {}  {}\n",
        finding.location(),
        finding.severity.as_str().to_ascii_uppercase(),
        finding.category.as_str(),
        finding.title.trim()
    );
    if !finding.body.trim().is_empty() {
        out.push_str(&indented(finding.body.trim(), INDENT));
    }
    if let Some(rule) = &finding.rule {
        out.push_str(&format!("{INDENT}rule: {rule}\n"));
    }
    if let Some(code) = &finding.suggestion {
        out.push_str(&format!("{INDENT}suggestion:\n"));
        out.push_str(&indented(code.trim_end_matches('\n'), &INDENT.repeat(2)));
    }
    out
}

/// Every line prefixed with `prefix` (blank lines stay blank), each ending with a newline.
fn indented(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|line| {
            if line.trim().is_empty() {
                "\n".to_string()
            } else {
                format!("{prefix}{line}\n")
            }
        })
        .collect()
}
