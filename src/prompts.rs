//! Prompts, compiled in from `prompts/*.md` and overridable from the config file
//! (`[prompts]` table, one key per prompt).

use serde::Deserialize;

const SYSTEM: &str = include_str!("../prompts/system.md");
const TASK: &str = include_str!("../prompts/task.md");
const FINAL_TURN: &str = include_str!("../prompts/final_turn.md");
const CORRECTIVE: &str = include_str!("../prompts/corrective.md");

/// The planner's instructions (plan-and-execute).
pub(crate) const PLANNER: &str = include_str!("../prompts/planner.md");
/// The focused task message of one plan-and-execute task.
pub(crate) const TASK_FOCUS: &str = include_str!("../prompts/task_focus.md");
/// The evaluator's instructions (reflection).
pub(crate) const EVALUATOR: &str = include_str!("../prompts/evaluator.md");
/// The reflector's instructions (reflection).
pub(crate) const REFLECTOR: &str = include_str!("../prompts/reflector.md");

/// The prompts a review uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompts {
    /// The reviewer's standing instructions.
    pub system: String,
    /// The first user message; `{intent}`, `{overview}`, `{instructions}` and `{diff}` are
    /// filled in (a template without `{intent}` gets the intent section in front).
    pub task: String,
    /// Sent when the step budget is spent: asks for the conclusion, without tools.
    pub final_turn: String,
    /// Sent after a reply that had neither a tool call nor a readable review.
    pub corrective: String,
}

impl Default for Prompts {
    fn default() -> Self {
        Prompts {
            system: SYSTEM.to_string(),
            task: TASK.to_string(),
            final_turn: FINAL_TURN.to_string(),
            corrective: CORRECTIVE.to_string(),
        }
    }
}

/// Replacement texts from the `[prompts]` table of `.redline.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptOverrides {
    /// Replaces the built-in text of the reviewer's standing instructions (the system prompt): Redline's `prompts/system.md`.
    pub system: Option<String>,
    /// Replaces the built-in text of the first message's template (`{intent}`, `{overview}`, `{instructions}`, `{diff}` are filled in): Redline's `prompts/task.md`.
    pub task: Option<String>,
    /// Replaces the built-in text of the message sent when the step budget is spent: Redline's `prompts/final_turn.md`.
    pub final_turn: Option<String>,
    /// Replaces the built-in text of the message sent after a reply with neither a tool call nor a readable review: Redline's `prompts/corrective.md`.
    pub corrective: Option<String>,
}

impl Prompts {
    /// The built-in prompts with the given overrides applied.
    pub(crate) fn with_overrides(overrides: &PromptOverrides) -> Self {
        let defaults = Prompts::default();
        Prompts {
            system: overrides.system.clone().unwrap_or(defaults.system),
            task: overrides.task.clone().unwrap_or(defaults.task),
            final_turn: overrides.final_turn.clone().unwrap_or(defaults.final_turn),
            corrective: overrides.corrective.clone().unwrap_or(defaults.corrective),
        }
    }

    /// The first user message for a change; `intent` is the author's rendered claim
    /// ([`crate::intent::Intent::render`]), empty when there is none.
    pub(crate) fn render_task(
        &self,
        intent: &str,
        overview: &str,
        instructions: Option<&str>,
        diff: &str,
    ) -> String {
        let instructions = instructions
            .map(|i| {
                format!("Additional review instructions from the repository's maintainers:\n{i}")
            })
            .unwrap_or_default();
        let template = crate::intent::place(&self.task, intent);
        // Placeholders are filled in one pass so text inside the diff is never re-expanded.
        fill(
            &template,
            &[
                ("{intent}", intent),
                ("{overview}", overview),
                ("{instructions}", &instructions),
                ("{diff}", diff),
            ],
        )
    }
}

/// Replaces each placeholder once, scanning the template left to right. A placeholder
/// with nothing to say takes the blank line after it along, so an absent section leaves
/// no gap in the message.
pub(crate) fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut template = template.to_string();
    for (key, _) in values.iter().filter(|(_, value)| value.is_empty()) {
        template = template.replace(&format!("{key}\n\n"), key);
    }
    let mut out = String::with_capacity(template.len());
    let mut rest = template.as_str();
    while !rest.is_empty() {
        let next = values
            .iter()
            .filter_map(|(key, value)| rest.find(key).map(|at| (at, *key, *value)))
            .min_by_key(|(at, ..)| *at);
        match next {
            Some((at, key, value)) => {
                out.push_str(&rest[..at]);
                out.push_str(value);
                rest = &rest[at + key.len()..];
            }
            None => {
                out.push_str(rest);
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_only_what_they_name() {
        let p = Prompts::with_overrides(&PromptOverrides {
            system: Some("be brief".into()),
            ..Default::default()
        });
        assert_eq!(p.system, "be brief");
        assert_eq!(p.final_turn, Prompts::default().final_turn);
    }

    #[test]
    fn the_review_prompt_asks_only_for_what_the_author_would_fix() {
        let system = Prompts::default().system;
        assert!(system.contains("Report only what the author would fix before merging"));
        assert!(
            system.contains("no style, naming, wording or docstring remarks unless they mislead")
        );
        assert!(system.contains("no worries the code already answers"));
        assert!(system.contains("Report each problem once"));
        // A nit is a small fix, not an invitation to cosmetic remarks.
        assert!(system.contains("nit: small but worth fixing, never cosmetic"));
        assert!(!system.contains("nit: cosmetic"), "{system}");
        let schema = crate::review::parse::submit_review_schema(false).to_string();
        assert!(
            schema.contains("nit: small but worth fixing, never cosmetic"),
            "{schema}"
        );
        assert!(!schema.contains("nit: cosmetic"), "{schema}");
        assert!(
            schema.contains("style: misleading naming or formatting"),
            "{schema}"
        );
    }

    #[test]
    fn placeholders_inside_values_are_not_expanded() {
        let p = Prompts::default();
        let task = p.render_task("", "2 files", None, "+ let s = \"{overview}\";");
        assert!(task.contains("+ let s = \"{overview}\";"));
        assert!(task.contains("2 files"));
        assert!(!task.contains("{diff}"));
    }

    #[test]
    fn the_intent_comes_first_and_absent_sections_leave_no_gap() {
        let p = Prompts::default();
        let task = p.render_task("INTENT", "", None, "DIFF");
        assert!(
            task.starts_with("Review this change.\n\nINTENT\n\nDIFF"),
            "{task:?}"
        );
        let bare = p.render_task("", "", None, "DIFF");
        assert!(bare.starts_with("Review this change.\n\nDIFF"), "{bare:?}");
    }

    #[test]
    fn an_override_without_the_placeholder_gets_the_intent_in_front() {
        let p = Prompts::with_overrides(&PromptOverrides {
            task: Some("Check this: {diff}".into()),
            ..Default::default()
        });
        assert_eq!(
            p.render_task("INTENT", "", None, "D"),
            "INTENT\n\nCheck this: D"
        );
        assert_eq!(p.render_task("", "", None, "D"), "Check this: D");
    }
}
