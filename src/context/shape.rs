//! Stage 1: shape the change into the first user message, within a token budget.
//!
//! Noise is listed, not shown; deleted files become one list; every remaining
//! file is rendered with asymmetric context ([`super::excerpt`]) and the files
//! are packed by review value ([`super::order`]) into the budget. What does not
//! fit is listed with its size so the model can open it with the `diff` tool.

use crate::llm::tokens::{ModelLimits, TokenCounter};
use crate::review::diff::{ChangeSet, FileChange, FileStatus, LineKind};

use super::excerpt::{self, ContextLines};
use super::listing::{self, ListItem};
use super::noise::{self, NoiseKind};
use super::order;
use super::thousands;

/// How to shape the change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeOptions {
    /// Token budget of the whole first message.
    pub budget_tokens: usize,
    /// Extra globs of files to leave out (from the config), listed as "excluded by config".
    pub exclude: Vec<String>,
    /// Head lines shown before each change (default 6).
    pub context_before: u32,
    /// Head lines shown after each change (default 2).
    pub context_after: u32,
}

impl Default for ShapeOptions {
    fn default() -> Self {
        ShapeOptions {
            budget_tokens: STAGE1_MAX_BUDGET,
            exclude: Vec::new(),
            context_before: 6,
            context_after: 2,
        }
    }
}

/// What became of a changed file in the first message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShapeStatus {
    /// Its changes are in the message, numbered.
    Shown,
    /// Named in the message without its diff (over budget, deleted, or no content change).
    Listed,
    /// Noise: named in the message with the reason it was left out.
    Excluded,
}

impl ShapeStatus {
    /// `shown`, `listed` or `excluded`.
    pub fn as_str(self) -> &'static str {
        match self {
            ShapeStatus::Shown => "shown",
            ShapeStatus::Listed => "listed",
            ShapeStatus::Excluded => "excluded",
        }
    }
}

/// One changed file in the shaped context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Head path (base path for deletions).
    pub path: String,
    /// Shown, listed or excluded.
    pub status: ShapeStatus,
    /// Why it is not shown (`lockfile`, `over budget`, `deleted`, ...); `None` when shown.
    pub reason: Option<String>,
    /// Tokens of its shaped section (shown or listed files) or of its plain diff (the others).
    pub tokens: usize,
    /// Non-blank added head lines: the lines a reviewer must see.
    pub changed_lines: usize,
}

/// The first user message and what went into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapedContext {
    /// The first user message, starting with a header that says what was shaped and why.
    pub message: String,
    /// Every changed file, in the order of the message.
    pub files: Vec<FileEntry>,
    /// Tokens of the naive prompt: the full head content of every changed file plus the full unified diff.
    pub naive_tokens: usize,
    /// Tokens of `message`.
    pub shaped_tokens: usize,
    /// Non-blank added head lines of reviewable (not excluded) files.
    pub changed_lines_total: usize,
    /// Those of them printed in the message under their own file's section.
    pub changed_lines_shown: usize,
}

/// The largest stage-1 budget, whatever the window: small and medium changes
/// never need more, and a larger first prompt is paid again on every call.
pub const STAGE1_MAX_BUDGET: usize = 24_000;

/// The smallest stage-1 budget (unless the window is tinier still).
pub const STAGE1_MIN_BUDGET: usize = 2_000;

/// The stage-1 budget for a model.
///
/// Rule: a quarter of the usable window (context window minus the output
/// reserve), at most [`STAGE1_MAX_BUDGET`] and at least [`STAGE1_MIN_BUDGET`]
/// (or half the usable window when that is smaller). The rest of the window is
/// left for the system prompt, tool results and the model's turns. The budget
/// is a ceiling: a small change costs only what its shaped diff needs.
pub fn stage1_budget(limits: ModelLimits) -> usize {
    let usable = limits
        .context_window
        .saturating_sub(limits.max_output_tokens) as usize;
    let floor = STAGE1_MIN_BUDGET.min(usable / 2);
    (usable / 4).clamp(floor, STAGE1_MAX_BUDGET)
}

/// What the shaping does with one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Reviewable and shown when it fits.
    Candidate,
    /// Removed: listed with its line count.
    Deleted,
    /// Noise.
    Excluded(NoiseKind),
    /// Renamed or mode change without hunks.
    NoContent,
}

/// A file with everything measured.
struct Prepared<'a> {
    file: &'a FileChange,
    role: Role,
    section: Option<excerpt::Excerpt>,
    section_tokens: usize,
    plain_tokens: usize,
    changed: usize,
}

