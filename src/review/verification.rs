//! What happened to the findings a review did not post as they were: the ones a verifier
//! dropped (with its reason) and the duplicates merged into another finding. Plain data in
//! the shape of the JSON report's `dropped` and `merged` lists; the stage that fills them
//! in is the agent's (`agent::verify`), the rules of merging are `anchor`'s.

use serde::{Deserialize, Serialize};

use super::finding::{Finding, Side};

/// A finding the verifier dropped: posted nowhere, listed in the JSON report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedFinding {
    /// The finding as the review reported it.
    #[serde(flatten)]
    pub finding: Finding,
    /// The verifier's one-line reason.
    pub reason: String,
}

/// A duplicate merged into another finding before verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedFinding {
    /// The duplicate as the review reported it (after anchoring).
    #[serde(flatten)]
    pub finding: Finding,
    /// The finding it was merged into (the more severe one, as it was before the merge).
    pub into: FindingRef,
}

/// Where a finding is and what it is called: enough to find it in a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingRef {
    /// Its path.
    pub path: String,
    /// Its first line.
    pub start_line: u32,
    /// Its last line.
    pub line: u32,
    /// Its side.
    pub side: Side,
    /// Its title.
    pub title: String,
}

impl FindingRef {
    /// The reference of `finding`.
    pub fn of(finding: &Finding) -> Self {
        FindingRef {
            path: finding.path.clone(),
            start_line: finding.start_line,
            line: finding.line,
            side: finding.side,
            title: finding.title.clone(),
        }
    }
}
