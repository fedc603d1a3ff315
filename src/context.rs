//! What the model sees, shaped and compressed in stages and measured in real tokens.
//!
//! Every model call pays for the whole history again, so Redline keeps it small
//! without ever losing the changed lines, the findings made so far, or the task:
//!
//! 1. **Shape** ([`shape_change`], before the first call): the change becomes the
//!    first user message within a budget ([`stage1_budget`]). Noise (lockfiles,
//!    generated, vendored, minified, binary, snapshots, config excludes) is listed
//!    by name, deletions are summarised, every other changed line is shown with
//!    numbered, asymmetric context, or its file is listed with its size when the
//!    budget runs out.
//! 2. **Prune** ([`Pruner`], before every call): past a share of the window, old
//!    results the model has seen become one-line stubs that say how to get them
//!    again (a result not yet seen is never elided); oversized new ones are cut
//!    to head and tail; [`ReadTracker`] answers a repeated read with a pointer to the result
//!    still in view, and [`FirstMessageIndex`] a request for what the first
//!    message already shows with a pointer to it.
//! 3. **Summarise** ([`needs_summary`], [`summary_request`], [`compact`]) when the
//!    history passes a share of the window; [`drop_oldest_turns`] is the last
//!    resort after a context-length error.
//!
//! Findings already submitted are kept by the orchestrator as structured data
//! outside the history, so no stage can lose them; the pruner also never elides
//! the result of a findings tool or any error observation.

mod excerpt;
mod listing;
mod marks;
mod measure;
mod message;
pub(crate) mod moves;
pub mod noise;
pub mod order;
mod pack;
mod partition;
mod prune;
mod reads;
mod report;
mod shape;
mod shown;
mod summarize;

pub use excerpt::AfterContext;
pub use moves::MoveSummary;
pub(crate) use partition::{Packing, Slice, numbered as numbered_diff_line, partition};
pub use prune::{
    DEFAULT_KEEP_RECENT, DEFAULT_MAX_OBSERVATION_TOKENS, DEFAULT_PRUNE_THRESHOLD, LOW_WATER,
    PruneStats, Pruner, prune_threshold_tokens,
};
pub use reads::ReadTracker;
pub use shape::{FileEntry, ShapeOptions, ShapeStatus, ShapedContext, shape_change, stage1_budget};
pub(crate) use shape::{STAGE1_MIN_BUDGET, shape_with_moves};
pub(crate) use shown::FirstMessageIndex;
pub(crate) use summarize::{DEFAULT_SUMMARY_THRESHOLD, needs_summary};
pub use summarize::{SUMMARY_PROMPT, compact, drop_oldest_turns, summary_request};

use crate::llm::tokens::TokenCounter;

/// Counts many texts on all cores. The counter's cache is shared, so a text
/// counted here is free to count again later.
pub(crate) fn count_parallel(counter: &TokenCounter, texts: &[&str]) -> Vec<usize> {
    parallel_map(texts, |text| counter.count(text))
}

/// `f` over `items` on all cores (at most 8 threads), results in order. Falls
/// back to this thread for small inputs or when a worker cannot be used.
pub(crate) fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    const CHUNK: usize = 16;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    if threads <= 1 || items.len() < 2 * CHUNK {
        return items.iter().map(&f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let start = next.fetch_add(CHUNK, Ordering::Relaxed);
            let Some(chunk) = items.get(start..(start + CHUNK).min(items.len())) else {
                break;
            };
            if chunk.is_empty() {
                break;
            }
            done.push((start, chunk.iter().map(&f).collect::<Vec<R>>()));
        }
        done
    };
    let mut parts: Vec<(usize, Vec<R>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut parts = work();
        for worker in workers {
            // A worker that panicked leaves a gap, filled in below.
            if let Ok(done) = worker.join() {
                parts.extend(done);
            }
        }
        parts
    });
    parts.sort_by_key(|(start, _)| *start);
    let mut out = Vec::with_capacity(items.len());
    for (start, results) in parts {
        // Redo any chunk a failed worker dropped, in order.
        while out.len() < start {
            out.push(f(&items[out.len()]));
        }
        out.extend(results);
    }
    while out.len() < items.len() {
        out.push(f(&items[out.len()]));
    }
    out
}

/// `1234567` → `1,234,567`.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::tokens::Encoding;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_840), "1,840");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn parallel_map_keeps_the_order() {
        let items: Vec<usize> = (0..1_000).collect();
        let doubled = parallel_map(&items, |n| n * 2);
        assert_eq!(doubled, items.iter().map(|n| n * 2).collect::<Vec<_>>());
    }

    #[test]
    fn parallel_counts_match_serial_counts() {
        let counter = TokenCounter::new(Encoding::Cl100kBase);
        let big = "fn main() { println!(\"hello world\"); }\n".repeat(4_000);
        let texts: Vec<String> = (0..8).map(|i| format!("{i} {big}")).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let parallel = count_parallel(&counter, &refs);
        let serial: Vec<usize> = refs.iter().map(|t| Encoding::Cl100kBase.count(t)).collect();
        assert_eq!(parallel, serial);
    }
}