/// Shapes `changes` into the first user message. `head_text` returns a file's
/// head content by path (`None` when unreadable; the hunks' own lines are used then).
pub fn shape_change(
    changes: &ChangeSet,
    head_text: &dyn Fn(&str) -> Option<String>,
    opts: &ShapeOptions,
    counter: &TokenCounter,
) -> ShapedContext {
    let (exclude, exclude_error) = match noise::compile_excludes(&opts.exclude) {
        Ok(set) => (set, None),
        Err(e) => (globset::GlobSet::empty(), Some(e.to_string())),
    };
    let context = ContextLines {
        before: opts.context_before,
        after: opts.context_after,
    };
    let mut heads = Vec::with_capacity(changes.files.len());
    let mut prepared = Vec::with_capacity(changes.files.len());
    for file in &changes.files {
        let head = match file.status {
            FileStatus::Deleted => None,
            _ if file.binary => None,
            _ => head_text(&file.path),
        };
        let role = role_of(file, head.as_deref(), &exclude);
        let section =
            (role == Role::Candidate).then(|| excerpt::render_file(file, head.as_deref(), context));
        prepared.push(Prepared {
            file,
            role,
            section,
            section_tokens: 0,
            plain_tokens: 0,
            changed: added_nonblank(file),
        });
        heads.push(head);
    }
    let naive_tokens = measure(&mut prepared, &heads, counter);
    drop(heads);
    prepared.sort_by_cached_key(|p| order::review_order_key(p.file));
    let facts = Facts {
        budget: opts.budget_tokens,
        context,
        exclude_error,
    };
    let mut shown = pack(&prepared, &facts, counter);
    let (message, shaped_tokens) = fit_exactly(&prepared, &mut shown, &facts, counter);
    ShapedContext {
        files: entries(&prepared, &shown),
        naive_tokens,
        shaped_tokens,
        changed_lines_total: prepared
            .iter()
            .filter(|p| !matches!(p.role, Role::Excluded(_)))
            .map(|p| p.changed)
            .sum(),
        changed_lines_shown: prepared
            .iter()
            .zip(&shown)
            .filter(|(_, shown)| **shown)
            .filter_map(|(p, _)| p.section.as_ref().map(|s| s.shown_changed))
            .sum(),
        message,
    }
}

fn role_of(file: &FileChange, head: Option<&str>, exclude: &globset::GlobSet) -> Role {
    if let Some(kind) = noise::classify(file, head, exclude) {
        return Role::Excluded(kind);
    }
    if file.status == FileStatus::Deleted {
        return Role::Deleted;
    }
    if file.hunks.is_empty() {
        return Role::NoContent;
    }
    Role::Candidate
}

fn added_nonblank(file: &FileChange) -> usize {
    file.hunks
        .iter()
        .flat_map(|h| &h.lines)
        .filter(|l| l.kind == LineKind::Added && !l.text.trim().is_empty())
        .count()
}

/// Counts every section, plain diff and head text once, in parallel; returns the naive total.
fn measure(
    prepared: &mut [Prepared<'_>],
    heads: &[Option<String>],
    counter: &TokenCounter,
) -> usize {
    let plains: Vec<String> = prepared.iter().map(|p| plain_diff(p.file)).collect();
    let mut texts: Vec<&str> = Vec::with_capacity(prepared.len() * 3);
    for ((p, plain), head) in prepared.iter().zip(&plains).zip(heads) {
        texts.push(plain);
        texts.push(head.as_deref().unwrap_or(""));
        texts.push(p.section.as_ref().map_or("", |s| s.text.as_str()));
    }
    let counts = super::count_parallel(counter, &texts);
    let mut naive = 0;
    for (p, counts) in prepared.iter_mut().zip(counts.chunks(3)) {
        if let [plain, head, section] = counts {
            p.plain_tokens = *plain;
            p.section_tokens = *section;
            naive += plain + head;
        }
    }
    naive
}

/// The file's diff as `git diff` prints it, without line numbers.
fn plain_diff(file: &FileChange) -> String {
    let mut out = String::new();
    let old = file.old_path.as_deref().unwrap_or(&file.path);
    out.push_str(&format!(
        "diff --git a/{old} b/{}\n--- a/{old}\n+++ b/{}\n",
        file.path, file.path
    ));
    if file.binary {
        out.push_str("Binary files differ\n");
    }
    for hunk in &file.hunks {
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@ {}\n",
            hunk.old_start, hunk.old_lines, hunk.new_start, hunk.new_lines, hunk.header
        ));
        for line in &hunk.lines {
            let mark = match line.kind {
                LineKind::Context => ' ',
                LineKind::Added => '+',
                LineKind::Removed => '-',
            };
            out.push(mark);
            out.push_str(&line.text);
            out.push('\n');
        }
    }
    out
}

/// What the header and the packing need to know besides the files.
struct Facts {
    budget: usize,
    context: ContextLines,
    exclude_error: Option<String>,
}

