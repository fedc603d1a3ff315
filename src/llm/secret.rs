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
        let mut out = text.replace(&self.0, "[REDACTED]");
        // Providers echo keys partly masked ("sk-abc...xyz"); scrub any 8+ char run of the key.
        if self.0.len() >= 12 {
            let bytes = self.0.as_bytes();
            for start in 0..=bytes.len() - 8 {
                if let Some(fragment) = self.0.get(start..start + 8)
                    && out.contains(fragment)
                {
                    out = out.replace(fragment, "[REDACTED]");
                }
            }
        }
        out
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
    fn redacts_whole_and_partial_echoes() {
        let s = Secret::new("sk-live-0123456789abcdef");
        let text = "Incorrect API key provided: sk-live-0123456789abcdef and sk-live-01***cdef";
        let red = s.redact(text);
        assert!(!red.contains("0123456789abcdef"), "{red}");
        assert!(!red.contains("sk-live-01"), "{red}");
    }
}
