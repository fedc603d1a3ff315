//! Native or text tool calling, and the one switch all runs of a review share:
//! once an endpoint rejects native tools under `auto`, every run talks in text.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// `--tool-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolMode {
    /// Native tool calling.
    Native,
    /// Tools described in the prompt, `Action:` / `Action Input:` replies.
    Text,
    /// Native, falling back to text when the server rejects the `tools` parameter.
    #[default]
    Auto,
}

impl std::str::FromStr for ToolMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "native" => Ok(ToolMode::Native),
            "text" => Ok(ToolMode::Text),
            "auto" => Ok(ToolMode::Auto),
            other => Err(crate::text::unknown_value(
                "tool mode",
                other,
                &["native", "text", "auto"],
            )),
        }
    }
}

/// Whether runs of a review talk in text mode; shared so that one fallback serves all.
#[derive(Debug, Clone)]
pub(crate) struct ModeState {
    configured: ToolMode,
    text: Arc<AtomicBool>,
}

impl ModeState {
    pub fn new(configured: ToolMode) -> Self {
        ModeState {
            configured,
            text: Arc::new(AtomicBool::new(configured == ToolMode::Text)),
        }
    }

    pub(crate) fn is_text(&self) -> bool {
        self.text.load(Ordering::Relaxed)
    }

    /// Switches to text mode after a rejection, when `auto` allows it.
    pub(crate) fn fall_back(&self) -> bool {
        if self.configured == ToolMode::Auto && !self.is_text() {
            self.text.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }
}
