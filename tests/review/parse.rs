//! Lenient parsing of submissions and prose replies.

use redline::review::finding::{Category, Severity, Side};
use redline::review::parse::{parse_submission, parse_text_reply, submit_review_schema};
use serde_json::json;

fn canonical() -> serde_json::Value {
    json!({
        "findings": [{
            "path": "src/lib.rs",
            "line": 14,
            "start_line": 13,
            "side": "RIGHT",
            "severity": "major",
            "category": "bug",
            "title": "Unchecked unwrap",
            "body": "Panics on empty input.",
            "suggestion": "let x = y?;"
        }],
        "summary": "One problem."
    })
}

/// Parses a submission made of one item and returns that finding.
fn only(item: serde_json::Value) -> redline::review::finding::Finding {
    let submission = parse_submission(&json!({"findings": [item], "summary": "s"})).unwrap();
    assert!(submission.rejected.is_empty(), "{:?}", submission.rejected);
    submission.findings.into_iter().next().unwrap()
}

#[test]
fn the_canonical_shape_parses_exactly() {
    let submission = parse_submission(&canonical()).unwrap();
    assert_eq!(submission.summary, "One problem.");
    assert!(submission.rejected.is_empty());
    let f = &submission.findings[0];
    assert_eq!(
        (f.path.as_str(), f.start_line, f.line),
        ("src/lib.rs", 13, 14)
    );
    assert_eq!(
        (f.side, f.severity, f.category),
        (Side::Right, Severity::Major, Category::Bug)
    );
    assert_eq!(f.suggestion.as_deref(), Some("let x = y?;"));
}

#[test]
fn line_numbers_as_strings_ranges_and_github_anchors() {
    let base = |line: serde_json::Value| {
        only(
            json!({"path": "a.rs", "line": line, "severity": "minor", "category": "bug", "title": "t", "body": "b"}),
        )
    };
    let f = base(json!("42"));
    assert_eq!((f.start_line, f.line), (42, 42));
    let f = base(json!("40-42"));
    assert_eq!((f.start_line, f.line), (40, 42));
    let f = base(json!("L42"));
    assert_eq!((f.start_line, f.line), (42, 42));
    let f = base(json!("#L7-L9"));
    assert_eq!((f.start_line, f.line), (7, 9));
    let f = base(json!(12.0));
    assert_eq!(f.line, 12);
}

#[test]
fn aliases_for_path_and_body_and_a_title_from_the_body() {
    let f = only(json!({
        "file": "src/a.rs", "line": 3, "severity": "minor", "category": "style",
        "message": "Name is unclear. Rename it to `count`."
    }));
    assert_eq!(f.path, "src/a.rs");
    assert_eq!(f.title, "Name is unclear.");
    assert_eq!(f.body, "Name is unclear. Rename it to `count`.");
    for key in ["filename", "file_path"] {
        for body_key in ["description", "comment", "explanation"] {
            let f = only(json!({key: "x.rs", "line": 1, body_key: "Text.", "title": "T"}));
            assert_eq!((f.path.as_str(), f.body.as_str()), ("x.rs", "Text."));
        }
    }
}

#[test]
fn severity_and_category_synonyms_and_defaults() {
    let f = only(
        json!({"path": "a.rs", "line": 1, "severity": "HIGH", "category": "Correctness", "title": "t"}),
    );
    assert_eq!(
        (f.severity, f.category),
        (Severity::Critical, Category::Bug)
    );
    let f = only(
        json!({"path": "a.rs", "line": 1, "severity": "warning", "category": "vulnerability", "title": "t"}),
    );
    assert_eq!(
        (f.severity, f.category),
        (Severity::Minor, Category::Security)
    );
    let f = only(
        json!({"path": "a.rs", "line": 1, "severity": "whatever", "category": "weird", "title": "t"}),
    );
    assert_eq!(
        (f.severity, f.category),
        (Severity::Minor, Category::Maintainability)
    );
    let f = only(json!({"path": "a.rs", "line": 1, "title": "t"}));
    assert_eq!(
        (f.severity, f.category),
        (Severity::Minor, Category::Maintainability)
    );
    let f = only(
        json!({"path": "a.rs", "line": 1, "severity": "nitpick", "category": "perf", "title": "t"}),
    );
    assert_eq!(
        (f.severity, f.category),
        (Severity::Nit, Category::Performance)
    );
}

