//! Stage 1 for plan-and-execute: the stage-1 sections of the reviewable files,
//! grouped as the plan asks and cut into slices that each fit a token budget.
//!
//! Invariants, whatever the plan says:
//! - every section (so every changed line stage 1 prints) lands in exactly one
//!   slice; a file named by several groups goes to the first, a file named by
//!   none to a trailing group of its own;
//! - no slice's text is larger than the budget: a file too large for one slice
//!   is cut at its `@@` windows, and a window too large at line boundaries (a
//!   single line larger still, at character boundaries); each part says
//!   "part k of n of PATH" with its head lines and names the other parts;
//! - with [`Packing::Shared`] no slice is opened while an open one has room
//!   for the unit (first fit), and a file cut anyway begins in the largest room
//!   left (when that is at least an eighth of the budget): about as few slices,
//!   so as few tasks paying the fixed part of a first message, as the budget allows.

use std::collections::HashMap;

use crate::llm::tokens::TokenCounter;

use super::shape::Section;
use slices::Slices;

mod slices;

/// Tokens set aside in every part for its "part k of n" line.
const PART_NOTE_TOKENS: usize = 160;

/// Other parts named one by one in a part's note; the rest are counted.
const PARTS_NAMED: usize = 4;

/// Whether groups share slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Packing {
    /// Every group gets slices of its own (a person's or the user's chosen grouping).
    PerGroup,
    /// Groups share slices, each unit going into the first slice with room for
    /// it: fewer, fuller tasks, each paying the fixed part of a first message
    /// (system prompt, tools, prose) once.
    Shared,
}

/// One slice: the diff text of one review task's first message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Slice {
    /// Indexes of the plan groups it holds, in order (`groups.len()` for files no group named).
    pub groups: Vec<usize>,
    /// Its files, as shown to the model (`PATH (part k of n)` for parts).
    pub files: Vec<String>,
    /// The numbered diff sections, in review order.
    pub text: String,
    /// Tokens of `text` (the sum of its units' counts).
    pub tokens: usize,
    /// Per file: the head line numbers of the added lines printed in `text`.
    pub lines: Vec<(String, Vec<u32>)>,
}

/// A piece of one file that goes into a slice whole.
#[derive(Debug, Clone)]
pub(super) struct Unit {
    /// The file's path.
    pub path: String,
    /// The file as shown to the model (`PATH (part k of n)` for parts).
    pub label: String,
    /// Its numbered text.
    pub text: String,
    /// Tokens of `text`.
    pub tokens: usize,
    /// Head line numbers of the added lines it prints.
    pub added: Vec<u32>,
}

/// Cuts `sections` (in review order) into slices of at most `budget` tokens,
/// keeping together the files of each group of `groups` (lists of paths).
pub(crate) fn partition(
    groups: &[Vec<String>],
    sections: &[Section],
    budget: usize,
    counter: &TokenCounter,
    packing: Packing,
) -> Vec<Slice> {
    let budget = budget.max(2 * PART_NOTE_TOKENS);
    let owner = owners(groups, sections);
    let mut slices = Slices::new(budget, packing);
    for group in 0..=groups.len() {
        if packing == Packing::PerGroup {
            slices.close_all();
        }
        let members = sections.iter().zip(&owner).filter(|(_, o)| **o == group);
        for (section, _) in members {
            // A file cut anyway may begin in the room left by earlier files.
            let first_room = match packing {
                Packing::Shared => slices.most_room(),
                Packing::PerGroup => 0,
            };
            for unit in units_of(section, budget, first_room, counter) {
                slices.place(group, unit);
            }
        }
    }
    slices.into_slices()
}

/// For each section, the first group that names its path (`groups.len()` when none does).
fn owners(groups: &[Vec<String>], sections: &[Section]) -> Vec<usize> {
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (g, paths) in groups.iter().enumerate() {
        for path in paths {
            first.entry(path.trim_start_matches("./")).or_insert(g);
        }
    }
    sections
        .iter()
        .map(|s| first.get(s.path.as_str()).copied().unwrap_or(groups.len()))
        .collect()
}

