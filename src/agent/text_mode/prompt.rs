//! The tool descriptions of the text-mode prompt, with each argument schema summarised
//! in words (a small model reads a list of arguments better than a JSON Schema).

use serde_json::{Map, Value};

use crate::llm::ToolSpec;

/// Describes one tool: a heading, its description and its arguments.
pub(super) fn describe_tool(spec: &ToolSpec) -> String {
    let mut text = format!("### {}\n", spec.name);
    let description = spec.description.trim();
    if !description.is_empty() {
        text.push_str(description);
        text.push('\n');
    }
    let arguments = describe_arguments(&spec.parameters);
    if arguments.is_empty() {
        text.push_str("Arguments: none; use `{}`.\n");
    } else {
        text.push_str("Arguments (a JSON object):\n");
        for line in arguments {
            text.push_str(&line);
            text.push('\n');
        }
    }
    text
}

/// One line per property: required ones first, in the order the schema lists them.
fn describe_arguments(schema: &Value) -> Vec<String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut lines: Vec<String> = required
        .iter()
        .filter_map(|name| {
            properties
                .get(*name)
                .map(|p| describe_property(name, p, true))
        })
        .collect();
    lines.extend(
        properties
            .iter()
            .filter(|(name, _)| !required.contains(&name.as_str()))
            .map(|(name, property)| describe_property(name, property, false)),
    );
    lines
}

/// `` - `name` (type, required): description ``
fn describe_property(name: &str, property: &Value, required: bool) -> String {
    let necessity = if required { "required" } else { "optional" };
    let mut line = format!("- `{name}` ({}, {necessity}", type_summary(property));
    if let Some(default) = property.get("default") {
        line.push_str(&format!(", default {default}"));
    }
    line.push(')');
    let description = property
        .get("description")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or_default();
    if !description.is_empty() {
        line.push_str(": ");
        line.push_str(&description.replace('\n', " "));
    }
    line
}

/// The type of a schema in words: `string`, `integer or null`, `array of string`,
/// `string, one of "a", "b"`.
fn type_summary(schema: &Value) -> String {
    let Some(object) = schema.as_object() else {
        return "any".to_string();
    };
    let mut summary = match object.get("type") {
        Some(Value::String(kind)) if kind == "array" => match object.get("items") {
            Some(items) => format!("array of {}", type_summary(items)),
            None => "array".to_string(),
        },
        Some(Value::String(kind)) => kind.clone(),
        Some(Value::Array(kinds)) => {
            join_or(kinds.iter().filter_map(Value::as_str).map(str::to_string))
        }
        _ => alternatives(object).unwrap_or_else(|| "any".to_string()),
    };
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        let listed: Vec<String> = values.iter().map(Value::to_string).collect();
        summary.push_str(&format!(", one of {}", listed.join(", ")));
    }
    summary
}

/// `anyOf` / `oneOf` summarised as "x or y".
fn alternatives(object: &Map<String, Value>) -> Option<String> {
    let options = object
        .get("anyOf")
        .or_else(|| object.get("oneOf"))?
        .as_array()?;
    Some(join_or(options.iter().map(type_summary)))
}

fn join_or(parts: impl Iterator<Item = String>) -> String {
    let parts: Vec<String> = parts.collect();
    if parts.is_empty() {
        "any".to_string()
    } else {
        parts.join(" or ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summarises_types_in_words() {
        assert_eq!(type_summary(&json!({"type": "string"})), "string");
        assert_eq!(
            type_summary(&json!({"type": ["integer", "null"]})),
            "integer or null"
        );
        assert_eq!(
            type_summary(&json!({"type": "array", "items": {"type": "string"}})),
            "array of string"
        );
        assert_eq!(
            type_summary(&json!({"type": "string", "enum": ["a", "b"]})),
            "string, one of \"a\", \"b\""
        );
        assert_eq!(
            type_summary(&json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})),
            "string or integer"
        );
        assert_eq!(type_summary(&json!({})), "any");
    }

    #[test]
    fn lists_required_arguments_first() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a_limit": {"type": "integer", "default": 50},
                "path": {"type": "string", "description": "Where.\nRelative."}
            },
            "required": ["path"]
        });
        assert_eq!(
            describe_arguments(&schema),
            vec![
                "- `path` (string, required): Where. Relative.",
                "- `a_limit` (integer, optional, default 50)",
            ]
        );
    }
}
