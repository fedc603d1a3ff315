use super::*;

/// The names serde lists as expected when a table of type `T` gets an unknown key:
/// every key the type accepts, from its `Deserialize` (not from the schema).
fn accepted_keys<T: serde::de::DeserializeOwned + std::fmt::Debug>() -> Vec<String> {
    let error = toml::from_str::<T>("zz_not_a_key = 1").unwrap_err();
    let message = error.message().to_string();
    let (_, expected) = message
        .split_once("expected one of")
        .or_else(|| message.split_once("expected"))
        .unwrap_or_else(|| panic!("no expected keys in {message}"));
    let mut keys: Vec<String> = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    keys.sort();
    keys
}

fn schema_keys(schema: &Value, table: &str) -> Vec<String> {
    let node = if table.is_empty() {
        schema
    } else {
        &schema["properties"][table]
    };
    let mut keys: Vec<String> = node["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("no properties for `{table}`"))
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

#[test]
fn every_key_the_config_accepts_is_in_the_schema_and_no_other() {
    let schema = schema();
    assert_eq!(accepted_keys::<FileConfig>(), schema_keys(&schema, ""));
    assert_eq!(
        accepted_keys::<crate::prompts::PromptOverrides>(),
        schema_keys(&schema, "prompts")
    );
    assert_eq!(
        accepted_keys::<crate::agent::strategy::AutoThresholds>(),
        schema_keys(&schema, "auto")
    );
    assert_eq!(
        accepted_keys::<crate::agent::reflection::ReflectionConfig>(),
        schema_keys(&schema, "reflection")
    );
    assert!(accepted_keys::<FileConfig>().len() > 30);
    for table in ["", "prompts", "auto", "reflection"] {
        let node = if table.is_empty() {
            &schema
        } else {
            &schema["properties"][table]
        };
        assert_eq!(node["additionalProperties"], false, "`{table}` is closed");
    }
}

#[test]
fn the_committed_schema_is_the_generated_one() {
    let committed = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/redline.schema.json"
    ));
    assert!(
        committed == schema_text(),
        "{SCHEMA_PATH} is out of date: run `cargo run -- config schema > {SCHEMA_PATH}` and commit it"
    );
}

#[test]
fn the_schema_is_draft_2020_12_with_descriptions_types_enums_ranges_and_defaults() {
    let schema = schema();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let props = &schema["properties"];
    for (key, property) in props.as_object().unwrap() {
        assert!(
            property["description"]
                .as_str()
                .is_some_and(|d| !d.is_empty()),
            "`{key}` has no description"
        );
        assert!(
            property.get("type").is_some() || property.get("anyOf").is_some(),
            "`{key}` has no type"
        );
        let text = property.to_string();
        assert!(!text.contains("null"), "`{key}` allows null: {text}");
        assert!(!text.contains("[`"), "`{key}` has a Rust doc link: {text}");
    }
    assert_eq!(props["max_steps"]["minimum"], 1);
    assert_eq!(props["max_steps"]["maximum"], 200);
    assert_eq!(
        props["max_steps"]["default"],
        crate::config::DEFAULT_MAX_STEPS
    );
    assert_eq!(props["strategy"]["default"], "auto");
    assert_eq!(
        props["strategy"]["enum"],
        json!(["auto", "react", "plan", "reflect"])
    );
    assert_eq!(
        props["tool_mode"]["enum"],
        json!(["native", "text", "auto"])
    );
    assert_eq!(props["fail_on"]["default"], "never");
    assert_eq!(props["request_timeout"]["default"], "300s");
    assert_eq!(
        props["reflection"]["properties"]["max_rounds"]["default"],
        3
    );
    assert_eq!(props["walkthrough"]["default"], true);
    assert!(props["model"].get("default").is_none());
    assert!(props["max_cost"].get("default").is_none());
    assert_eq!(
        props["pricing"]["additionalProperties"]["required"],
        json!(["input", "output"])
    );
}

