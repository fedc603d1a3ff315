//! Findings in a prose reply, for models that answer in text instead of calling
//! `submit_review`.

use crate::text::prefix_at_char_boundary;
use serde_json::Value;

use super::{Submission, has_findings_list, parse_submission};

/// Longest reply that can count as a plain "no issues" answer.
const MAX_NO_ISSUES_CHARS: usize = 400;

/// Longest text searched for JSON, in bytes; longer replies are searched in this prefix.
const MAX_SCANNED: usize = 256 * 1024;

/// Most places a JSON value is tried from, per region searched. Each try may scan to the
/// end of the region, so this bounds the work on replies full of unbalanced brackets.
const MAX_TRIES: usize = 500;

const NO_ISSUES_PHRASES: &[&str] = &[
    "no issues",
    "no problems",
    "no findings",
    "no concerns",
    "nothing to report",
    "nothing to flag",
    "did not find any issues",
    "didn't find any issues",
    "did not find any problems",
    "didn't find any problems",
    "found nothing",
    "lgtm",
    "looks good to me",
];

const HEDGES: &[&str] = &[
    "but",
    "however",
    "although",
    "though",
    "except",
    "apart",
    "aside",
    "other than",
    "should",
    "could",
    "might",
    "consider",
    "cannot",
    "can't",
    "unable",
    "not sure",
    "unsure",
    "wrong",
    "incorrect",
    "missing",
    "fail",
    "fails",
    "broken",
    "risk",
    "bug",
    "vulnerable",
    "issue:",
    "problem:",
];

/// Finds a submission in a prose reply, or `None` when there is nothing parseable.
///
/// The reply is searched for JSON: first in fenced code blocks (```` ```json ```` or
/// unlabelled), then bare in the text. JSON may have trailing commas and `//` comments.
/// The first value that is an object with a findings array (also when wrapped as a tool
/// call under `arguments`, `parameters` or `input`), or a non-empty array of finding
/// objects, is parsed with [`parse_submission`]. When it has no summary, the prose
/// around it becomes the summary.
///
/// A reply without JSON counts as an explicit "no issues" answer only under a narrow rule,
/// because a wrong guess would hide findings while a `None` merely makes the caller ask
/// again. All of these must hold:
/// - no `{` and no code fence anywhere;
/// - at most 400 characters and no digits (no line references);
/// - it contains a plain phrase such as "no issues", "no problems found", "nothing to
///   report", "LGTM" or "looks good to me";
/// - it contains no word that hedges or reports a problem ("but", "however", "except",
///   "should", "consider", "wrong", "missing", ...).
pub fn parse_text_reply(text: &str) -> Option<Submission> {
    let text = prefix_at_char_boundary(text, MAX_SCANNED);
    let fenced = fenced_blocks(text);
    let candidates = fenced
        .iter()
        .flat_map(|block| candidates_in(text, block.content.clone(), Some(block.whole.clone())))
        .chain(candidates_in(text, 0..text.len(), None));
    for (value, span) in candidates {
        if let Some(mut submission) = submission_from(&value) {
            if submission.summary.is_empty() {
                submission.summary = prose_around(text, span);
            }
            return Some(submission);
        }
    }
    says_no_issues(text).then(|| Submission {
        summary: text.trim().to_string(),
        ..Submission::default()
    })
}

/// Parses JSON, forgiving trailing commas and `//` line comments.
pub(crate) fn parse_lenient_json(text: &str) -> Option<Value> {
    serde_json::from_str(text)
        .ok()
        .or_else(|| serde_json::from_str(&strip_json_noise(text)).ok())
}

/// The submission a JSON value holds, if it is one.
fn submission_from(value: &Value) -> Option<Submission> {
    match value {
        Value::Object(map) if has_findings_list(map) => parse_submission(value).ok(),
        Value::Object(map) => ["arguments", "parameters", "input"]
            .iter()
            .filter_map(|key| map.get(*key))
            .find_map(|inner| {
                let decoded = inner.as_str().and_then(parse_lenient_json);
                let inner = decoded.as_ref().unwrap_or(inner);
                let is_submission = inner.as_object().is_some_and(has_findings_list);
                is_submission
                    .then(|| parse_submission(inner).ok())
                    .flatten()
            }),
        Value::Array(items) if looks_like_findings(items) => parse_submission(value).ok(),
        _ => None,
    }
}

fn looks_like_findings(items: &[Value]) -> bool {
    !items.is_empty()
        && items.iter().all(Value::is_object)
        && items.iter().any(|item| {
            item.as_object().is_some_and(|map| {
                super::field(map, &["path", "file", "filename", "filepath"]).is_some()
            })
        })
}

/// A fenced code block: the span of the whole block and of its content.
struct Fence {
    whole: std::ops::Range<usize>,
    content: std::ops::Range<usize>,
}

