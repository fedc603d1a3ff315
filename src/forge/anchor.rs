//! Where a finding can be anchored in a change's diff, and the body of the inline
//! comment that anchors it (each forge wraps it in its own request: GitHub's review
//! comment, GitLab's discussion position).

use super::fingerprint::{marker, neutralise_markers};
use crate::review::diff::{ChangeSet, LineKind};
use crate::review::finding::{Finding, Side};

/// Why a finding cannot be posted inline, or `None` when its anchor is valid:
/// both ends in the same hunk of the file on the finding's side, start ≤ end.
pub(crate) fn anchor_problem(finding: &Finding, changes: &ChangeSet) -> Option<String> {
    if finding.start_line == 0 || finding.line == 0 {
        return Some("line 0 does not exist".into());
    }
    if finding.start_line > finding.line {
        return Some("the range starts after it ends".into());
    }
    let Some(file) = changes.files.iter().find(|f| f.path == finding.path) else {
        return Some("file not changed by this pull request".into());
    };
    if file.binary {
        return Some("binary file".into());
    }
    let Some(hunk) = file.hunk_at(finding.side, finding.line) else {
        return Some("line not in the diff".into());
    };
    if !hunk.contains(finding.side, finding.start_line) {
        return Some("range not within one diff hunk".into());
    }
    None
}

/// The text of the line a finding is anchored on (its last line), for the
/// fingerprint: head-side lines from `head_line_text` or the diff, base-side
/// lines from the diff; empty when unknown.
pub(crate) fn anchor_line_text(
    finding: &Finding,
    changes: &ChangeSet,
    head_line_text: &(dyn Fn(&str, u32) -> Option<String> + Sync),
) -> String {
    let from_head = match finding.side {
        Side::Right => head_line_text(&finding.path, finding.line),
        Side::Left => None,
    };
    from_head
        .or_else(|| diff_line_text(changes, finding))
        .unwrap_or_default()
}

fn diff_line_text(changes: &ChangeSet, finding: &Finding) -> Option<String> {
    let file = changes.files.iter().find(|f| f.path == finding.path)?;
    let hunk = file.hunk_at(finding.side, finding.line)?;
    hunk.lines
        .iter()
        .find(|l| match finding.side {
            Side::Right => l.kind != LineKind::Removed && l.new_line == Some(finding.line),
            Side::Left => l.kind != LineKind::Added && l.old_line == Some(finding.line),
        })
        .map(|l| l.text.clone())
}

/// `path:line` (or range) with the side when it is the base side.
pub(crate) fn describe_anchor(finding: &Finding) -> String {
    match finding.side {
        Side::Right => finding.location(),
        Side::Left => format!("{} (base side)", finding.location()),
    }
}

/// Title, explanation, the suggestion (head side only: it replaces head lines)
/// and the hidden fingerprint marker. `suggestion_info` opens the suggestion's fence:
/// `suggestion` on GitHub, `suggestion:-N+0` on GitLab (whose comment sits on the last line).
pub(crate) fn inline_body(finding: &Finding, fp: &str, suggestion_info: &str) -> String {
    let mut body = format!(
        "**[{} · {}] {}**\n\n{}\n",
        finding.severity,
        finding.category.as_str(),
        posted_title(&finding.title),
        // Model text: no mentions, images or HTML outside code, as in answers.
        neutralise_markers(&crate::text::escape_markdown(finding.body.trim_end())),
    );
    if let Some(rule) = &finding.rule {
        body.push_str(&format!("\nRule: `{}`\n", one_line(rule).replace('`', "'")));
    }
    if let Some(suggestion) = &finding.suggestion
        && finding.side == Side::Right
    {
        body.push('\n');
        body.push_str(&suggestion_block_as(suggestion, suggestion_info));
    }
    body.push('\n');
    body.push_str(&marker(fp));
    body
}

/// A model-written title as posted: one line, no mention, image or HTML, no marker.
pub(crate) fn posted_title(text: &str) -> String {
    crate::text::escape_inline(&one_line(text))
}

/// A title on one line, safe from marker injection.
pub(crate) fn one_line(text: &str) -> String {
    neutralise_markers(&text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// A ```` ```suggestion ```` block whose content replaces exactly the commented
/// lines; the fence outgrows any backtick run inside the suggestion.
/// `info` opens the fence (`suggestion`, or GitLab's `suggestion:-N+M`).
fn suggestion_block_as(suggestion: &str, info: &str) -> String {
    let fence = fence_for(suggestion);
    let content = suggestion.strip_suffix('\n').unwrap_or(suggestion);
    let content = neutralise_markers(content);
    if content.is_empty() {
        // An empty suggestion deletes the lines.
        format!("{fence}{info}\n{fence}\n")
    } else {
        format!("{fence}{info}\n{content}\n{fence}\n")
    }
}

/// A backtick fence longer than any backtick run in `text` (at least three).
pub(crate) fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat((longest + 1).max(3))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::review::diff::{DiffLine, Hunk};
    use crate::review::finding::{Category, Severity};

    fn changes() -> ChangeSet {
        let line = DiffLine::at;
        let edit = Hunk::of(
            1,
            1,
            vec![
                line(LineKind::Context, Some(1), Some(1), "fn a() {"),
                line(LineKind::Removed, Some(2), None, "    old();"),
                line(LineKind::Added, None, Some(2), "    new();"),
                line(LineKind::Context, Some(3), Some(3), "}"),
            ],
        );
        // A hunk that claims lines but lists none.
        let empty = Hunk {
            old_lines: 2,
            new_lines: 2,
            ..Hunk::of(20, 20, vec![])
        };
        ChangeSet::modifying("src/a.rs", vec![edit, empty])
    }

    /// A major finding on `src/a.rs` with a suggestion (also used by GitHub's review comment
    /// tests).
    pub(crate) fn finding(start_line: u32, line: u32, side: Side) -> Finding {
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
    fn anchors_inside_one_hunk_are_valid() {
        assert_eq!(
            anchor_problem(&finding(1, 3, Side::Right), &changes()),
            None
        );
        assert_eq!(anchor_problem(&finding(2, 2, Side::Left), &changes()), None);
    }

    #[test]
    fn bad_anchors_are_explained() {
        let c = changes();
        assert!(anchor_problem(&finding(3, 20, Side::Right), &c).is_some());
        assert!(anchor_problem(&finding(9, 9, Side::Right), &c).is_some());
        assert!(anchor_problem(&finding(3, 2, Side::Right), &c).is_some());
        assert!(anchor_problem(&finding(0, 0, Side::Right), &c).is_some());
        let elsewhere = Finding {
            path: "src/b.rs".into(),
            ..finding(1, 1, Side::Right)
        };
        assert!(anchor_problem(&elsewhere, &c).is_some());
    }

    #[test]
    fn fence_outgrows_backticks() {
        assert_eq!(fence_for("let s = \"```\";"), "````");
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(
            suggestion_block_as("", "suggestion"),
            "```suggestion\n```\n"
        );
    }

    #[test]
    fn line_text_from_head_or_diff() {
        let c = changes();
        let none = |_: &str, _: u32| None;
        assert_eq!(
            anchor_line_text(&finding(2, 2, Side::Right), &c, &none),
            "    new();"
        );
        assert_eq!(
            anchor_line_text(&finding(2, 2, Side::Left), &c, &none),
            "    old();"
        );
        let head = |_: &str, n: u32| Some(format!("line {n}"));
        assert_eq!(
            anchor_line_text(&finding(9, 9, Side::Right), &c, &head),
            "line 9"
        );
    }
}
