//! Token counting with tiktoken, and the table of known models.
//!
//! OpenAI models use their real encodings (`o200k_base` for the GPT-4o, 4.1, 5
//! and o-series families, `cl100k_base` for GPT-4 and GPT-3.5). For Anthropic and
//! unknown models no public tokenizer exists; Redline counts with `cl100k_base`
//! and adds 10%, which over-estimates rather than overflows.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// The tokenizer used for a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// GPT-4o and later OpenAI models.
    O200kBase,
    /// GPT-4, GPT-3.5.
    Cl100kBase,
    /// Not an OpenAI model: `cl100k_base` plus 10%.
    Approximate,
}

impl Encoding {
    /// The name reported in `redline context` output.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
            Encoding::Approximate => "approx_cl100k_base",
        }
    }

    /// The encoding for a model name.
    pub fn for_model(model: &str) -> Encoding {
        let m = model.to_ascii_lowercase();
        let m = m.rsplit('/').next().unwrap_or(&m); // openrouter-style "openai/gpt-4o"
        if m.starts_with("gpt-4o")
            || m.starts_with("gpt-4.1")
            || m.starts_with("gpt-4.5")
            || m.starts_with("gpt-5")
            || m.starts_with("chatgpt-4o")
            || m.starts_with("o1")
            || m.starts_with("o3")
            || m.starts_with("o4")
        {
            Encoding::O200kBase
        } else if m.starts_with("gpt-4")
            || m.starts_with("gpt-3.5")
            || m.starts_with("text-embedding")
        {
            Encoding::Cl100kBase
        } else {
            Encoding::Approximate
        }
    }

    /// Tokens of `text` in this encoding.
    pub fn count(self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        match self {
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton()
                .encode_ordinary(text)
                .len(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton()
                .encode_ordinary(text)
                .len(),
            Encoding::Approximate => {
                let n = tiktoken_rs::cl100k_base_singleton()
                    .encode_ordinary(text)
                    .len();
                n + n.div_ceil(10)
            }
        }
    }
}

/// Per-message overhead of chat formatting (role markers), as OpenAI documents it.
pub(crate) const MESSAGE_OVERHEAD_TOKENS: usize = 4;

/// Counts tokens for one model, caching the count of each distinct text so that
/// counting the whole history before every call stays cheap.
#[derive(Debug)]
pub struct TokenCounter {
    encoding: Encoding,
    cache: Mutex<HashMap<u64, usize>>,
    /// Texts asked for, cached or not: each still costs a hash of the whole text.
    asked: AtomicUsize,
}

impl TokenCounter {
    /// A counter for the given model's encoding.
    pub fn for_model(model: &str) -> Self {
        TokenCounter::new(Encoding::for_model(model))
    }

    /// A counter for an encoding.
    pub fn new(encoding: Encoding) -> Self {
        TokenCounter {
            encoding,
            cache: Mutex::new(HashMap::new()),
            asked: AtomicUsize::new(0),
        }
    }

    /// The encoding in use.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// How many texts this counter has been asked to count, cached or not: the work
    /// a caller did, which a cached count makes cheaper but not free.
    pub fn texts_counted(&self) -> usize {
        self.asked.load(Ordering::Relaxed)
    }

    /// Tokens of `text`, from the cache when seen before.
    pub fn count(&self, text: &str) -> usize {
        self.asked.fetch_add(1, Ordering::Relaxed);
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        let key = hasher.finish();
        if let Ok(cache) = self.cache.lock()
            && let Some(n) = cache.get(&key)
        {
            return *n;
        }
        let n = self.encoding.count(text);
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(key, n);
        }
        n
    }

    /// Tokens of a whole conversation, with per-message overhead.
    pub fn count_messages(&self, messages: &[super::Message]) -> usize {
        messages
            .iter()
            .map(|m| self.count(m.text()) + self.count_beside_text(m))
            .sum()
    }

    /// Tokens of a message besides its text: its tool calls and the per-message overhead.
    pub(crate) fn count_beside_text(&self, message: &super::Message) -> usize {
        let calls = match message {
            super::Message::Assistant { tool_calls, .. } => tool_calls
                .iter()
                .map(|c| self.count(&c.name) + self.count(&c.arguments))
                .sum(),
            _ => 0,
        };
        calls + MESSAGE_OVERHEAD_TOKENS
    }
}

