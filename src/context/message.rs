//! The text of the first user message: a header saying what was shaped and
//! why, the numbered diffs of the files shown, then the lists of files that
//! are named without their diff.

use crate::review::diff::{FileChange, FileStatus};

use super::listing::{self, ListItem};
use super::shape::{Facts, Prepared, Role};
use super::thousands;

/// The whole message for the files marked in `shown`.
pub(crate) fn render_message(prepared: &[Prepared<'_>], shown: &[bool], facts: &Facts) -> String {
    let mut out = header(prepared, shown, facts, false);
    let sections: Vec<&str> = prepared
        .iter()
        .zip(shown)
        .filter(|(_, shown)| **shown)
        .filter_map(|(p, _)| p.section.as_ref().map(|s| s.text.as_str()))
        .collect();
    if !sections.is_empty() {
        out.push_str("\n## Diffs\n");
        for section in sections {
            out.push_str(section);
        }
    }
    out.push_str(&listing::render_over_budget(&over_budget_items(
        prepared, shown,
    )));
    out.push_str(&listing::render_fixed(&fixed_items(prepared)));
    out
}

/// The header: what was shaped, and why. `worst_case` always mentions the
/// over-budget list, for reserving its cost before packing.
pub(crate) fn header(
    prepared: &[Prepared<'_>],
    shown: &[bool],
    facts: &Facts,
    worst_case: bool,
) -> String {
    let count = |role: Role| prepared.iter().filter(|p| p.role == role).count();
    let excluded = prepared
        .iter()
        .filter(|p| matches!(p.role, Role::Excluded(_)))
        .count();
    let shown_count = shown.iter().filter(|s| **s).count();
    let listed = count(Role::Candidate) - shown_count;
    let additions: usize = prepared.iter().map(|p| p.file.additions()).sum();
    let deletions: usize = prepared.iter().map(|p| p.file.deletions()).sum();
    let mut parts = vec![format!("{shown_count} shown below as numbered diffs")];
    if listed > 0 || worst_case {
        parts.push(format!("{listed} listed without their diff (over budget)"));
    }
    for (n, what) in [
        (count(Role::Deleted), "deleted"),
        (excluded, "left out as noise"),
        (count(Role::NoContent), "without content changes"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    let mut out = format!(
        "# Change under review\n{} changed (+{additions} -{deletions}). Shaped to fit a {}-token budget: {}.\n",
        crate::text::count(prepared.len(), "file", "files"),
        thousands(facts.budget),
        parts.join(", ")
    );
    out.push_str(&format!(
        "Line numbers are head line numbers (`-` lines carry base numbers); cite them. Context: {} lines before and {} after each change, widened to the enclosing definition when near (else named in the @@ line); long pure deletions are summarised in one line. Open anything not shown with the `diff` tool ({{\"path\": \"...\"}}) or `read_file`.\n",
        facts.context.before,
        after_description(facts.context)
    ));
    if facts.moved_blocks > 0 {
        out.push_str(MOVES_NOTE);
    }
    if let Some(error) = &facts.exclude_error {
        out.push_str(&format!(
            "Note: {error}; the config's exclude list was ignored.\n"
        ));
    }
    out
}

/// Reviewable files not shown, in review order.
pub(crate) fn over_budget_items(prepared: &[Prepared<'_>], shown: &[bool]) -> Vec<ListItem> {
    prepared
        .iter()
        .zip(shown)
        .filter(|(p, shown)| p.role == Role::Candidate && !**shown)
        .map(|(p, _)| {
            let tokens = p.section_tokens;
            ListItem {
                path: p.file.path.clone(),
                note: format!(
                    "+{} -{}, {}{} tokens",
                    p.file.additions(),
                    p.file.deletions(),
                    if tokens.exact { "" } else { "~" },
                    thousands(tokens.tokens)
                ),
                additions: p.file.additions(),
                deletions: p.file.deletions(),
                tokens: tokens.tokens,
                exact: tokens.exact,
            }
        })
        .collect()
}

/// Deleted, excluded and content-free files: listed whatever the budget.
pub(crate) fn fixed_items(prepared: &[Prepared<'_>]) -> listing::FixedItems {
    let mut items = listing::FixedItems::default();
    for p in prepared {
        let file = p.file;
        let item = |note: String| ListItem {
            path: file.path.clone(),
            note,
            additions: file.additions(),
            deletions: file.deletions(),
            tokens: p.plain_tokens.tokens,
            exact: p.plain_tokens.exact,
        };
        match p.role {
            Role::Deleted => items
                .deleted
                .push(item(format!("{} lines", file.deletions()))),
            Role::Excluded(kind) => items.excluded.push(item(format!(
                "{}, +{} -{}",
                kind.reason(),
                file.additions(),
                file.deletions()
            ))),
            Role::NoContent => items.other.push(item(no_content_note(file))),
            Role::Candidate => {}
        }
    }
    items
}

fn no_content_note(file: &FileChange) -> String {
    match (&file.old_path, file.status) {
        (Some(old), _) => format!("renamed from {old}, no content change"),
        (None, FileStatus::TypeChange) => "mode or type change only".into(),
        _ => "no content change".into(),
    }
}

/// How moved code is shown, said once when the change moves any.
const MOVES_NOTE: &str = "Moved code is one line, `FIRST-LAST ~ moved from `PATH:A-B``, standing for those head lines, followed only by its edits against the original (`-` lines carry the original's base numbers), after any renaming it names (`renamed `OLD` to `NEW``). Its head lines are part of the change: `read_file` shows them and a finding may point at any of them. Read any base lines with `read_file` and `\"revision\": \"base\"`.\n";

/// The header's words for the context after each change: `2`, or, under the
/// block rule, `2 (to the end of the enclosing statement or block, at most 12)`.
fn after_description(context: super::excerpt::ContextLines) -> String {
    match context.after_block {
        None => context.after.to_string(),
        Some(cap) => format!(
            "{} (to the end of the enclosing statement or block, at most {cap})",
            context.after
        ),
    }
}
