//! Output formats of a review report: text for terminals, Markdown for pull-request
//! comments and job summaries, JSON (version 1) for programs, SARIF for code scanning.
//!
//! Rendering is a pure function of the report, the options and a [`SourceLookup`] (the
//! file text the code lines under a finding come from), so tests and `redline replay`
//! render exactly what `redline review` does. Text and Markdown list findings by file,
//! the file with the most severe finding first; JSON and SARIF keep path-then-line order.

mod diagnostic;
pub mod json;
mod markdown;
pub mod sarif;
mod source;
mod text;

pub(crate) use source::RepoSources;
pub use source::{NoSources, SourceLookup};

use std::fmt;
use std::str::FromStr;

use crate::review::stats::Stats;

use super::finding::{Finding, Severity};
use super::report::ReviewReport;

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Plain text for a terminal, no colour codes.
    Text,
    /// Markdown for a pull-request comment or GitHub's job summary.
    Markdown,
    /// The JSON report, version 1.
    Json,
    /// SARIF 2.1.0 for GitHub code scanning.
    Sarif,
}

/// A format name that is none of the accepted ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format `{0}` (expected text, markdown, json or sarif)")]
pub struct InvalidFormat(pub String);

impl FromStr for Format {
    type Err = InvalidFormat;

    /// Accepts `text`, `markdown`, `json` and `sarif`, case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" => Ok(Format::Text),
            "markdown" => Ok(Format::Markdown),
            "json" => Ok(Format::Json),
            "sarif" => Ok(Format::Sarif),
            _ => Err(InvalidFormat(s.to_string())),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Text => "text",
            Format::Markdown => "markdown",
            Format::Json => "json",
            Format::Sarif => "sarif",
        })
    }
}

/// How to render: colour (text only) and where the code lines under a finding come from.
#[derive(Clone, Copy)]
pub struct RenderOptions<'a> {
    /// ANSI colour in the text format (never in the others).
    pub color: bool,
    /// The file text findings point into; without it no code lines are shown.
    pub sources: &'a dyn SourceLookup,
}

impl RenderOptions<'static> {
    /// No colour, no code lines.
    pub fn plain() -> Self {
        RenderOptions {
            color: false,
            sources: &NoSources,
        }
    }
}

/// Renders `report` in `format` without colour or code lines (see [`render_with`]).
pub fn render(report: &ReviewReport, format: Format) -> String {
    render_with(report, format, &RenderOptions::plain())
}

/// Renders `report` in `format`: text and Markdown list findings by file, most severe
/// first; JSON and SARIF by path, then line.
pub fn render_with(report: &ReviewReport, format: Format, options: &RenderOptions<'_>) -> String {
    match format {
        Format::Text => text::render(report, options),
        Format::Markdown => markdown::render(report),
        Format::Json => json::to_json(report),
        Format::Sarif => sarif::to_sarif(report),
    }
}

/// The findings grouped by file: files with a more severe finding first (then by path),
/// and in a file the most severe first, then by line.
fn by_file_most_severe(findings: &[Finding]) -> Vec<(&str, Vec<&Finding>)> {
    let mut files: Vec<(&str, Vec<&Finding>)> = Vec::new();
    for finding in findings {
        match files.iter_mut().find(|(path, _)| *path == finding.path) {
            Some((_, group)) => group.push(finding),
            None => files.push((finding.path.as_str(), vec![finding])),
        }
    }
    for (_, group) in &mut files {
        group.sort_by(|a, b| {
            (b.severity, a.start_line, a.line).cmp(&(a.severity, b.start_line, b.line))
        });
    }
    // Each group's first finding is its most severe.
    files.sort_by(|(a_path, a), (b_path, b)| (b[0].severity, a_path).cmp(&(a[0].severity, b_path)));
    files
}

/// The findings ordered by path, then line, then first line.
fn ordered(findings: &[Finding]) -> Vec<&Finding> {
    let mut ordered: Vec<&Finding> = findings.iter().collect();
    ordered.sort_by(|a, b| (&a.path, a.line, a.start_line).cmp(&(&b.path, b.line, b.start_line)));
    ordered
}

