//! Stage 1: shape the change into the first user message, within a token budget.
//!
//! Noise is listed, not shown; deleted files become one list; every remaining
//! file is rendered with asymmetric context ([`super::excerpt`]) and the files
//! are packed by review value ([`super::order`]) into the budget. What does not
//! fit is listed with its size so the model can open it with the `diff` tool.

use crate::llm::tokens::{ModelLimits, TokenCounter};
use crate::review::diff::{ChangeSet, FileChange, FileStatus, LineKind};

use super::excerpt::{self, ContextLines, Layout};
use super::measure::Measured;
use super::moves::{MoveSummary, Moves};
use super::noise::{self, NoiseKind};
use super::order;
use super::pack::{fit_exactly, measure_files, pack};

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
    /// When set, the context after each change reaches to the end of the
    /// enclosing statement or block, at most this many lines (and at least
    /// `context_after`); see [`AfterContext`](crate::context::AfterContext).
    pub context_after_block: Option<u32>,
}

impl Default for ShapeOptions {
    fn default() -> Self {
        ShapeOptions {
            budget_tokens: STAGE1_MAX_BUDGET,
            exclude: Vec::new(),
            context_before: 6,
            context_after: 2,
            context_after_block: None,
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
    /// The base path of a renamed file.
    pub old_path: Option<String>,
    /// Shown, listed or excluded.
    pub status: ShapeStatus,
    /// Why it is not shown (`lockfile`, `over budget`, `deleted`, ...); `None` when shown.
    pub reason: Option<String>,
    /// Tokens of its shaped section (shown or listed files) or of its plain diff (the others).
    pub tokens: usize,
    /// Whether `tokens` was counted (always for shown files) rather than estimated
    /// from its size, as for files far over budget in a huge change.
    pub tokens_exact: bool,
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
    /// Whether `naive_tokens` was counted in full; above 1 MiB of naive text it
    /// is extrapolated from an even sample of the files.
    pub naive_exact: bool,
    /// Tokens of `message`.
    pub shaped_tokens: usize,
    /// Non-blank added head lines of reviewable (not excluded) files.
    pub changed_lines_total: usize,
    /// Those of them printed in the message under their own file's section.
    pub changed_lines_shown: usize,
    /// The blocks of code the change moves, shown as moves ([`super::moves`]).
    pub moves: MoveSummary,
    /// The numbered section of every reviewable file with changes, in review
    /// order, whether or not it fitted the message: what plan-and-execute slices.
    /// When the message does not hold every file they carry less context, in
    /// the compact layout ([`TASK_CONTEXT`]), since each task pays for its text.
    pub sections: Vec<Section>,
}

impl ShapedContext {
    /// Whether every reviewable file's section is in the message (none listed for size).
    pub fn fits_whole(&self) -> bool {
        !self
            .files
            .iter()
            .any(|e| e.status == ShapeStatus::Listed && e.reason.as_deref() == Some(OVER_BUDGET))
    }
}

/// One reviewable file's numbered diff section, as stage 1 renders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Head path.
    pub path: String,
    /// `--- a/…`, `+++ b/…`, then its numbered windows.
    pub text: String,
}

/// The reason given for a reviewable file left out of the message for size.
pub(crate) const OVER_BUDGET: &str = "over budget";

/// The largest stage-1 budget, whatever the window: small and medium changes
/// never need more, and a larger first prompt is paid again on every call.
pub(crate) const STAGE1_MAX_BUDGET: usize = 24_000;

/// The smallest stage-1 budget (unless the window is tinier still).
pub(crate) const STAGE1_MIN_BUDGET: usize = 2_000;

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
pub(crate) enum Role {
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
pub(crate) struct Prepared<'a> {
    /// The change.
    pub file: &'a FileChange,
    /// Its head text, when read.
    pub head: Option<&'a str>,
    /// What becomes of it.
    pub role: Role,
    /// Its numbered excerpt, for candidates.
    pub section: Option<excerpt::Excerpt>,
    /// Tokens of the excerpt.
    pub section_tokens: Measured,
    /// Tokens of its plain unified diff.
    pub plain_tokens: Measured,
    /// Non-blank added head lines.
    pub changed: usize,
}

/// What the header and the packing need to know besides the files.
pub(crate) struct Facts {
    /// The budget of the whole message.
    pub budget: usize,
    /// Context lines around changes.
    pub context: ContextLines,
    /// Why the config's exclude globs were ignored, if they were.
    pub exclude_error: Option<String>,
    /// Blocks of code the change moves ([`super::moves`]).
    pub moved_blocks: usize,
}

/// Shapes `changes` into the first user message. `head_text` returns a file's
/// head content by path (`None` when unreadable; the hunks' own lines are used then).
pub fn shape_change(
    changes: &ChangeSet,
    head_text: &dyn Fn(&str) -> Option<String>,
    opts: &ShapeOptions,
    counter: &TokenCounter,
) -> ShapedContext {
    shape_with_moves(changes, &Moves::detect(changes), head_text, opts, counter)
}

/// [`shape_change`] with the change's moves already detected (a review's workspace
/// keeps them for the `diff` tool too).
pub(crate) fn shape_with_moves(
    changes: &ChangeSet,
    moves: &Moves,
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
        after_block: opts.context_after_block,
        layout: Layout::Aligned,
    };
    let heads = read_heads(changes, head_text);
    let pairs: Vec<(&FileChange, Option<&str>)> = changes
        .files
        .iter()
        .zip(heads.iter().map(Option::as_deref))
        .collect();
    let mut prepared = super::parallel_map(&pairs, |&(file, head)| {
        let role = role_of(file, head, &exclude);
        Prepared {
            file,
            head,
            role,
            section: (role == Role::Candidate)
                .then(|| excerpt::render_file(file, head, context, &moves.of_file(&file.path))),
            section_tokens: Measured::default(),
            plain_tokens: Measured::default(),
            changed: added_nonblank(file),
        }
    });
    drop(pairs);
    let plains: Vec<String> = super::parallel_map(&prepared, |p| plain_diff(p.file));
    let (naive_tokens, naive_exact) = measure_files(&mut prepared, &plains, &heads, counter);
    drop(plains);
    prepared.sort_by_cached_key(|p| order::review_order_key(p.file));
    let facts = Facts {
        budget: opts.budget_tokens,
        context,
        exclude_error,
        moved_blocks: moves.count(),
    };
    let mut shown = pack(&mut prepared, &facts, counter);
    let (message, shaped_tokens) = fit_exactly(&prepared, &mut shown, &facts, counter);
    let files = entries(&prepared, &shown);
    let changed_lines_shown = prepared
        .iter()
        .zip(&shown)
        .filter(|(_, shown)| **shown)
        .filter_map(|(p, _)| p.section.as_ref().map(|s| s.shown_changed))
        .sum();
    ShapedContext {
        files,
        naive_tokens,
        naive_exact,
        shaped_tokens,
        changed_lines_total: prepared
            .iter()
            .filter(|p| !matches!(p.role, Role::Excluded(_)))
            .map(|p| p.changed)
            .sum(),
        changed_lines_shown,
        sections: sections_for_tasks(&mut prepared, &shown, context, moves),
        moves: moves.summary(changes, counter),
        message,
    }
}

