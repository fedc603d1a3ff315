//! The resolved settings as dotted keys with values, each with where its value came
//! from: what `redline config show` prints, and the defaults of the schema.
//!
//! Invariants: values are read back from the [`Settings`] that [`super::settings::resolve`]
//! built, never resolved a second time here; an origin follows the same precedence as the
//! resolution (a flag or its environment variable, then the repository's file, then the
//! user's file, then the default) and names the file and line. No secret is ever a value:
//! the API key is reported only as set or not, with the name of its variable.

use serde_json::{Value, json};

use super::settings::{Scope, SettingFlags, Settings, SettingsInput};
use super::{ConfigSource, api_key_var};
use crate::agent::ToolMode;
use crate::llm::Provider;
use crate::prompts::Prompts;

/// The key under which the API key's presence is shown (never its value).
pub(crate) const API_KEY: &str = "api_key";

/// Every resolved setting as `(dotted key, value)`, in the order they are shown.
/// `null` is "not set" (no temperature, no limit, ...).
pub(crate) fn values(settings: &Settings) -> Vec<(String, Value)> {
    let mut out = Values::default();
    model_values(&mut out, settings);
    agent_values(&mut out, settings);
    context_values(&mut out, settings);
    tuning_values(&mut out, settings);
    prompt_values(&mut out, settings);
    publishing_values(&mut out, settings);
    out.0
}

/// The shown values, in order.
#[derive(Default)]
struct Values(Vec<(String, Value)>);

impl Values {
    fn put(&mut self, key: &str, value: Value) {
        self.0.push((key.to_string(), value));
    }
}

/// The model's endpoint and its timeouts.
fn model_values(out: &mut Values, settings: &Settings) {
    let model = &settings.model;
    out.put("provider", json!(model.provider.to_string()));
    out.put("model", json!(model.model));
    // Shown by the one masking rule: a password or `?key=` in it is not shown.
    out.put(
        "base_url",
        json!(crate::text::urls::masked(&model.base_url)),
    );
    let timeouts = &model.timeouts;
    out.put("connect_timeout", json!(duration(timeouts.connect)));
    out.put("first_byte_timeout", json!(duration(timeouts.first_byte)));
    out.put("stream_idle_timeout", json!(duration(timeouts.stream_idle)));
    out.put("request_timeout", json!(duration(timeouts.request)));
}

/// How the agent runs, its limits, and what it reviews.
fn agent_values(out: &mut Values, settings: &Settings) {
    let agent = &settings.agent;
    out.put("strategy", json!(agent.strategy.config_name()));
    out.put("max_steps", json!(agent.max_steps));
    out.put("tool_mode", json!(tool_mode_name(agent.tool_mode)));
    out.put("parallel", json!(agent.parallel));
    out.put("temperature", json!(agent.temperature.map(decimal)));
    let limits = &agent.review_limits;
    out.put("max_cost", json!(limits.max_cost_usd));
    out.put("max_tokens", json!(limits.max_tokens));
    out.put("timeout", json!(limits.timeout.map(duration)));
    out.put("fail_on", json!(settings.fail_on.to_string()));
    out.put("include", json!(settings.include.patterns()));
    out.put("exclude", json!(agent.exclude));
    out.put("instructions", json!(agent.instructions));
    out.put("walkthrough", json!(agent.walkthrough));
    out.put("verify", json!(agent.verification.enabled));
    out.put(
        "verify_model",
        json!(agent.verification.model.as_deref().unwrap_or(&agent.model)),
    );
}

/// What goes into the model's window and how the history is kept within it.
fn context_values(out: &mut Values, settings: &Settings) {
    let agent = &settings.agent;
    let guidelines = &settings.guidelines;
    out.put("guidelines", json!(guidelines.enabled));
    out.put("guidelines_files", json!(guidelines.files));
    out.put("guidelines_budget", json!(guidelines.budget));
    out.put("intent_budget", json!(agent.intent_budget));
    out.put("context_window", json!(agent.limits.context_window));
    out.put("max_output_tokens", json!(agent.limits.max_output_tokens));
    out.put("keep_tool_results", json!(agent.keep_tool_results));
    out.put("prune_threshold", json!(decimal(agent.prune_threshold)));
    out.put("summary_threshold", json!(decimal(agent.summary_threshold)));
    out.put("task_budget", json!(agent.task_budget));
}

