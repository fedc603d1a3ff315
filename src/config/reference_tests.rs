use super::*;

fn committed_schema() -> Value {
    let text = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/redline.schema.json"
    ));
    serde_json::from_str(text).unwrap()
}

fn committed_chapter() -> &'static str {
    include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/src/configuration-reference.md"
    ))
}

#[test]
fn the_committed_reference_is_the_one_generated_from_the_committed_schema() {
    assert!(
        committed_chapter() == reference_markdown(&committed_schema()),
        "{REFERENCE_PATH} is out of date: run `cargo run -- config schema --format markdown > {REFERENCE_PATH}` and commit it"
    );
}

/// Every key of the schema the code generates (top level and in each table) has its own
/// section and a row of the summary table in the committed chapter.
#[test]
fn every_key_of_the_schema_is_in_the_committed_reference() {
    let chapter = committed_chapter();
    let keys = documented_keys(&crate::config::schema::schema());
    assert!(keys.len() > 40, "{keys:?}");
    for key in ["max_steps", "auto.plan_min_files", "reflection.target"] {
        assert!(keys.iter().any(|k| k == key), "{key} in {keys:?}");
    }
    assert!(keys.iter().any(|k| k == "pricing.MODEL.input"), "{keys:?}");
    for key in &keys {
        assert!(
            chapter.contains(&format!("\n### `{key}`\n")),
            "`{key}` has no section in {REFERENCE_PATH}"
        );
        assert!(
            chapter.contains(&format!("| [`{key}`](#{}) |", anchor(key))),
            "`{key}` has no row in the summary of {REFERENCE_PATH}"
        );
    }
}

#[test]
fn a_section_states_the_type_range_values_and_default_from_the_schema() {
    let schema = serde_json::json!({
        "description": "Settings.",
        "properties": {
            "steps": {"type": "integer", "minimum": 1, "maximum": 9, "default": 3, "description": "Turns."},
            "mode": {"type": "string", "enum": ["a", "b"], "default": "a", "description": "Mode."},
            "limit": {"type": "number", "exclusiveMinimum": 0, "description": "USD."},
            "table": {"type": "object", "description": "A table.", "properties": {
                "paths": {"type": "array", "items": {"type": "string"}, "default": ["x", "y"], "description": "Paths."}
            }}
        }
    });
    let text = reference_markdown(&schema);
    assert!(
        text.contains(
            "### `steps`\n\nTurns.\n\n- Type: integer\n- Range: 1 to 9\n- Default: `3`\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("- Accepted values: `\"a\"`, `\"b\"`\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "### `limit`\n\nUSD.\n\n- Type: number\n- Range: more than 0\n- Default: none\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("## `[table]`\n\nA table.\n\n### `table.paths`\n"),
        "{text}"
    );
    assert!(text.contains("- Default: `[\"x\", \"y\"]`\n"), "{text}");
    assert!(
        text.contains("| [`table.paths`](#tablepaths) | list of strings |"),
        "{text}"
    );
    // The plain keys come before the tables.
    assert!(
        text.find("### `steps`") < text.find("## `[table]`"),
        "{text}"
    );
    assert_eq!(
        documented_keys(&schema),
        vec!["limit", "mode", "steps", "table.paths"]
    );
}
