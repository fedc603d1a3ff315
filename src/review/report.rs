//! The outcome of a review and the `--fail-on` threshold that decides the exit status.

use std::fmt;
use std::str::FromStr;

use crate::review::stats::Stats;

use super::finding::{Finding, Severity};
use super::verification::{DroppedFinding, MergedFinding};
use super::walkthrough::Area;

/// A finished review: the checked findings, the summary and the run's counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReviewReport {
    /// Findings anchored on the diff.
    pub findings: Vec<Finding>,
    /// The model's overall summary (with unanchored findings appended, see
    /// [`super::anchor::summary_with_notes`]).
    pub summary: String,
    /// Counters of the run.
    pub stats: Stats,
    /// Findings that could not be anchored on the diff (they are in the summary as
    /// notes). They are still problems: they count for `--fail-on` and the highest severity.
    pub unanchored: Vec<Finding>,
    /// What the change does, per area (empty when the model gave none or it is turned off).
    pub walkthrough: Vec<Area>,
    /// Findings the verifier dropped, each with its reason: posted nowhere, counted for
    /// nothing (`--fail-on`, the highest severity), listed in the JSON report.
    pub dropped: Vec<DroppedFinding>,
    /// Duplicates merged into another finding before verification, each naming the one it
    /// was merged into: counted for nothing, listed in the JSON report.
    pub merged: Vec<MergedFinding>,
}

impl ReviewReport {
    /// Whether the report should fail the run under `fail_on`.
    pub fn fails(&self, fail_on: FailOn) -> bool {
        match fail_on {
            FailOn::Never => false,
            FailOn::At(threshold) => self.all_findings().any(|f| f.severity >= threshold),
        }
    }

    /// The severity of the most severe finding, anchored or not; `None` without findings.
    pub fn highest_severity(&self) -> Option<Severity> {
        self.all_findings().map(|f| f.severity).max()
    }

    fn all_findings(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().chain(&self.unanchored)
    }

    /// How many findings have `severity`.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }
}

/// When a review fails the run (non-zero exit status): at a severity threshold, or never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOn {
    /// Fail when some finding is at least this severe.
    At(Severity),
    /// Never fail because of findings.
    Never,
}

/// A `--fail-on` value that is none of the accepted names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", crate::text::unknown_value("fail-on value", .0, &["critical", "major", "minor", "nit", "never"]))]
pub struct InvalidFailOn(pub String);

impl FromStr for FailOn {
    type Err = InvalidFailOn;

    /// Accepts `critical`, `major`, `minor`, `nit` and `never`, case-insensitively.
    /// Severity synonyms are deliberately not accepted: a CI threshold should be explicit.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "never" => Ok(FailOn::Never),
            "critical" => Ok(FailOn::At(Severity::Critical)),
            "major" => Ok(FailOn::At(Severity::Major)),
            "minor" => Ok(FailOn::At(Severity::Minor)),
            "nit" => Ok(FailOn::At(Severity::Nit)),
            _ => Err(InvalidFailOn(s.to_string())),
        }
    }
}

impl fmt::Display for FailOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailOn::At(severity) => f.write_str(severity.as_str()),
            FailOn::Never => f.write_str("never"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(severity: Severity) -> Finding {
        Finding {
            severity,
            ..Finding::on_lines("a.rs", 1, 1)
        }
    }

    #[test]
    fn fails_at_or_above_the_threshold() {
        let report = ReviewReport {
            findings: vec![finding(Severity::Minor), finding(Severity::Nit)],
            ..ReviewReport::default()
        };
        assert!(report.fails(FailOn::At(Severity::Minor)));
        assert!(report.fails(FailOn::At(Severity::Nit)));
        assert!(!report.fails(FailOn::At(Severity::Major)));
        assert!(!report.fails(FailOn::Never));
        assert_eq!(report.highest_severity(), Some(Severity::Minor));
        assert_eq!(ReviewReport::default().highest_severity(), None);
    }

    #[test]
    fn unanchored_findings_count_for_fail_on() {
        let report = ReviewReport {
            findings: vec![finding(Severity::Nit)],
            unanchored: vec![finding(Severity::Critical)],
            ..ReviewReport::default()
        };
        assert!(report.fails(FailOn::At(Severity::Critical)));
        assert_eq!(report.highest_severity(), Some(Severity::Critical));
    }

    #[test]
    fn fail_on_parses_names_and_rejects_others_clearly() {
        assert_eq!("Major".parse(), Ok(FailOn::At(Severity::Major)));
        assert_eq!(" never ".parse(), Ok(FailOn::Never));
        let err = "high".parse::<FailOn>().unwrap_err().to_string();
        assert!(err.contains("`high`") && err.contains("never"), "{err}");
        for value in ["critical", "major", "minor", "nit", "never"] {
            let parsed: FailOn = value.parse().unwrap();
            assert_eq!(parsed.to_string(), value);
        }
    }
}
