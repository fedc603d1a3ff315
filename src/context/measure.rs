//! Token counts of many texts at a bounded cost.
//!
//! Counting is the expensive part of shaping a huge change: a 5,000-file change
//! carries tens of megabytes of file content. Texts are counted exactly while
//! their total stays under a byte limit; above it, an even sample of the texts
//! is counted and the rest is extrapolated at the sample's tokens per byte. A
//! single very large text is counted on its first part and scaled.

use crate::llm::tokens::TokenCounter;
use crate::text::prefix_at_char_boundary;

/// A token count, exact or estimated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Measured {
    /// Tokens.
    pub tokens: usize,
    /// Whether `tokens` was counted rather than estimated.
    pub exact: bool,
}

/// Longest single text counted in full; longer ones are counted on this many bytes and scaled.
pub(crate) const TEXT_CAP_BYTES: usize = 256 * 1024;

/// Tokens per byte assumed before anything was counted (source code runs at about 3-4 bytes a token).
const DEFAULT_TOKENS_PER_BYTE: f64 = 0.3;

/// Measures `texts`: exactly while their total is at most `exact_bytes`,
/// otherwise by an even sample of about `exact_bytes`. Returns the counts and
/// the tokens per byte seen.
pub(crate) fn measure_texts(
    counter: &TokenCounter,
    texts: &[&str],
    exact_bytes: usize,
) -> (Vec<Measured>, f64) {
    let total: usize = texts.iter().map(|t| t.len()).sum();
    let stride = total.div_ceil(exact_bytes.max(1)).max(1);
    let sample: Vec<usize> = (0..texts.len())
        .filter(|i| i % stride == 0 && !texts[*i].is_empty())
        .collect();
    let prefixes: Vec<&str> = sample
        .iter()
        .map(|&i| prefix_at_char_boundary(texts[i], TEXT_CAP_BYTES))
        .collect();
    let counts = super::count_parallel(counter, &prefixes);
    let counted_bytes: usize = prefixes.iter().map(|p| p.len()).sum();
    let counted_tokens: usize = counts.iter().sum();
    let ratio = if counted_bytes == 0 {
        DEFAULT_TOKENS_PER_BYTE
    } else {
        counted_tokens as f64 / counted_bytes as f64
    };
    let mut measured: Vec<Measured> = texts
        .iter()
        .map(|t| Measured {
            tokens: estimate(t.len(), ratio),
            exact: t.is_empty(),
        })
        .collect();
    for ((&i, prefix), tokens) in sample.iter().zip(&prefixes).zip(counts) {
        let whole = prefix.len() == texts[i].len();
        measured[i] = Measured {
            tokens: if whole {
                tokens
            } else {
                estimate(texts[i].len(), tokens as f64 / prefix.len().max(1) as f64)
            },
            exact: whole,
        };
    }
    (measured, ratio)
}

/// Tokens of `bytes` bytes at `ratio` tokens per byte.
pub(crate) fn estimate(bytes: usize, ratio: f64) -> usize {
    (bytes as f64 * ratio).round() as usize
}

/// Counts one text, exactly unless it is longer than [`TEXT_CAP_BYTES`].
pub(crate) fn measure_one(counter: &TokenCounter, text: &str) -> Measured {
    let head = prefix_at_char_boundary(text, TEXT_CAP_BYTES);
    let tokens = counter.count(head);
    if head.len() == text.len() {
        Measured {
            tokens,
            exact: true,
        }
    } else {
        Measured {
            tokens: estimate(text.len(), tokens as f64 / head.len().max(1) as f64),
            exact: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::tokens::Encoding;

    #[test]
    fn small_totals_are_exact_and_large_ones_sampled() {
        let counter = TokenCounter::new(Encoding::Cl100kBase);
        let texts: Vec<String> = (0..40)
            .map(|i| format!("fn f{i}() {{ call({i}); }}\n").repeat(50))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (exact, _) = measure_texts(&counter, &refs, usize::MAX);
        assert!(exact.iter().all(|m| m.exact));
        let truth: usize = refs.iter().map(|t| counter.count(t)).sum();
        assert_eq!(exact.iter().map(|m| m.tokens).sum::<usize>(), truth);
        let (sampled, ratio) = measure_texts(&counter, &refs, 4_000);
        assert!(sampled.iter().any(|m| !m.exact) && sampled.iter().any(|m| m.exact));
        assert!(ratio > 0.1 && ratio < 1.0);
        let estimate: usize = sampled.iter().map(|m| m.tokens).sum();
        let error = (estimate as f64 - truth as f64).abs() / truth as f64;
        assert!(error < 0.05, "estimate {estimate} vs {truth}");
    }

    #[test]
    fn a_huge_text_is_scaled_from_its_first_part() {
        let counter = TokenCounter::new(Encoding::Cl100kBase);
        let text = "let x = compute(1, 2);\n".repeat(2 * TEXT_CAP_BYTES / 20);
        let measured = measure_one(&counter, &text);
        assert!(!measured.exact);
        let truth = counter.count(&text);
        let error = (measured.tokens as f64 - truth as f64).abs() / truth as f64;
        assert!(error < 0.02, "{} vs {truth}", measured.tokens);
        assert!(measure_one(&counter, "short text").exact);
    }
}