/// The section whole when it fits, else its parts; the first part takes at
/// most `first_room` tokens when that is at least [`MIN_FIRST_PART`] of the budget.
fn units_of(
    section: &Section,
    budget: usize,
    first_room: usize,
    counter: &TokenCounter,
) -> Vec<Unit> {
    let tokens = counter.count(&section.text);
    if tokens <= budget {
        return vec![Unit {
            path: section.path.clone(),
            label: section.path.clone(),
            added: added_lines(&section.text),
            text: section.text.clone(),
            tokens,
        }];
    }
    let first_room = if first_room >= budget / MIN_FIRST_PART {
        first_room.saturating_sub(PART_NOTE_TOKENS)
    } else {
        0
    };
    split(section, first_room, budget - PART_NOTE_TOKENS, counter)
}

/// A first part that fills the room left in a slice gets at least 1/n of the
/// budget: a smaller one would be a stray fragment of its file in another task.
const MIN_FIRST_PART: usize = 8;

/// A piece of a section's body with its size.
struct Piece {
    text: String,
    tokens: usize,
}

/// Cuts a section into parts of at most `room` tokens each (plus the part
/// note), the first of at most `first_room` when that is not 0.
fn split(section: &Section, first_room: usize, room: usize, counter: &TokenCounter) -> Vec<Unit> {
    let (header, body) = split_header(&section.text);
    let header_tokens = counter.count(header);
    let room = room.saturating_sub(header_tokens).max(1);
    let first_room = first_room.saturating_sub(header_tokens);
    let pieces: Vec<Piece> = windows(body)
        .into_iter()
        .flat_map(|window| pieces_of(window, room, counter))
        .collect();
    if first_room > 0 && pieces.first().is_none_or(|p| p.tokens > first_room) {
        // Its first window does not fit the room left: the file starts a slice.
        return split(section, 0, room + header_tokens, counter);
    }
    let room_of = |part: usize| match part {
        0 if first_room > 0 => first_room,
        _ => room,
    };
    let mut parts: Vec<Piece> = Vec::new();
    for piece in pieces {
        let last_room = room_of(parts.len().saturating_sub(1));
        match parts.last_mut() {
            Some(last) if last.tokens + piece.tokens <= last_room => {
                last.text.push_str(&piece.text);
                last.tokens += piece.tokens;
            }
            _ => parts.push(piece),
        }
    }
    label_parts(&section.path, header, parts, counter)
}

/// Gives each part its header and its "part k of n" note.
fn label_parts(path: &str, header: &str, parts: Vec<Piece>, counter: &TokenCounter) -> Vec<Unit> {
    let spans: Vec<(u32, u32)> = parts.iter().map(|p| head_span(&p.text)).collect();
    let n = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| {
            let mut others: Vec<String> = spans
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .take(PARTS_NAMED)
                .map(|(j, (a, b))| format!("{} (lines {a}-{b})", j + 1))
                .collect();
            if n - 1 > PARTS_NAMED {
                others.push(format!("and {} more", n - 1 - PARTS_NAMED));
            }
            let (a, b) = spans[i];
            let note = format!(
                "[part {} of {n} of {path}: head lines {a}-{b}; the other parts ({}) are reviewed in other tasks]\n",
                i + 1,
                others.join(", ")
            );
            let text = format!("{header}{note}{}", part.text);
            Unit {
                path: path.to_string(),
                label: format!("{path} (part {} of {n})", i + 1),
                added: added_lines(&part.text),
                tokens: counter.count(header) + counter.count(&note) + part.tokens,
                text,
            }
        })
        .collect()
}

/// `--- a/…` and `+++ b/…` lines, then the rest.
fn split_header(text: &str) -> (&str, &str) {
    let mut end = 0;
    for line in text.split_inclusive('\n').take(2) {
        if line.starts_with("--- ") || line.starts_with("+++ ") {
            end += line.len();
        }
    }
    text.split_at(end)
}

/// The body cut before every `@@` line.
fn windows(body: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in body.split_inclusive('\n') {
        if line.starts_with("@@") && offset > start {
            out.push(&body[start..offset]);
            start = offset;
        }
        offset += line.len();
    }
    if offset > start {
        out.push(&body[start..offset]);
    }
    out
}