#[test]
fn side_is_case_insensitive_and_defaults_to_right() {
    let side = |value: serde_json::Value| {
        only(json!({"path": "a.rs", "line": 1, "title": "t", "side": value})).side
    };
    assert_eq!(side(json!("left")), Side::Left);
    assert_eq!(side(json!("Left")), Side::Left);
    assert_eq!(side(json!("right")), Side::Right);
    assert_eq!(side(json!("sideways")), Side::Right);
    assert_eq!(
        only(json!({"path": "a.rs", "line": 1, "title": "t"})).side,
        Side::Right
    );
}

#[test]
fn camel_case_keys_and_a_line_in_the_path() {
    let f = only(json!({"filePath": "a.rs", "lineNumber": "9", "startLine": 7, "title": "t"}));
    assert_eq!((f.path.as_str(), f.start_line, f.line), ("a.rs", 7, 9));
    let f = only(json!({"path": "src/a.rs:42", "title": "t"}));
    assert_eq!((f.path.as_str(), f.line), ("src/a.rs", 42));
}

#[test]
fn fenced_suggestions_are_unwrapped_and_empty_ones_dropped() {
    let f = only(
        json!({"path": "a.rs", "line": 1, "title": "t", "suggestion": "```rust\n    let a = 1;\n```"}),
    );
    assert_eq!(f.suggestion.as_deref(), Some("    let a = 1;"));
    let f = only(json!({"path": "a.rs", "line": 1, "title": "t", "suggestion": ""}));
    assert_eq!(f.suggestion, None);
}

#[test]
fn unusable_items_are_rejected_with_a_reason_and_the_rest_kept() {
    let submission = parse_submission(&json!({
        "findings": [
            {"line": 3, "title": "No path here"},
            {"path": "a.rs", "title": "No line"},
            {"path": "a.rs", "line": "somewhere", "title": "Bad line"},
            {"path": "a.rs", "line": 2},
            "just a string",
            {"path": "a.rs", "line": 0, "title": "Zero"},
            {"path": "a.rs", "line": 5, "title": "Good"}
        ],
        "summary": "s"
    }))
    .unwrap();
    assert_eq!(submission.findings.len(), 1);
    assert_eq!(submission.findings[0].title, "Good");
    let rejected = submission.rejected.join("\n");
    assert_eq!(submission.rejected.len(), 6, "{rejected}");
    assert!(
        rejected.contains("finding 1: no `path` (\"No path here\")"),
        "{rejected}"
    );
    assert!(rejected.contains("finding 2: no `line`"), "{rejected}");
    assert!(
        rejected.contains("finding 3: `line` \"somewhere\" is not a line number"),
        "{rejected}"
    );
    assert!(
        rejected.contains("finding 4: no title and no body"),
        "{rejected}"
    );
    assert!(
        rejected.contains("finding 5: expected an object"),
        "{rejected}"
    );
    assert!(
        rejected.contains("finding 6: `line` must be 1 or more"),
        "{rejected}"
    );
}

