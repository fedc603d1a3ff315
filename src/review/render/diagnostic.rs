//! One finding as a compiler diagnostic (annotate-snippets, the renderer rustc uses):
//!
//! ```text
//! major[bug]: Division by zero when b is 0
//!   --> src/calc.rs:10:5
//!    |
//!  9 | pub fn ratio(a: i32, b: i32) -> i32 {
//! 10 |     a / b
//!    |     ^^^^^
//!    |
//!    = `ratio` divides by `b` without checking it.
//! help: suggested change
//!    |
//! 10 -     a / b
//! 10 +     a.checked_div(b).unwrap_or(0)
//!    |
//! ```
//!
//! Invariant: without colour the output holds no escape sequence, whatever the file, the
//! title or the body contain (control characters are removed before rendering).

use std::ops::Range;

use annotate_snippets::renderer::{
    DEFAULT_ADDITION_STYLE, DEFAULT_HELP_STYLE, DEFAULT_LINE_NUM_STYLE, DEFAULT_REMOVAL_STYLE,
};
use annotate_snippets::{AnnotationKind, Group, Level, Origin, Renderer, Snippet};
use anstyle::Style;
use similar::{ChangeTag, TextDiff};

use super::source::{lines, printable};
use crate::review::finding::{Finding, Severity, Side};

/// Lines of code shown before and after a finding's range.
const CONTEXT: u32 = 1;

/// The finding as a diagnostic, ending with a newline. `source` is the whole text of the
/// file on the finding's side, when known.
pub(super) fn render(finding: &Finding, source: Option<&str>, color: bool) -> String {
    let title = printable(finding.title.trim());
    let body = printable(finding.body.trim());
    let rule = finding.rule.as_deref().map(printable);
    let window = source.and_then(|text| Window::of(text, finding));
    let mut group = Group::with_title(
        level(finding.severity)
            .primary_title(title.as_str())
            .id(finding.category.as_str()),
    );
    group = match &window {
        Some(window) => group.element(
            Snippet::source(window.text.as_str())
                .line_start(window.first as usize)
                .path(finding.path.as_str())
                .annotation(AnnotationKind::Primary.span(window.span.clone()))
                .annotations(
                    window
                        .context
                        .iter()
                        .map(|span| AnnotationKind::Visible.span(span.clone())),
                ),
        ),
        None => {
            group.element(Origin::path(finding.path.as_str()).line(finding.start_line as usize))
        }
    };
    if finding.side == Side::Left {
        group = group.element(
            Level::NOTE.message("these lines are in the base version; this change removes them"),
        );
    }
    if !body.is_empty() {
        group = group.element(Level::NOTE.no_name().message(body.as_str()));
    }
    if let Some(rule) = &rule {
        group = group.element(Level::NOTE.with_name("rule").message(rule.as_str()));
    }
    let renderer = if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let mut out = renderer.render(&[group]);
    out.push('\n');
    if let Some(code) = &finding.suggestion {
        let old = source.and_then(|text| {
            let range = finding.range();
            lines(text, *range.start(), *range.end())
        });
        let last_shown = window.as_ref().map_or(finding.line, |w| w.last);
        out.push_str(&suggestion(
            finding,
            code,
            old.as_deref(),
            last_shown,
            color,
        ));
    }
    out
}

/// The level a severity is shown at, named after the severity.
fn level(severity: Severity) -> Level<'static> {
    let level = match severity {
        Severity::Critical | Severity::Major => Level::ERROR,
        Severity::Minor => Level::WARNING,
        Severity::Nit => Level::INFO,
    };
    level.with_name(severity.as_str())
}

/// The lines shown under a finding and, in them, the bytes of its range.
struct Window {
    /// Line number of the first line shown.
    first: u32,
    /// Line number of the last line shown.
    last: u32,
    /// The lines, printable, joined by newlines.
    text: String,
    /// The finding's range in `text`: from the first non-blank character of its first
    /// line to the end of its last line's code.
    span: Range<usize>,
    /// The context lines before and after the range, kept from folding.
    context: Vec<Range<usize>>,
}