/// A window whole when it fits `room`, else cut at line boundaries (and over-long lines at
/// characters); pieces after the first begin with a continuation line.
fn pieces_of(window: &str, room: usize, counter: &TokenCounter) -> Vec<Piece> {
    let tokens = counter.count(window);
    if tokens <= room {
        return vec![Piece {
            text: window.to_string(),
            tokens,
        }];
    }
    const CONTINUED: &str = "@@ (continued) @@\n";
    let room = room.saturating_sub(counter.count(CONTINUED)).max(1);
    let mut pieces: Vec<Piece> = Vec::new();
    for line in window.split_inclusive('\n') {
        for chunk in line_chunks(line, room, counter) {
            match pieces.last_mut() {
                Some(last) if last.tokens + chunk.tokens <= room => {
                    last.text.push_str(&chunk.text);
                    last.tokens += chunk.tokens;
                }
                _ => pieces.push(chunk),
            }
        }
    }
    for piece in pieces.iter_mut().skip(1) {
        piece.text.insert_str(0, CONTINUED);
        piece.tokens += counter.count(CONTINUED);
    }
    pieces
}

/// One line, or for a line over `room` tokens, its characters in chunks that fit (each ending in a newline).
fn line_chunks(line: &str, room: usize, counter: &TokenCounter) -> Vec<Piece> {
    let tokens = counter.count(line);
    if tokens <= room {
        return vec![Piece {
            text: line.to_string(),
            tokens,
        }];
    }
    let mut out = Vec::new();
    let chars: Vec<char> = line.trim_end_matches('\n').chars().collect();
    let mut size = (room * 2).max(1);
    let mut at = 0;
    while at < chars.len() {
        let end = (at + size).min(chars.len());
        let mut text: String = chars[at..end].iter().collect();
        text.push('\n');
        let tokens = counter.count(&text);
        if tokens > room && size > 1 {
            size /= 2;
            continue;
        }
        out.push(Piece { text, tokens });
        at = end;
    }
    out
}

/// A numbered line of a section: its number and its mark (`+`, ` ` or `-`).
pub(crate) fn numbered(line: &str) -> Option<(u32, char)> {
    let rest = line.trim_start_matches(' ');
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let number = rest[..digits].parse().ok()?;
    let mut after = rest[digits..].chars();
    match (after.next(), after.next()) {
        (Some(' '), Some(mark)) if matches!(mark, '+' | ' ' | '-') => Some((number, mark)),
        (Some(' '), None) | (None, None) => Some((number, ' ')),
        _ => None,
    }
}

/// Head line numbers of the added lines printed in `text`, with those a move
/// line stands for ([`super::moves::span_of`]).
pub(crate) fn added_lines(text: &str) -> Vec<u32> {
    let mut lines: Vec<u32> = text
        .lines()
        .filter_map(|line| match numbered(line) {
            Some((n, '+')) => Some(n..=n),
            Some(_) => None,
            None => super::moves::span_of(line).map(|(a, b)| a..=b),
        })
        .flatten()
        .collect();
    lines.sort_unstable();
    lines.dedup();
    lines
}

