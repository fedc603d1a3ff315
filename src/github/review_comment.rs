//! The `comments[]` entry of a GitHub review for a finding whose anchor is valid: its
//! lines and side (`RIGHT` head, `LEFT` base) and the body every forge shares
//! ([`crate::forge::anchor::inline_body`], with GitHub's `suggestion` fence).

use serde_json::{Value, json};

use crate::forge::anchor::inline_body;
use crate::review::finding::{Finding, Side};

/// The `comments[]` entry of a review for a finding with a valid anchor.
pub(crate) fn review_comment(finding: &Finding, fp: &str) -> Value {
    let side = side_name(finding.side);
    let mut comment = json!({
        "path": finding.path,
        "line": finding.line,
        "side": side,
        "body": inline_body(finding, fp, "suggestion"),
    });
    if finding.start_line < finding.line {
        comment["start_line"] = json!(finding.start_line);
        comment["start_side"] = json!(side);
    }
    comment
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Right => "RIGHT",
        Side::Left => "LEFT",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::finding::{Category, Severity};

    fn finding(start_line: u32, line: u32, side: Side) -> Finding {
        Finding {
            path: "src/a.rs".into(),
            line,
            start_line,
            side,
            severity: Severity::Major,
            category: Category::Bug,
            title: "Wrong call".into(),
            body: "Explain.".into(),
            suggestion: Some("    fixed();\n".into()),
            rule: None,
            unverified: false,
        }
    }
    #[test]
    fn comment_json_has_range_fields_and_no_position() {
        let c = review_comment(&finding(1, 3, Side::Right), "abcd");
        assert_eq!(c["path"], "src/a.rs");
        assert_eq!(c["line"], 3);
        assert_eq!(c["side"], "RIGHT");
        assert_eq!(c["start_line"], 1);
        assert_eq!(c["start_side"], "RIGHT");
        assert!(c.get("position").is_none());
        let body = c["body"].as_str().unwrap();
        assert!(
            body.contains("```suggestion\n    fixed();\n```\n"),
            "{body}"
        );
        assert!(body.ends_with("<!-- redline:fp=abcd -->"));
        let single = review_comment(&finding(2, 2, Side::Right), "abcd");
        assert!(single.get("start_line").is_none());
    }

    #[test]
    fn no_suggestion_on_the_base_side() {
        let c = review_comment(&finding(2, 2, Side::Left), "abcd");
        assert_eq!(c["side"], "LEFT");
        assert!(!c["body"].as_str().unwrap().contains("suggestion"));
    }
}