#[test]
fn encoded_arguments_bare_arrays_and_missing_parts() {
    let encoded = json!(canonical().to_string());
    assert_eq!(
        parse_submission(&encoded).unwrap(),
        parse_submission(&canonical()).unwrap()
    );
    let bare = parse_submission(&json!([{"path": "a.rs", "line": 1, "title": "t"}])).unwrap();
    assert_eq!((bare.findings.len(), bare.summary.as_str()), (1, ""));
    let no_summary = parse_submission(&json!({"findings": []})).unwrap();
    assert_eq!(no_summary.summary, "");
    let findings_as_text =
        parse_submission(&json!({"findings": "[{\"path\":\"a.rs\",\"line\":2,\"title\":\"t\",}]"}))
            .unwrap();
    assert_eq!(findings_as_text.findings.len(), 1);
    let err = parse_submission(&json!({"verdict": "fine"}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("findings") && err.contains("summary"), "{err}");
}

#[test]
fn the_schema_describes_head_line_numbers() {
    let schema = submit_review_schema(true);
    let line = schema["properties"]["findings"]["items"]["properties"]["line"]["description"]
        .as_str()
        .unwrap();
    assert!(
        line.contains("numbered diff") && line.contains("head-file"),
        "{line}"
    );
    let severity = &schema["properties"]["findings"]["items"]["properties"]["severity"]["enum"];
    assert_eq!(severity, &json!(["critical", "major", "minor", "nit"]));
}

#[test]
fn prose_with_a_fenced_json_block_and_trailing_commas() {
    let reply = "Here is my review.\n\n```json\n{\n  \"findings\": [\n    {\"path\": \"a.rs\", \"line\": 3, \"severity\": \"major\", \"category\": \"bug\", \"title\": \"Off by one\", \"body\": \"b\",},\n  ],\n  \"summary\": \"One bug.\",\n}\n```\nThanks!";
    let submission = parse_text_reply(reply).unwrap();
    assert_eq!(submission.findings.len(), 1);
    assert_eq!(submission.summary, "One bug.");
}

#[test]
fn bare_json_in_prose_and_bare_arrays_take_the_prose_as_summary() {
    let reply = r#"I found this: {"findings": [{"path": "a.rs", "line": 3, "title": "t"}]} and nothing else."#;
    let submission = parse_text_reply(reply).unwrap();
    assert_eq!(submission.findings.len(), 1);
    assert_eq!(submission.summary, "I found this:\n\nand nothing else.");
    let array =
        "Findings:\n[{\"file\": \"b.rs\", \"line\": \"L4\", \"message\": \"Leaks the key.\"}]";
    let submission = parse_text_reply(array).unwrap();
    assert_eq!(submission.findings[0].path, "b.rs");
    assert_eq!(submission.findings[0].title, "Leaks the key.");
    assert_eq!(submission.summary, "Findings:");
}

#[test]
fn a_tool_call_written_as_text_is_understood() {
    let inner = json!({"findings": [{"path": "a.rs", "line": 2, "title": "t"}], "summary": "S"});
    let reply = json!({"name": "submit_review", "arguments": inner.to_string()}).to_string();
    let submission = parse_text_reply(&reply).unwrap();
    assert_eq!(
        (submission.findings.len(), submission.summary.as_str()),
        (1, "S")
    );
}

#[test]
fn a_plain_no_issues_answer_is_an_empty_submission_and_only_that() {
    let submission = parse_text_reply("No issues found. The change looks good to me.").unwrap();
    assert!(submission.findings.is_empty());
    assert_eq!(
        submission.summary,
        "No issues found. The change looks good to me."
    );
    assert_eq!(
        parse_text_reply("No issues found, but line 12 may overflow."),
        None
    );
    assert_eq!(parse_text_reply("The function at line 3 is wrong."), None);
    assert_eq!(
        parse_text_reply("No issues found.\n```rust\nfn x() {}\n```"),
        None
    );
    assert_eq!(parse_text_reply("{\"findings\": [ {\"path\": "), None);
    assert_eq!(parse_text_reply(""), None);
}

#[test]
fn suggestions_keep_their_indentation() {
    let f = only(
        json!({"path": "a.rs", "line": 1, "title": "t", "suggestion": "        return None;\n"}),
    );
    assert_eq!(f.suggestion.as_deref(), Some("        return None;"));
}

#[test]
fn other_json_in_prose_is_not_mistaken_for_a_submission() {
    let reply = "Set this in your config: {\"comments\": \"on\"}. The loop in main is slow.";
    assert_eq!(parse_text_reply(reply), None);
}
