//! Deciding what a reply asks for, from its sections.
//!
//! The rules, in order:
//!
//! 1. The first `Action:` wins, even when a `Final Answer:` is in the same reply: the
//!    model then has not seen the tool's result yet, so its answer is premature. Its
//!    arguments are the first `Action Input:` after it, else arguments written on the
//!    action line itself (`read_file({"path": "a"})`, `read_file(path="a")`, or a JSON
//!    object on the lines after the name), else `{}`.
//! 2. An action that names no tool (`Action: None`, `Action: Final Answer`) is skipped in
//!    favour of the `Final Answer:`; `Action: Final Answer` with an `Action Input:` and no
//!    `Final Answer:` section is taken as the answer (LangChain's JSON agents write that).
//! 3. A reply that is only a JSON blob `{"action": ..., "action_input": ...}` is read the
//!    same way as the labelled form.
//! 4. Anything else is unparseable, with a reason the model can act on.

use serde_json::Value;

use super::TextStep;
use super::json_repair::{RepairError, balanced_len, kind_of, repair_object};
use super::labels::{Label, Section, Sections};
use crate::errors::ModelReplyError;

/// Action names that mean "no tool" (compared in lower case).
const NO_TOOL: &[&str] = &[
    "",
    "none",
    "n/a",
    "na",
    "null",
    "nothing",
    "no action",
    "no tool",
    "final answer",
    "final_answer",
    "finalanswer",
    "finish",
    "done",
];

/// Keys a JSON blob may use for the tool name, and for its arguments.
const BLOB_TOOL_KEYS: &[&str] = &["action", "tool", "name"];
const BLOB_INPUT_KEYS: &[&str] = &["action_input", "input", "arguments", "args", "parameters"];

/// Characters models wrap tool names in.
const NAME_WRAPPERS: &[char] = &['`', '"', '\'', '*'];

/// An example of a well-formed argument object, for reasons.
const INPUT_EXAMPLE: &str = r#"{"path": "src/lib.rs"}"#;

/// Decides the step a split reply asks for.
pub(super) fn decide(split: &Sections<'_>) -> TextStep {
    let thought = thought_of(split);
    let sections = &split.sections;
    if let Some(index) = chosen_action(sections)
        && let Some(step) = action_step(sections, index, &thought)
    {
        return step;
    }
    if let Some(answer) = sections.iter().find(|s| s.label == Label::FinalAnswer) {
        return final_step(answer.value, thought);
    }
    if sections.is_empty()
        && let Some(step) = blob_step(split.preamble, &thought)
    {
        return step;
    }
    unparseable(missing_label_reason(split))
}

