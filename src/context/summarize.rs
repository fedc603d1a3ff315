//! Stage 3: when the history grows past a share of the window, ask the model
//! for a progress summary and replace the middle of the conversation with it.
//!
//! What is always kept: the system prompt, the task (the first user message,
//! which holds the shaped change) and the latest turns. A turn starts with an
//! assistant message and runs to the next one, so an assistant's tool calls are
//! never separated from their results. Findings already submitted are kept by
//! the orchestrator as structured data outside the history; the summary only
//! names them so the model does not report them twice.

use crate::llm::Message;
use crate::llm::tokens::ModelLimits;

/// Summarise when the history passes this share of the usable window.
pub(crate) const DEFAULT_SUMMARY_THRESHOLD: f32 = 0.7;

/// The instruction that asks the model for a progress summary.
pub const SUMMARY_PROMPT: &str = include_str!("../../prompts/summarize.md");

/// How the summary message starts; also how it is recognised.
const SUMMARY_MARKER: &str = "[Progress summary of this review so far";

/// How the note about dropped turns starts; also how it is recognised.
const DROP_MARKER: &str = "[Context note:";

/// Whether a history of `history_tokens` has passed `threshold` (a share, e.g.
/// 0.7) of the usable window: the context window minus the output reserve.
pub(crate) fn needs_summary(history_tokens: usize, limits: ModelLimits, threshold: f32) -> bool {
    let usable = limits
        .context_window
        .saturating_sub(limits.max_output_tokens) as f64;
    // Rounded so that an f32 share like 0.7 means exactly 70%.
    let limit = (usable * f64::from(threshold.clamp(0.0, 1.0))).round() as usize;
    history_tokens > limit
}

/// The messages to send (without tools) to get a progress summary: the history,
/// less a trailing assistant message whose calls have no results yet, and then
/// [`SUMMARY_PROMPT`].
pub fn summary_request(history: &[Message]) -> Vec<Message> {
    let mut messages = history[..answered_prefix(history)].to_vec();
    messages.push(Message::user(SUMMARY_PROMPT));
    messages
}

/// The length of the history up to (not including) a last assistant message
/// with unanswered tool calls.
fn answered_prefix(history: &[Message]) -> usize {
    let Some(last_assistant) = history
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
    else {
        return history.len();
    };
    let Message::Assistant { tool_calls, .. } = &history[last_assistant] else {
        return history.len();
    };
    let answered = tool_calls.iter().all(|call| {
        history[last_assistant..]
            .iter()
            .any(|m| matches!(m, Message::Tool { call_id, .. } if *call_id == call.id))
    });
    if answered {
        history.len()
    } else {
        last_assistant
    }
}

/// The compacted history: the system messages, the task, one user message
/// holding `summary`, and the last `keep_last_turns` turns whole.
pub fn compact(history: &[Message], summary: &str, keep_last_turns: usize) -> Vec<Message> {
    let Some(task) = task_index(history) else {
        return history.to_vec();
    };
    let starts = turn_starts(history, task);
    let keep_from = match keep_last_turns {
        0 => history.len(),
        k => starts
            .len()
            .checked_sub(k)
            .and_then(|i| starts.get(i))
            .or(starts.first())
            .copied()
            .unwrap_or(history.len()),
    };
    let mut out: Vec<Message> = history[..=task]
        .iter()
        .filter(|m| matches!(m, Message::System { .. }))
        .cloned()
        .collect();
    out.push(history[task].clone());
    out.push(Message::user(format!(
        "{SUMMARY_MARKER}; earlier turns were compacted to save context]\n\n{}\n\nFindings you already submitted are recorded; do not submit them again. Continue the review from here.",
        summary.trim()
    )));
    out.extend_from_slice(&history[keep_from..]);
    out
}

/// For a context-length-exceeded retry: the history without its oldest half of
/// turns (at least one, never the last), keeping everything before the first
/// turn (system, task, summary) and noting the drop. `None` when there is
/// nothing left to drop.
pub fn drop_oldest_turns(history: &[Message]) -> Option<Vec<Message>> {
    let task = task_index(history)?;
    let starts = turn_starts(history, task);
    if starts.len() < 2 {
        return None;
    }
    let dropped = (starts.len() / 2).max(1);
    let keep_from = starts[dropped];
    let mut out: Vec<Message> = history[..starts[0]]
        .iter()
        .filter(|m| !m.text().starts_with(DROP_MARKER))
        .cloned()
        .collect();
    out.push(Message::user(format!(
        "{DROP_MARKER} older turns of this review were dropped to fit the model's context window. Findings you already submitted are recorded; read files again if you need them.]"
    )));
    out.extend_from_slice(&history[keep_from..]);
    Some(out)
}

/// The first user message: the task.
fn task_index(history: &[Message]) -> Option<usize> {
    history
        .iter()
        .position(|m| matches!(m, Message::User { .. }))
}

/// Where each turn after the task starts: at each assistant message.
fn turn_starts(history: &[Message], task: usize) -> Vec<usize> {
    history
        .iter()
        .enumerate()
        .skip(task + 1)
        .filter(|(_, m)| matches!(m, Message::Assistant { .. }))
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_is_a_share_of_the_usable_window() {
        let limits = ModelLimits {
            context_window: 100_000,
            max_output_tokens: 10_000,
        };
        assert!(!needs_summary(63_000, limits, DEFAULT_SUMMARY_THRESHOLD));
        assert!(needs_summary(63_001, limits, DEFAULT_SUMMARY_THRESHOLD));
        assert!(needs_summary(1, limits, 0.0));
        assert!(!needs_summary(90_000, limits, 1.0));
    }

    #[test]
    fn the_prompt_asks_for_what_remains() {
        assert!(SUMMARY_PROMPT.contains("Remaining"));
        assert!(SUMMARY_PROMPT.contains("Open questions"));
    }
}
