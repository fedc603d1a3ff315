//! A secret string that never prints itself.

use std::fmt;

/// An API key or token. `Debug` and `Display` print a placeholder, and
/// [`Secret::redact`] scrubs the value out of any text before it is shown.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value, for the one place that must send it (an auth header).
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the secret is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every occurrence of the secret (and of long fragments of it) replaced.
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_string();
        }
        // Providers echo keys partly masked ("sk-abc...xyz"); scrub any 8+ char run of the key.
        let runs_of = if self.0.len() >= 12 {
            self.0.as_str()
        } else {
            ""
        };
        self.scrub(text, runs_of)
    }

    /// `text` (a model's reply) with the key scrubbed out: the whole key, and any eight
    /// characters in a row of its random part (after a prefix such as `sk-proj-`, which
    /// reviewed code may mention). A short key (`ollama`, `EMPTY`: local servers' place
    /// holders, no secret) is left alone, so ordinary words and paths are never changed.
    pub(crate) fn redact_reply(&self, text: &str) -> String {
        let random = random_part(&self.0);
        if random.len() < MIN_SECRET_PART {
            return text.to_string();
        }
        self.scrub(text, random)
    }

    /// `text` without the whole key, nor any eight characters in a row of `runs_of`.
    fn scrub(&self, text: &str, runs_of: &str) -> String {
        let mut out = text.replace(&self.0, "[REDACTED]");
        for start in 0..=runs_of.len().saturating_sub(8) {
            if let Some(fragment) = runs_of.get(start..start + 8)
                && out.contains(fragment)
            {
                out = out.replace(fragment, "[REDACTED]");
            }
        }
        out
    }
}

/// Shortest random part a key must have for replies to be scrubbed of it: real API keys
/// have 32 or more random characters.
const MIN_SECRET_PART: usize = 16;

/// A key without its fixed prefix: what follows the last `-` or `_` among its first 16
/// characters (`sk-proj-…`, `sk-ant-api03-…`, `gsk_…`), or the whole key.
fn random_part(key: &str) -> &str {
    let head: String = key.chars().take(16).collect();
    match head.rfind(['-', '_']) {
        Some(at) => key.get(at + 1..).unwrap_or(key),
        None => key,
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([REDACTED])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[REDACTED]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_the_value() {
        let s = Secret::new("sk-live-0123456789abcdef");
        assert!(!format!("{s:?} {s}").contains("0123456789"));
    }

    #[test]
    fn replies_lose_the_key_but_keep_prefixes_and_ordinary_words() {
        let key = Secret::new("sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123");
        let reply = "key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123, part QrStUvWx, code `sk-proj-`";
        let red = key.redact_reply(reply);
        assert!(
            !red.contains("AbCdEfGh") && !red.contains("QrStUvWx"),
            "{red}"
        );
        assert!(red.contains("`sk-proj-`"), "{red}");
        for placeholder in ["ollama", "EMPTY", "test", "lm-studio"] {
            let text = "tests/x.rs: ollama EMPTY test lm-studio";
            assert_eq!(Secret::new(placeholder).redact_reply(text), text);
        }
    }

    #[test]
    fn redacts_whole_and_partial_echoes() {
        let s = Secret::new("sk-live-0123456789abcdef");
        let text = "Incorrect API key provided: sk-live-0123456789abcdef and sk-live-01***cdef";
        let red = s.redact(text);
        assert!(!red.contains("0123456789abcdef"), "{red}");
        assert!(!red.contains("sk-live-01"), "{red}");
    }
}
