//! Tests of `redline init`: the template, the files it writes and refuses.

use super::*;
use crate::config::{FileConfig, default_model, parse_timeout};
use crate::llm::{CallTimeouts, Provider};

/// The template with every `# key = value` line uncommented.
fn uncommented() -> String {
    CONFIG_TEMPLATE
        .lines()
        .filter_map(|line| line.strip_prefix("# "))
        .filter(|rest| setting_line(rest).is_some())
        .map(|line| format!("{line}\n"))
        .collect()
}

/// The key a template line (without its `# `) sets, or the table it opens (`[auto]`,
/// `[pricing."my-model"]` as `pricing`), with the enclosing table's name.
fn setting_line(line: &str) -> Option<(bool, String)> {
    let plain =
        |key: &str| !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    if let Some(table) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
        let name = table.split('.').next().unwrap_or_default();
        return plain(name).then(|| (true, name.to_string()));
    }
    let (key, _) = line.split_once(" = ")?;
    plain(key).then(|| (false, key.to_string()))
}

/// The keys of the template, top level and per table (`auto.plan_min_files`).
fn template_keys() -> std::collections::BTreeSet<String> {
    let mut table: Option<String> = None;
    let mut keys = std::collections::BTreeSet::new();
    for line in CONFIG_TEMPLATE.lines().filter_map(|l| l.strip_prefix("# ")) {
        match setting_line(line) {
            Some((true, name)) => {
                keys.insert(name.clone());
                table = Some(name);
            }
            Some((false, key)) => {
                keys.insert(match &table {
                    // A price table's keys are checked where prices are read.
                    Some(t) if t == "pricing" => continue,
                    Some(t) => format!("{t}.{key}"),
                    None => key,
                });
            }
            None => {}
        }
    }
    keys
}

/// The keys the parser accepts: the `expected one of …` list of its unknown-key error.
fn accepted_keys(table: Option<&str>) -> Vec<String> {
    let text = match table {
        Some(t) => format!("[{t}]\nzz_not_a_key = 1\n"),
        None => "zz_not_a_key = 1\n".to_string(),
    };
    let error = toml::from_str::<FileConfig>(&text).unwrap_err();
    let message = error.message().to_string();
    let list = message.split("expected one of").nth(1).expect(&message);
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(|key| match table {
            Some(t) => format!("{t}.{key}"),
            None => key.to_string(),
        })
        .collect()
}

/// init writes every setting the parser accepts, so a new key without a template line
/// fails here.
#[test]
fn the_template_has_a_line_for_every_accepted_key() {
    let mut accepted: std::collections::BTreeSet<String> =
        accepted_keys(None).into_iter().collect();
    for table in ["auto", "reflection", "prompts"] {
        accepted.extend(accepted_keys(Some(table)));
    }
    assert!(accepted.len() > 40, "{accepted:?}");
    assert_eq!(template_keys(), accepted);
}

#[test]
fn the_template_parses_and_its_commented_values_are_the_defaults() {
    assert_eq!(
        FileConfig::parse(CONFIG_TEMPLATE, "template").unwrap(),
        FileConfig::default(),
        "as written, the file changes nothing"
    );
    let text = uncommented();
    assert!(text.lines().count() >= 12, "{text}");
    let file = FileConfig::parse(&text, "uncommented template").unwrap();
    file.check_ranges().unwrap();
    assert_eq!(file.model.as_deref(), Some(default_model(Provider::OpenAi)));
    assert_eq!(file.max_steps, Some(crate::config::DEFAULT_MAX_STEPS));
    assert_eq!(file.strategy.as_deref(), Some("auto"));
    assert_eq!(file.fail_on.as_deref(), Some("never"));
    assert_eq!(file.tool_mode.as_deref(), Some("auto"));
    assert!(file.include.is_empty() && file.exclude.is_empty());
    let defaults = CallTimeouts::default();
    let timeout = |value: &Option<String>| parse_timeout("t", value.as_deref().unwrap()).unwrap();
    assert_eq!(timeout(&file.connect_timeout), defaults.connect);
    assert_eq!(timeout(&file.first_byte_timeout), defaults.first_byte);
    assert_eq!(timeout(&file.stream_idle_timeout), defaults.stream_idle);
    assert_eq!(timeout(&file.request_timeout), defaults.request);
    assert_eq!(
        file.intent_budget,
        Some(crate::intent::DEFAULT_INTENT_BUDGET)
    );
}

