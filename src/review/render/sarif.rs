//! SARIF 2.1.0 for GitHub code scanning (`upload-sarif`): one run of the `redline` tool,
//! one rule per category used, one result per finding. A finding's project guideline
//! (`rule`, e.g. `AGENTS.md`) is in its result's `properties.rule` and message; SARIF's
//! own `ruleId` stays the category's.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::review::anchor::title_words;
use crate::review::finding::{Category, Finding, Severity, Side};
use crate::review::report::ReviewReport;

/// The SARIF schema the output declares.
pub(crate) const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
/// The SARIF version written.
pub(crate) const SARIF_VERSION: &str = "2.1.0";
/// The key of each result's stable fingerprint in `partialFingerprints`.
pub(crate) const FINGERPRINT_KEY: &str = "redlineFindingHash/v1";

/// Categories in the order rules are listed.
const CATEGORIES: [Category; 6] = [
    Category::Bug,
    Category::Security,
    Category::Performance,
    Category::Maintainability,
    Category::Style,
    Category::Test,
];

/// The report as a pretty-printed SARIF 2.1.0 log, ending with a newline.
pub(crate) fn to_sarif(report: &ReviewReport) -> String {
    let log = sarif_log(report);
    let mut text = serde_json::to_string_pretty(&log).unwrap_or_else(|_| log.to_string());
    text.push('\n');
    text
}

/// The report as a SARIF 2.1.0 log value.
pub(crate) fn sarif_log(report: &ReviewReport) -> Value {
    let categories: Vec<Category> = CATEGORIES
        .into_iter()
        .filter(|c| report.findings.iter().any(|f| f.category == *c))
        .collect();
    let results: Vec<Value> = super::ordered(&report.findings)
        .into_iter()
        .map(|finding| result(finding, &categories))
        .collect();
    json!({
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": { "driver": driver(&categories) },
            "results": results,
            "columnKind": "unicodeCodePoints",
            "properties": {
                "summary": report.summary,
                "stats": report.stats,
            }
        }]
    })
}

/// The rule id of a category: `redline/<category>`.
pub(crate) fn rule_id(category: Category) -> String {
    format!("redline/{}", category.as_str())
}

/// A stable hash of path, category and normalised title, so code scanning recognises the
/// same finding across runs even when its line moves or the title's wording shifts.
pub fn fingerprint(finding: &Finding) -> String {
    let mut hasher = Sha256::new();
    hasher.update(finding.path.as_bytes());
    hasher.update([0]);
    hasher.update(finding.category.as_str().as_bytes());
    hasher.update([0]);
    hasher.update(title_words(&finding.title).join(" ").as_bytes());
    hex::encode(hasher.finalize())
}

fn driver(categories: &[Category]) -> Value {
    let rules: Vec<Value> = categories.iter().map(|c| rule(*c)).collect();
    let mut driver = Map::new();
    driver.insert("name".into(), json!("redline"));
    if let Some(uri) = information_uri() {
        driver.insert("informationUri".into(), json!(uri));
    }
    driver.insert("semanticVersion".into(), json!(env!("CARGO_PKG_VERSION")));
    driver.insert("rules".into(), Value::Array(rules));
    Value::Object(driver)
}

/// Where to learn about the tool: the repository URL baked in at build time
/// (`REDLINE_REPOSITORY_URL`, set by `scripts/dist.sh` and the release workflow), else
/// Cargo.toml's `repository` or `homepage`. SARIF requires an absolute URI, so none
/// when no http(s) URL is known.
pub fn information_uri() -> Option<&'static str> {
    [
        option_env!("REDLINE_REPOSITORY_URL").unwrap_or_default(),
        env!("CARGO_PKG_REPOSITORY"),
        env!("CARGO_PKG_HOMEPAGE"),
    ]
    .into_iter()
    .find(|uri| uri.starts_with("https://") || uri.starts_with("http://"))
}

/// What a rule says about itself: name, one-line description, and the longer text
/// GitHub code scanning shows (it requires `fullDescription` and `help`).
struct RuleText {
    name: &'static str,
    short: &'static str,
    full: &'static str,
    help: &'static str,
}

