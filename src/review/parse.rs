//! Lenient parsing of the review a model submits through the `submit_review` tool
//! (or, for models that answer in prose, in its text: see [`parse_text_reply`]).
//!
//! Models bend the schema: numbers as strings, ranges in one field, other key names,
//! other severity words. Each finding is parsed on its own; one that cannot be used goes
//! to [`Submission::rejected`] with a reason the model can act on, and the others are kept.
//!
//! Choices for what the schema does not settle:
//! - Keys are matched ignoring case, `_`, `-` and spaces (`startLine` = `start_line`).
//! - A missing or unknown severity becomes `minor`; a missing or unknown category becomes
//!   `maintainability`, the most neutral kind. Neither loses the finding.
//! - An unknown side becomes RIGHT, the default, where almost every finding belongs.
//! - An empty suggestion means "no suggestion" (models send `""` for none).
//! - An unusable `walkthrough` is no walkthrough: it never rejects the submission.

mod item;
mod text;
mod walkthrough;

use serde_json::{Map, Value, json};

use super::finding::Finding;
use super::walkthrough::Area;
use crate::errors::ModelReplyError;

pub use text::parse_text_reply;

/// What a model submitted: usable findings, its summary, and what could not be used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Submission {
    /// Findings parsed from the submission, not yet checked against the diff.
    pub findings: Vec<Finding>,
    /// The overall summary, `""` when missing.
    pub summary: String,
    /// One line per item that could not be used, saying which and why.
    pub rejected: Vec<String>,
    /// What the change does, per area; empty when the model gave none usable.
    pub walkthrough: Vec<Area>,
}

/// Key names (normalised: lower case, no `_`, `-` or spaces) that hold the findings list.
const FINDINGS_KEYS: &[&str] = &["findings", "issues", "comments", "reviewcomments"];
/// Key names that hold the summary.
const SUMMARY_KEYS: &[&str] = &["summary", "overview", "reviewsummary", "overallsummary"];

/// The JSON Schema of the `submit_review` tool's arguments, with descriptions written for
/// the model; with `walkthrough`, the optional `walkthrough` property is asked for too.
/// Only widely supported keywords are used (no `default`, no `additionalProperties`) so
/// every provider accepts it.
pub fn submit_review_schema(walkthrough: bool) -> Value {
    let mut schema = json!({
        "type": "object",
        "properties": {
            "findings": {
                "type": "array",
                "description": "Every problem the author would fix before merging, one item \
                    each. Use an empty list when the change has no problems.",
                "items": finding_schema()
            },
            "summary": {
                "type": "string",
                "description": "A short overall assessment of the change for the author, in \
                    Markdown: what it does, how risky it is, and the most important findings."
            }
        },
        "required": ["findings", "summary"]
    });
    if walkthrough {
        schema["properties"]["walkthrough"] = super::walkthrough::schema();
    }
    schema
}

fn finding_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "Repository-relative path of the file, as in the diff header \
                    `+++ b/<path>` but without the `b/`."
            },
            "line": {
                "type": "integer",
                "minimum": 1,
                "description": "The line the finding is about (the last line of a range), using \
                    the numbers printed at the left of the numbered diff: head-file line numbers \
                    for added and unchanged lines. It must be a line shown in the diff."
            },
            "start_line": {
                "type": "integer",
                "minimum": 1,
                "description": "First line of a multi-line range, in the same numbering as \
                    `line`, inside the same hunk. Omit for a single line."
            },
            "side": {
                "type": "string",
                "enum": ["RIGHT", "LEFT"],
                "description": "RIGHT (the default; omit it) for added or unchanged lines of the \
                    new version. LEFT only for removed (`-`) lines, whose numbers in the \
                    numbered diff are base-file line numbers."
            },
            "severity": {
                "type": "string",
                "enum": ["critical", "major", "minor", "nit"],
                "description": "critical: breaks behaviour, loses data or opens a security hole; \
                    major: should be fixed before merging; minor: worth fixing, not urgent; \
                    nit: small but worth fixing, never cosmetic."
            },
            "category": {
                "type": "string",
                "enum": ["bug", "security", "performance", "maintainability", "style", "test"],
                "description": "bug: wrong behaviour; security: vulnerability or unsafe handling \
                    of data or secrets; performance: needless cost in time or memory; \
                    maintainability: harder to read, change or reason about; style: misleading \
                    naming or formatting; test: missing or wrong tests."
            },
            "title": {
                "type": "string",
                "description": "One line naming the problem, under 80 characters."
            },
            "body": {
                "type": "string",
                "description": "Why it is a problem and how to fix it, in Markdown. Be concrete \
                    and refer to the code."
            },
            "suggestion": {
                "type": "string",
                "description": "Only when the fix is mechanical: the exact code that replaces \
                    lines start_line..line of the new version, whole lines with their \
                    indentation, without code fences. Omit otherwise."
            },
            "rule": {
                "type": "string",
                "description": "When the finding rests on one of the project's guidelines: the \
                    guideline's source path as given (e.g. `AGENTS.md`). Omit otherwise."
            }
        },
        "required": ["path", "line", "severity", "category", "title", "body"]
    })
}