impl Window {
    /// `None` when the file does not have the finding's lines (another version of it).
    fn of(text: &str, finding: &Finding) -> Option<Window> {
        let (start, end) = (*finding.range().start(), *finding.range().end());
        if start == 0 {
            return None;
        }
        let first = start.saturating_sub(CONTEXT).max(1);
        let mut shown: Vec<String> = lines(text, first, end)?
            .into_iter()
            .map(printable)
            .collect();
        let mut last = end;
        for number in end + 1..=end + CONTEXT {
            match lines(text, number, number) {
                Some(line) => shown.extend(line.into_iter().map(printable)),
                None => break,
            }
            last = number;
        }
        let offset_of = |line: u32| -> usize {
            shown[..(line - first) as usize]
                .iter()
                .map(|l| l.len() + 1)
                .sum()
        };
        let first_line = &shown[(start - first) as usize];
        let indent = first_line.len() - first_line.trim_start().len();
        let last_line = &shown[(end - first) as usize];
        let span_start = offset_of(start) + indent;
        let span_end = (offset_of(end) + last_line.trim_end().len()).max(span_start);
        let text = shown.join("\n");
        let mut context = Vec::new();
        if first < start {
            context.push(0..offset_of(start) - 1);
        }
        if last > end {
            context.push(offset_of(end + 1)..text.len());
        }
        Some(Window {
            first,
            last,
            text,
            span: span_start..span_end,
            context,
        })
    }
}

/// The suggested code as a small diff against the lines it replaces (`help: suggested
/// change`); only the added lines when the old ones are unknown.
fn suggestion(
    finding: &Finding,
    code: &str,
    old: Option<&[&str]>,
    last_shown: u32,
    color: bool,
) -> String {
    let new = printable(code.trim_end_matches('\n'));
    let new: Vec<&str> = if new.is_empty() {
        Vec::new()
    } else {
        new.lines().collect()
    };
    let start = *finding.range().start();
    let rows = match old {
        Some(old) => diff_rows(old, &new, start),
        None => new
            .iter()
            .zip(start..)
            .map(|(line, number)| Row::Line(number, '+', line.to_string()))
            .collect(),
    };
    let widest = rows
        .iter()
        .filter_map(|row| match row {
            Row::Line(number, ..) => Some(*number),
            Row::Gap => None,
        })
        .chain([last_shown])
        .max()
        .unwrap_or(last_shown);
    let width = widest.to_string().len();
    let gutter = paint(DEFAULT_LINE_NUM_STYLE, &format!("{:width$} |", ""), color);
    let mut out = format!(
        "{}{}\n{gutter}\n",
        paint(DEFAULT_HELP_STYLE, "help", color),
        paint(Style::new().bold(), ": suggested change", color)
    );
    for row in rows {
        let line = match row {
            Row::Gap => paint(DEFAULT_LINE_NUM_STYLE, "...", color),
            Row::Line(number, sign, text) => {
                let style = match sign {
                    '-' => DEFAULT_REMOVAL_STYLE,
                    '+' => DEFAULT_ADDITION_STYLE,
                    _ => Style::new(),
                };
                let number = paint(DEFAULT_LINE_NUM_STYLE, &format!("{number:>width$}"), color);
                let sign = if sign == ' ' {
                    paint(DEFAULT_LINE_NUM_STYLE, "|", color)
                } else {
                    paint(style, &sign.to_string(), color)
                };
                format!("{number} {sign} {}", paint(style, &text, color))
            }
        };
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&gutter);
    out.push('\n');
    out
}

/// One line of the suggestion's diff, or a gap between its hunks.
enum Row {
    /// Line number (old for `-`, new for `+` and unchanged), sign, text.
    Line(u32, char, String),
    Gap,
}

/// The changed lines of `old` → `new` with a line of context around each change; the old
/// and the new lines both start at line `start`.
fn diff_rows(old: &[&str], new: &[&str], start: u32) -> Vec<Row> {
    let diff = TextDiff::from_slices(old, new);
    let mut rows = Vec::new();
    for (index, group) in diff.grouped_ops(1).iter().enumerate() {
        if index > 0 {
            rows.push(Row::Gap);
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let (index, sign) = match change.tag() {
                    ChangeTag::Delete => (change.old_index(), '-'),
                    ChangeTag::Insert => (change.new_index(), '+'),
                    ChangeTag::Equal => (change.new_index(), ' '),
                };
                let number = start + index.unwrap_or_default() as u32;
                rows.push(Row::Line(number, sign, change.value().to_string()));
            }
        }
    }
    rows
}

/// `text` in `style` when colour is on, else as it is.
fn paint(style: Style, text: &str, color: bool) -> String {
    if color && !text.is_empty() {
        format!("{style}{text}{style:#}")
    } else {
        text.to_string()
    }
}
