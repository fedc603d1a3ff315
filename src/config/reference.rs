//! The book's configuration reference (`docs/src/configuration-reference.md`), rendered
//! from the JSON Schema of the config file: what `redline config schema --format markdown`
//! prints.
//!
//! Invariants: the chapter is a pure function of the schema (no environment, no file), so
//! the committed chapter can be checked against the committed schema; every key the
//! schema names, top level and in each table, gets a `###` section whose heading is the
//! key in code (`auto.plan_min_files`), so a link `#autoplan_min_files` reaches it; what
//! a section states (type, accepted values, range, default) is read from the schema only.

use serde_json::{Map, Value};

/// Where the generated chapter is committed, beside the book's other chapters.
pub(crate) const REFERENCE_PATH: &str = "docs/src/configuration-reference.md";

/// The price table's key in the schema, rendered as `[pricing."MODEL"]`.
const PRICING: &str = "pricing";

/// The chapter for `schema` (the schema of [`super::schema::schema`] or its committed copy).
pub(crate) fn reference_markdown(schema: &Value) -> String {
    let empty = Map::new();
    let properties = schema["properties"].as_object().unwrap_or(&empty);
    let (tables, keys): (Vec<_>, Vec<_>) = properties
        .iter()
        .partition(|(name, property)| is_table(name, property));
    let mut out = String::from("# Configuration reference\n\n");
    out.push_str(&format!(
        "<!-- Generated from docs/redline.schema.json by `redline config schema --format markdown > {REFERENCE_PATH}`; a test fails when this file differs. Do not edit it by hand. -->\n\n"
    ));
    if let Some(description) = schema["description"].as_str() {
        out.push_str(&format!("{description}\n\n"));
    }
    out.push_str(
        "Every key is optional: a key not set takes its default, and \"none\" means that the \
         description says what happens without it. Keys outside this list, and values of the \
         wrong type or outside the range, are errors naming the key, its file and line. Which \
         source wins (flags, environment, the repository's file, your own file) is in \
         [Configuration](configuration.md); `redline config show --origin` prints the values a \
         review would use and where each came from.\n\n",
    );
    out.push_str("| key | type | default |\n| --- | --- | --- |\n");
    let mut sections = String::from("## Top-level keys\n\n");
    for (name, property) in &keys {
        out.push_str(&summary_row(name, property));
        sections.push_str(&key_section(name, property));
    }
    for (name, table) in &tables {
        let (heading, members) = table_members(name, table);
        sections.push_str(&format!("## `{heading}`\n\n"));
        if let Some(description) = table["description"].as_str() {
            sections.push_str(&format!("{description}\n\n"));
        }
        if let Some(required) = required_text(table) {
            sections.push_str(&format!("Required in each model's table: {required}.\n\n"));
        }
        for (key, property) in members {
            let dotted = table_key(name, &key);
            out.push_str(&summary_row(&dotted, property));
            sections.push_str(&key_section(&dotted, property));
        }
    }
    out.push('\n');
    out.push_str(&sections);
    // One final newline, as the committed file has.
    format!("{}\n", out.trim_end())
}

/// Every key the chapter documents, dotted for table keys (`reflection.target`,
/// `pricing.MODEL.input`): what a reader may look up.
#[cfg(test)]
pub(crate) fn documented_keys(schema: &Value) -> Vec<String> {
    let empty = Map::new();
    let properties = schema["properties"].as_object().unwrap_or(&empty);
    let mut keys = Vec::new();
    for (name, property) in properties {
        if is_table(name, property) {
            let (_, members) = table_members(name, property);
            keys.extend(members.into_iter().map(|(key, _)| table_key(name, &key)));
        } else {
            keys.push(name.clone());
        }
    }
    keys
}

/// A TOML table of the file (`[auto]`, `[pricing."MODEL"]`) rather than a plain key.
fn is_table(name: &str, property: &Value) -> bool {
    name == PRICING || property["properties"].is_object()
}

