//! The JSON report, version 1:
//! `{"version":1,"walkthrough":[...],"findings":[...],"unanchored":[...],"summary":"...","stats":{...}}`,
//! findings ordered by path then line, each with `start_line` always and `suggestion`
//! only when present; `unanchored` holds the findings that could not be placed on the
//! diff (also in the summary's text), with the same fields, and may be missing from an
//! older report. `walkthrough` (areas `{"area","files","summary"}`, possibly empty)
//! came later: it is always written and may be missing from an older report. So did
//! verification: `dropped` holds the findings the verifier dropped (each the finding's
//! fields plus `reason`), `merged` the duplicates merged into another finding (each the
//! finding's fields plus `into`: `path`, `start_line`, `line`, `side`, `title` of the one
//! kept); both are always written (possibly empty) and may be missing from an older
//! report. A posted finding without a verifier's verdict carries `"unverified": true`.

use serde::{Deserialize, Serialize};

use crate::review::finding::Finding;
use crate::review::report::ReviewReport;
use crate::review::stats::Stats;
use crate::review::verification::{DroppedFinding, MergedFinding};
use crate::review::walkthrough::Area;

/// The version of the JSON report this module writes and reads.
pub(crate) const JSON_VERSION: u64 = 1;

/// A JSON report that cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum JsonReportError {
    /// Not JSON, or not in the report's shape.
    #[error("not a Redline JSON report: {0}")]
    Invalid(#[from] serde_json::Error),
    /// Written by a Redline with another report version.
    #[error("unsupported JSON report version {0} (this Redline reads version {JSON_VERSION})")]
    Version(u64),
}

#[derive(Serialize)]
struct Written<'a> {
    version: u64,
    walkthrough: &'a [Area],
    findings: Vec<&'a Finding>,
    /// The findings that could not be placed on the diff, with the same fields.
    unanchored: Vec<&'a Finding>,
    /// The findings the verifier dropped, with its reasons.
    dropped: &'a [DroppedFinding],
    /// The duplicates merged into another finding.
    merged: &'a [MergedFinding],
    summary: &'a str,
    stats: &'a Stats,
}

#[derive(Deserialize)]
struct VersionOnly {
    version: u64,
}

#[derive(Deserialize)]
struct Read {
    #[serde(default)]
    walkthrough: Vec<Area>,
    findings: Vec<Finding>,
    /// Missing from a report written before it was added.
    #[serde(default)]
    unanchored: Vec<Finding>,
    /// Missing from a report written before verification.
    #[serde(default)]
    dropped: Vec<DroppedFinding>,
    /// Missing from a report written before verification.
    #[serde(default)]
    merged: Vec<MergedFinding>,
    summary: String,
    stats: Stats,
}

/// The report as pretty-printed JSON, version 1, ending with a newline.
pub fn to_json(report: &ReviewReport) -> String {
    let written = Written {
        version: JSON_VERSION,
        walkthrough: &report.walkthrough,
        findings: super::ordered(&report.findings),
        unanchored: super::ordered(&report.unanchored),
        dropped: &report.dropped,
        merged: &report.merged,
        summary: &report.summary,
        stats: &report.stats,
    };
    match serde_json::to_string_pretty(&written) {
        Ok(mut text) => {
            text.push('\n');
            text
        }
        // Unreachable for these plain types; still, never print a broken document.
        Err(err) => format!(
            "{{\"version\":{JSON_VERSION},\"error\":{}}}\n",
            serde_json::Value::String(err.to_string())
        ),
    }
}

/// Reads a JSON report written by [`to_json`].
pub fn from_json(text: &str) -> Result<ReviewReport, JsonReportError> {
    let VersionOnly { version } = serde_json::from_str(text)?;
    if version != JSON_VERSION {
        return Err(JsonReportError::Version(version));
    }
    let read: Read = serde_json::from_str(text)?;
    Ok(ReviewReport {
        findings: read.findings,
        summary: read.summary,
        stats: read.stats,
        unanchored: read.unanchored,
        walkthrough: read.walkthrough,
        dropped: read.dropped,
        merged: read.merged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_versions_are_refused_clearly() {
        let err = from_json(r#"{"version":2,"findings":[]}"#).unwrap_err();
        assert!(err.to_string().contains("version 2"), "{err}");
        assert!(matches!(
            from_json("nope"),
            Err(JsonReportError::Invalid(_))
        ));
    }
}
