//! Paging a file's numbered diff by hunk, for the `diff` tool.
//!
//! Invariants:
//! - a page holds whole hunks; the hunks that do not fit are named at its end
//!   with the call that shows them (`diff` with `path` and `hunk`);
//! - a single hunk larger than a page is cut at a line boundary, never inside
//!   the lines that sit before one head line (a removed run, a move and its
//!   edits), and the note names the head line it goes on from and the call
//!   (`diff` with `path`, `hunk` and `start_line`); only a run larger than a
//!   whole page is cut inside, and then its removed base lines not shown are
//!   named with the `read_file` call that shows them;
//! - very long lines are elided before anything is measured.

use super::ToolError;
use super::page::{NOT_SHOWN, Page, elide_long};
use crate::context::numbered_diff_line;

/// Which part of a file's diff to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Start {
    /// The first hunk, 1-based.
    pub hunk: usize,
    /// Within that hunk, the first head line (removed lines count as the head line they sit before).
    pub line: Option<u32>,
}

impl Start {
    /// The whole diff.
    pub(crate) const WHOLE: Start = Start {
        hunk: 1,
        line: None,
    };
}

/// A file's numbered diff: the `---`/`+++` lines, then the hunks, each from its `@@` line.
struct Split<'a> {
    header: &'a str,
    hunks: Vec<&'a str>,
}

fn split(text: &str) -> Split<'_> {
    let mut starts = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("@@") {
            starts.push(offset);
        }
        offset += line.len();
    }
    let header_end = starts.first().copied().unwrap_or(text.len());
    let hunks = starts
        .iter()
        .zip(starts.iter().skip(1).copied().chain([text.len()]))
        .map(|(&from, to)| &text[from..to])
        .collect();
    Split {
        header: &text[..header_end],
        hunks,
    }
}

/// Every line of `text` with very long ones elided, each ending in a newline.
fn elided_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| format!("{}\n", elide_long(l)))
        .collect()
}

/// `text` with its very long lines elided.
pub(crate) fn elided(text: &str) -> String {
    elided_lines(text).concat()
}

/// The head position of each body line: its own head number for context and
/// added lines, else that of the next such line (`u32::MAX` after the last).
fn positions(body: &[String]) -> Vec<u32> {
    let mut next = u32::MAX;
    let mut out = vec![0; body.len()];
    for (i, line) in body.iter().enumerate().rev() {
        if let Some((n, ' ' | '+')) = numbered_diff_line(line.trim_end_matches('\n')) {
            next = n;
        }
        out[i] = next;
    }
    out
}

/// Adds `path`'s diff (its numbered `text`) from `start` to `page`; returns the
/// note naming what did not fit, or `None` when the rest of the diff is on the page.
pub(crate) fn page_file(
    text: &str,
    path: &str,
    start: Start,
    page: &mut Page,
) -> Result<Option<String>, ToolError> {
    let split = split(text);
    let total = split.hunks.len();
    if start.hunk == 0 || start.hunk > total.max(1) {
        return Err(ToolError::Model(format!(
            "hunk {} is not a hunk of the diff of `{path}`, which has {total} (numbered from 1)",
            start.hunk
        )));
    }
    page.push_always(split.header);
    for index in start.hunk..=total {
        let mut lines = elided_lines(split.hunks[index - 1]);
        let body = lines.split_off(1.min(lines.len()));
        let mut positions = positions(&body);
        let mut body = body;
        if let (true, Some(from)) = (index == start.hunk, start.line) {
            let skip = positions.partition_point(|&p| p < from);
            if skip == body.len() {
                return Err(ToolError::Model(format!(
                    "hunk {index} of `{path}` has no lines from head line {from}"
                )));
            }
            body.drain(..skip);
            positions.drain(..skip);
            lines.push(format!("[hunk {index} from head line {from}]\n"));
        }
        let hunk_text: String = lines.iter().chain(&body).map(String::as_str).collect();
        if page.push(&hunk_text) {
            continue;
        }
        if index > start.hunk {
            return Ok(Some(rest_note(path, index, total)));
        }
        return Ok(Some(cut_hunk(
            path, index, total, &lines, &body, &positions, page,
        )));
    }
    Ok(None)
}

/// The note for hunks `first..=total` left out.
fn rest_note(path: &str, first: usize, total: usize) -> String {
    let which = match first == total {
        true => format!("hunk {first}"),
        false => format!("hunks {first}-{total}"),
    };
    format!("[{which} of {path} {NOT_SHOWN}: call diff with path `{path}` and hunk {first}]\n")
}