/// The heading of a table and its keys with their schemas.
fn table_members<'a>(name: &str, table: &'a Value) -> (String, Vec<(String, &'a Value)>) {
    let (heading, node) = if name == PRICING {
        (
            format!("[{PRICING}.\"MODEL\"]"),
            &table["additionalProperties"],
        )
    } else {
        (format!("[{name}]"), table)
    };
    let members = node["properties"]
        .as_object()
        .map(|map| map.iter().map(|(k, v)| (k.clone(), v)).collect())
        .unwrap_or_default();
    (heading, members)
}

/// `table.key`, with the model name of a price table as `MODEL`.
fn table_key(table: &str, key: &str) -> String {
    if table == PRICING {
        format!("{PRICING}.MODEL.{key}")
    } else {
        format!("{table}.{key}")
    }
}

/// The anchor mdBook gives a heading made of `key` in code: letters, digits, `_` and `-`
/// kept, the rest dropped.
fn anchor(key: &str) -> String {
    key.chars()
        .filter(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// A default longer than this is left to the key's section in the summary table.
const SUMMARY_DEFAULT_MAX: usize = 40;

fn summary_row(key: &str, property: &Value) -> String {
    let mut default = default_text(property);
    if default.chars().count() > SUMMARY_DEFAULT_MAX {
        default = "see below".to_string();
    }
    format!(
        "| [`{key}`](#{}) | {} | {} |\n",
        anchor(key),
        type_text(property).replace('|', "\\|"),
        default.replace('|', "\\|")
    )
}

fn key_section(key: &str, property: &Value) -> String {
    let mut section = format!("### `{key}`\n\n");
    if let Some(description) = property["description"].as_str() {
        section.push_str(&format!("{description}\n\n"));
    }
    section.push_str(&format!("- Type: {}\n", type_text(property)));
    if let Some(values) = enum_text(property) {
        section.push_str(&format!("- Accepted values: {values}\n"));
    }
    if let Some(range) = range_text(property) {
        section.push_str(&format!("- Range: {range}\n"));
    }
    if property.get("pattern").is_some() || any_of(property).any(|o| o.get("pattern").is_some()) {
        section.push_str("- Format: a duration such as `\"500ms\"`, `\"90s\"`, `\"10m\"` or `\"1h30m\"`; a bare number is seconds\n");
    }
    section.push_str(&format!("- Default: {}\n\n", default_text(property)));
    section
}

fn any_of(property: &Value) -> impl Iterator<Item = &Value> {
    property["anyOf"].as_array().into_iter().flatten()
}

/// The type in words: `integer`, `list of strings`, `duration string or integer`.
fn type_text(property: &Value) -> String {
    let options: Vec<&Value> = any_of(property).collect();
    if !options.is_empty() {
        return options
            .iter()
            .map(|option| single_type(option))
            .collect::<Vec<_>>()
            .join(" or ");
    }
    single_type(property)
}

fn single_type(property: &Value) -> String {
    let base = property["type"].as_str().unwrap_or("any");
    match base {
        "array" => format!("list of {}s", single_type(&property["items"])),
        "object" => "table".to_string(),
        "string" if property.get("pattern").is_some() => "duration string".to_string(),
        "string" if property["format"] == "uri" => "string (URL)".to_string(),
        other => other.to_string(),
    }
}

fn enum_text(property: &Value) -> Option<String> {
    let values = property["enum"].as_array()?;
    Some(
        values
            .iter()
            .map(|v| format!("`{}`", toml_text(v)))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// `1 to 200`, `0 or more`, `more than 0`, `at most 16000`.
fn range_text(property: &Value) -> Option<String> {
    let node = any_of(property)
        .find(|o| o.get("minimum").is_some() || o.get("maximum").is_some())
        .unwrap_or(property);
    let number = |key: &str| {
        node.get(key)
            .filter(|v| v.is_number())
            .map(Value::to_string)
    };
    match (
        number("minimum"),
        number("exclusiveMinimum"),
        number("maximum"),
    ) {
        (Some(min), _, Some(max)) => Some(format!("{min} to {max}")),
        (Some(min), _, None) => Some(format!("{min} or more")),
        (None, Some(min), Some(max)) => Some(format!("more than {min}, at most {max}")),
        (None, Some(min), None) => Some(format!("more than {min}")),
        (None, None, Some(max)) => Some(format!("at most {max}")),
        (None, None, None) => None,
    }
}

fn required_text(property: &Value) -> Option<String> {
    let keys = property["additionalProperties"]["required"].as_array()?;
    Some(
        keys.iter()
            .filter_map(Value::as_str)
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(" and "),
    )
}

fn default_text(property: &Value) -> String {
    match property.get("default") {
        Some(value) => format!("`{}`", toml_text(value)),
        None => "none".to_string(),
    }
}

/// A value as it is written in the TOML file (`"auto"`, `["a", "b"]`, `0.55`).
fn toml_text(value: &Value) -> String {
    toml::Value::try_from(value)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
#[path = "reference_tests.rs"]
mod tests;
