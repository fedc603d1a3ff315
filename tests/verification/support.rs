//! What the verification tests share: a real finding and a fabricated one on the
//! `src/calc.rs` change of the Action's pull request, and scripted verifiers.

use serde_json::{Value, json};

use crate::common::model_server::{RecordedRequest, Reply};

/// The title of the finding that is real: `ratio` divides by `b` (line 7 of the change).
pub const REAL: &str = "Division by zero in ratio";
/// The title of the fabricated finding: there is no SQL anywhere.
pub const FABRICATED: &str = "SQL injection in ratio";
/// The reason the scripted verifier gives for dropping it.
pub const DROP_REASON: &str = "there is no query: ratio only divides two integers";

/// The real finding at `line` of `src/calc.rs`.
pub fn real_finding(line: u32) -> Value {
    json!({"path": "src/calc.rs", "line": line, "severity": "critical", "category": "bug",
           "title": REAL, "body": "Divides by b without checking for zero."})
}

/// The fabricated finding at `line` of `src/calc.rs`.
pub fn fabricated_finding(line: u32) -> Value {
    json!({"path": "src/calc.rs", "line": line, "severity": "critical", "category": "security",
           "title": FABRICATED, "body": "User input reaches a SQL query unescaped."})
}

/// `submit_review` with `findings`.
pub fn submit(findings: Vec<Value>) -> Reply {
    Reply::tool(
        "s",
        "submit_review",
        json!({"findings": findings, "summary": "Adds ratio."}),
    )
}

/// The `(id, title)` of every finding a verifier request lists, in order.
pub fn listed(request: &RecordedRequest) -> Vec<(String, String)> {
    let text = request.user_text();
    let mut found = Vec::new();
    let mut id = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("## ") {
            id = rest.split_once(" · ").map(|(id, _)| id.to_string());
        } else if let (Some(title), Some(current)) = (line.strip_prefix("Title: "), id.take()) {
            found.push((current, title.to_string()));
        }
    }
    found
}

/// The verifier's `submit_verdicts` call: every listed finding whose title contains
/// `drop` is dropped with [`DROP_REASON`], the others kept.
pub fn verdicts_dropping(request: &RecordedRequest, drop: &str) -> Reply {
    let verdicts: Vec<Value> = listed(request)
        .into_iter()
        .map(|(id, title)| match title.contains(drop) {
            true => json!({"id": id, "verdict": "drop", "reason": DROP_REASON}),
            false => json!({"id": id, "verdict": "keep", "reason": "the divisor is never checked"}),
        })
        .collect();
    Reply::tool("v", "submit_verdicts", json!({ "verdicts": verdicts }))
}

/// A model whose review answers with `review` and whose verifier drops the fabricated
/// finding (the server must be [`crate::common::model_server::ModelServer::scripting_verifier`]).
pub fn reviewer_and_verifier(
    review: Reply,
) -> impl Fn(&RecordedRequest, usize) -> Reply + Send + Sync + 'static {
    move |request, _| match request.is_verifier() {
        true => verdicts_dropping(request, FABRICATED),
        false => review.clone(),
    }
}

/// Whether any of `texts` mentions the fabricated finding.
pub fn mentions_fabricated<'a>(texts: impl IntoIterator<Item = &'a str>) -> bool {
    texts
        .into_iter()
        .any(|text| text.contains(FABRICATED) || text.contains("SQL query"))
}
