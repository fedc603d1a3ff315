//! The client-side output limit: a model that ignores `max_tokens` and keeps
//! streaming is cut off by the client.
//!
//! Invariant: a reply that was cut holds at most `max_tokens` plus the tokens
//! of one streamed fragment, as counted here. Only new fragments are counted
//! (never the whole reply again), so the cost is linear in the reply.

use super::tokens::Encoding;

/// Counts the tokens of streamed reply fragments against the request's `max_tokens`.
#[derive(Debug)]
pub(crate) struct OutputBudget {
    limit: u64,
    counted: u64,
    encoding: Encoding,
}

impl OutputBudget {
    /// A budget of `max_tokens` tokens counted in `model`'s encoding.
    ///
    /// Models without a public tokenizer are counted with plain `cl100k_base`,
    /// without the 10% safety margin used for prompts: here an over-count would
    /// cut a reply the server was entitled to finish, while an under-count only
    /// lets a misbehaving server run a little past the limit.
    pub fn new(model: &str, max_tokens: u32) -> Self {
        let encoding = match Encoding::for_model(model) {
            Encoding::Approximate => Encoding::Cl100kBase,
            exact => exact,
        };
        OutputBudget {
            limit: u64::from(max_tokens),
            counted: 0,
            encoding,
        }
    }

    /// Counts one newly streamed fragment; true once the reply is past the limit.
    pub(crate) fn spend(&mut self, fragment: &str) -> bool {
        self.counted += self.encoding.count(fragment) as u64;
        self.exceeded()
    }

    /// Whether the counted reply is past the limit.
    pub fn exceeded(&self) -> bool {
        self.counted > self.limit
    }

    /// Tokens counted so far.
    pub fn counted(&self) -> u64 {
        self.counted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trips_only_past_the_limit() {
        let mut budget = OutputBudget::new("gpt-4o", 3);
        assert!(!budget.spend("one"));
        assert!(!budget.spend(" two"));
        assert!(!budget.spend(""));
        assert!(!budget.spend(" three"));
        assert!(budget.spend(" four"));
        assert_eq!(budget.counted(), 4);
    }

    #[test]
    fn unknown_models_count_without_the_margin() {
        let text = "fn main() { println!(\"hello\"); }";
        let mut budget = OutputBudget::new("claude-sonnet-4-5", 1000);
        budget.spend(text);
        assert_eq!(budget.counted() as usize, Encoding::Cl100kBase.count(text));
    }
}
