//! What a model call costs: a built-in table of list prices, overridable per
//! model in `.redline.toml` (`[pricing."MODEL"]`), and the cost of a [`Usage`].
//!
//! Invariants: every price is finite and not negative (checked where overrides
//! are read); a model missing from the table and the overrides has no price,
//! and its cost is unknown (`None`), never zero.

use std::collections::BTreeMap;

use super::Usage;

/// USD per million tokens of one model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Prompt tokens not read from or written to a cache.
    pub input: f64,
    /// Prompt tokens read from the provider's prompt cache.
    pub cached_input: f64,
    /// Prompt tokens written to the provider's prompt cache.
    pub cache_write: f64,
    /// Completion tokens (reasoning tokens included).
    pub output: f64,
}

const MILLION: f64 = 1_000_000.0;

impl Price {
    /// The cost in USD of one call's usage. `Usage.prompt_tokens` includes the
    /// cached and cache-write tokens; each part is billed at its own rate.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_prompt_tokens.min(usage.prompt_tokens);
        let written = usage
            .cache_write_tokens
            .min(usage.prompt_tokens.saturating_sub(cached));
        let plain = usage.prompt_tokens - cached - written;
        (plain as f64 * self.input
            + cached as f64 * self.cached_input
            + written as f64 * self.cache_write
            + usage.completion_tokens as f64 * self.output)
            / MILLION
    }

    /// The most one prompt token can cost (a cache write can cost more than plain input).
    pub(crate) fn worst_prompt_token(&self) -> f64 {
        self.input.max(self.cache_write).max(self.cached_input) / MILLION
    }

    /// The cost of one completion token.
    pub(crate) fn output_token(&self) -> f64 {
        self.output / MILLION
    }
}

/// Built-in list prices in USD per million tokens (standard tier, no batch discount),
/// from the providers' pricing pages (OpenAI, Anthropic, DeepSeek) as of 2025-11.
/// Prices change: override them with `[pricing."MODEL"]` in `.redline.toml`.
/// OpenAI and DeepSeek do not bill cache writes apart, so there `cache_write` = `input`;
/// Anthropic's `cache_write` is its 5-minute cache-write rate.
const PRICE_TABLE: &[(&str, Price)] = &[
    ("gpt-4.1", price(2.00, 0.50, 2.00, 8.00)),
    ("gpt-4.1-mini", price(0.40, 0.10, 0.40, 1.60)),
    ("gpt-4.1-nano", price(0.10, 0.025, 0.10, 0.40)),
    ("gpt-4o", price(2.50, 1.25, 2.50, 10.00)),
    ("gpt-4o-mini", price(0.15, 0.075, 0.15, 0.60)),
    ("o3", price(2.00, 0.50, 2.00, 8.00)),
    ("o4-mini", price(1.10, 0.275, 1.10, 4.40)),
    ("claude-sonnet-4-5", price(3.00, 0.30, 3.75, 15.00)),
    ("claude-sonnet-4-0", price(3.00, 0.30, 3.75, 15.00)),
    ("claude-sonnet-4", price(3.00, 0.30, 3.75, 15.00)),
    ("claude-opus-4-5", price(5.00, 0.50, 6.25, 25.00)),
    ("claude-opus-4-1", price(15.00, 1.50, 18.75, 75.00)),
    ("claude-opus-4-0", price(15.00, 1.50, 18.75, 75.00)),
    ("claude-opus-4", price(15.00, 1.50, 18.75, 75.00)),
    ("claude-haiku-4-5", price(1.00, 0.10, 1.25, 5.00)),
    ("deepseek-chat", price(0.28, 0.028, 0.28, 0.42)),
];

const fn price(input: f64, cached_input: f64, cache_write: f64, output: f64) -> Price {
    Price {
        input,
        cached_input,
        cache_write,
        output,
    }
}

/// The built-in table plus overrides; overrides are matched on the exact model name.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PriceTable {
    overrides: BTreeMap<String, Price>,
}

