//! The JSON Schema (draft 2020-12) of `.redline.toml` and the user's `config.toml`:
//! what `redline config schema` prints and `docs/redline.schema.json` holds, for editors
//! (Taplo / Even Better TOML read the `#:schema` line `redline init` writes).
//!
//! Invariants: the schema is derived from [`FileConfig`] and its nested tables (field
//! doc comments are the descriptions; `deny_unknown_fields` makes every table closed),
//! with hand-written parts only where a field's Rust type says less than the key takes
//! (durations, the limits, the pricing table). Defaults are not written by hand: they are
//! the values [`super::settings::resolve`] gives an empty configuration, read back with
//! [`super::origin::values`], so the schema cannot state a default the code does not use.
//! Generation reads no environment and no file: the output depends only on the code.

use schemars::{Schema, SchemaGenerator, generate::SchemaSettings, json_schema};
use serde_json::{Value, json};

use super::FileConfig;

/// Where the committed schema lives in Redline's repository.
pub(crate) const SCHEMA_PATH: &str = "docs/redline.schema.json";

/// Keys (or prefixes of keys) whose default depends on other settings (the provider,
/// the model) or is a long built-in text, so the schema states none; their descriptions
/// say what decides it.
const NO_FIXED_DEFAULT: &[&str] = &[
    "model",
    "verify_model",
    "base_url",
    "context_window",
    "max_output_tokens",
    "prompts.",
    "pricing.",
];

/// The schema as pretty-printed JSON with a final newline, as committed.
pub(crate) fn schema_text() -> String {
    let text = serde_json::to_string_pretty(&schema()).unwrap_or_default();
    format!("{text}\n")
}

/// The schema of a config file.
pub(crate) fn schema() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<FileConfig>().to_value();
    tidy(&mut schema);
    add_defaults(&mut schema);
    schema
}

/// Tidies the derived schema for TOML: drops the `null` that `Option` fields allow in JSON
/// (TOML has no null: a key is set or absent) and `null` defaults; drops the Rust integer
/// formats (`uint32`, ...: the ranges say what is accepted); joins the lines of a
/// description wrapped in the source.
fn tidy(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            if map.get("format").and_then(Value::as_str).is_some_and(|f| {
                f.starts_with("int") || f.starts_with("uint") || f == "float" || f == "double"
            }) {
                map.remove("format");
            }
            if let Some(Value::String(text)) = map.get_mut("description") {
                *text = text
                    .split("\n\n")
                    .map(|paragraph| paragraph.replace('\n', " "))
                    .collect::<Vec<_>>()
                    .join("\n\n");
            }
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let single = types.remove(0);
                    map.insert("type".into(), single);
                }
            }
            for key in ["anyOf", "oneOf"] {
                if let Some(Value::Array(options)) = map.get_mut(key) {
                    options.retain(|o| o.get("type").is_none_or(|t| t != "null"));
                }
            }
            map.values_mut().for_each(tidy);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// Sets `default` on every property that has none yet, from the settings an empty
/// configuration resolves to (keys without a value there, or listed in
/// [`NO_FIXED_DEFAULT`], get none).
fn add_defaults(schema: &mut Value) {
    for (key, value) in super::origin::default_values() {
        let fixed = !NO_FIXED_DEFAULT
            .iter()
            .any(|skip| key == *skip || (skip.ends_with('.') && key.starts_with(skip)));
        if value.is_null() || !fixed {
            continue;
        }
        if let Some(property) = property_mut(schema, &key)
            && property.get("default").is_none()
        {
            property["default"] = value;
        }
    }
}

/// The schema of a dotted key (`reflection.max_rounds`), when the schema names it.
fn property_mut<'a>(schema: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    let mut node = schema;
    for part in key.split('.') {
        node = node.get_mut("properties")?.get_mut(part)?;
    }
    Some(node)
}

/// The duration syntax of [`super::limits::parse_duration`]: a whole number of seconds,
/// or numbers with units (`500ms`, `90s`, `10m`, `1h30m`, `7d`).
const DURATION_PATTERN: &str = r"^\s*([0-9]+|([0-9]+(ms|s|m|h|d))+)\s*$";

/// A model call timeout: a duration string, 1 ms to 1 hour.
pub(crate) fn timeout(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": DURATION_PATTERN,
        "description": "A duration such as \"500ms\", \"30s\" or \"2m\" (a bare number is seconds), at most 1h.",
    })
}

/// The review's wall-time limit: a duration string or a whole number of seconds.
pub(crate) fn limit_duration(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [
            { "type": "string", "pattern": DURATION_PATTERN },
            { "type": "integer", "minimum": 1 }
        ],
    })
}

/// The review's cost limit: a positive number of USD.
pub(crate) fn cost(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "number", "exclusiveMinimum": 0 })
}

/// The review's token limit: a positive whole number.
pub(crate) fn tokens(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "integer", "minimum": 1 })
}

/// `[pricing."MODEL"]`: prices in USD per million tokens, as [`super::limits::price_table`] reads them.
pub(crate) fn pricing(_: &mut SchemaGenerator) -> Schema {
    let price =
        |description: &str| json!({ "type": "number", "minimum": 0, "description": description });
    json_schema!({
        "type": "object",
        "additionalProperties": {
            "type": "object",
            "description": "The prices of one model, in USD per million tokens.",
            "properties": {
                "input": price("Prompt tokens not read from or written to a cache."),
                "cached_input": price("Prompt tokens read from the provider's prompt cache (default: input)."),
                "cache_write": price("Prompt tokens written to the provider's prompt cache (default: input)."),
                "output": price("Completion tokens (reasoning tokens included)."),
            },
            "required": ["input", "output"],
            "additionalProperties": false
        }
    })
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