/// The header does not claim every line is a default: keys without a fixed default
/// (`context_window`, `max_output_tokens`, `temperature`) show examples.
#[test]
fn the_header_says_which_lines_are_examples() {
    let header: String = CONFIG_TEMPLATE
        .lines()
        .take_while(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        !header.contains("commented out at its default:"),
        "{header}"
    );
    assert!(header.contains("example"), "{header}");
    for key in ["context_window", "max_output_tokens"] {
        assert!(
            template_keys().contains(key),
            "{key} has a line in the template"
        );
    }
}

#[test]
fn the_config_starts_with_the_schema_of_this_release() {
    let text = config_text();
    let first = text.lines().next().unwrap();
    let url = first
        .strip_prefix("#:schema https://raw.githubusercontent.com/")
        .unwrap();
    assert!(
        url.ends_with(&format!(
            "/v{}/docs/redline.schema.json",
            env!("CARGO_PKG_VERSION")
        )),
        "{first}"
    );
    let repository = action_reference();
    let repository = repository.split('@').next().unwrap();
    assert!(url.starts_with(&format!("{repository}/")), "{first}");
    // The path is where the schema is committed (the drift test keeps it current).
    assert!(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(crate::config::schema::SCHEMA_PATH)
            .is_file()
    );
    assert_eq!(
        FileConfig::parse(&text, "init").unwrap(),
        FileConfig::default()
    );
}

#[test]
fn the_workflow_uses_a_release_of_the_action() {
    let action = action_reference();
    assert!(
        action.ends_with(&format!("@v{}", env!("CARGO_PKG_VERSION"))),
        "{action}"
    );
    let text = workflow_text(&action);
    assert!(
        text.contains(&format!("      - uses: {action}\n")),
        "{text}"
    );
    assert!(!text.contains("{action}"));
}

/// Cargo.toml's `repository` is where Redline is published: the action reference and
/// the #:schema line name it unless the build was given another GitHub repository.
#[test]
fn the_published_repository_is_cargo_tomls_unless_the_build_names_another() {
    let cargo = github_path(env!("CARGO_PKG_REPOSITORY")).unwrap();
    let baked = option_env!("REDLINE_REPOSITORY_URL").and_then(github_path);
    assert_eq!(published_repository(), baked.unwrap_or(cargo));
    assert!(action_reference().starts_with(&format!("{}@v", published_repository())));
    assert!(!config_text().contains("OWNER"), "{}", config_text());
    assert_eq!(github_path("https://github.com/a/b.git"), Some("a/b"));
    assert_eq!(github_path("https://gitlab.com/a/b"), None);
    assert_eq!(github_path("https://github.com/a"), None);
}

/// The GitHub Action chapter of the book shows the workflow that `init --action` writes
/// for a build of Cargo.toml's repository.
#[test]
fn the_book_shows_the_workflow_init_writes() {
    let chapter = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/src/github-action.md"
    ));
    let block = chapter
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a yaml block");
    let expected = workflow_text(&format!(
        "{}@v{}",
        github_path(env!("CARGO_PKG_REPOSITORY")).unwrap(),
        env!("CARGO_PKG_VERSION")
    ));
    assert_eq!(block, expected);
}

/// init's advice and the workflow agree: the model is chosen in .redline.toml, which
/// an input set in the workflow would override.
#[test]
fn the_workflow_leaves_the_model_to_the_config_file() {
    let text = workflow_text(&action_reference());
    for input in ["model:", "strategy:", "fail-on:", "max-comments:"] {
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with(input)),
            "the workflow sets {input}: {text}"
        );
    }
    for action in [true, false] {
        let steps = next_steps(action);
        assert!(steps.contains("`model` in .redline.toml"), "{steps}");
    }
}

#[test]
fn next_steps_name_the_secret_only_with_the_workflow() {
    let with = next_steps(true);
    assert!(with.contains("OPENAI_API_KEY"), "{with}");
    assert!(!with.contains("OWNER"), "{with}");
    assert!(with.contains(WORKFLOW_FILE), "{with}");
    let without = next_steps(false);
    assert!(!without.contains("secret"), "{without}");
    assert!(without.contains("redline init --action"), "{without}");
}