/// The model's reasoning: the first `Thought:`, else the text before the first label.
fn thought_of(split: &Sections<'_>) -> Option<String> {
    let text = split
        .sections
        .iter()
        .find(|s| s.label == Label::Thought)
        .map_or(split.preamble, |s| s.value)
        .trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The first `Action:` whose value reads as a tool name, else the first `Action:`.
/// Skipping unreadable ones helps when prose said "... the next Action: reading the
/// file" before the real `Action:` line.
fn chosen_action(sections: &[Section<'_>]) -> Option<usize> {
    let mut actions = (0..sections.len()).filter(|&i| sections[i].label == Label::Action);
    let first = actions.next()?;
    std::iter::once(first)
        .chain(actions)
        .find(|&i| parse_action(sections[i].value).is_ok())
        .or(Some(first))
}

/// The step for the `Action:` at `index`, or `None` if it names no tool and a
/// `Final Answer:` should be used instead.
fn action_step(
    sections: &[Section<'_>],
    index: usize,
    thought: &Option<String>,
) -> Option<TextStep> {
    let value = sections[index].value;
    let input = sections[index + 1..]
        .iter()
        .take_while(|s| s.label != Label::Action)
        .find(|s| s.label == Label::ActionInput)
        .map(|s| s.value);
    if input.is_none()
        && let Some(step) = blob_step(value, thought)
    {
        return Some(step);
    }
    let named = match parse_action(value) {
        Ok(Some(named)) => named,
        Ok(None) => return no_tool_step(sections, value, input, thought),
        Err(reason) => return Some(unparseable(reason.to_string())),
    };
    let raw_input = input.or(named.inline_args.as_deref()).unwrap_or("");
    Some(match normalise_input(raw_input) {
        Ok(input) => TextStep::Action {
            thought: thought.clone(),
            tool: named.tool,
            input,
        },
        Err(problem) => unparseable(format!(
            "the Action Input for `{}` {problem}. Give the arguments as one JSON object, e.g. {INPUT_EXAMPLE}",
            named.tool
        )),
    })
}

/// What an action that names no tool means: nothing if a `Final Answer:` follows.
fn no_tool_step(
    sections: &[Section<'_>],
    value: &str,
    input: Option<&str>,
    thought: &Option<String>,
) -> Option<TextStep> {
    if sections.iter().any(|s| s.label == Label::FinalAnswer) {
        return None;
    }
    let name = value.trim().trim_matches(NAME_WRAPPERS);
    if name.is_empty() {
        return Some(unparseable(
            "`Action:` is empty; write the name of one tool after it, or `Final Answer:` if you are done".to_string(),
        ));
    }
    let is_final = name.to_ascii_lowercase().starts_with("final");
    match input {
        Some(answer) if is_final && !answer.trim().is_empty() => {
            Some(final_step(&unquote(answer.trim()), thought.clone()))
        }
        _ => Some(unparseable(format!(
            "`Action: {name}` names no tool. To use a tool, write its name after `Action:`; if you are done, write `Final Answer:` followed by your answer"
        ))),
    }
}

/// A tool name, and arguments written on the action line itself.
struct NamedAction {
    tool: String,
    inline_args: Option<String>,
}

/// Reads the value of `Action:`; `Ok(None)` when it names no tool.
fn parse_action(value: &str) -> Result<Option<NamedAction>, ModelReplyError> {
    let value = value.trim();
    let first_line = value.lines().next().unwrap_or_default();
    let plain = first_line
        .trim()
        .trim_matches(NAME_WRAPPERS)
        .trim_end_matches('.')
        .trim();
    if NO_TOOL.contains(&plain.to_ascii_lowercase().as_str()) {
        return Ok(None);
    }
    let text = value.trim_start_matches(NAME_WRAPPERS);
    let name_len = text
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        .count();
    let tool = tool_name(text, name_len);
    let mut rest = text[name_len..].trim_start_matches(NAME_WRAPPERS);
    let mut inline_args = None;
    if rest.starts_with('(') {
        let len = balanced_len(rest).ok_or_else(|| {
            ModelReplyError::respond(format!(
                "the parenthesis in `Action: {}` never closes",
                shorten(first_line)
            ))
        })?;
        inline_args = Some(call_arguments(
            tool_name(text, name_len),
            &rest[1..len - 1],
        )?);
        rest = rest[len..].trim_start_matches(NAME_WRAPPERS);
    }
    let rest = rest.trim_start_matches([' ', '\t', '.', ';', ':']);
    let rest_of_line = rest.lines().next().unwrap_or_default().trim();
    if tool.is_empty() || !(rest_of_line.is_empty() || looks_like_json(rest_of_line)) {
        return Err(ModelReplyError::respond(format!(
            "`Action:` must be followed by just the name of one tool (e.g. `Action: read_file`), but it reads `{}`. Put the arguments on an `Action Input:` line",
            shorten(first_line)
        )));
    }
    if inline_args.is_none() {
        let rest = rest.trim();
        inline_args = looks_like_json(rest).then(|| rest.to_string());
    }
    Ok(Some(NamedAction {
        tool: tool.to_string(),
        inline_args,
    }))
}

fn tool_name(text: &str, name_len: usize) -> &str {
    text[..name_len].trim_end_matches('.')
}

/// The arguments of `tool(...)`: an object as written, or keyword arguments
/// (`path="a", start_line=3`) as one; positional arguments cannot be named, so they are refused.
fn call_arguments(tool: &str, inner: &str) -> Result<String, ModelReplyError> {
    let inner = inner.trim();
    if inner.is_empty() || inner.starts_with('{') {
        return Ok(inner.to_string());
    }
    let key_len = inner
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    let after_key = inner[key_len..].trim_start();
    if key_len > 0 && (after_key.starts_with('=') || after_key.starts_with(':')) {
        return Ok(format!("{{{inner}}}"));
    }
    Err(ModelReplyError::respond(format!(
        "`{tool}({})` passes arguments without names. Write `Action: {tool}` and then the named arguments as one JSON object on an `Action Input:` line, e.g. {INPUT_EXAMPLE}",
        shorten(inner)
    )))
}

fn looks_like_json(text: &str) -> bool {
    text.starts_with('{') || text.starts_with("```") || text.starts_with("`{")
}

/// What is wrong with the arguments of a text-mode action; each reads as the end of a sentence
/// that names them ("the Action Input for `read_file` is plain text ..."), which the model
/// reads.
#[derive(Debug, thiserror::Error)]
enum InputProblem {
    /// Valid JSON of another kind than an object.
    #[error("is {0}")]
    Kind(&'static str),
    /// Valid JSON of another kind than an object, with an excerpt of it.
    #[error("is {kind} (`{excerpt}`)")]
    KindShown { kind: &'static str, excerpt: String },
    /// An object that does not parse, even after repair.
    #[error("is not valid JSON ({0})")]
    InvalidJson(String),
    /// Not JSON at all.
    #[error("is plain text (`{0}`), not a JSON object")]
    PlainText(String),
}

/// The normalised JSON object text of an `Action Input:`, or what is wrong with it.
fn normalise_input(raw: &str) -> Result<String, InputProblem> {
    let body = strip_code(raw.trim());
    if body.is_empty() || matches!(body, "null" | "None" | "none") {
        return Ok("{}".to_string());
    }
    let json = if body.starts_with('{') {
        &body[..balanced_len(body).unwrap_or(body.len())]
    } else {
        body
    };
    match repair_object(json) {
        Ok(map) => Ok(Value::Object(map).to_string()),
        Err(RepairError::NotAnObject(kind)) => {
            double_encoded_object(json).ok_or_else(|| InputProblem::KindShown {
                kind,
                excerpt: shorten(json),
            })
        }
        Err(RepairError::Invalid(message)) if json.starts_with('{') => {
            Err(InputProblem::InvalidJson(message))
        }
        Err(_) => Err(InputProblem::PlainText(shorten(json))),
    }
}

/// An object some models encode twice, as a JSON string holding JSON.
fn double_encoded_object(json: &str) -> Option<String> {
    let Ok(Value::String(inner)) = serde_json::from_str::<Value>(json) else {
        return None;
    };
    repair_object(&inner)
        .ok()
        .map(|map| Value::Object(map).to_string())
}

/// The content of a fenced or backticked block, or the text itself.
fn strip_code(text: &str) -> &str {
    if let Some(after) = text.strip_prefix("```") {
        let after = after.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
        return after.find("```").map_or(after, |end| &after[..end]).trim();
    }
    match text.strip_prefix('`') {
        Some(inner) => inner.trim_end_matches('`').trim(),
        None => text,
    }
}

/// The answer of a `Final Answer:`, without a fence around all of it.
fn final_step(value: &str, thought: Option<String>) -> TextStep {
    let mut answer = value.trim();
    // A lone closing fence at the end belongs to a reply that was fenced as a whole.
    if answer.matches("```").count() % 2 == 1 {
        answer = answer.strip_suffix("```").unwrap_or(answer).trim_end();
    }
    if answer.starts_with("```") && answer.ends_with("```") && answer.matches("```").count() == 2 {
        answer = strip_code(answer);
    }
    if answer.is_empty() {
        return unparseable("`Final Answer:` is empty; write your answer after it".to_string());
    }
    TextStep::Final {
        thought,
        answer: answer.to_string(),
    }
}

/// A reply written as a JSON blob `{"action": "read_file", "action_input": {...}}`.
fn blob_step(text: &str, thought: &Option<String>) -> Option<TextStep> {
    let body = strip_code(text.trim());
    let map = repair_object(body.get(..balanced_len(body)?)?).ok()?;
    let tool = BLOB_TOOL_KEYS
        .iter()
        .find_map(|key| map.get(*key)?.as_str())?
        .trim();
    let args = BLOB_INPUT_KEYS.iter().find_map(|key| map.get(*key));
    if NO_TOOL.contains(&tool.to_ascii_lowercase().as_str()) {
        let answer = match args {
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        return Some(final_step(&answer, thought.clone()));
    }
    let input = match args {
        None | Some(Value::Null) => Ok("{}".to_string()),
        Some(object @ Value::Object(_)) => Ok(object.to_string()),
        Some(Value::String(text)) => normalise_input(text),
        Some(other) => Err(InputProblem::Kind(kind_of(other))),
    };
    Some(match input {
        Ok(input) => TextStep::Action {
            thought: thought.clone(),
            tool: tool.to_string(),
            input,
        },
        Err(problem) => unparseable(format!(
            "the arguments for `{tool}` {problem}; give them as one JSON object, e.g. {INPUT_EXAMPLE}"
        )),
    })
}

/// Why a reply with neither a usable action nor a final answer could not be read.
fn missing_label_reason(split: &Sections<'_>) -> String {
    let has = |label| split.sections.iter().any(|s| s.label == label);
    let text = split.preamble.trim();
    if has(Label::ActionInput) {
        "there is an `Action Input:` but no `Action:` line naming the tool".to_string()
    } else if has(Label::Thought) || (!text.is_empty() && !text.starts_with(['{', '[', '`'])) {
        "the reply has neither an `Action:` nor a `Final Answer:`. To use a tool, write `Action:` with the tool name and `Action Input:` with a JSON object; if you are done, write `Final Answer:` followed by your answer".to_string()
    } else if !text.is_empty() {
        "the reply looks like JSON but has no label; to finish, write `Final Answer:` before it, to use a tool, write `Action:` and `Action Input:`".to_string()
    } else if split.invented_observation {
        "the reply starts with `Observation:`. Do not write observations yourself; write `Action:` and `Action Input:` and stop, the system replies with the observation".to_string()
    } else {
        "the reply was empty".to_string()
    }
}

fn unparseable(reason: String) -> TextStep {
    TextStep::Unparseable { reason }
}

/// A JSON string's content, or the text itself.
fn unquote(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::String(inner)) => inner,
        _ => text.to_string(),
    }
}

/// The first line of `text`, at most 80 characters, for quoting in a reason.
fn shorten(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or_default();
    let mut short: String = line.chars().take(80).collect();
    if short.len() < line.len() || text.trim().contains('\n') {
        short.push('…');
    }
    short
}