/// The `auto` strategy's choice and the reflection rounds.
fn tuning_values(out: &mut Values, settings: &Settings) {
    let auto = &settings.agent.auto;
    out.put("auto.plan_min_files", json!(auto.plan_min_files));
    out.put("auto.plan_min_lines", json!(auto.plan_min_lines));
    out.put("auto.plan_min_languages", json!(auto.plan_min_languages));
    out.put("auto.plan_min_dirs", json!(auto.plan_min_dirs));
    out.put("auto.sensitive_paths", json!(auto.sensitive_paths));
    out.put("auto.prefer_reflection", json!(auto.prefer_reflection));
    let reflection = &settings.agent.reflection;
    out.put("reflection.max_rounds", json!(reflection.max_rounds));
    out.put("reflection.drop_below", json!(reflection.drop_below));
    out.put("reflection.target", json!(reflection.target));
}

/// Each prompt, summarised against the built-in one.
fn prompt_values(out: &mut Values, settings: &Settings) {
    let builtin = Prompts::default();
    let prompts = &settings.agent.prompts;
    for (key, text, default) in [
        ("prompts.system", &prompts.system, &builtin.system),
        ("prompts.task", &prompts.task, &builtin.task),
        (
            "prompts.final_turn",
            &prompts.final_turn,
            &builtin.final_turn,
        ),
        (
            "prompts.corrective",
            &prompts.corrective,
            &builtin.corrective,
        ),
    ] {
        out.put(key, json!(prompt_summary(text, default)));
    }
}

/// How a review is published and its threads answered, and the model's price.
fn publishing_values(out: &mut Values, settings: &Settings) {
    out.put(
        "request_changes",
        json!(settings.request_changes_at.map(|s| s.as_str())),
    );
    out.put("max_comments", json!(settings.max_comments));
    out.put("inline_at", json!(settings.inline_at.as_str()));
    let threads = &settings.threads;
    out.put("chat_max_steps", json!(threads.chat_max_steps));
    out.put("chat_max_replies", json!(threads.chat_max_replies));
    out.put("resolve_outdated", json!(threads.resolve_outdated));
    let agent = &settings.agent;
    let price = agent.price.map(|p| {
        json!({
            "input": p.input,
            "cached_input": p.cached_input,
            "cache_write": p.cache_write,
            "output": p.output,
        })
    });
    out.put(&pricing_key(&agent.model), json!(price));
}

/// The key of the model's entry in `[pricing]`: `pricing."MODEL"`.
pub(crate) fn pricing_key(model: &str) -> String {
    format!(
        "pricing.\"{}\"",
        model.replace('\\', "\\\\").replace('"', "\\\"")
    )
}

/// The values an empty configuration resolves to, with no flags and no environment
/// (the schema's defaults).
pub(crate) fn default_values() -> Vec<(String, Value)> {
    let env = |_: &str| None;
    let resolved = super::settings::resolve(SettingsInput {
        flags: SettingFlags::default(),
        flags_origin: "flag",
        env: &env,
        user: None,
        repository: None,
        scope: Scope::Offline,
    });
    resolved.map(|s| values(&s)).unwrap_or_default()
}

/// A prompt as shown: never its text (long, and the repository's own words), only whether
/// it is the built-in one.
fn prompt_summary(text: &str, builtin: &str) -> String {
    if text == builtin {
        "built-in".into()
    } else {
        format!("custom ({} characters)", text.chars().count())
    }
}

/// A duration in the config's syntax: whole seconds as `Ns`, else milliseconds.
fn duration(duration: std::time::Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{}ms", duration.as_millis())
    }
}

/// An `f32` as the decimal it was written as (`0.2`, not `0.20000000298023224`).
fn decimal(value: f32) -> f64 {
    value.to_string().parse().unwrap_or(f64::from(value))
}

fn tool_mode_name(mode: ToolMode) -> &'static str {
    match mode {
        ToolMode::Native => "native",
        ToolMode::Text => "text",
        ToolMode::Auto => "auto",
    }
}

/// A config file as an origin: its source, and how it is named (`.redline.toml`) with
/// what follows the line (`(base abc1234)`).
pub(crate) struct FileOrigin<'a> {
    /// The file as read.
    pub source: &'a ConfigSource,
    /// Its name in the origin.
    pub name: String,
    /// Said after `name:line`, e.g. `(base abc1234)`; may be empty.
    pub note: String,
}

/// What decides the origin of each key.
pub(crate) struct Origins<'a> {
    /// The origin of a key a flag or its variable set (`flag --max-steps`, `env REDLINE_MODEL`).
    pub flag: &'a dyn Fn(&str) -> Option<String>,
    /// The files, highest precedence first (the repository's, then the user's).
    pub files: Vec<FileOrigin<'a>>,
    /// The process environment (for the API key's variable only).
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

