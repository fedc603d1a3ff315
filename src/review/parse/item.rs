//! One finding of a submission, parsed leniently.

use serde_json::{Map, Value};

use super::field;
use crate::errors::ModelReplyError;
use crate::review::finding::{Category, Finding, Severity, Side};

const PATH_KEYS: &[&str] = &["path", "file", "filename", "filepath"];
const LINE_KEYS: &[&str] = &[
    "line",
    "lines",
    "linenumber",
    "lineno",
    "endline",
    "lineend",
    "linerange",
];
const START_KEYS: &[&str] = &[
    "startline",
    "start",
    "linestart",
    "fromline",
    "firstline",
    "beginline",
];
const TITLE_KEYS: &[&str] = &["title", "headline", "issue", "name", "subject"];
const BODY_KEYS: &[&str] = &[
    "body",
    "message",
    "description",
    "comment",
    "explanation",
    "details",
    "text",
    "reason",
    "rationale",
];
const SUGGESTION_KEYS: &[&str] = &[
    "suggestion",
    "suggestedcode",
    "replacement",
    "suggestedchange",
];
const SEVERITY_KEYS: &[&str] = &["severity", "level", "priority", "importance"];
const CATEGORY_KEYS: &[&str] = &["category", "type", "kind"];

/// Longest title made from a body's first sentence, in characters.
const MAX_DERIVED_TITLE: usize = 100;

/// Parses one item, or says why it cannot be used.
pub(super) fn parse_finding(value: &Value) -> Result<Finding, ModelReplyError> {
    let Value::Object(map) = value else {
        return Err(ModelReplyError::respond(format!(
            "expected an object, got {}",
            super::json_kind(value)
        )));
    };
    let body = text_field(map, BODY_KEYS).unwrap_or_default();
    let title = match text_field(map, TITLE_KEYS) {
        Some(title) => one_line(&title),
        None => first_sentence(&body),
    };
    let label = if title.is_empty() {
        String::new()
    } else {
        format!(" (\"{title}\")")
    };
    if title.is_empty() {
        return Err(ModelReplyError::respond("no title and no body"));
    }
    let raw_path = text_field(map, PATH_KEYS)
        .ok_or_else(|| ModelReplyError::respond(format!("no `path`{label}")))?;
    let (path, line_in_path) = split_line_from_path(&raw_path);
    let (range_start, line) = match field(map, LINE_KEYS) {
        Some(value) => line_spec(value).ok_or_else(|| {
            ModelReplyError::respond(format!("`line` {value} is not a line number{label}"))
        })?,
        None => {
            line_in_path.ok_or_else(|| ModelReplyError::respond(format!("no `line`{label}")))?
        }
    };
    if line == 0 {
        return Err(ModelReplyError::respond(format!(
            "`line` must be 1 or more{label}"
        )));
    }
    let start_line = field(map, START_KEYS)
        .and_then(line_spec)
        .map(|(start, end)| start.unwrap_or(end))
        .filter(|start| *start > 0)
        .or(range_start)
        .unwrap_or(line);
    Ok(Finding {
        path,
        line,
        start_line,
        side: field(map, &["side"]).map(side).unwrap_or_default(),
        severity: field(map, SEVERITY_KEYS)
            .and_then(severity)
            .unwrap_or(Severity::Minor),
        category: field(map, CATEGORY_KEYS)
            .and_then(category)
            .unwrap_or(Category::Maintainability),
        title,
        body,
        suggestion: field(map, SUGGESTION_KEYS)
            .and_then(Value::as_str)
            .and_then(suggestion),
        rule: text_field(map, &["rule", "guideline"])
            .map(|rule| one_line(&rule).chars().take(200).collect()),
        unverified: false,
    })
}