/// Every file's head text. Reading is sequential (the reader need not be
/// thread-safe); the rest of the shaping runs on all cores.
fn read_heads(
    changes: &ChangeSet,
    head_text: &dyn Fn(&str) -> Option<String>,
) -> Vec<Option<String>> {
    changes
        .files
        .iter()
        .map(|file| match file.status {
            FileStatus::Deleted => None,
            _ if file.binary => None,
            _ => head_text(&file.path),
        })
        .collect()
}

/// Context of the sections plan-and-execute slices when the change does not fit
/// one message: two lines before a change and one after, widened to the
/// enclosing definition when it is that close (else named in the `@@` line), in
/// the compact layout. Every task pays for its text, so it is kept lean.
pub(crate) const TASK_CONTEXT: ContextLines = ContextLines {
    before: 2,
    after: 1,
    after_block: None,
    layout: Layout::Compact,
};

/// The reviewable files' sections, in review order: those of the message when it
/// holds every file, else rendered again with [`TASK_CONTEXT`] (or fewer lines,
/// when the message's own context is smaller).
fn sections_for_tasks(
    prepared: &mut [Prepared<'_>],
    shown: &[bool],
    context: ContextLines,
    moves: &Moves,
) -> Vec<Section> {
    let fits = prepared
        .iter()
        .zip(shown)
        .all(|(p, shown)| *shown || p.role != Role::Candidate);
    let lean = ContextLines {
        before: context.before.min(TASK_CONTEXT.before),
        after: context.after.min(TASK_CONTEXT.after),
        after_block: TASK_CONTEXT.after_block,
        layout: TASK_CONTEXT.layout,
    };
    let candidates: Vec<&mut Prepared<'_>> = prepared
        .iter_mut()
        .filter(|p| p.role == Role::Candidate)
        .collect();
    let render = |p: &&mut Prepared<'_>| match fits {
        true => None,
        false => {
            Some(excerpt::render_file(p.file, p.head, lean, &moves.of_file(&p.file.path)).text)
        }
    };
    let lean_texts = super::parallel_map(&candidates, render);
    candidates
        .into_iter()
        .zip(lean_texts)
        .filter_map(|(p, lean)| {
            let text = lean.or_else(|| p.section.take().map(|s| s.text))?;
            Some(Section {
                path: p.file.path.clone(),
                text,
            })
        })
        .collect()
}

fn role_of(file: &FileChange, head: Option<&str>, exclude: &globset::GlobSet) -> Role {
    if let Some(kind) = noise::noise_kind(file, head, exclude) {
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

fn entries(prepared: &[Prepared<'_>], shown: &[bool]) -> Vec<FileEntry> {
    prepared
        .iter()
        .zip(shown)
        .map(|(p, shown)| {
            let (status, reason, tokens) = match p.role {
                Role::Candidate if *shown => (ShapeStatus::Shown, None, p.section_tokens),
                Role::Candidate => (ShapeStatus::Listed, Some(OVER_BUDGET), p.section_tokens),
                Role::Deleted => (ShapeStatus::Listed, Some("deleted"), p.plain_tokens),
                Role::NoContent => (
                    ShapeStatus::Listed,
                    Some("no content change"),
                    Measured {
                        tokens: 0,
                        exact: true,
                    },
                ),
                Role::Excluded(kind) => {
                    (ShapeStatus::Excluded, Some(kind.reason()), p.plain_tokens)
                }
            };
            FileEntry {
                path: p.file.path.clone(),
                old_path: p.file.old_path.clone(),
                status,
                reason: reason.map(str::to_string),
                tokens: tokens.tokens,
                tokens_exact: tokens.exact,
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
