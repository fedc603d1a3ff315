//! The last step before a body leaves for a forge: GitLab quick actions made inert.
//!
//! GitLab runs a quick action (`/approve`, `/merge`, `/close`, `/label ~x`, …) written on
//! a line of its own in a note, whoever's text it holds: a note Redline writes through the
//! API runs as the bot. Every string Redline posts on GitLab (answers, findings, summary,
//! notices, status descriptions) passes [`without_quick_actions`] at the one place the
//! client writes ([`crate::gitlab::GitLabClient`]), so no caller can forget it.
//!
//! Invariants: no line of the result starts, after optional whitespace, with `/` and a
//! letter; the rule holds inside code blocks too (GitLab's own reading of fences is not
//! CommonMark's, so no fence written by a model can end early and let a line out); what a
//! reader sees is unchanged, since the mark added is an invisible word joiner. A
//! suggestion holding such a line is therefore not offered as an applicable suggestion on
//! GitLab ([`has_quick_action_line`]): applying it would commit the mark.
//! Mentions, images and raw HTML in model text are neutralised where that text enters a
//! body ([`super::escape_markdown`]), on both forges.

use serde_json::Value;

/// Put before the `/` of a line that would read as a quick action: invisible, and no
/// longer a line that starts with `/`.
const WORD_JOINER: char = '\u{2060}';

/// The JSON fields of a GitLab write whose text GitLab reads for quick actions or shows.
const POSTED_FIELDS: [&str; 2] = ["body", "description"];

/// Whether `line` starts, after optional whitespace, with `/` and a letter: what GitLab
/// reads as a quick action (it also drops `\r`, which is whitespace here).
fn is_quick_action_line(line: &str) -> bool {
    let mut rest = line.trim_start().chars();
    rest.next() == Some('/') && rest.next().is_some_and(|c| c.is_ascii_alphabetic())
}

/// Whether any line of `text` would read as a quick action.
pub(crate) fn has_quick_action_line(text: &str) -> bool {
    text.split('\n').any(is_quick_action_line)
}

/// `text` with a word joiner before the `/` of every line that would read as a quick
/// action; every other character kept.
pub(crate) fn without_quick_actions(text: &str) -> String {
    if !has_quick_action_line(text) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if is_quick_action_line(line) {
            let indent = line.len() - line.trim_start().len();
            out.push_str(&line[..indent]);
            out.push(WORD_JOINER);
            out.push_str(&line[indent..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// The request body of a GitLab write with [`without_quick_actions`] applied to the text
/// fields GitLab reads (`body`, `description`).
pub(crate) fn gitlab_request(body: &Value) -> Value {
    let mut body = body.clone();
    if let Value::Object(fields) = &mut body {
        for name in POSTED_FIELDS {
            if let Some(Value::String(text)) = fields.get_mut(name) {
                *text = without_quick_actions(text);
            }
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn no_line_starts_with_a_quick_action() {
        let text = "Looks fine.\n/approve\n  /merge\n\t/label ~ok\r\n\r/close\nkeep /inline and // and /1\n";
        let posted = without_quick_actions(text);
        assert!(!has_quick_action_line(&posted), "{posted:?}");
        for line in posted.split('\n') {
            let first = line.trim_start().chars().next();
            assert_ne!(first, Some('/'), "{line:?}");
        }
        // What a reader sees is the same text.
        assert_eq!(posted.replace(WORD_JOINER, ""), text);
        assert!(posted.contains("keep /inline and // and /1"));
        assert_eq!(
            without_quick_actions("// a comment\n/* c */"),
            "// a comment\n/* c */"
        );
    }

    #[test]
    fn fences_do_not_protect_a_line() {
        // A fence GitLab closes early (a bare ``` inside a longer fence) lets nothing out.
        let text = "````suggestion:-0+0\n```\n/approve\n````\n";
        assert!(!has_quick_action_line(&without_quick_actions(text)));
    }

    #[test]
    fn only_the_text_fields_of_a_write_change() {
        let body = json!({"body": "/merge", "description": "x\n/close", "name": "/redline", "position": {"new_path": "a"}});
        let posted = gitlab_request(&body);
        assert_eq!(posted["body"], json!("\u{2060}/merge"));
        assert_eq!(posted["description"], json!("x\n\u{2060}/close"));
        assert_eq!(posted["name"], json!("/redline"));
        assert_eq!(posted["position"], body["position"]);
    }
}
