//! Every problem of a config file at once: the file is walked against its JSON Schema
//! ([`super::schema`]) before serde reads it, so one run reports the first syntax error
//! (with what the lines before it hold), each unknown key (with the closest known one) and each value of
//! the wrong type or out of range, in file order, as `L:C: key: what`, in plain words
//! derived from the schema ("expected an integer from 1 to 200, found a string").
//!
//! Invariants: no value from the file is quoted except numbers (a line may hold a
//! secret: a key pasted under the wrong name or into a wrong-typed setting), and the
//! walk is never stricter than the code: it checks the schema's `type`, ranges,
//! `pattern`, `items`, `properties`, `additionalProperties`, `required` and `anyOf`, but
//! not `enum` (the code that reads a variant also takes its aliases, `plan_execute`,
//! `high`, and names the closest one); serde and that code still run after it.

use std::sync::OnceLock;

use serde_json::Value;
use toml::de::{DeTable, DeValue};

use super::toml_errors::{line_column, syntax_message};

/// One problem: where (a byte offset in the file), the key it concerns, and what is wrong.
#[derive(Debug, Clone, PartialEq)]
struct Problem {
    offset: usize,
    key: Option<String>,
    message: String,
}

/// The problems of `text`, in file order, each as `L:C: key: what` (to follow `FILE:`);
/// empty when the file is well-formed and matches the schema.
pub(crate) fn problems(text: &str) -> Vec<String> {
    let (document, errors) = DeTable::parse_recoverable(text);
    // After a syntax error the parser's recovery is a guess: its first error is reported,
    // with what the lines before it hold, and nothing after it.
    let syntax = errors
        .iter()
        .map(|error| Problem {
            offset: error.span().map_or(0, |span| span.start),
            key: None,
            message: syntax_message(error.message()),
        })
        .min_by_key(|p| p.offset);
    let sound_until = syntax.as_ref().map_or(usize::MAX, |p| {
        text.get(..p.offset)
            .and_then(|b| b.rfind('\n'))
            .map_or(0, |at| at + 1)
    });
    let mut found = Vec::new();
    check_table("", document.get_ref(), schema(), &mut found);
    found.retain(|p| p.offset < sound_until);
    found.extend(syntax);
    found.sort_by_key(|p| p.offset);
    found.dedup();
    found
        .into_iter()
        .map(|p| {
            let (line, column) = line_column(text, p.offset);
            match p.key {
                Some(key) => format!("{line}:{column}: {key}: {}", p.message),
                None => format!("{line}:{column}: {}", p.message),
            }
        })
        .collect()
}

/// The schema of a config file, made once.
fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(super::schema::schema)
}

/// Checks each key of `table` (at dotted key `prefix`, empty at the top) against the
/// table schema `schema`.
fn check_table(prefix: &str, table: &DeTable<'_>, schema: &Value, out: &mut Vec<Problem>) {
    let properties = schema.get("properties").and_then(Value::as_object);
    for (key, value) in table {
        let leaf = key.get_ref().as_ref();
        let dotted = match prefix {
            "" => leaf.to_string(),
            // A model's name, quoted as `[pricing."gpt-4.1"]` is written.
            "pricing" => format!("{prefix}.\"{leaf}\""),
            _ => format!("{prefix}.{leaf}"),
        };
        let (name, offset) = (dotted.as_str(), key.span().start);
        let property = properties.and_then(|p| p.get(leaf));
        match (property, schema.get("additionalProperties")) {
            (Some(property), _) => check_value(name, offset, value.get_ref(), property, out),
            (None, Some(extra @ Value::Object(_))) => {
                check_value(name, offset, value.get_ref(), extra, out)
            }
            (None, Some(Value::Bool(false))) => out.push(Problem {
                offset,
                key: Some(name.to_string()),
                message: unknown_key(leaf, properties),
            }),
            (None, _) => {}
        }
    }
}

/// `unknown key`, with the closest known key when one is close.
fn unknown_key(name: &str, properties: Option<&serde_json::Map<String, Value>>) -> String {
    let known: Vec<&str> = properties
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    match crate::text::closest(name, &known) {
        Some(close) => format!("unknown key: did you mean `{close}`?"),
        None => "unknown key (the file `redline init` writes has every key)".to_string(),
    }
}

