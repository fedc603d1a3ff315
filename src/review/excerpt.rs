//! The code a finding points at, for a reader who checks it (the verifier, the eval's
//! grader): its lines with a few lines of context, numbered, the finding's lines marked `>`
//! and the lines the change added (head) or removed (base) marked `+` / `-`, in a fence
//! longer than any backtick run in the code. At most [`MAX_CODE_LINES`] of the finding's
//! own lines are shown.

use super::anchor::fence_for;
use super::diff::{ChangeSet, LineKind};
use super::finding::{Finding, Side};

/// Lines of context shown before and after a finding's range.
const CONTEXT_LINES: u32 = 5;
/// Lines of a finding's own range shown at most.
pub(crate) const MAX_CODE_LINES: u32 = 40;

/// The excerpt of `finding` in `source` (the file's text on the finding's side), with a
/// line saying what it shows; `None` when the finding's lines are not in `source`.
pub(crate) fn code_excerpt(finding: &Finding, changes: &ChangeSet, source: &str) -> Option<String> {
    let lines: Vec<&str> = source.lines().collect();
    let total = u32::try_from(lines.len()).ok()?;
    let range = finding.range();
    if *range.start() == 0 || *range.start() > total {
        return None;
    }
    let end = (*range.end()).min(*range.start() + MAX_CODE_LINES - 1);
    let first = range.start().saturating_sub(CONTEXT_LINES).max(1);
    let last = end.saturating_add(CONTEXT_LINES).min(total);
    let changed = changed_lines(finding, changes);
    let (version, mark) = match finding.side {
        Side::Right => ("head", '+'),
        Side::Left => ("base", '-'),
    };
    let width = last.to_string().len();
    let mut code = String::new();
    for number in first..=last {
        let text = lines.get(number as usize - 1).copied().unwrap_or_default();
        let pointer = if range.contains(&number) && number <= end {
            '>'
        } else {
            ' '
        };
        let change = if changed.contains(&number) { mark } else { ' ' };
        code.push_str(&format!("{pointer}{change}{number:>width$} | {text}\n"));
    }
    let fence = fence_for(&code);
    let shortened = match end < *range.end() {
        true => format!(
            " (the first {MAX_CODE_LINES} of its {} lines)",
            range.end() - range.start() + 1
        ),
        false => String::new(),
    };
    Some(format!(
        "Code at {version}, lines {first}-{last}; `>` marks the finding's lines{shortened}, `{mark}` the lines the change {}:\n{fence}\n{code}{fence}\n",
        match finding.side {
            Side::Right => "added",
            Side::Left => "removed",
        }
    ))
}

/// The lines of the finding's file the change added (head) or removed (base).
fn changed_lines(finding: &Finding, changes: &ChangeSet) -> Vec<u32> {
    let Some(file) = changes.file(&finding.path) else {
        return Vec::new();
    };
    file.hunks
        .iter()
        .flat_map(|hunk| &hunk.lines)
        .filter_map(|line| match (finding.side, line.kind) {
            (Side::Right, LineKind::Added) => line.new_line,
            (Side::Left, LineKind::Removed) => line.old_line,
            _ => None,
        })
        .collect()
}
