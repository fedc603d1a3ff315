//! The `walkthrough` of a submission, read leniently: a list of area objects (other key
//! names accepted), or an object mapping area names to summaries. Anything else is no
//! walkthrough; an item without a summary is dropped. Strings are cut to one bounded
//! line here, so nothing longer travels further.

use serde_json::{Map, Value};

use super::field;
use crate::review::walkthrough::{
    Area, MAX_AREA_CHARS, MAX_FILES, MAX_PATH_CHARS, MAX_SUMMARY_CHARS, one_line,
};

/// Key names (normalised) that hold the walkthrough.
pub(super) const WALKTHROUGH_KEYS: &[&str] = &["walkthrough", "areas", "changeoverview"];
const AREA_KEYS: &[&str] = &["area", "name", "title", "group", "component"];
const FILES_KEYS: &[&str] = &["files", "paths", "file", "path"];
const SUMMARY_KEYS: &[&str] = &["summary", "description", "what", "change", "changes"];

/// The areas of a submission's walkthrough value; empty when it is not usable.
pub(super) fn parse_walkthrough(value: &Value) -> Vec<Area> {
    match value {
        Value::Array(items) => items.iter().filter_map(area_of).collect(),
        Value::Object(map) if field(map, SUMMARY_KEYS).is_none() => map
            .iter()
            .filter_map(|(name, summary)| {
                Some(Area {
                    area: non_empty(one_line(name, MAX_AREA_CHARS))?,
                    files: Vec::new(),
                    summary: non_empty(one_line(summary.as_str()?, MAX_SUMMARY_CHARS))?,
                })
            })
            .collect(),
        Value::Object(_) => area_of(value).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// One area, `None` without a summary. A missing name becomes the first file's path.
fn area_of(value: &Value) -> Option<Area> {
    let map = value.as_object()?;
    let summary = non_empty(one_line(text(map, SUMMARY_KEYS)?, MAX_SUMMARY_CHARS))?;
    let mut files: Vec<String> = match field(map, FILES_KEYS) {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(path).collect(),
        Some(Value::String(one)) => vec![path(one)],
        _ => Vec::new(),
    };
    files.retain(|f| !f.is_empty());
    files.truncate(MAX_FILES);
    let area = text(map, AREA_KEYS)
        .map(|name| one_line(name, MAX_AREA_CHARS))
        .filter(|name| !name.is_empty())
        .or_else(|| files.first().map(|f| one_line(f, MAX_AREA_CHARS)))?;
    Some(Area {
        area,
        files,
        summary,
    })
}

fn text<'a>(map: &'a Map<String, Value>, names: &[&str]) -> Option<&'a str> {
    field(map, names).and_then(Value::as_str)
}

fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

/// A path as the diff names it: trimmed, without `./` or `b/`, on one line.
fn path(raw: &str) -> String {
    let trimmed = raw.trim();
    let trimmed = trimmed.strip_prefix("./").unwrap_or(trimmed);
    let trimmed = trimmed.strip_prefix("b/").unwrap_or(trimmed);
    one_line(trimmed, MAX_PATH_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::walkthrough::area;
    use serde_json::json;

    #[test]
    fn lists_of_areas_parse_with_other_key_names_and_bad_items_are_dropped() {
        let value = json!([
            {"area": "Parser", "files": ["./src/parse.rs"], "summary": "Reads\nranges."},
            {"name": "Docs", "paths": "b/README.md", "description": "Documents it."},
            {"files": ["src/x.rs"], "summary": "Named after its file."},
            {"area": "No summary"},
            "a bare string",
            42
        ]);
        assert_eq!(
            parse_walkthrough(&value),
            vec![
                area("Parser", &["src/parse.rs"], "Reads ranges."),
                area("Docs", &["README.md"], "Documents it."),
                area("src/x.rs", &["src/x.rs"], "Named after its file."),
            ]
        );
        assert_eq!(
            parse_walkthrough(&json!({"CLI": "Adds a flag.", "Bad": 3})),
            vec![area("CLI", &[], "Adds a flag.")]
        );
        assert!(parse_walkthrough(&json!("## Walkthrough\n<b>x</b>")).is_empty());
        assert!(parse_walkthrough(&Value::Null).is_empty());
    }

    #[test]
    fn strings_are_one_line_and_bounded() {
        let long = "word ".repeat(200);
        let parsed = parse_walkthrough(&json!([{"area": long, "summary": long}]));
        assert_eq!(parsed[0].area.chars().count(), MAX_AREA_CHARS);
        assert_eq!(parsed[0].summary.chars().count(), MAX_SUMMARY_CHARS);
        assert!(parsed[0].summary.ends_with('…'));
    }
}