/// Chooses the files to show (by index into `prepared`, which is in review order).
/// The listing of what does not fit is reserved for first, then refined, so the
/// message stays within the budget without re-encoding it over and over.
fn pack(prepared: &[Prepared<'_>], facts: &Facts, counter: &TokenCounter) -> Vec<bool> {
    let fixed = counter.count(&header(prepared, &vec![false; prepared.len()], facts, true))
        + counter.count(&listing::render_fixed(&fixed_items(prepared)));
    let mut reserve = 0;
    let mut shown = greedy(prepared, facts.budget.saturating_sub(fixed));
    for _ in 0..4 {
        let listed = over_budget_items(prepared, &shown);
        if listed.is_empty() {
            break;
        }
        let needed = counter.count(&listing::render_over_budget(&listed));
        if needed <= reserve {
            break;
        }
        reserve = needed;
        shown = greedy(prepared, facts.budget.saturating_sub(fixed + reserve));
    }
    shown
}

/// Renders the message and counts it; when the parts' estimate was a little
/// short, drops the last shown files until the real count fits the budget.
fn fit_exactly(
    prepared: &[Prepared<'_>],
    shown: &mut [bool],
    facts: &Facts,
    counter: &TokenCounter,
) -> (String, usize) {
    let mut message = render_message(prepared, shown, facts);
    let mut tokens = counter.count(&message);
    for _ in 0..MAX_REFITS {
        if tokens <= facts.budget {
            break;
        }
        let Some(last) = shown.iter().rposition(|s| *s) else {
            break;
        };
        shown[last] = false;
        message = render_message(prepared, shown, facts);
        tokens = counter.count(&message);
    }
    (message, tokens)
}

/// Re-renders allowed when the estimate overshoots (it is off by a few tokens at most).
const MAX_REFITS: usize = 8;

/// Shows files in review order while they fit in `available` tokens.
fn greedy(prepared: &[Prepared<'_>], available: usize) -> Vec<bool> {
    let mut left = available;
    prepared
        .iter()
        .map(|p| {
            let fits = p.role == Role::Candidate && p.section_tokens <= left;
            if fits {
                left -= p.section_tokens;
            }
            fits
        })
        .collect()
}

fn over_budget_items(prepared: &[Prepared<'_>], shown: &[bool]) -> Vec<ListItem> {
    prepared
        .iter()
        .zip(shown)
        .filter(|(p, shown)| p.role == Role::Candidate && !**shown)
        .map(|(p, _)| ListItem {
            path: p.file.path.clone(),
            note: format!(
                "+{} -{}, {} tokens",
                p.file.additions(),
                p.file.deletions(),
                thousands(p.section_tokens)
            ),
            additions: p.file.additions(),
            deletions: p.file.deletions(),
            tokens: p.section_tokens,
        })
        .collect()
}

/// Deleted, excluded and content-free files: listed whatever the budget.
fn fixed_items(prepared: &[Prepared<'_>]) -> listing::FixedItems {
    let mut items = listing::FixedItems::default();
    for p in prepared {
        let file = p.file;
        let item = |note: String| ListItem {
            path: file.path.clone(),
            note,
            additions: file.additions(),
            deletions: file.deletions(),
            tokens: p.plain_tokens,
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

/// The header: what was shaped, and why.
fn header(prepared: &[Prepared<'_>], shown: &[bool], facts: &Facts, worst_case: bool) -> String {
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
        "# Change under review\n{} files changed (+{} -{}). Shaped to fit a {}-token budget: {}.\n",
        prepared.len(),
        additions,
        deletions,
        thousands(facts.budget),
        parts.join(", ")
    );
    out.push_str(&format!(
        "Line numbers are head line numbers (`-` lines carry base numbers); cite them. Context: {} lines before and {} after each change, widened to the enclosing definition; long pure deletions are summarised in one line. Open anything not shown with the `diff` tool ({{\"path\": \"...\"}}) or `read_file`.\n",
        facts.context.before, facts.context.after
    ));
    if let Some(error) = &facts.exclude_error {
        out.push_str(&format!(
            "Note: {error}; the config's exclude list was ignored.\n"
        ));
    }
    out
}

fn render_message(prepared: &[Prepared<'_>], shown: &[bool], facts: &Facts) -> String {
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

fn entries(prepared: &[Prepared<'_>], shown: &[bool]) -> Vec<FileEntry> {
    prepared
        .iter()
        .zip(shown)
        .map(|(p, shown)| {
            let (status, reason, tokens) = match p.role {
                Role::Candidate if *shown => (ShapeStatus::Shown, None, p.section_tokens),
                Role::Candidate => (ShapeStatus::Listed, Some("over budget"), p.section_tokens),
                Role::Deleted => (ShapeStatus::Listed, Some("deleted"), p.plain_tokens),
                Role::NoContent => (ShapeStatus::Listed, Some("no content change"), 0),
                Role::Excluded(kind) => {
                    (ShapeStatus::Excluded, Some(kind.reason()), p.plain_tokens)
                }
            };
            FileEntry {
                path: p.file.path.clone(),
                status,
                reason: reason.map(str::to_string),
                tokens,
                changed_lines: p.changed,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_rule_scales_with_the_window_and_is_capped() {
        let budget = |window, output| {
            stage1_budget(ModelLimits {
                context_window: window,
                max_output_tokens: output,
            })
        };
        assert_eq!(budget(128_000, 16_384), STAGE1_MAX_BUDGET);
        assert_eq!(budget(32_768, 4_096), 7_168);
        assert_eq!(budget(8_192, 4_096), 2_000);
        assert_eq!(budget(2_048, 1_024), 512);
        assert_eq!(budget(1_000, 2_000), 0);
    }
}