/// Parses the arguments of a `submit_review` call leniently (see the module documentation).
///
/// Accepts the arguments object, the same object encoded as a JSON string, or a bare array
/// of findings. Fails only when there is neither a findings list nor a summary.
pub fn parse_submission(args: &Value) -> Result<Submission, ModelReplyError> {
    let decoded = decode_json_string(args);
    let args = decoded.as_ref().unwrap_or(args);
    let (items, summary) = match args {
        Value::Array(items) => (Some(items.clone()), None),
        Value::Object(map) => (findings_of(map), summary_of(map)),
        other => {
            return Err(ModelReplyError::respond(format!(
                "expected an object {{\"findings\": [...], \"summary\": \"...\"}}, got {}",
                json_kind(other)
            )));
        }
    };
    if items.is_none() && summary.is_none() {
        return Err(ModelReplyError::respond(
            "no `findings` list and no `summary`: submit {\"findings\": [...], \"summary\": \"...\"}",
        ));
    }
    let walkthrough = match args {
        Value::Object(map) => field(map, walkthrough::WALKTHROUGH_KEYS)
            .map(walkthrough::parse_walkthrough)
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let mut submission = Submission {
        summary: summary.unwrap_or_default(),
        walkthrough,
        ..Submission::default()
    };
    for (index, value) in items.unwrap_or_default().iter().enumerate() {
        match item::parse_finding(value) {
            Ok(finding) => submission.findings.push(finding),
            Err(reason) => submission
                .rejected
                .push(format!("finding {}: {reason}", index + 1)),
        }
    }
    Ok(submission)
}

/// The value held under one of `names` (normalised key match), ignoring `null`s.
pub(crate) fn field<'a>(map: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names.iter().find_map(|name| {
        map.iter()
            .find(|(key, value)| !value.is_null() && normalise_key(key) == *name)
            .map(|(_, value)| value)
    })
}

fn normalise_key(key: &str) -> String {
    key.chars()
        .filter(|c| !matches!(c, '_' | '-' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether an object holds an array under one of the findings keys (stricter than
/// [`parse_submission`], for telling a submission from other JSON in prose).
fn has_findings_list(map: &Map<String, Value>) -> bool {
    field(map, FINDINGS_KEYS).is_some_and(Value::is_array)
}

/// The findings list of an arguments object: an array, an array encoded as a string, or a
/// single finding object. `None` when absent.
fn findings_of(map: &Map<String, Value>) -> Option<Vec<Value>> {
    let value = field(map, FINDINGS_KEYS)?;
    let decoded = decode_json_string(value);
    match decoded.as_ref().unwrap_or(value) {
        Value::Array(items) => Some(items.clone()),
        single @ Value::Object(_) => Some(vec![single.clone()]),
        // Anything else ("none", "", 0) carries no findings.
        _ => Some(Vec::new()),
    }
}

fn summary_of(map: &Map<String, Value>) -> Option<String> {
    field(map, SUMMARY_KEYS).map(|value| match value {
        Value::String(text) => text.trim().to_string(),
        other => other.to_string(),
    })
}

/// A JSON string whose content is itself JSON (models sometimes encode twice), decoded.
fn decode_json_string(value: &Value) -> Option<Value> {
    let text = value.as_str()?.trim();
    if !(text.starts_with('{') || text.starts_with('[')) {
        return None;
    }
    text::parse_lenient_json(text)
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_ignoring_case_and_separators() {
        let map = json!({"Start-Line": 3, "other": null, "line": null});
        let map = map.as_object().unwrap();
        assert_eq!(field(map, &["startline"]), Some(&json!(3)));
        assert_eq!(field(map, &["line"]), None);
    }

    #[test]
    fn schema_names_every_field_and_requires_the_core() {
        let schema = submit_review_schema(false);
        assert!(schema["properties"].get("walkthrough").is_none());
        let with = submit_review_schema(true);
        assert!(with["properties"]["walkthrough"]["items"]["properties"]["summary"].is_object());
        assert_eq!(with["required"], json!(["findings", "summary"]));
        let item = &schema["properties"]["findings"]["items"];
        for key in [
            "path",
            "line",
            "start_line",
            "side",
            "severity",
            "category",
            "title",
            "body",
            "suggestion",
            "rule",
        ] {
            assert!(item["properties"][key]["description"].is_string(), "{key}");
        }
        assert_eq!(schema["required"], json!(["findings", "summary"]));
        assert_eq!(item["properties"]["side"]["enum"], json!(["RIGHT", "LEFT"]));
    }

    #[test]
    fn nothing_usable_is_an_error_but_a_summary_alone_is_not() {
        assert!(parse_submission(&json!({"verdict": "ok"})).is_err());
        assert!(parse_submission(&json!(42)).is_err());
        let only_summary = parse_submission(&json!({"summary": "Fine."})).unwrap();
        assert_eq!(only_summary.summary, "Fine.");
        assert!(only_summary.findings.is_empty());
    }

    #[test]
    fn a_garbage_walkthrough_is_no_walkthrough_and_keeps_the_findings() {
        let finding = json!({"path": "a.rs", "line": 1, "title": "t", "body": "b"});
        for garbage in [
            json!(42),
            json!("## Title"),
            json!([1, {"x": 2}]),
            json!(null),
        ] {
            let parsed = parse_submission(
                &json!({"findings": [finding], "summary": "s", "walkthrough": garbage}),
            )
            .unwrap();
            assert!(parsed.walkthrough.is_empty() && parsed.rejected.is_empty());
            assert_eq!(parsed.findings.len(), 1);
        }
        let parsed = parse_submission(&json!({"summary": "s", "Walk-through": [
            {"area": "Core", "files": ["a.rs"], "summary": "Adds a."}]}))
        .unwrap();
        assert_eq!(parsed.walkthrough[0].area, "Core");
    }
}