fn rule_text(category: Category) -> RuleText {
    match category {
        Category::Bug => RuleText {
            name: "Bug",
            short: "Wrong behaviour",
            full: "The changed code does not do what it is meant to: wrong results, unhandled cases, crashes or data loss.",
            help: "Read the finding's explanation, check the behaviour it describes with a test, and fix the logic; the message may carry suggested code.",
        },
        Category::Security => RuleText {
            name: "Security",
            short: "A vulnerability or unsafe handling of data or secrets",
            full: "The changed code opens a vulnerability (injection, missing authorisation, unsafe deserialisation, ...) or handles untrusted data or secrets unsafely.",
            help: "Treat it as a possible vulnerability: validate or escape untrusted input, check authorisation, and keep secrets out of logs and output.",
        },
        Category::Performance => RuleText {
            name: "Performance",
            short: "Needless cost in time or memory",
            full: "The changed code spends time or memory it does not need to: repeated work, quadratic loops, large copies, blocking calls on hot paths.",
            help: "Measure if in doubt; avoid the repeated or unbounded work the finding points at.",
        },
        Category::Maintainability => RuleText {
            name: "Maintainability",
            short: "Code that is harder to read, change or reason about",
            full: "The changed code works but is harder than needed to read, change or reason about: duplication, unclear names, hidden coupling, misleading comments.",
            help: "Simplify or restructure as the finding suggests so the next change is safer.",
        },
        Category::Style => RuleText {
            name: "Style",
            short: "Formatting and naming",
            full: "The changed code departs from the project's formatting or naming conventions.",
            help: "Follow the project's conventions (formatter, linter, naming).",
        },
        Category::Test => RuleText {
            name: "Test",
            short: "Missing or wrong tests",
            full: "The change lacks a test for the behaviour it adds or changes, or a test does not check what it claims to.",
            help: "Add or fix a test that would fail if the behaviour broke.",
        },
    }
}

fn rule(category: Category) -> Value {
    let text = rule_text(category);
    json!({
        "id": rule_id(category),
        "name": text.name,
        "shortDescription": { "text": text.short },
        "fullDescription": { "text": text.full },
        "help": {
            "text": text.help,
            "markdown": format!("**{}**: {}", text.name, text.help),
        },
        "properties": { "tags": ["redline", category.as_str()] }
    })
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical | Severity::Major => "error",
        Severity::Minor => "warning",
        Severity::Nit => "note",
    }
}

fn result(finding: &Finding, categories: &[Category]) -> Value {
    let rule_index = categories
        .iter()
        .position(|c| *c == finding.category)
        .unwrap_or_default();
    let mut physical = Map::new();
    physical.insert(
        "artifactLocation".into(),
        json!({ "uri": uri_of(&finding.path), "uriBaseId": "%SRCROOT%" }),
    );
    if finding.side == Side::Right {
        physical.insert(
            "region".into(),
            json!({ "startLine": finding.start_line, "endLine": finding.line }),
        );
    }
    let mut fingerprints = Map::new();
    fingerprints.insert(FINGERPRINT_KEY.into(), json!(fingerprint(finding)));
    let mut properties = Map::new();
    properties.insert("severity".into(), json!(finding.severity.as_str()));
    properties.insert("category".into(), json!(finding.category.as_str()));
    if let Some(rule) = &finding.rule {
        properties.insert("rule".into(), json!(rule));
    }
    json!({
        "ruleId": rule_id(finding.category),
        "ruleIndex": rule_index,
        "level": level(finding.severity),
        "message": { "text": message(finding) },
        "locations": [{ "physicalLocation": physical }],
        "partialFingerprints": fingerprints,
        "properties": properties,
    })
}

/// Title, body, what the location cannot say (base lines for LEFT-side findings), the
/// project guideline it rests on, and the suggested code.
fn message(finding: &Finding) -> String {
    let mut text = finding.title.clone();
    if finding.side == Side::Left {
        let lines = if finding.start_line == finding.line {
            format!("line {}", finding.line)
        } else {
            format!("lines {}-{}", finding.start_line, finding.line)
        };
        text.push_str(&format!(
            " (on {lines} of the base version, removed by this change)"
        ));
    }
    if !finding.body.trim().is_empty() {
        text.push_str("\n\n");
        text.push_str(finding.body.trim());
    }
    if let Some(rule) = &finding.rule {
        text.push_str(&format!("\n\nProject guideline: {rule}"));
    }
    if let Some(code) = &finding.suggestion {
        text.push_str("\n\nSuggested code:\n");
        text.push_str(code);
    }
    text
}

/// A relative URI reference for a repository path: `/`-separated segments with every
/// byte outside the unreserved set percent-encoded.
fn uri_of(path: &str) -> String {
    let mut uri = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_encode_spaces_and_non_ascii() {
        assert_eq!(uri_of("src/a b/ü.rs"), "src/a%20b/%C3%BC.rs");
        assert_eq!(uri_of("src/lib.rs"), "src/lib.rs");
    }

    #[test]
    fn levels_follow_severity() {
        assert_eq!(level(Severity::Critical), "error");
        assert_eq!(level(Severity::Major), "error");
        assert_eq!(level(Severity::Minor), "warning");
        assert_eq!(level(Severity::Nit), "note");
    }
}