/// Checks one value (set at `offset` under `key`) against `schema`.
fn check_value(
    key: &str,
    offset: usize,
    value: &DeValue<'_>,
    schema: &Value,
    out: &mut Vec<Problem>,
) {
    let problem = |message: String| Problem {
        offset,
        key: Some(key.to_string()),
        message,
    };
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
        if !options.iter().any(|option| matches(value, option)) {
            out.push(problem(format!(
                "expected {}, {}",
                describe(schema),
                found(value)
            )));
        }
        return;
    }
    if !has_type(value, schema) {
        out.push(problem(format!(
            "expected {}, found {}",
            describe(schema),
            kind(value)
        )));
        return;
    }
    match value {
        DeValue::Table(inner) => {
            check_table(key, inner, schema, out);
            for required in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !inner.iter().any(|(k, _)| k.get_ref().as_ref() == required) {
                    out.push(problem(format!("missing key `{required}`")));
                }
            }
        }
        DeValue::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    check_value(key, item.span().start, item.get_ref(), item_schema, out);
                }
            }
        }
        scalar => {
            if !scalar_fits(scalar, schema) {
                out.push(problem(format!(
                    "expected {}, {}",
                    describe(schema),
                    found(scalar)
                )));
            }
        }
    }
}

/// Whether `value` satisfies `schema` wholly (for `anyOf`).
fn matches(value: &DeValue<'_>, schema: &Value) -> bool {
    let mut problems = Vec::new();
    check_value("", 0, value, schema, &mut problems);
    problems.is_empty()
}

/// Whether the value's TOML type is the schema's `type` (an integer is also a number).
fn has_type(value: &DeValue<'_>, schema: &Value) -> bool {
    let Some(expected) = schema.get("type") else {
        return true;
    };
    let accepts = |name: &str| match expected {
        Value::String(t) => t == name,
        Value::Array(types) => types.iter().any(|t| t == name),
        _ => true,
    };
    match value {
        DeValue::String(_) => accepts("string"),
        DeValue::Integer(_) => accepts("integer") || accepts("number"),
        DeValue::Float(_) => accepts("number"),
        DeValue::Boolean(_) => accepts("boolean"),
        DeValue::Datetime(_) => false,
        DeValue::Array(_) => accepts("array"),
        DeValue::Table(_) => accepts("object"),
    }
}

/// Whether a scalar of the right type is in the schema's `enum`, range and `pattern`.
fn scalar_fits(value: &DeValue<'_>, schema: &Value) -> bool {
    if let (Some(pattern), Some(text)) = (
        schema.get("pattern").and_then(Value::as_str),
        value.as_str(),
    ) && !regex::Regex::new(pattern).is_ok_and(|re| re.is_match(text))
    {
        return false;
    }
    let Some(number) = number(value) else {
        return true;
    };
    let bound = |name: &str| schema.get(name).and_then(Value::as_f64);
    bound("minimum").is_none_or(|min| number >= min)
        && bound("maximum").is_none_or(|max| number <= max)
        && bound("exclusiveMinimum").is_none_or(|min| number > min)
        && bound("exclusiveMaximum").is_none_or(|max| number < max)
}

/// A TOML number's value (an integer past `f64`'s exact range is still compared roughly).
fn number(value: &DeValue<'_>) -> Option<f64> {
    match value {
        DeValue::Integer(int) => i128::from_str_radix(int.as_str(), int.radix())
            .ok()
            .map(|n| n as f64),
        DeValue::Float(float) => float.as_str().replace('_', "").parse().ok(),
        _ => None,
    }
}

/// `found a string`, or `not 500` (numbers are shown; strings never are).
fn found(value: &DeValue<'_>) -> String {
    match number(value) {
        Some(_) => format!("not {}", shown_number(value)),
        None => format!("found {}", kind(value)),
    }
}

/// The number as written (integers) or as read (floats), never a string.
fn shown_number(value: &DeValue<'_>) -> String {
    match value {
        DeValue::Integer(int) => i128::from_str_radix(int.as_str(), int.radix())
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "that number".into()),
        _ => number(value).map_or_else(|| "that number".into(), |n| n.to_string()),
    }
}

/// The TOML type of a value, in words.
fn kind(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a number with a fraction",
        DeValue::Boolean(_) => "true or false",
        DeValue::Datetime(_) => "a date",
        DeValue::Array(_) => "a list",
        DeValue::Table(_) => "a table",
    }
}

