//! Markdown for a pull-request comment or GitHub's job summary: findings by file, the file
//! with the most severe finding first, and in a file the most severe first.

use crate::review::anchor::fence_for;
use crate::review::finding::{Finding, Side};
use crate::review::report::ReviewReport;

/// The report as Markdown: heading, walkthrough, counts, findings, summary, run counters.
pub(super) fn render(report: &ReviewReport) -> String {
    let mut out = String::from("## Redline review\n\n");
    let walkthrough = crate::review::walkthrough::markdown(&report.walkthrough);
    if !walkthrough.is_empty() {
        out.push_str(&walkthrough);
        out.push('\n');
    }
    let findings: Vec<&Finding> = super::by_file_most_severe(&report.findings)
        .into_iter()
        .flat_map(|(_, findings)| findings)
        .collect();
    if findings.is_empty() {
        out.push_str("**No findings.**\n");
    } else {
        out.push_str(&format!(
            "**{}**: {}\n",
            super::findings_count(findings.len()),
            super::severity_counts(report)
        ));
    }
    for (number, finding) in findings.iter().enumerate() {
        out.push('\n');
        out.push_str(&finding_section(number + 1, finding));
    }
    if !report.summary.trim().is_empty() {
        out.push_str("\n### Summary\n\n");
        out.push_str(report.summary.trim());
        out.push('\n');
    }
    if let Some(line) = super::verification_line(report) {
        out.push_str(&format!("\n_{line}._\n"));
    }
    out.push_str(&format!(
        "\n<sub>{}</sub>\n",
        super::stats_line(&report.stats)
    ));
    out
}

fn finding_section(number: usize, finding: &Finding) -> String {
    let side = match finding.side {
        Side::Left => " (base version, removed lines)",
        Side::Right => "",
    };
    let unverified = match finding.unverified {
        true => " · unverified",
        false => "",
    };
    let mut out = format!(
        "### {number}. {}\n\n`{}`{side} · **{}** · {}{unverified}\n",
        finding.title.trim(),
        finding.location(),
        finding.severity,
        finding.category.as_str()
    );
    if !finding.body.trim().is_empty() {
        out.push('\n');
        out.push_str(finding.body.trim());
        out.push('\n');
    }
    if let Some(rule) = &finding.rule {
        out.push_str(&format!("\nRule: `{}`\n", rule.replace('`', "'")));
    }
    if let Some(code) = &finding.suggestion {
        let fence = fence_for(code);
        out.push_str(&format!(
            "\n{fence}suggestion\n{}\n{fence}\n",
            code.trim_end_matches('\n')
        ));
    }
    out
}
