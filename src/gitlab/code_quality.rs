//! GitLab's Code Quality report (`gl-code-quality-report.json`): one entry per finding,
//! so findings also show in the merge request widget.
//!
//! Invariants: every finding is listed (anchored inline or not); its fingerprint is the
//! one its comment carries (the same on GitHub and GitLab); severities map onto GitLab's
//! `info|minor|major|critical|blocker` (Redline never says `blocker`).

use serde_json::{Value, json};

use crate::review::finding::{Finding, Severity};

/// The report for `findings`; `fingerprint_of` gives each finding's fingerprint.
pub(crate) fn code_quality_report(
    findings: &[Finding],
    fingerprint_of: impl Fn(&Finding) -> String,
) -> Value {
    let entries: Vec<Value> = findings
        .iter()
        .map(|finding| {
            json!({
                "description": finding.title,
                "check_name": format!("redline/{}", finding.category.as_str()),
                "fingerprint": fingerprint_of(finding),
                "severity": severity(finding.severity),
                "location": {
                    "path": finding.path,
                    "lines": { "begin": finding.start_line },
                },
            })
        })
        .collect();
    Value::Array(entries)
}

fn severity(severity: Severity) -> &'static str {
    match severity {
        Severity::Nit => "info",
        Severity::Minor => "minor",
        Severity::Major => "major",
        Severity::Critical => "critical",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::finding::{Category, Side};

    #[test]
    fn every_finding_is_an_entry_with_gitlab_severities() {
        let finding = |severity, line| Finding {
            path: "src/a.rs".into(),
            line,
            start_line: line - 1,
            side: Side::Right,
            severity,
            category: Category::Bug,
            title: format!("t{line}"),
            body: "b".into(),
            suggestion: None,
            rule: None,
            unverified: false,
        };
        let findings = [finding(Severity::Nit, 3), finding(Severity::Critical, 9)];
        let report = code_quality_report(&findings, |f| format!("fp-{}", f.line));
        let entries = report.as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["severity"], "info");
        assert_eq!(entries[1]["severity"], "critical");
        assert_eq!(entries[1]["fingerprint"], "fp-9");
        assert_eq!(entries[1]["check_name"], "redline/bug");
        assert_eq!(entries[1]["location"]["path"], "src/a.rs");
        assert_eq!(entries[1]["location"]["lines"]["begin"], 8);
    }
}
