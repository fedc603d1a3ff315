//! A simulation of OpenAI's automatic prompt caching, for cost measurements.
//!
//! Rule (as OpenAI documents it): a request's cached tokens are the longest
//! prefix of its prompt, in tokens, shared with any earlier request, rounded
//! down to a multiple of 128 tokens and reported only when at least 1,024.
//!
//! The prompt is the request's tools, then its system prompt (Anthropic), then
//! each message, each serialised as JSON and tokenized on its own with the
//! tokenizer Redline uses for the request's model, so that a conversation that
//! grows by appending messages keeps its earlier tokens as an exact prefix.
//! "Earlier" means received earlier by the server (concurrent requests see
//! each other in arrival order).

use serde_json::Value;

/// Cache hits come in blocks of this many tokens.
pub const CACHE_BLOCK_TOKENS: usize = 128;

/// Shorter shared prefixes are not cached.
pub const CACHE_MIN_TOKENS: usize = 1_024;

/// The cached tokens reported for a shared prefix of `shared` tokens.
pub fn cached_tokens_for_prefix(shared: usize) -> usize {
    let blocks = shared / CACHE_BLOCK_TOKENS * CACHE_BLOCK_TOKENS;
    if blocks >= CACHE_MIN_TOKENS {
        blocks
    } else {
        0
    }
}

/// The prompt of a request body as tokens (see the module doc).
pub fn prompt_tokens(body: &Value) -> Vec<u32> {
    let model = body["model"].as_str().unwrap_or_default();
    let bpe = match redline::llm::tokens::Encoding::for_model(model) {
        redline::llm::tokens::Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        _ => tiktoken_rs::cl100k_base_singleton(),
    };
    let mut segments: Vec<&Value> = Vec::new();
    for key in ["tools", "system"] {
        if !body[key].is_null() {
            segments.push(&body[key]);
        }
    }
    if let Some(messages) = body["messages"].as_array() {
        segments.extend(messages);
    }
    if segments.is_empty() {
        segments.push(body);
    }
    segments
        .iter()
        .flat_map(|segment| bpe.encode_ordinary(&segment.to_string()))
        .collect()
}

/// The prompts seen so far.
#[derive(Debug, Default)]
pub struct PromptCache {
    seen: Vec<Vec<u32>>,
}

impl PromptCache {
    /// Records `prompt` and returns its cached tokens under the rule.
    pub fn admit(&mut self, prompt: Vec<u32>) -> usize {
        let shared = self
            .seen
            .iter()
            .map(|earlier| common_prefix(earlier, &prompt))
            .max()
            .unwrap_or(0);
        self.seen.push(prompt);
        cached_tokens_for_prefix(shared)
    }
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shared_prefixes_are_cached_in_128_token_blocks_from_1024_tokens() {
        assert_eq!(cached_tokens_for_prefix(0), 0);
        assert_eq!(cached_tokens_for_prefix(1_023), 0);
        assert_eq!(cached_tokens_for_prefix(1_024), 1_024);
        assert_eq!(cached_tokens_for_prefix(1_151), 1_024);
        assert_eq!(cached_tokens_for_prefix(1_152), 1_152);
        assert_eq!(cached_tokens_for_prefix(5_000), 4_992);
    }

    #[test]
    fn the_longest_prefix_shared_with_any_earlier_prompt_counts() {
        let mut cache = PromptCache::default();
        let long: Vec<u32> = (0..3_000).collect();
        assert_eq!(cache.admit(long.clone()), 0, "nothing is cached at first");
        let mut other: Vec<u32> = (0..1_100).collect();
        other.push(99_999);
        assert_eq!(cache.admit(other), 1_024);
        let mut longer = long[..2_500].to_vec();
        longer.extend([7, 7, 7]);
        assert_eq!(
            cache.admit(longer),
            2_432,
            "the longest of the shared prefixes"
        );
        assert_eq!(cache.admit(vec![1, 2, 3]), 0);
    }

    #[test]
    fn a_conversation_that_appends_messages_keeps_its_prompt_as_a_prefix() {
        let system = json!({"role": "system", "content": "review carefully ".repeat(50)});
        let first = json!({"model": "gpt-4.1-mini", "messages": [system, {"role": "user", "content": "a"}]});
        let second = json!({"model": "gpt-4.1-mini", "messages": [system, {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"}]});
        let (first, second) = (prompt_tokens(&first), prompt_tokens(&second));
        assert!(second.len() > first.len());
        assert_eq!(second[..first.len()], first[..]);
    }
}
