//! Text for a terminal: the walkthrough, each finding as a compiler diagnostic (by file,
//! most severe first), the summary and a line of counters. Colour only when asked for.

use anstyle::{AnsiColor, Style};

use super::RenderOptions;
use super::source::printable;
use crate::review::report::ReviewReport;

const INDENT: &str = "    ";
/// The walkthrough's heading, as `walkthrough::text_lines` writes it.
const WALKTHROUGH: &str = "Walkthrough:";

/// The walkthrough, one diagnostic per finding, then the summary and a line of counters.
pub(super) fn render(report: &ReviewReport, options: &RenderOptions<'_>) -> String {
    let color = options.color;
    let walkthrough = printable(&crate::review::walkthrough::text_lines(
        &report.walkthrough,
        INDENT,
    ));
    let mut out = match walkthrough.strip_prefix(WALKTHROUGH) {
        Some(rest) if color => paint(Style::new().bold(), WALKTHROUGH, color) + rest,
        _ => walkthrough,
    };
    if !out.is_empty() {
        out.push('\n');
    }
    for (_, findings) in super::by_file_most_severe(&report.findings) {
        for finding in findings {
            let source = options.sources.text(&finding.path, finding.side);
            out.push_str(&super::diagnostic::render(
                finding,
                source.as_deref(),
                color,
            ));
            out.push('\n');
        }
    }
    if !report.summary.trim().is_empty() {
        out.push_str(&paint(Style::new().bold(), "Summary:", color));
        out.push('\n');
        out.push_str(&indented(&printable(report.summary.trim()), INDENT));
        out.push('\n');
    }
    if let Some(line) = super::verification_line(report) {
        out.push_str(&paint(Style::new().dimmed(), &line, color));
        out.push('\n');
    }
    out.push_str(&counts_line(report, color));
    out
}

/// `3 findings (1 critical, …) · react · 4 steps · …`, the count in the colour of the
/// most severe finding.
fn counts_line(report: &ReviewReport, color: bool) -> String {
    let counts = if report.findings.is_empty() {
        super::findings_count(0)
    } else {
        format!(
            "{} ({})",
            super::findings_count(report.findings.len()),
            super::severity_counts(report)
        )
    };
    let style = match report.findings.iter().map(|f| f.severity).max() {
        None => AnsiColor::Green.on_default(),
        Some(severity) if severity >= crate::review::finding::Severity::Major => {
            AnsiColor::Red.on_default()
        }
        Some(_) => AnsiColor::Yellow.on_default(),
    }
    .bold();
    let stats = paint(
        Style::new().dimmed(),
        &super::stats_line(&report.stats),
        color,
    );
    format!("{} · {stats}\n", paint(style, &counts, color))
}

/// `text` in `style` when colour is on, else as it is.
fn paint(style: Style, text: &str, color: bool) -> String {
    if color {
        format!("{style}{text}{style:#}")
    } else {
        text.to_string()
    }
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