/// Puts as much of one oversized hunk on the page as fits, cut where a new head
/// position begins; returns the note for the rest.
fn cut_hunk(
    path: &str,
    index: usize,
    total: usize,
    head: &[String],
    body: &[String],
    positions: &[u32],
    page: &mut Page,
) -> String {
    for line in head {
        page.push_always(line);
    }
    let mut trial = page.clone();
    let fitted = body.iter().take_while(|line| trial.push(line)).count();
    // Back to where a new head position begins, unless that leaves nothing.
    let boundary = (1..=fitted)
        .rev()
        .find(|&i| i == body.len() || positions[i] > positions[i - 1])
        .unwrap_or(0);
    let shown = if boundary > 0 { boundary } else { fitted };
    for line in &body[..shown] {
        page.push_always(line);
    }
    let mut note = String::new();
    let mut resume = shown;
    if boundary == 0 {
        // One run larger than a page: its removed lines not shown are named for read_file.
        let run_end = positions[shown..]
            .iter()
            .position(|&p| p > positions[shown])
            .map_or(body.len(), |i| shown + i);
        let numbered: Vec<(u32, char)> = body[shown..run_end]
            .iter()
            .filter_map(|l| numbered_diff_line(l.trim_end_matches('\n')))
            .collect();
        let removed: Vec<u32> = numbered
            .iter()
            .filter(|(_, mark)| *mark == '-')
            .map(|(n, _)| *n)
            .collect();
        if let (Some(first), Some(last)) = (removed.first(), removed.last()) {
            note.push_str(&format!(
                "[base lines {first}-{last} of {path} {NOT_SHOWN}: call read_file with path `{path}`, revision \"base\", start_line {first} and end_line {last}]\n"
            ));
        }
        if let Some((line, _)) = numbered.iter().find(|(_, mark)| *mark != '-') {
            note.push_str(&format!(
                "[head line {line} of {path} {NOT_SHOWN}: call read_file with path `{path}`, start_line {line} and end_line {line}]\n"
            ));
        }
        resume = run_end;
    }
    if let Some(&from) = positions.get(resume) {
        let then = match index < total {
            true => format!("; then hunk {}", index + 1),
            false => String::new(),
        };
        note.push_str(&format!(
            "[hunk {index} of {path} from head line {from} on {NOT_SHOWN}: call diff with path `{path}`, hunk {index} and start_line {from}{then}]\n"
        ));
    } else if index < total {
        note.push_str(&rest_note(path, index + 1, total));
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::page::Room;

    fn diff(hunks: usize, lines_each: usize) -> String {
        let mut out = String::from("--- a/a.rs\n+++ b/a.rs\n");
        for h in 0..hunks {
            let first = 1 + h * 100;
            out.push_str(&format!(
                "@@ -{first},{lines_each} +{first},{lines_each} @@\n"
            ));
            for n in first..first + lines_each {
                out.push_str(&format!("{n:>5} +let value_{n} = compute({n});\n"));
            }
        }
        out
    }

    fn room(chars: usize) -> Page {
        Page::new(Room {
            chars,
            tokens: 100_000,
        })
    }

    #[test]
    fn a_page_holds_whole_hunks_and_names_the_rest() {
        let text = diff(5, 10);
        let mut page = room(1_000);
        let note = page_file(&text, "a.rs", Start::WHOLE, &mut page).unwrap();
        let out = page.into_text();
        assert_eq!(out.matches("@@ -").count(), 2, "{out}");
        assert!(
            out.ends_with("  110 +let value_110 = compute(110);\n"),
            "{out}"
        );
        assert_eq!(
            note.as_deref(),
            Some(
                "[hunks 3-5 of a.rs not shown (size limit): call diff with path `a.rs` and hunk 3]\n"
            )
        );
        let mut next = room(100_000);
        let rest = page_file(
            &text,
            "a.rs",
            Start {
                hunk: 3,
                line: None,
            },
            &mut next,
        )
        .unwrap();
        assert_eq!(rest, None);
        let out = next.into_text();
        assert!(out.starts_with("--- a/a.rs\n+++ b/a.rs\n@@ -201,10 +201,10 @@\n"));
        assert!(!out.contains("value_110"));
    }

    #[test]
    fn a_hunk_larger_than_a_page_is_cut_at_a_line_and_goes_on_from_it() {
        let text = diff(2, 100);
        let mut page = room(1_000);
        let note = page_file(&text, "a.rs", Start::WHOLE, &mut page).unwrap();
        let out = page.into_text();
        assert!(
            out.ends_with("   27 +let value_27 = compute(27);\n"),
            "{out}"
        );
        assert_eq!(
            note.as_deref(),
            Some(
                "[hunk 1 of a.rs from head line 28 on not shown (size limit): call diff with path `a.rs`, hunk 1 and start_line 28; then hunk 2]\n"
            )
        );
        let mut next = room(100_000);
        let start = Start {
            hunk: 1,
            line: Some(28),
        };
        assert_eq!(page_file(&text, "a.rs", start, &mut next).unwrap(), None);
        let out = next.into_text();
        assert!(
            out.contains("[hunk 1 from head line 28]\n   28 +let value_28"),
            "{out}"
        );
        assert!(!out.contains("value_27 "), "{out}");
        assert!(out.contains("  200 +let value_200"), "{out}");
    }

    #[test]
    fn a_removed_run_is_not_split_from_the_line_it_sits_before() {
        let text = "--- a/a.rs\n+++ b/a.rs\n@@ -1,6 +1,3 @@\n    1  keep\n    2 -gone a\n    3 -gone b\n    2 +new\n    3  tail\n";
        // Room for the header, the @@ line, line 1 and one removed line, not two:
        // the cut goes back to before the run.
        let mut page = room(70);
        let note = page_file(text, "a.rs", Start::WHOLE, &mut page).unwrap();
        assert!(page.into_text().ends_with("    1  keep\n"));
        assert!(note.unwrap().contains("hunk 1 and start_line 2]"));
    }

    #[test]
    fn a_bad_hunk_number_is_the_models_to_fix() {
        let err = page_file(
            &diff(2, 3),
            "a.rs",
            Start {
                hunk: 3,
                line: None,
            },
            &mut room(100),
        )
        .unwrap_err();
        assert!(err.to_string().contains("which has 2"), "{err}");
    }
}