/// A string field, trimmed, `None` when missing or blank. Numbers are accepted as text.
fn text_field(map: &Map<String, Value>, names: &[&str]) -> Option<String> {
    let text = match field(map, names)? {
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        _ => return None,
    };
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

/// A line or range: `42`, `"42"`, `"L42"`, `"#L40-L42"`, `"40-42"`, `"line 42"`, `[40, 42]`.
/// Returns `(start of range, line)`.
fn line_spec(value: &Value) -> Option<(Option<u32>, u32)> {
    match value {
        Value::Number(number) => number_line(number).map(|line| (None, line)),
        Value::String(text) => text_line_spec(text),
        Value::Array(items) => match items.as_slice() {
            [one] => line_spec(one),
            [first, last] => {
                let (_, start) = line_spec(first)?;
                let (_, end) = line_spec(last)?;
                Some((Some(start), end))
            }
            _ => None,
        },
        _ => None,
    }
}

fn number_line(number: &serde_json::Number) -> Option<u32> {
    if let Some(line) = number.as_u64() {
        return u32::try_from(line).ok();
    }
    let float = number.as_f64()?;
    (float >= 0.0 && float.fract() == 0.0 && float <= f64::from(u32::MAX)).then_some(float as u32)
}

fn text_line_spec(text: &str) -> Option<(Option<u32>, u32)> {
    let text = text.trim();
    if text.starts_with('-') {
        return None;
    }
    let numbers: Vec<u32> = text
        .split(|c: char| !c.is_ascii_digit())
        .filter(|run| !run.is_empty())
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    match numbers.as_slice() {
        [line] => Some((None, *line)),
        [start, end] => Some((Some(*start), *end)),
        _ => None,
    }
}

/// `src/a.rs:42` or `src/a.rs#L40-L42` → the path and the line spec after it.
fn split_line_from_path(raw: &str) -> (String, Option<(Option<u32>, u32)>) {
    let split = raw.rfind(':').or_else(|| raw.rfind("#L"));
    if let Some(at) = split {
        let spec = text_line_spec(&raw[at + 1..]).filter(|_| {
            raw[at + 1..]
                .trim_start_matches('L')
                .starts_with(|c: char| c.is_ascii_digit())
        });
        if let Some(spec) = spec {
            return (raw[..at].trim().to_string(), Some(spec));
        }
    }
    (raw.to_string(), None)
}

fn side(value: &Value) -> Side {
    let text = value
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match text.as_str() {
        "left" | "l" | "old" | "base" | "-" | "deleted" | "removed" => Side::Left,
        _ => Side::Right,
    }
}

fn severity(value: &Value) -> Option<Severity> {
    let word = alphanumeric_lowercase(value.as_str()?);
    let canonical = match word.as_str() {
        "severe" | "blocking" | "urgent" | "showstopper" => "critical",
        "moderate" | "important" | "significant" | "serious" => "major",
        "suggestion" | "note" | "optional" | "nitpick" | "cosmetic" => "nit",
        other => other,
    };
    canonical.parse().ok()
}

fn category(value: &Value) -> Option<Category> {
    let word = alphanumeric_lowercase(value.as_str()?);
    let canonical = match word.as_str() {
        "vulnerability" | "vuln" | "safety" | "secret" | "secrets" | "injection" => "security",
        "efficiency" | "speed" | "memory" => "performance",
        "error" | "errorhandling" | "crash" | "concurrency" | "race" | "correctness" => "bug",
        "naming" | "lint" | "format" => "style",
        "coverage" | "testcoverage" => "test",
        "docs" | "doc" | "documentation" | "complexity" | "refactor" | "refactoring" => {
            "maintainability"
        }
        other => other,
    };
    canonical.parse().ok()
}

fn alphanumeric_lowercase(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// A title on one line, whitespace collapsed.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first sentence of a body, on one line, cut at a word when too long.
fn first_sentence(body: &str) -> String {
    let first_line = body
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    let end = first_line
        .match_indices(['.', '!', '?'])
        .map(|(at, _)| at)
        .find(|at| {
            first_line[at + 1..]
                .chars()
                .next()
                .is_none_or(char::is_whitespace)
        })
        .map_or(first_line.len(), |at| at + 1);
    let sentence = one_line(&first_line[..end]);
    if sentence.chars().count() <= MAX_DERIVED_TITLE {
        return sentence;
    }
    let cut: String = sentence.chars().take(MAX_DERIVED_TITLE).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{cut}…")
}

/// Suggested code without the code fences models like to add; `None` when blank.
/// Leading indentation is kept: the code replaces whole lines.
fn suggestion(text: &str) -> Option<String> {
    let mut lines: Vec<&str> = text.lines().skip_while(|l| l.trim().is_empty()).collect();
    if lines
        .first()
        .is_some_and(|l| l.trim_start().starts_with("```"))
    {
        lines.remove(0);
        if lines.last().is_some_and(|l| l.trim().starts_with("```")) {
            lines.pop();
        }
    }
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let code = lines.join("\n");
    (!code.trim().is_empty()).then_some(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_rule_is_kept_on_one_line_and_blank_means_none() {
        let base = json!({"path": "a.rs", "line": 1, "title": "t", "body": "b"});
        let with = |rule: Value| {
            let mut item = base.clone();
            item["rule"] = rule;
            parse_finding(&item).unwrap().rule
        };
        assert_eq!(with(json!("AGENTS.md")), Some("AGENTS.md".into()));
        assert_eq!(
            with(json!(" .redline/rules/\n x.md ")),
            Some(".redline/rules/ x.md".into())
        );
        assert_eq!(with(json!("  ")), None);
        assert_eq!(parse_finding(&base).unwrap().rule, None);
        assert_eq!(with(json!("r".repeat(500))).map(|r| r.len()), Some(200));
    }

    #[test]
    fn line_specs_in_many_shapes() {
        assert_eq!(line_spec(&json!(42)), Some((None, 42)));
        assert_eq!(line_spec(&json!(42.0)), Some((None, 42)));
        assert_eq!(line_spec(&json!("L42")), Some((None, 42)));
        assert_eq!(line_spec(&json!("#L40-L42")), Some((Some(40), 42)));
        assert_eq!(line_spec(&json!("40–42")), Some((Some(40), 42)));
        assert_eq!(line_spec(&json!([40, "42"])), Some((Some(40), 42)));
        assert_eq!(line_spec(&json!("-3")), None);
        assert_eq!(line_spec(&json!("somewhere")), None);
        assert_eq!(line_spec(&json!("1, 2, 3")), None);
    }

    #[test]
    fn paths_may_carry_the_line() {
        assert_eq!(
            split_line_from_path("src/a.rs:42"),
            ("src/a.rs".into(), Some((None, 42)))
        );
        assert_eq!(
            split_line_from_path("src/a.rs#L3-L5"),
            ("src/a.rs".into(), Some((Some(3), 5)))
        );
        assert_eq!(split_line_from_path("C:\\x.rs"), ("C:\\x.rs".into(), None));
    }

    #[test]
    fn first_sentence_ends_at_a_sentence_mark_not_a_dot_in_a_name() {
        assert_eq!(
            first_sentence("Calls foo.bar() twice. Then more."),
            "Calls foo.bar() twice."
        );
        assert_eq!(first_sentence("\nNo stop here"), "No stop here");
        let long = "word ".repeat(40);
        let title = first_sentence(&long);
        assert!(title.ends_with('…') && title.chars().count() <= MAX_DERIVED_TITLE + 1);
    }

    #[test]
    fn suggestions_lose_fences_and_blank_means_none() {
        assert_eq!(
            suggestion("```suggestion\n    let a = 1;\n```"),
            Some("    let a = 1;".into())
        );
        assert_eq!(suggestion("  \n"), None);
        assert_eq!(suggestion("x\n"), Some("x".into()));
        assert_eq!(
            suggestion("\n    if a {\n        b();\n    }\n\n"),
            Some("    if a {\n        b();\n    }".into())
        );
    }
}