/// `1 critical, 0 major, 2 minor, 0 nit`.
fn severity_counts(report: &ReviewReport) -> String {
    Severity::ALL
        .iter()
        .map(|severity| format!("{} {severity}", report.count(*severity)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `3 findings` / `1 finding` / `no findings`.
fn findings_count(count: usize) -> String {
    match count {
        0 => "no findings".into(),
        1 => "1 finding".into(),
        n => format!("{n} findings"),
    }
}

/// One line of run counters for humans.
fn stats_line(stats: &Stats) -> String {
    let strategy = if stats.strategy.is_empty() {
        String::new()
    } else {
        format!("{} · ", stats.strategy)
    };
    let limit = stats
        .limit_reached
        .map(|kind| format!(" · stopped at the {kind} limit"))
        .unwrap_or_default();
    format!(
        "{strategy}{} steps · {} model calls · {} tool calls · {} prompt + {} completion tokens · {} · {:.1}s{limit}",
        stats.steps,
        stats.model_calls,
        stats.tool_calls,
        stats.prompt_tokens,
        stats.completion_tokens,
        cost_text(stats),
        stats.duration_ms as f64 / 1000.0
    )
}

/// What verification did, for humans: `Verification: 3 kept, 1 dropped, 1 unverified;
/// 1 duplicate merged · 2345 tokens`; `None` when it did not run and nothing was merged.
fn verification_line(report: &ReviewReport) -> Option<String> {
    let merged = match report.merged.len() {
        0 => None,
        n => Some(crate::text::count(
            n,
            "duplicate merged",
            "duplicates merged",
        )),
    };
    let Some(stats) = &report.stats.verification else {
        return merged.map(|merged| format!("Verification off; {merged}"));
    };
    let mut parts = vec![
        format!("{} kept", stats.kept),
        format!("{} dropped", stats.dropped),
    ];
    if stats.unverified > 0 {
        parts.push(format!("{} unverified", stats.unverified));
    }
    let mut line = format!("Verification: {}", parts.join(", "));
    if let Some(merged) = merged {
        line.push_str(&format!("; {merged}"));
    }
    line.push_str(&format!(" · {} tokens", stats.tokens()));
    if stats.dropped > 0 {
        line.push_str(" · dropped findings are listed in the JSON report");
    }
    Some(line)
}

/// `$0.0123`, `~$0.0123 (estimated usage)`, or `cost unknown` (no price for the model);
/// a run that called no model cost nothing, priced or not.
pub(crate) fn cost_text(stats: &Stats) -> String {
    if stats.model_calls == 0 && stats.cost_usd.is_none_or(|cost| cost == 0.0) {
        return "$0.0000".into();
    }
    match (stats.cost_usd, stats.cost_estimated) {
        (Some(cost), false) => format!("${cost:.4}"),
        (Some(cost), true) => format!("~${cost:.4} (estimated usage)"),
        (None, _) => "cost unknown".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_without_a_model_call_cost_nothing_even_unpriced() {
        let nothing = Stats::default();
        assert_eq!(nothing.model_calls, 0);
        assert_eq!(nothing.cost_usd, None);
        assert_eq!(cost_text(&nothing), "$0.0000");
        let unpriced = Stats {
            model_calls: 2,
            ..Stats::default()
        };
        assert_eq!(cost_text(&unpriced), "cost unknown");
        let priced = Stats {
            model_calls: 1,
            cost_usd: Some(0.0123),
            ..Stats::default()
        };
        assert_eq!(cost_text(&priced), "$0.0123");
    }

    #[test]
    fn formats_parse_and_print_their_names() {
        for name in ["text", "markdown", "json", "sarif"] {
            let format: Format = name.parse().unwrap();
            assert_eq!(format.to_string(), name);
        }
        assert_eq!("JSON".parse(), Ok(Format::Json));
        let err = "yaml".parse::<Format>().unwrap_err().to_string();
        assert!(err.contains("`yaml`") && err.contains("sarif"), "{err}");
    }

    #[test]
    fn counts_read_naturally() {
        assert_eq!(findings_count(0), "no findings");
        assert_eq!(findings_count(1), "1 finding");
        assert_eq!(findings_count(2), "2 findings");
        assert_eq!(
            severity_counts(&ReviewReport::default()),
            "0 critical, 0 major, 0 minor, 0 nit"
        );
    }
}