/// First and last head line printed in `text` (`0-0` when none).
fn head_span(text: &str) -> (u32, u32) {
    let heads = text.lines().flat_map(|line| match numbered(line) {
        Some((_, '-')) => Vec::new(),
        Some((n, _)) => vec![n],
        None => super::moves::span_of(line).map_or_else(Vec::new, |(a, b)| vec![a, b]),
    });
    heads.fold((0, 0), |(lo, hi), n| {
        (if lo == 0 { n } else { lo.min(n) }, hi.max(n))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::tokens::Encoding;

    fn counter() -> TokenCounter {
        TokenCounter::new(Encoding::O200kBase)
    }

    fn section(path: &str, windows: usize, lines_per_window: u32) -> Section {
        let mut text = format!("--- a/{path}\n+++ b/{path}\n");
        for w in 0..windows as u32 {
            let start = w * 1000 + 1;
            text.push_str(&format!(
                "@@ -{start},0 +{start},{lines_per_window} @@ fn f{w}()\n"
            ));
            for n in start..start + lines_per_window {
                text.push_str(&format!(
                    "{n:>5} +    let value_{n} = compute({n}) + other({n});\n"
                ));
            }
        }
        Section {
            path: path.into(),
            text,
        }
    }

    fn all_added(sections: &[Section]) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = sections
            .iter()
            .flat_map(|s| {
                added_lines(&s.text)
                    .into_iter()
                    .map(|n| (s.path.clone(), n))
            })
            .collect();
        out.sort();
        out
    }

    fn sliced_added(slices: &[Slice]) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = slices
            .iter()
            .flat_map(|s| &s.lines)
            .flat_map(|(p, lines)| lines.iter().map(|n| (p.clone(), *n)))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn numbered_lines_are_read_with_their_marks() {
        assert_eq!(numbered("   12 +let x = 1;"), Some((12, '+')));
        assert_eq!(numbered("    7  context"), Some((7, ' ')));
        assert_eq!(numbered("    3 -removed"), Some((3, '-')));
        assert_eq!(numbered("@@ -1,2 +1,2 @@"), None);
        assert_eq!(numbered("[lines 4-9 of base removed]"), None);
    }

    #[test]
    fn every_added_line_lands_in_exactly_one_slice_within_budget() {
        let c = counter();
        let sections = vec![
            section("src/big.rs", 6, 120),
            section("src/small.rs", 1, 5),
            section("lib/huge_window.rs", 1, 900),
            section("docs/other.rs", 2, 10),
        ];
        let groups = vec![
            vec!["src/small.rs".to_string(), "src/big.rs".to_string()],
            vec!["src/small.rs".to_string()],
        ];
        let budget = 3_000;
        let slices = partition(&groups, &sections, budget, &c, Packing::PerGroup);
        assert_eq!(sliced_added(&slices), all_added(&sections));
        for slice in &slices {
            assert!(
                c.count(&slice.text) <= budget,
                "{} > {budget}",
                c.count(&slice.text)
            );
            assert!(slice.tokens <= budget);
        }
        // src/small.rs belongs to the first group that names it; the unnamed files trail.
        let small = slices
            .iter()
            .find(|s| s.files.contains(&"src/small.rs".to_string()));
        assert_eq!(small.map(|s| s.groups.clone()), Some(vec![0]));
        assert!(slices.iter().filter(|s| s.groups == [2]).count() >= 2);
        assert!(slices.iter().all(|s| !s.groups.contains(&1)));
        // Shared packing fills slices across groups and still shows every line once.
        let shared = partition(&groups, &sections, budget, &c, Packing::Shared);
        assert_eq!(sliced_added(&shared), all_added(&sections));
        assert!(shared.len() <= slices.len());
        assert!(shared.iter().all(|s| c.count(&s.text) <= budget));
    }

    #[test]
    fn shared_packing_puts_small_groups_together_and_per_group_keeps_them_apart() {
        let c = counter();
        let sections: Vec<Section> = (0..6).map(|i| section(&format!("f{i}.rs"), 1, 4)).collect();
        let groups: Vec<Vec<String>> = (0..6).map(|i| vec![format!("f{i}.rs")]).collect();
        let apart = partition(&groups, &sections, 24_000, &c, Packing::PerGroup);
        assert_eq!(apart.len(), 6);
        let together = partition(&groups, &sections, 24_000, &c, Packing::Shared);
        assert_eq!(together.len(), 1);
        assert_eq!(together[0].groups, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(sliced_added(&together), all_added(&sections));
    }

    #[test]
    fn parts_name_themselves_and_the_others() {
        let c = counter();
        let sections = vec![section("src/big.rs", 4, 200)];
        let slices = partition(&[], &sections, 2_500, &c, Packing::Shared);
        assert!(slices.len() >= 3, "{}", slices.len());
        let n = slices.len();
        for (i, slice) in slices.iter().enumerate() {
            let label = format!("part {} of {n} of src/big.rs", i + 1);
            assert!(slice.text.contains(&label), "{}", &slice.text[..200]);
            assert!(
                slice
                    .text
                    .starts_with("--- a/src/big.rs\n+++ b/src/big.rs\n")
            );
            assert!(slice.text.contains("are reviewed in other tasks"));
        }
        assert_eq!(sliced_added(&slices), all_added(&sections));
    }

    #[test]
    fn a_file_in_many_parts_keeps_every_part_within_the_budget() {
        let c = counter();
        let sections = vec![section(
            "src/a/very/long/path/to/a/generated_table_of_things.rs",
            40,
            60,
        )];
        let slices = partition(&[], &sections, 1_200, &c, Packing::Shared);
        assert!(slices.len() > 20, "{}", slices.len());
        for slice in &slices {
            assert!(c.count(&slice.text) <= 1_200, "{}", c.count(&slice.text));
        }
        assert!(
            slices[0]
                .text
                .contains(" more) are reviewed in other tasks")
        );
        assert_eq!(sliced_added(&slices), all_added(&sections));
    }

    #[test]
    fn a_line_larger_than_the_budget_is_cut_not_lost() {
        let c = counter();
        let long = "x".repeat(40_000);
        let sections = vec![Section {
            path: "min.js".into(),
            text: format!("--- a/min.js\n+++ b/min.js\n@@ -0,0 +1,1 @@\n    1 +{long}\n"),
        }];
        let slices = partition(&[], &sections, 1_000, &c, Packing::Shared);
        assert!(slices.len() > 1);
        for slice in &slices {
            assert!(c.count(&slice.text) <= 1_000);
        }
        let joined: String = slices.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(joined.matches('x').count(), 40_000);
    }

    #[test]
    fn shared_slices_are_filled_before_a_new_one_is_opened() {
        let c = counter();
        // Sections of mixed sizes, in an order that leaves gaps for next fit.
        let sections: Vec<Section> = (0..30)
            .map(|i| section(&format!("f{i}.rs"), 1, [40, 5, 25, 10][i % 4]))
            .collect();
        let groups: Vec<Vec<String>> = (0..30).map(|i| vec![format!("f{i}.rs")]).collect();
        let budget = 3_000;
        let slices = partition(&groups, &sections, budget, &c, Packing::Shared);
        assert_eq!(sliced_added(&slices), all_added(&sections));
        // First fit: no two slices could have been one, so at most one is half empty
        // and the count is within one of the least possible.
        for (i, a) in slices.iter().enumerate() {
            for b in &slices[i + 1..] {
                assert!(a.tokens + b.tokens > budget, "{} + {}", a.tokens, b.tokens);
            }
        }
        let total: usize = slices.iter().map(|s| s.tokens).sum();
        assert!(
            slices.len() <= total.div_ceil(budget) + 1,
            "{}",
            slices.len()
        );
    }

    #[test]
    fn a_file_cut_anyway_begins_in_the_room_left_by_earlier_files() {
        let c = counter();
        let sections = vec![section("src/small.rs", 1, 30), section("src/big.rs", 8, 60)];
        let budget = 3_000;
        let small = c.count(&sections[0].text);
        let big = c.count(&sections[1].text);
        assert!(small < budget / 2 && big > 2 * budget);
        let slices = partition(&[], &sections, budget, &c, Packing::Shared);
        assert!(slices[0].text.contains("part 1 of"), "{}", slices[0].text);
        assert!(slices[0].tokens > budget / 2, "{}", slices[0].tokens);
        assert!(slices.iter().all(|s| s.tokens <= budget));
        assert_eq!(sliced_added(&slices), all_added(&sections));
        // Per group, the big file starts its own slices as before.
        let apart = partition(
            &[vec!["src/small.rs".into()], vec!["src/big.rs".into()]],
            &sections,
            budget,
            &c,
            Packing::PerGroup,
        );
        assert_eq!(apart[0].files, vec!["src/small.rs".to_string()]);
        assert!(slices.len() <= apart.len());
    }

    #[test]
    fn small_sections_share_one_slice() {
        let c = counter();
        let sections: Vec<Section> = (0..5).map(|i| section(&format!("f{i}.rs"), 1, 3)).collect();
        let slices = partition(&[], &sections, 24_000, &c, Packing::PerGroup);
        assert_eq!(slices.len(), 1);
        assert_eq!(slices[0].files.len(), 5);
    }
}