/// What a schema accepts, in words: `an integer from 1 to 200`, `one of "auto", "react",
/// "plan" or "reflect"`, `a duration such as "90s"`, `true or false`, `a list of strings`.
pub(crate) fn describe(schema: &Value) -> String {
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
        let words: Vec<String> = options.iter().map(describe).collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        return crate::text::one_of(&words);
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        let names: Vec<String> = allowed.iter().map(|v| v.to_string()).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        return format!("one of {}", crate::text::one_of(&names));
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => format!("an integer{}", range(schema)),
        Some("number") => format!("a number{}", range(schema)),
        Some("boolean") => "true or false".into(),
        Some("string") if schema.get("pattern").is_some() => {
            "a duration such as \"90s\", \"10m\" or \"1h30m\"".into()
        }
        Some("string") if schema.get("format").is_some_and(|f| f == "uri") => "a URL".into(),
        Some("string") => "a string".into(),
        Some("array") => match schema.get("items").and_then(|i| i.get("type")) {
            Some(t) if t == "string" => "a list of strings".into(),
            _ => "a list".into(),
        },
        Some("object") => "a table".into(),
        _ => "another value".into(),
    }
}

/// ` from 1 to 200`, ` of at least 1`, ` above 0`, or nothing.
fn range(schema: &Value) -> String {
    let bound = |name: &str| {
        schema
            .get(name)
            .filter(|v| v.is_number())
            .map(Value::to_string)
    };
    match (
        bound("minimum"),
        bound("maximum"),
        bound("exclusiveMinimum"),
    ) {
        (Some(min), Some(max), _) => format!(" from {min} to {max}"),
        (Some(min), None, _) => format!(" of at least {min}"),
        (None, Some(max), _) => format!(" of at most {max}"),
        (None, None, Some(min)) => format!(" above {min}"),
        (None, None, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_is_reported_in_file_order() {
        let text = "modle = \"x\"\nmax_step = 3\nmax_steps = \"ten\"\ntemperature = 5\n[auto]\nplan_min_file = 2\n";
        assert_eq!(
            problems(text),
            [
                "1:1: modle: unknown key: did you mean `model`?",
                "2:1: max_step: unknown key: did you mean `max_steps`?",
                "3:1: max_steps: expected an integer from 1 to 200, found a string",
                "4:1: temperature: expected a number from 0 to 2, not 5",
                "6:1: auto.plan_min_file: unknown key: did you mean `plan_min_files`?",
            ]
        );
    }

    #[test]
    fn types_ranges_and_variants_are_in_plain_words() {
        for (text, expected) in [
            (
                "max_steps = 500\n",
                "1:1: max_steps: expected an integer from 1 to 200, not 500",
            ),
            (
                "max_steps = -3\n",
                "1:1: max_steps: expected an integer from 1 to 200, not -3",
            ),
            (
                "walkthrough = \"yes\"\n",
                "1:1: walkthrough: expected true or false, found a string",
            ),
            (
                "include = \"src/**\"\n",
                "1:1: include: expected a list of strings, found a string",
            ),
            (
                "include = [\"a\", 3]\n",
                "1:17: include: expected a string, found an integer",
            ),
            (
                "timeout = \"forever\"\n",
                "1:1: timeout: expected a duration such as \"90s\", \"10m\" or \"1h30m\" or an integer of at least 1, found a string",
            ),
            (
                "max_cost = 0\n",
                "1:1: max_cost: expected a number above 0, not 0",
            ),
            (
                "prompts = 3\n",
                "1:1: prompts: expected a table, found an integer",
            ),
            (
                "[pricing.m]\ninput = 1.0\n",
                "1:10: pricing.\"m\": missing key `output`",
            ),
            (
                "[reflection]\ntarget = \"x\"\n",
                "2:1: reflection.target: expected a number from 0 to 10, found a string",
            ),
        ] {
            assert_eq!(problems(text), [expected], "{text}");
        }
    }

    #[test]
    fn a_string_is_never_quoted_and_syntax_errors_are_in_words() {
        let text =
            "model = \"m\"\nsecret = \"sk-live-0123456789\nmax_steps = \"sk-live-0123456789\"\n";
        let found = problems(text);
        assert!(found.iter().all(|p| !p.contains("0123456789")), "{found:?}");
        assert_eq!(found.len(), 1, "nothing after a syntax error: {found:?}");
        assert!(
            found[0].starts_with("2:") && found[0].contains("missing closing quote"),
            "{found:?}"
        );
        let found = problems("modle = 1\nmax_steps = \"a\nmax_step = 2\n");
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("1:1: modle: unknown key"), "{found:?}");
        assert!(
            found[1].starts_with("2:15: missing closing quote"),
            "{found:?}"
        );
    }

    #[test]
    fn the_files_init_writes_have_no_problem() {
        assert!(problems(&crate::cli::init::config_text()).is_empty());
        assert!(problems("").is_empty());
    }
}