impl Origins<'_> {
    /// Where `key`'s value came from.
    pub(crate) fn of(&self, key: &str) -> String {
        if let Some(flag) = (self.flag)(key) {
            return flag;
        }
        for file in &self.files {
            if file.source.value_at(key).is_some() {
                let line = file
                    .source
                    .line_of(key)
                    .map(|line| format!(":{line}"))
                    .unwrap_or_default();
                let note = if file.note.is_empty() {
                    String::new()
                } else {
                    format!(" {}", file.note)
                };
                return format!("{}{line}{note}", file.name);
            }
        }
        "default".into()
    }

    /// The API key's line: `("set", "env OPENAI_API_KEY")` or `("not set", ...)`; never the key.
    pub(crate) fn api_key(&self, provider: Provider) -> (Value, String) {
        match api_key_var(provider, self.env) {
            Some(var) => (json!("set"), format!("env {var}")),
            None => (
                json!("not set"),
                format!(
                    "env REDLINE_API_KEY or {} (neither is set)",
                    super::provider_key_var(provider)
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Owner;

    /// Every key of the schema (so every key the config accepts, see the schema tests) is
    /// shown: `config show` cannot leave a setting out.
    #[test]
    fn every_key_of_the_schema_is_shown() {
        let shown: Vec<String> = default_values().into_iter().map(|(k, _)| k).collect();
        let schema = super::super::schema::schema();
        let mut keys = Vec::new();
        for (key, property) in schema["properties"].as_object().unwrap() {
            match property["properties"].as_object() {
                Some(inner) => keys.extend(inner.keys().map(|k| format!("{key}.{k}"))),
                None => keys.push(key.clone()),
            }
        }
        assert!(keys.len() > 40, "{keys:?}");
        for key in keys {
            let found = if key == "pricing" {
                shown.iter().any(|k| k.starts_with("pricing.\""))
            } else {
                shown.contains(&key)
            };
            assert!(found, "`{key}` is not shown");
        }
    }

    #[test]
    fn values_are_the_resolved_ones_not_the_text() {
        let text = "strategy = \"Plan\"\ntemperature = 0.2\nconnect_timeout = \"1m\"\n[prompts]\nsystem = \"be terse\"\n";
        let user = ConfigSource::parse(text, "u", Owner::User).unwrap();
        let env = |_: &str| None;
        let settings = super::super::settings::resolve(SettingsInput {
            flags: SettingFlags::default(),
            flags_origin: "flag",
            env: &env,
            user: Some(user),
            repository: None,
            scope: Scope::Offline,
        })
        .unwrap();
        let values = values(&settings);
        let get = |key: &str| values.iter().find(|(k, _)| k == key).unwrap().1.clone();
        assert_eq!(get("strategy"), "plan");
        assert_eq!(get("temperature"), 0.2);
        assert_eq!(get("connect_timeout"), "60s");
        assert_eq!(get("prompts.system"), "custom (8 characters)");
        assert_eq!(get("prompts.task"), "built-in");
    }

    #[test]
    fn origins_follow_the_precedence_with_lines() {
        let repo = ConfigSource::parse(
            "# r\nmax_steps = 7\n[reflection]\ntarget = 9.0\n",
            "r",
            Owner::Repository,
        )
        .unwrap();
        let user = ConfigSource::parse(
            "max_steps = 3\nparallel = 2\n[reflection]\ndrop_below = 1.0\n",
            "u",
            Owner::User,
        )
        .unwrap();
        let flag = |key: &str| (key == "strategy").then(|| "flag --strategy".to_string());
        let env = |k: &str| (k == "ANTHROPIC_API_KEY").then(|| "sk-SECRET".to_string());
        let origins = Origins {
            flag: &flag,
            files: vec![
                FileOrigin {
                    source: &repo,
                    name: ".redline.toml".into(),
                    note: "(base abc1234)".into(),
                },
                FileOrigin {
                    source: &user,
                    name: "~/.config/redline/config.toml".into(),
                    note: String::new(),
                },
            ],
            env: &env,
        };
        assert_eq!(origins.of("strategy"), "flag --strategy");
        assert_eq!(origins.of("max_steps"), ".redline.toml:2 (base abc1234)");
        assert_eq!(
            origins.of("reflection.target"),
            ".redline.toml:4 (base abc1234)"
        );
        assert_eq!(
            origins.of("reflection.drop_below"),
            "~/.config/redline/config.toml:4"
        );
        assert_eq!(origins.of("parallel"), "~/.config/redline/config.toml:2");
        assert_eq!(origins.of("reflection.max_rounds"), "default");
        let (value, origin) = origins.api_key(Provider::Anthropic);
        assert_eq!(
            (value, origin.as_str()),
            (json!("set"), "env ANTHROPIC_API_KEY")
        );
        let (value, origin) = origins.api_key(Provider::OpenAi);
        assert_eq!(value, "not set");
        assert!(!origin.contains("SECRET"), "{origin}");
    }
}
