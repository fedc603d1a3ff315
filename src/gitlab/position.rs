//! Where a finding sits in a merge request's diff, as GitLab's discussion `position`
//! (`position_type: text`) names it, and the inline body with GitLab's suggestion syntax.
//!
//! Invariants: only findings whose anchor is valid ([`crate::forge::anchor::anchor_problem`])
//! get a position; an added line is named by `new_line`, a removed one by `old_line`, an
//! unchanged one by both (as GitLab requires); a multi-line finding gets a `line_range`
//! whose line codes are GitLab's (`sha1(path)_old_new`, counting the hunk's lines).

use serde_json::{Value, json};
use sha1::{Digest, Sha1};

use super::merge_request::DiffRefs;
use crate::forge::anchor::inline_body;
use crate::review::diff::{ChangeSet, FileChange, LineKind};
use crate::review::finding::{Finding, Side};
use crate::text::posted::has_quick_action_line;

/// One line of a hunk with GitLab's positions: the line numbers it has, and the
/// counters GitLab's line codes use (the next line on the side it lacks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Placed {
    kind: LineKind,
    old_line: Option<u32>,
    new_line: Option<u32>,
    old_pos: u32,
    new_pos: u32,
}

/// The `position` of a discussion on `finding` (whose anchor is valid), or `None`
/// when its lines are not in `changes`.
pub(crate) fn position(finding: &Finding, refs: &DiffRefs, changes: &ChangeSet) -> Option<Value> {
    let file = changes.files.iter().find(|f| f.path == finding.path)?;
    let end = placed(file, finding.side, finding.line)?;
    let old_path = file.old_path.as_deref().unwrap_or(&file.path);
    let mut position = json!({
        "position_type": "text",
        "base_sha": refs.base_sha,
        "start_sha": refs.start_sha,
        "head_sha": refs.head_sha,
        "old_path": old_path,
        "new_path": file.path,
    });
    if let Some(old) = end.old_line {
        position["old_line"] = json!(old);
    }
    if let Some(new) = end.new_line {
        position["new_line"] = json!(new);
    }
    if finding.start_line < finding.line {
        let start = placed(file, finding.side, finding.start_line)?;
        position["line_range"] = json!({
            "start": range_end(&file.path, &start),
            "end": range_end(&file.path, &end),
        });
    }
    Some(position)
}

/// The discussion's body: the finding, a suggestion that replaces its lines (GitLab's
/// comment sits on the last line: `suggestion:-N+0` reaches back to the first), and the
/// hidden fingerprint marker. A suggestion with a line GitLab would read as a quick
/// action is shown as code instead ([`crate::text::posted`]).
pub(crate) fn discussion_body(finding: &Finding, fp: &str) -> String {
    let above = finding.line.saturating_sub(finding.start_line);
    let applicable = finding
        .suggestion
        .as_deref()
        .is_none_or(|text| !has_quick_action_line(text));
    if applicable {
        inline_body(finding, fp, &format!("suggestion:-{above}+0"))
    } else {
        // Posted, a line of it gets an invisible mark against quick actions: shown as
        // code, never applied with the mark in it.
        inline_body(finding, fp, "text")
    }
}

fn range_end(path: &str, line: &Placed) -> Value {
    let kind = match line.kind {
        LineKind::Added => json!("new"),
        LineKind::Removed => json!("old"),
        LineKind::Context => Value::Null,
    };
    json!({
        "line_code": line_code(path, line.old_pos, line.new_pos),
        "type": kind,
        "old_line": line.old_line,
        "new_line": line.new_line,
    })
}

/// GitLab's line code: the SHA-1 of the path, then the old and new positions.
pub(crate) fn line_code(path: &str, old_pos: u32, new_pos: u32) -> String {
    let digest = Sha1::digest(path.as_bytes());
    format!("{}_{old_pos}_{new_pos}", hex::encode(digest))
}