/// Window and output reserve of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelLimits {
    /// Total context window in tokens.
    pub context_window: u32,
    /// Tokens reserved for the reply.
    pub max_output_tokens: u32,
}

/// Known models by name prefix, most specific first. Unknown models get a
/// conservative 32k window; config keys `context_window` and `max_output_tokens` override.
const MODEL_TABLE: &[(&str, ModelLimits)] = &[
    (
        "gpt-4.1",
        ModelLimits {
            context_window: 1_047_576,
            max_output_tokens: 32_768,
        },
    ),
    (
        "gpt-5",
        ModelLimits {
            context_window: 400_000,
            max_output_tokens: 128_000,
        },
    ),
    (
        "gpt-4o",
        ModelLimits {
            context_window: 128_000,
            max_output_tokens: 16_384,
        },
    ),
    (
        "o1",
        ModelLimits {
            context_window: 200_000,
            max_output_tokens: 100_000,
        },
    ),
    (
        "o3",
        ModelLimits {
            context_window: 200_000,
            max_output_tokens: 100_000,
        },
    ),
    (
        "o4",
        ModelLimits {
            context_window: 200_000,
            max_output_tokens: 100_000,
        },
    ),
    (
        "gpt-4-turbo",
        ModelLimits {
            context_window: 128_000,
            max_output_tokens: 4_096,
        },
    ),
    (
        "gpt-4",
        ModelLimits {
            context_window: 8_192,
            max_output_tokens: 4_096,
        },
    ),
    (
        "gpt-3.5",
        ModelLimits {
            context_window: 16_385,
            max_output_tokens: 4_096,
        },
    ),
    (
        "claude",
        ModelLimits {
            context_window: 200_000,
            max_output_tokens: 8_192,
        },
    ),
    (
        "deepseek",
        ModelLimits {
            context_window: 64_000,
            max_output_tokens: 8_192,
        },
    ),
];

impl ModelLimits {
    /// Limits of a model from the table, or the conservative default.
    pub fn for_model(model: &str) -> ModelLimits {
        let m = model.to_ascii_lowercase();
        let m = m.rsplit('/').next().unwrap_or(&m);
        MODEL_TABLE
            .iter()
            .find(|(prefix, _)| m.starts_with(prefix))
            .map(|(_, limits)| *limits)
            .unwrap_or(ModelLimits {
                context_window: 32_768,
                max_output_tokens: 4_096,
            })
    }
}

/// Shared counters, one per encoding, for code that has no counter at hand.
pub(crate) fn shared_counter(encoding: Encoding) -> &'static TokenCounter {
    static COUNTERS: OnceLock<[TokenCounter; 3]> = OnceLock::new();
    let all = COUNTERS.get_or_init(|| {
        [
            TokenCounter::new(Encoding::O200kBase),
            TokenCounter::new(Encoding::Cl100kBase),
            TokenCounter::new(Encoding::Approximate),
        ]
    });
    match encoding {
        Encoding::O200kBase => &all[0],
        Encoding::Cl100kBase => &all[1],
        Encoding::Approximate => &all[2],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_strings_have_known_counts() {
        // Reference counts from OpenAI's tokenizer.
        assert_eq!(Encoding::Cl100kBase.count("hello world"), 2);
        assert_eq!(Encoding::Cl100kBase.count("Hello, world!"), 4);
        assert_eq!(Encoding::O200kBase.count("hello world"), 2);
        assert_eq!(Encoding::Approximate.count("hello world"), 3);
        assert_eq!(Encoding::O200kBase.count(""), 0);
    }

    #[test]
    fn models_map_to_encodings_and_limits() {
        assert_eq!(Encoding::for_model("gpt-4o-mini"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("openai/gpt-4.1"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("gpt-4-0613"), Encoding::Cl100kBase);
        assert_eq!(
            Encoding::for_model("claude-sonnet-4-5"),
            Encoding::Approximate
        );
        assert_eq!(ModelLimits::for_model("gpt-4o").context_window, 128_000);
        assert_eq!(ModelLimits::for_model("llama3.1:8b").context_window, 32_768);
    }

    #[test]
    fn counter_caches_and_counts_messages() {
        let counter = TokenCounter::new(Encoding::Cl100kBase);
        assert_eq!(counter.count("hello world"), 2);
        assert_eq!(counter.count("hello world"), 2);
        let msgs = vec![super::super::Message::user("hello world")];
        assert_eq!(counter.count_messages(&msgs), 2 + MESSAGE_OVERHEAD_TOKENS);
    }
}