impl PriceTable {
    /// The built-in table with `overrides` (model name as the provider knows it → price).
    pub(crate) fn with_overrides(overrides: BTreeMap<String, Price>) -> Self {
        PriceTable { overrides }
    }

    /// The price of `model`: an override of exactly that name, else the built-in
    /// entry of the name without a `provider/` prefix and a date or `-latest` suffix.
    pub fn lookup(&self, model: &str) -> Option<Price> {
        if let Some(price) = self.overrides.get(model) {
            return Some(*price);
        }
        builtin_price(model)
    }
}

/// The built-in price of a model, `None` for local and unknown models.
pub(crate) fn builtin_price(model: &str) -> Option<Price> {
    let lower = model.trim().to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let find = |n: &str| {
        PRICE_TABLE
            .iter()
            .find(|(known, _)| *known == n)
            .map(|(_, p)| *p)
    };
    find(name).or_else(|| find(without_snapshot_suffix(name)))
}

/// `gpt-4.1-2025-04-14` → `gpt-4.1`, `claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`,
/// `claude-opus-4-1-latest` → `claude-opus-4-1`.
fn without_snapshot_suffix(name: &str) -> &str {
    if let Some(stem) = name.strip_suffix("-latest") {
        return stem;
    }
    let bytes = name.as_bytes();
    let digits_before =
        |end: usize, n: usize| end >= n && bytes[end - n..end].iter().all(u8::is_ascii_digit);
    // -YYYYMMDD
    if name.len() > 9 && digits_before(name.len(), 8) && bytes[name.len() - 9] == b'-' {
        return &name[..name.len() - 9];
    }
    // -YYYY-MM-DD
    let len = name.len();
    if len > 11
        && digits_before(len, 2)
        && bytes[len - 3] == b'-'
        && digits_before(len - 3, 2)
        && bytes[len - 6] == b'-'
        && digits_before(len - 6, 4)
        && bytes[len - 11] == b'-'
    {
        return &name[..len - 11];
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(prompt: u64, cached: u64, written: u64, completion: u64) -> Usage {
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_prompt_tokens: cached,
            cache_write_tokens: written,
            estimated: false,
        }
    }

    #[test]
    fn cost_bills_each_part_at_its_rate() {
        let p = price(2.0, 0.5, 3.0, 8.0);
        // 600 plain × 2 + 300 cached × 0.5 + 100 written × 3 + 50 out × 8, per million.
        let cost = p.cost(&usage(1_000, 300, 100, 50));
        let expected = (600.0 * 2.0 + 300.0 * 0.5 + 100.0 * 3.0 + 50.0 * 8.0) / 1e6;
        assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
    }

    #[test]
    fn cached_counts_larger_than_the_prompt_are_clamped() {
        let p = price(1.0, 0.1, 1.25, 5.0);
        let cost = p.cost(&usage(100, 500, 500, 0));
        assert!((cost - 100.0 * 0.1 / 1e6).abs() < 1e-15, "{cost}");
    }

    #[test]
    fn names_are_normalised_and_unknown_models_have_no_price() {
        let mini = builtin_price("gpt-4.1-mini").unwrap();
        assert_eq!(mini.input, 0.40);
        assert_eq!(
            builtin_price("openai/gpt-4.1-2025-04-14").unwrap().input,
            2.00
        );
        assert_eq!(
            builtin_price("claude-sonnet-4-5-20250929").unwrap().output,
            15.00
        );
        assert_eq!(builtin_price("claude-opus-4-1-latest").unwrap().input, 15.0);
        assert_eq!(builtin_price("qwen2.5-coder:7b"), None);
        assert_eq!(builtin_price("gpt-4.1-mega"), None);
    }

    #[test]
    fn overrides_win_on_the_exact_name() {
        let table =
            PriceTable::with_overrides([("gpt-4.1".to_string(), price(1.0, 1.0, 1.0, 1.0))].into());
        assert_eq!(table.lookup("gpt-4.1").unwrap().output, 1.0);
        assert_eq!(table.lookup("gpt-4.1-mini").unwrap().output, 1.60);
        assert_eq!(table.lookup("local-llama"), None);
    }
}