/// Why a config that sets one key was refused, with the refusal's text.
#[derive(Debug, PartialEq, thiserror::Error)]
enum Refused {
    #[error("does not parse: {0}")]
    Parse(String),
    #[error("does not resolve: {0}")]
    Resolve(String),
}

/// The resolution of a config that sets `key` to `value` (as TOML).
fn resolves(key: &str, value: &str) -> Result<(), Refused> {
    let (table, leaf) = match key.split_once('.') {
        Some((table, leaf)) => (format!("[{table}]\n"), leaf),
        None => (String::new(), key),
    };
    let text = format!("{table}{leaf} = {value}\n");
    let source = crate::config::ConfigSource::parse(&text, "t", crate::config::Owner::User)
        .map_err(|e| Refused::Parse(e.to_string()))?;
    let env = |_: &str| None;
    super::super::settings::resolve(super::super::settings::SettingsInput {
        flags: Default::default(),
        flags_origin: "flag",
        env: &env,
        user: Some(source),
        repository: None,
        scope: super::super::settings::Scope::Offline,
    })
    .map(|_| ())
    .map_err(|e| Refused::Resolve(e.to_string()))
}

/// Every range and enum the schema states is the one the code enforces: the bounds and
/// every listed value resolve, one past a bound and an unlisted value do not.
#[test]
fn the_schema_ranges_and_enums_are_what_the_resolution_accepts() {
    let schema = schema();
    let mut keys: Vec<(String, &Value)> = Vec::new();
    for (key, property) in schema["properties"].as_object().unwrap() {
        match property["properties"].as_object() {
            Some(inner) => keys.extend(inner.iter().map(|(k, p)| (format!("{key}.{k}"), p))),
            None => keys.push((key.clone(), property)),
        }
    }
    let mut checked = 0;
    for (key, property) in keys {
        // The window must hold the reply reserve and a first message: a bound of these two
        // depends on the other and the model, which a schema cannot say.
        if key == "context_window" || key == "max_output_tokens" {
            continue;
        }
        let integer = property["type"] == "integer";
        let step = if integer { 1.0 } else { 0.01 };
        let show = |n: f64| {
            if integer {
                format!("{}", n as i64)
            } else {
                format!("{n:?}")
            }
        };
        if let Some(min) = property["minimum"].as_f64() {
            assert_eq!(resolves(&key, &show(min)), Ok(()), "{key} = {min}");
            if min > 0.0 || !integer {
                assert!(
                    resolves(&key, &show(min - step)).is_err(),
                    "{key} below {min}"
                );
            }
            checked += 1;
        }
        if let Some(max) = property["maximum"].as_f64() {
            assert_eq!(resolves(&key, &show(max)), Ok(()), "{key} = {max}");
            assert!(
                resolves(&key, &show(max + step)).is_err(),
                "{key} above {max}"
            );
            checked += 1;
        }
        if let Some(values) = property["enum"].as_array() {
            for value in values {
                let value = value.as_str().unwrap();
                if key == "provider" {
                    continue; // resolved with its own endpoint, checked elsewhere
                }
                assert_eq!(resolves(&key, &format!("\"{value}\"")), Ok(()), "{key}");
            }
            assert!(resolves(&key, "\"zz-unknown\"").is_err(), "{key}");
            checked += 1;
        }
    }
    assert!(checked >= 25, "{checked}");
}

#[test]
fn durations_the_pattern_takes_are_the_ones_that_parse() {
    let pattern = regex::Regex::new(DURATION_PATTERN).unwrap();
    for text in ["90", "90s", "500ms", "10m", "1h30m", "7d", " 2m "] {
        assert!(pattern.is_match(text), "{text}");
        assert!(super::super::limits::parse_duration(text).is_ok(), "{text}");
    }
    for text in ["", "s", "10 m", "1.5h", "10x", "-1s"] {
        assert!(!pattern.is_match(text), "{text}");
        assert!(
            super::super::limits::parse_duration(text).is_err(),
            "{text}"
        );
    }
}
