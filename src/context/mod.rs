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
//! 2. **Prune** ([`Pruner`], before every call): old tool results become one-line
//!    stubs that say how to get them again; oversized ones are cut to head and
//!    tail; [`ReadTracker`] answers a repeated read with a pointer to the result
//!    still in view.
//! 3. **Summarise** ([`needs_summary`], [`summary_request`], [`compact`]) when the
//!    history passes a share of the window; [`drop_oldest_turns`] is the last
//!    resort after a context-length error.
//!
//! Findings already submitted are kept by the orchestrator as structured data
//! outside the history, so no stage can lose them; the pruner also never elides
//! the result of a findings tool or any error observation.

mod excerpt;
mod listing;
mod measure;
mod message;
pub mod noise;
pub mod order;
mod pack;
mod prune;
mod reads;
mod report;
mod shape;
mod summarize;

pub use noise::{ExcludeGlobError, NoiseKind, compile_excludes};
pub use prune::{PruneStats, Pruner};
pub use reads::ReadTracker;
pub use shape::{
    FileEntry, STAGE1_MAX_BUDGET, STAGE1_MIN_BUDGET, ShapeOptions, ShapeStatus, ShapedContext,
    shape_change, stage1_budget,
};
pub use summarize::{
    DEFAULT_SUMMARY_THRESHOLD, SUMMARY_PROMPT, compact, drop_oldest_turns, needs_summary,
    summary_request,
};

use crate::llm::tokens::TokenCounter;

/// Counts many texts on all cores. The counter's cache is shared, so a text
/// counted here is free to count again later.
pub(crate) fn count_parallel(counter: &TokenCounter, texts: &[&str]) -> Vec<usize> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    let total_bytes: usize = texts.iter().map(|t| t.len()).sum();
    if threads <= 1 || total_bytes < 256 * 1024 {
        return texts.iter().map(|t| counter.count(t)).collect();
    }
    let next = AtomicUsize::new(0);
    let mut counts = vec![0; texts.len()];
    let results: Vec<Vec<(usize, usize)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(text) = texts.get(i) else { break };
                        done.push((i, counter.count(text)));
                    }
                    done
                })
            })
            .collect();
        workers.into_iter().filter_map(|w| w.join().ok()).collect()
    });
    let mut filled = 0;
    for (i, n) in results.into_iter().flatten() {
        counts[i] = n;
        filled += 1;
    }
    if filled < texts.len() {
        // A worker died; count what it left on this thread.
        return texts.iter().map(|t| counter.count(t)).collect();
    }
    counts
}

/// `1234567` → `1,234,567`.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
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