/// Line `line` on `side` of `file`'s diff, with its positions.
fn placed(file: &FileChange, side: Side, line: u32) -> Option<Placed> {
    let hunk = file.hunk_at(side, line)?;
    let (mut old_pos, mut new_pos) = (hunk.old_start, hunk.new_start);
    for diff_line in &hunk.lines {
        let here = Placed {
            kind: diff_line.kind,
            old_line: (diff_line.kind != LineKind::Added).then_some(old_pos),
            new_line: (diff_line.kind != LineKind::Removed).then_some(new_pos),
            old_pos,
            new_pos,
        };
        let hit = match side {
            Side::Right => here.new_line == Some(line),
            Side::Left => here.old_line == Some(line),
        };
        if hit {
            return Some(here);
        }
        match diff_line.kind {
            LineKind::Context => {
                old_pos += 1;
                new_pos += 1;
            }
            LineKind::Added => new_pos += 1,
            LineKind::Removed => old_pos += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::anchor::tests::finding;
    use crate::review::diff::{DiffLine, Hunk};

    fn changes() -> ChangeSet {
        let line = DiffLine::at;
        let lines = vec![
            line(LineKind::Context, Some(4), Some(4), "fn a() {"),
            line(LineKind::Removed, Some(5), None, "    old();"),
            line(LineKind::Added, None, Some(5), "    new();"),
            line(LineKind::Added, None, Some(6), "    more();"),
            line(LineKind::Context, Some(6), Some(7), "}"),
        ];
        ChangeSet::modifying("src/a.rs", vec![Hunk::of(4, 4, lines)])
    }

    fn refs() -> DiffRefs {
        DiffRefs {
            base_sha: "base".into(),
            start_sha: "start".into(),
            head_sha: "head".into(),
        }
    }

    #[test]
    fn added_removed_and_unchanged_lines_are_named_as_gitlab_wants() {
        let added = position(&finding(5, 5, Side::Right), &refs(), &changes()).unwrap();
        assert_eq!(added["new_line"], 5);
        assert!(added.get("old_line").is_none());
        assert_eq!(added["head_sha"], "head");
        assert_eq!(added["position_type"], "text");
        let removed = position(&finding(5, 5, Side::Left), &refs(), &changes()).unwrap();
        assert_eq!(removed["old_line"], 5);
        assert!(removed.get("new_line").is_none());
        let unchanged = position(&finding(7, 7, Side::Right), &refs(), &changes()).unwrap();
        assert_eq!(
            (unchanged["old_line"].clone(), unchanged["new_line"].clone()),
            (json!(6), json!(7))
        );
        assert!(position(&finding(9, 9, Side::Right), &refs(), &changes()).is_none());
    }

    #[test]
    fn a_multi_line_finding_has_a_line_range_with_line_codes() {
        let ranged = position(&finding(4, 6, Side::Right), &refs(), &changes()).unwrap();
        let code = hex::encode(Sha1::digest(b"src/a.rs"));
        assert_eq!(
            ranged["line_range"]["start"]["line_code"],
            format!("{code}_4_4")
        );
        assert_eq!(ranged["line_range"]["start"]["type"], Value::Null);
        // An added line's old position is the next old line (GitLab's counter).
        assert_eq!(
            ranged["line_range"]["end"]["line_code"],
            format!("{code}_6_6")
        );
        assert_eq!(ranged["line_range"]["end"]["type"], "new");
        assert_eq!(ranged["new_line"], 6);
    }

    #[test]
    fn suggestions_reach_back_to_the_first_line() {
        let body = discussion_body(&finding(4, 6, Side::Right), "fp1");
        assert!(
            body.contains("```suggestion:-2+0\n    fixed();\n```"),
            "{body}"
        );
        let single = discussion_body(&finding(5, 5, Side::Right), "fp1");
        assert!(single.contains("```suggestion:-0+0\n"), "{single}");
    }
}
