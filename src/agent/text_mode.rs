//! ReAct in text form, for endpoints without native tool calling.
//!
//! The tools are described in the prompt ([`tools_prompt`]); the model answers with
//! `Thought:` / `Action:` / `Action Input:` or with `Final Answer:`; the agent parses the
//! reply ([`parse_text_step`]), runs the tool through the same dispatch as native mode
//! ([`to_tool_call`]) and sends the result back as the next user message
//! ([`observation`]). A reply that cannot be read gets a [`corrective_observation`].
//!
//! Models in this mode are often small and sloppy, so the parser is forgiving: labels in
//! any case, in markdown or run together on one line; tool names in backticks or quotes
//! or written as calls; arguments in code fences, with single quotes, trailing commas or
//! unquoted keys. Everything from an `Observation:` the model wrote itself on is ignored.
//! The exact rules are documented in the submodules.

mod json_repair;
mod labels;
mod prompt;
mod step;

use crate::llm::{ToolCall, ToolSpec};

/// The text-mode prompt template: tool descriptions go in `{tools}`, their names in `{tool_names}`.
pub const TEXT_MODE_TEMPLATE: &str = include_str!("../../prompts/text_mode.md");

/// One parsed model reply in text mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextStep {
    /// The model wants a tool.
    Action {
        /// The model's reasoning before the action, if it wrote any.
        thought: Option<String>,
        /// The tool's name, unwrapped from quotes, backticks or call syntax.
        tool: String,
        /// The normalised (valid, compact) JSON object text of the arguments.
        input: String,
    },
    /// The model concluded.
    Final {
        /// The model's reasoning before the answer, if it wrote any.
        thought: Option<String>,
        /// Everything after `Final Answer:`, trimmed, without a code fence wrapping all of it.
        answer: String,
    },
    /// Neither: the reply could not be read.
    Unparseable {
        /// What was wrong, worded for the model (see [`corrective_observation`]).
        reason: String,
    },
}

/// Parses one model reply in the text format.
pub fn parse_text_step(reply: &str) -> TextStep {
    let text = reply.replace("\r\n", "\n").replace('\r', "\n");
    step::decide(&labels::split_sections(&text))
}

/// The tool part of the system prompt: each tool with its arguments, then the reply format.
pub fn tools_prompt(specs: &[ToolSpec]) -> String {
    render_tools_prompt(TEXT_MODE_TEMPLATE, specs)
}

/// Like [`tools_prompt`], with another template (e.g. one from the config file), which
/// should contain `{tools}` and may contain `{tool_names}`.
pub fn render_tools_prompt(template: &str, specs: &[ToolSpec]) -> String {
    let tools = specs
        .iter()
        .map(prompt::describe_tool)
        .collect::<Vec<_>>()
        .join("\n");
    let names = specs
        .iter()
        .map(|spec| spec.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    template
        .replace("{tools}", tools.trim_end())
        .replace("{tool_names}", &names)
}

/// The user message that carries a tool's result back to the model.
pub fn observation(content: &str) -> String {
    if content.trim().is_empty() {
        "Observation: (the tool returned nothing)".to_string()
    } else {
        format!("Observation: {content}")
    }
}

/// The user message for a reply that could not be read: what was wrong, and the format again.
pub fn corrective_observation(reason: &str) -> String {
    format!(
        "Observation: your reply could not be read: {}\n\n\
         Reply in exactly one of these two forms, each label at the start of a line.\n\
         To use a tool:\n\
         Thought: <your reasoning>\n\
         Action: <one tool name>\n\
         Action Input: <the arguments as one JSON object, e.g. {{\"path\": \"src/lib.rs\"}}>\n\
         When you are done:\n\
         Thought: <your reasoning>\n\
         Final Answer: <your answer>",
        reason.trim()
    )
}

/// The tool call for an action of step `step_index`, with a synthetic id (`text-3`), so
/// that events and dispatch work as in native mode.
pub fn to_tool_call(step_index: u32, tool: &str, input: &str) -> ToolCall {
    ToolCall {
        id: format!("text-{step_index}"),
        name: tool.to_string(),
        arguments: input.to_string(),
    }
}
