//! Measuring and packing: what each file costs, and which files fit the budget.
//!
//! Small changes are counted exactly. For huge ones the naive prompt is
//! sampled ([`super::measure`]), and a file's section is counted exactly only
//! when it might still fit; the others keep an estimate, marked as such.

use crate::llm::tokens::TokenCounter;

use super::listing;
use super::measure::{measure_one, measure_texts};
use super::message::{fixed_items, header, over_budget_items, render_message};
use super::shape::{Facts, Prepared, Role};

/// Naive-prompt text (head contents plus plain diffs) counted exactly; beyond it, sampled.
pub(crate) const EXACT_NAIVE_BYTES: usize = 1024 * 1024;

/// Section text counted exactly up front; beyond it, counted only when a section might fit.
pub(crate) const EXACT_SECTION_BYTES: usize = 512 * 1024;

/// An estimated section is counted when its estimate is within this factor of the room left.
const MIGHT_FIT_FACTOR: f64 = 1.15;

/// Estimated sections counted in vain (they did not fit after all) before the
/// packing stops trying: in a huge change of similar files they would all be.
const MAX_NEAR_MISSES: usize = 32;

/// In the first packing pass, no file may take more than this fraction (1/n) of the room.
const LARGE_FILE_SHARE: usize = 3;

/// Re-renders allowed when the estimate overshoots (it is off by a few tokens at most).
const MAX_REFITS: usize = 8;

/// Measures each file's plain diff and head text (the naive prompt) and its
/// section; returns the naive total and whether it is exact.
pub(crate) fn measure_files(
    prepared: &mut [Prepared<'_>],
    plains: &[String],
    heads: &[Option<String>],
    counter: &TokenCounter,
) -> (usize, bool) {
    let plain_texts: Vec<&str> = plains.iter().map(String::as_str).collect();
    let head_texts: Vec<&str> = heads.iter().map(|h| h.as_deref().unwrap_or("")).collect();
    let plain_bytes: usize = plain_texts.iter().map(|t| t.len()).sum();
    let head_bytes: usize = head_texts.iter().map(|t| t.len()).sum();
    let total = (plain_bytes + head_bytes).max(1);
    let plain_share = (EXACT_NAIVE_BYTES as f64 * plain_bytes as f64 / total as f64) as usize;
    let (plain_counts, _) = measure_texts(counter, &plain_texts, plain_share.max(1));
    let (head_counts, _) = measure_texts(
        counter,
        &head_texts,
        (EXACT_NAIVE_BYTES - plain_share).max(1),
    );
    let section_texts: Vec<&str> = prepared
        .iter()
        .map(|p| p.section.as_ref().map_or("", |s| s.text.as_str()))
        .collect();
    let (section_counts, _) = measure_texts(counter, &section_texts, EXACT_SECTION_BYTES);
    let mut naive = 0;
    let mut exact = true;
    for (i, p) in prepared.iter_mut().enumerate() {
        p.plain_tokens = plain_counts[i];
        p.section_tokens = section_counts[i];
        naive += plain_counts[i].tokens + head_counts[i].tokens;
        exact &= plain_counts[i].exact && head_counts[i].exact;
    }
    (naive, exact)
}

/// Chooses the files to show (by index into `prepared`, which is in review order).
/// The listing of what does not fit is reserved for first, then refined, so the
/// message stays within the budget without re-encoding it over and over.
pub(crate) fn pack(
    prepared: &mut [Prepared<'_>],
    facts: &Facts,
    counter: &TokenCounter,
) -> Vec<bool> {
    let none = vec![false; prepared.len()];
    let fixed = counter.count(&header(prepared, &none, facts, true))
        + counter.count(&listing::render_fixed(&fixed_items(prepared)));
    let mut reserve = 0;
    let mut shown = greedy(prepared, facts.budget.saturating_sub(fixed), counter);
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
        shown = greedy(
            prepared,
            facts.budget.saturating_sub(fixed + reserve),
            counter,
        );
    }
    shown
}

/// Shows files in review order while they fit in `available` tokens, counting
/// an estimated section exactly when it might fit. A first pass takes no file
/// larger than a third of the room, so one huge file cannot crowd out all the
/// others; a second pass then fills what is left in the same order.
fn greedy(prepared: &mut [Prepared<'_>], available: usize, counter: &TokenCounter) -> Vec<bool> {
    let mut shown = vec![false; prepared.len()];
    let mut left = available;
    let mut near_misses = 0;
    for cap in [available / LARGE_FILE_SHARE, usize::MAX] {
        for (p, shown) in prepared.iter_mut().zip(shown.iter_mut()) {
            if *shown || p.role != Role::Candidate {
                continue;
            }
            let room = left.min(cap);
            if !p.section_tokens.exact
                && near_misses < MAX_NEAR_MISSES
                && (p.section_tokens.tokens as f64 / MIGHT_FIT_FACTOR) as usize <= room
                && let Some(section) = &p.section
            {
                p.section_tokens = measure_one(counter, &section.text);
                if p.section_tokens.tokens > room {
                    near_misses += 1;
                }
            }
            if p.section_tokens.exact && p.section_tokens.tokens <= room {
                *shown = true;
                left -= p.section_tokens.tokens;
            }
        }
    }
    shown
}

/// Renders the message and counts it; when the parts' estimate was a little
/// short, drops the last shown files until the real count fits the budget.
pub(crate) fn fit_exactly(
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