/// Fenced blocks labelled `json`-like or unlabelled.
fn fenced_blocks(text: &str) -> Vec<Fence> {
    let mut blocks = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find("```").map(|at| from + at) {
        let info_end = text[open..].find('\n').map_or(text.len(), |at| open + at);
        let info = text[open + 3..info_end].trim().to_ascii_lowercase();
        let content_start = (info_end + 1).min(text.len());
        let Some(close) = text[content_start..]
            .find("```")
            .map(|at| content_start + at)
        else {
            break;
        };
        if matches!(
            info.as_str(),
            "" | "json" | "jsonc" | "json5" | "javascript" | "js"
        ) {
            blocks.push(Fence {
                whole: open..close + 3,
                content: content_start..close,
            });
        }
        from = close + 3;
    }
    blocks
}

/// JSON values found in `text[within]`, each with the span to cut from the prose
/// (`cut` when given, else the value's own span).
fn candidates_in(
    text: &str,
    within: std::ops::Range<usize>,
    cut: Option<std::ops::Range<usize>>,
) -> Vec<(Value, std::ops::Range<usize>)> {
    let mut found = Vec::new();
    let mut at = within.start;
    for _ in 0..MAX_TRIES {
        if at >= within.end {
            break;
        }
        let Some(open) = text[at..within.end].find(['{', '[']).map(|i| at + i) else {
            break;
        };
        match balanced_end(&text[open..within.end]).map(|len| open..open + len) {
            Some(span) => match parse_lenient_json(&text[span.clone()]) {
                Some(value) => {
                    found.push((value, cut.clone().unwrap_or(span.clone())));
                    at = span.end;
                }
                None => at = open + 1,
            },
            None => at = open + 1,
        }
    }
    found
}

/// The length of the balanced JSON-like value at the start of `text`, string-aware.
fn balanced_end(text: &str) -> Option<usize> {
    let mut closers = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (at, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => closers.push('}'),
            '[' => closers.push(']'),
            '}' | ']' => {
                if closers.pop() != Some(c) {
                    return None;
                }
                if closers.is_empty() {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Removes trailing commas before `}`/`]` and `//` line comments, outside strings.
fn strip_json_noise(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        } else if c == ',' && next_significant(&chars, i + 1).is_some_and(|n| n == '}' || n == ']')
        {
            // A trailing comma: drop it.
        } else {
            in_string = c == '"';
            out.push(c);
        }
        i += 1;
    }
    out
}

fn next_significant(chars: &[char], from: usize) -> Option<char> {
    chars[from..].iter().copied().find(|c| !c.is_whitespace())
}

/// The reply without the JSON, trimmed: the model's prose, used as a summary.
fn prose_around(text: &str, span: std::ops::Range<usize>) -> String {
    let before = text[..span.start].trim();
    let after = text[span.end..].trim();
    match (before.is_empty(), after.is_empty()) {
        (true, _) => after.to_string(),
        (_, true) => before.to_string(),
        _ => format!("{before}\n\n{after}"),
    }
}

/// Whether a reply without JSON plainly says there is nothing to report.
fn says_no_issues(text: &str) -> bool {
    let text = text.trim();
    if text.is_empty()
        || text.chars().count() > MAX_NO_ISSUES_CHARS
        || text.contains('{')
        || text.contains("```")
        || text.chars().any(|c| c.is_ascii_digit())
    {
        return false;
    }
    let words = word_padded(text);
    let has = |phrase: &&str| words.contains(&format!(" {phrase} "));
    NO_ISSUES_PHRASES.iter().any(has) && !HEDGES.iter().any(has)
}

/// Lower-case text with punctuation (except `'` and `:`) as spaces, padded with spaces,
/// so phrases can be matched as whole words.
fn word_padded(text: &str) -> String {
    let spaced: String = text
        .to_lowercase()
        .replace('’', "'")
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '\'' || c == ':' {
                c
            } else {
                ' '
            }
        })
        .collect();
    let words: Vec<&str> = spaced.split_whitespace().collect();
    format!(" {} ", words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_commas_and_comments_are_forgiven_outside_strings() {
        let value = parse_lenient_json("{\"a\": [1, 2,], // note\n \"b\": \"x, ]\",}").unwrap();
        assert_eq!(value, serde_json::json!({"a": [1, 2], "b": "x, ]"}));
    }

    #[test]
    fn balanced_values_respect_strings() {
        assert_eq!(balanced_end(r#"{"a": "}"} tail"#), Some(10));
        assert_eq!(balanced_end("{[}"), None);
        assert_eq!(balanced_end("{ open"), None);
    }

    #[test]
    fn no_issues_rule_is_narrow() {
        assert!(says_no_issues("No issues found."));
        assert!(says_no_issues(
            "I reviewed the change and found no problems. LGTM!"
        ));
        assert!(!says_no_issues(
            "No issues found, but line 12 may overflow."
        ));
        assert!(!says_no_issues(
            "No issues with style; you should handle errors."
        ));
        assert!(!says_no_issues("The change adds a parser."));
        assert!(!says_no_issues(""));
    }
}
