//! Configuration: `.redline.toml` at the repository root, the user's own
//! `~/.config/redline/config.toml`, environment variables and flags, with precedence
//! flags > env > repository file > user file > defaults.
//!
//! Invariants: secrets never come from a file (API keys are read from the environment
//! only), and nothing that decides where keys are sent ([`USER_ONLY_KEYS`](sources::USER_ONLY_KEYS): `provider`,
//! `base_url`) is ever taken from a repository's file (see [`sources`]), so a
//! repository cannot redirect or capture them.

pub mod discovery;
pub(crate) mod origin;
pub(crate) mod reference;
pub(crate) mod schema;
pub mod settings;
pub(crate) mod sources;

use serde::Deserialize;

use crate::agent::reflection::ReflectionConfig;
use crate::agent::strategy::AutoThresholds;
use crate::prompts::PromptOverrides;

pub(crate) use sources::{ConfigSource, Owner, merge_sources};
pub mod limits;
mod model;
pub use model::{ModelFlags, ModelSettings, resolve_model};
pub(crate) use model::{
    api_key_var, is_local_url, provider_key_var, resolve_model_choice, resolve_timeouts,
};
#[cfg(test)]
pub(crate) use model::{default_model, parse_timeout};
mod toml_errors;
mod validate;
pub(crate) use toml_errors::{key_position, toml_error};

/// An environment variable's value, `None` when it is unset or empty (only whitespace):
/// an empty variable means unset everywhere (compose files and Actions pass unset
/// settings as empty strings). Every read of the environment goes through this.
pub(crate) fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// `FILE:L:C: key: message` for a value from a file, `--flag: message` for one from a flag
/// (the flag names the setting), `/redline review --strategy: message` for a command's.
fn setting_message(origin: &str, key: &str, message: &str) -> String {
    if origin.starts_with('-') || origin.contains(" -") {
        format!("{origin}: {message}")
    } else {
        format!("{origin}: {key}: {message}")
    }
}

/// Name of the per-repository config file.
pub(crate) const CONFIG_FILE: &str = ".redline.toml";

pub(crate) use crate::agent::DEFAULT_MAX_STEPS;

/// Errors in configuration. Messages name the setting at fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file is not valid TOML or has unknown keys or wrong types.
    #[error("{origin}:{message}")]
    Invalid {
        /// Where the config came from.
        origin: String,
        /// What is wrong (names the key).
        message: String,
    },
    /// Every problem of one file (syntax, unknown keys, types, ranges), in file order.
    #[error("{}", problems.iter().map(|p| format!("{origin}:{p}")).collect::<Vec<_>>().join("\n"))]
    Problems {
        /// Where the config came from.
        origin: String,
        /// Each problem as `L:C: key: what`.
        problems: Vec<String>,
    },
    /// A value is out of range or not one of the accepted ones.
    #[error("invalid value for `{key}`: {message}")]
    BadValue {
        /// The setting.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A value is wrong, with where it came from (flag, file and line).
    #[error("{}", setting_message(origin, key, message))]
    Setting {
        /// The setting.
        key: String,
        /// Where its value came from.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// No API key for a remote endpoint.
    #[error(
        "no API key for the {provider} provider: set REDLINE_API_KEY (or {provider_var}){hint}"
    )]
    MissingApiKey {
        /// `openai` or `anthropic`.
        provider: String,
        /// The provider's own key variable.
        provider_var: String,
        /// What else would work for this provider (may be empty).
        hint: String,
    },
    /// The local server at the endpoint does not serve the model (the one chosen, or the
    /// default when none was).
    #[error(
        "the server at {base_url} does not serve the {which}model `{model}`; it serves: {served}. Choose one with --model NAME (or `model` in .redline.toml)",
        which = if *chosen { "" } else { "default " }
    )]
    ModelNotServed {
        /// The model that would have been asked for.
        model: String,
        /// Whether a flag, variable or file named it (else it is the provider's default).
        chosen: bool,
        /// The endpoint.
        base_url: String,
        /// The model ids the server lists, comma-separated (bounded).
        served: String,
    },
    /// Reading the file failed.
    #[error("cannot read config {origin}: {source}")]
    Read {
        /// Where.
        origin: String,
        /// Why.
        #[source]
        source: ConfigReadError,
    },
}

/// Why a config file could not be read (before any of it is parsed).
#[derive(Debug, thiserror::Error)]
pub enum ConfigReadError {
    /// The file system refused.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Git could not open the repository, find the revision or read the blob. Its
    /// message is the text (git's class and code would only repeat it), so it is not
    /// a `source` as well.
    #[error("{}", .0.message())]
    Git(git2::Error),
    /// A directory is where the file should be.
    #[error("it is a directory, not a file")]
    Directory,
    /// Something other than a regular file (a socket, a device, a tree in a commit).
    #[error("it is not a regular file")]
    NotAFile,
    /// A work tree's symbolic link leads out of the repository.
    #[error("it is a symbolic link to a file outside the repository")]
    LinkOutside,
    /// Past the size any real config file has.
    #[error("it is larger than {limit_kib} KiB")]
    TooLarge {
        /// The limit.
        limit_kib: u64,
    },
    /// Not UTF-8 text.
    #[error("{0}")]
    NotUtf8(#[from] std::str::Utf8Error),
}

/// The contents of `.redline.toml`. Unknown keys are an error that names the key.
/// Its JSON Schema (`redline config schema`, [`schema`]) is derived from these fields:
/// their doc comments are the descriptions editors show.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "Redline settings (.redline.toml)",
    description = "The settings of Redline, a code-review agent: a repository's .redline.toml (read at the base commit of a change) or the user's ~/.config/redline/config.toml."
)]
pub struct FileConfig {
    /// The model API protocol: `openai` (any OpenAI-compatible server) or `anthropic`.
    /// Only from flags, the environment or the user's own file: a repository's file cannot set it.
    #[schemars(extend("enum" = ["openai", "anthropic"]))]
    pub provider: Option<String>,
    /// Model name (default: gpt-4.1-mini with `openai`, claude-sonnet-4-5 with `anthropic`).
    pub model: Option<String>,
    /// API root of the provider (default: the provider's own). Only from flags, the
    /// environment or the user's own file: a repository's file cannot set it.
    #[schemars(extend("format" = "uri"))]
    pub base_url: Option<String>,
    /// Step budget of a ReAct run.
    #[schemars(range(min = 1, max = 200))]
    pub max_steps: Option<u32>,
    /// Sampling temperature (default: the model's own).
    #[schemars(range(min = 0, max = 2))]
    pub temperature: Option<f32>,
    /// Only changed files matching one of these globs are reviewed (empty: all).
    #[serde(default)]
    pub include: Vec<String>,
    /// Changed files matching one of these globs are not reviewed.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Extra review instructions added to the task.
    pub instructions: Option<String>,
    /// Whether the repository's guideline files (`AGENTS.md`, ...) are read (default true).
    pub guidelines: Option<bool>,
    /// Replaces the list of guideline files (names, paths or globs).
    pub guidelines_files: Option<Vec<String>>,
    /// Tokens of quoted guideline text at most (default 2,000).
    #[schemars(range(min = 0))]
    pub guidelines_budget: Option<usize>,
    /// Tokens at most of what the author says the change does (title, description, linked
    /// issues, commit messages) in the model's first message (default 1,000; 0 leaves it out).
    #[schemars(range(min = 0, max = 16000))]
    pub intent_budget: Option<usize>,
    /// Whether the review opens with a walkthrough of the change, per area (default true).
    pub walkthrough: Option<bool>,
    /// Default for `--fail-on`: `redline review` exits 1 (the Action step fails) when a
    /// finding is at or above this severity; under `redline serve`, the review's check
    /// (commit status on GitLab) fails.
    #[schemars(extend("enum" = ["critical", "major", "minor", "nit", "never"]))]
    pub fail_on: Option<String>,
    /// Prompt overrides.
    #[serde(default)]
    pub prompts: PromptOverrides,
    /// Review strategy: `auto`, `react`, `plan` or `reflect`.
    #[schemars(extend("enum" = ["auto", "react", "plan", "reflect"]))]
    pub strategy: Option<String>,
    /// Thresholds of the `auto` strategy rule.
    #[serde(default)]
    pub auto: AutoThresholds,
    /// Reflection loop settings.
    #[serde(default)]
    pub reflection: ReflectionConfig,
    /// Plan-and-execute tasks run at once.
    #[schemars(range(min = 1, max = 32))]
    pub parallel: Option<usize>,
    /// Native tool calling, text-mode ReAct, or native falling back to text: `native`, `text` or `auto`.
    #[schemars(extend("enum" = ["native", "text", "auto"]))]
    pub tool_mode: Option<String>,
    /// The model's context window in tokens (default: the built-in table's for the model).
    #[schemars(range(min = 1))]
    pub context_window: Option<u32>,
    /// Tokens reserved for the model's reply (default: the built-in table's for the model).
    #[schemars(range(min = 1))]
    pub max_output_tokens: Option<u32>,
    /// Tool results kept whole in the history; older ones become stubs.
    #[schemars(range(min = 1))]
    pub keep_tool_results: Option<usize>,
    /// Share of the window past which seen tool results are elided.
    #[schemars(range(min = 0.1, max = 0.95))]
    pub prune_threshold: Option<f32>,
    /// Share of the window at which the history is summarised.
    #[schemars(range(min = 0.1, max = 0.95))]
    pub summary_threshold: Option<f32>,
    /// Token budget of one plan-and-execute task's first message (default: the stage-1 budget).
    #[schemars(range(min = 2000))]
    pub task_budget: Option<usize>,
    /// Whether the findings are verified before they are posted: a separate verifier
    /// conversation keeps or drops each one, with a reason (default true).
    pub verify: Option<bool>,
    /// The model that verifies the findings, on the same provider as `model` (default:
    /// `model`). Under `redline serve` the server's model verifies.
    pub verify_model: Option<String>,
    /// The least severe finding posted as an inline comment; less severe ones are listed,
    /// collapsed, in the summary comment (GitHub and GitLab; default `minor`).
    #[schemars(extend("enum" = ["critical", "major", "minor", "nit"]))]
    pub inline_at: Option<String>,
    /// On GitHub, post `REQUEST_CHANGES` when a new finding is at or above this severity (default: always `COMMENT`).
    #[schemars(extend("enum" = ["critical", "major", "minor", "nit"]))]
    pub request_changes: Option<String>,
    /// On GitHub, inline comments at most per review; the rest go to the summary comment.
    #[schemars(range(min = 0))]
    pub max_comments: Option<usize>,
    /// On GitHub, model calls at most of one answer in a review thread (default 4).
    #[schemars(range(min = 1, max = 20))]
    pub chat_max_steps: Option<u32>,
    /// On GitHub, Redline's answers at most in one review thread (default 5).
    #[schemars(range(min = 0, max = 100))]
    pub chat_max_replies: Option<u32>,
    /// On GitHub, resolve Redline's threads whose lines changed and whose finding a new
    /// review did not raise again (default false).
    pub resolve_outdated: Option<bool>,
    /// Per-model prices in USD per million tokens (`[pricing."MODEL"]`: `input`,
    /// `cached_input`, `cache_write`, `output`), over the built-in table.
    #[schemars(schema_with = "schema::pricing")]
    #[serde(default)]
    pub pricing: std::collections::BTreeMap<String, toml::Table>,
    /// Hard limit: USD per review, at the price table (none by default).
    #[schemars(schema_with = "schema::cost")]
    pub max_cost: Option<toml::Value>,
    /// Hard limit: prompt + completion tokens per review, over all model calls (none by default).
    #[schemars(schema_with = "schema::tokens")]
    pub max_tokens: Option<toml::Value>,
    /// Hard limit: wall time per review (`"10m"`, `"90s"`, or seconds; none by default).
    #[schemars(schema_with = "schema::limit_duration")]
    pub timeout: Option<toml::Value>,
    /// Longest connection setup to the model API, as a duration (`"10s"`).
    #[schemars(schema_with = "schema::timeout")]
    pub connect_timeout: Option<String>,
    /// Longest wait for the first bytes of a model reply, as a duration (`"90s"`).
    #[schemars(schema_with = "schema::timeout")]
    pub first_byte_timeout: Option<String>,
    /// Longest silence in the middle of a model's reply stream, as a duration (`"60s"`).
    #[schemars(schema_with = "schema::timeout")]
    pub stream_idle_timeout: Option<String>,
    /// Longest time one model call (request and whole reply) may take, as a duration (`"300s"`).
    #[schemars(schema_with = "schema::timeout")]
    pub request_timeout: Option<String>,
}

/// Largest `intent_budget`: the author's text may not crowd out the change.
const MAX_INTENT_BUDGET: usize = 16_000;

impl FileConfig {
    /// Parses TOML text; `origin` names where it came from in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Invalid {
            origin: origin.to_string(),
            message: toml_error(&e, text),
        })
    }

    /// Checks the ranges of the values set; the error names the key.
    pub(crate) fn check_ranges(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, message: String| {
            Err(ConfigError::BadValue {
                key: key.into(),
                message,
            })
        };
        if let Some(t) = self.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return bad("temperature", format!("{t} is not between 0 and 2"));
        }
        if let Some(steps) = self.max_steps {
            check_max_steps(steps)?;
        }
        for (key, value) in [
            ("max_output_tokens", self.max_output_tokens.map(u64::from)),
            ("context_window", self.context_window.map(u64::from)),
            (
                "keep_tool_results",
                self.keep_tool_results.map(|v| v as u64),
            ),
            ("parallel", self.parallel.map(|v| v as u64)),
            (
                "reflection.max_rounds",
                Some(u64::from(self.reflection.max_rounds)),
            ),
        ] {
            if value == Some(0) {
                return bad(key, "must be at least 1".into());
            }
        }
        if let Some(budget) = self.intent_budget
            && budget > MAX_INTENT_BUDGET
        {
            return bad(
                "intent_budget",
                format!("{budget} is over {MAX_INTENT_BUDGET}"),
            );
        }
        for (key, value) in [
            ("reflection.drop_below", self.reflection.drop_below),
            ("reflection.target", self.reflection.target),
        ] {
            if !(0.0..=10.0).contains(&value) {
                return bad(key, format!("{value} is not between 0 and 10"));
            }
        }
        Ok(())
    }
}

/// Checks a model's effective limits: the window must hold the output reserve plus the
/// smallest stage-1 budget ([`crate::context::STAGE1_MIN_BUDGET`]).
pub(crate) fn check_limits(limits: crate::llm::tokens::ModelLimits) -> Result<(), ConfigError> {
    let min_budget = crate::context::STAGE1_MIN_BUDGET as u64;
    let needed = u64::from(limits.max_output_tokens) + min_budget;
    if limits.max_output_tokens == 0 {
        return Err(ConfigError::BadValue {
            key: "max_output_tokens".into(),
            message: "must be at least 1".into(),
        });
    }
    if u64::from(limits.context_window) < needed {
        return Err(ConfigError::BadValue {
            key: "context_window".into(),
            message: format!(
                "{} is too small: it must hold max_output_tokens ({}) plus at least {min_budget} tokens of the change, {needed} in all",
                limits.context_window, limits.max_output_tokens
            ),
        });
    }
    Ok(())
}

/// Checks a step budget.
pub(crate) fn check_max_steps(steps: u32) -> Result<u32, ConfigError> {
    if (1..=200).contains(&steps) {
        Ok(steps)
    } else {
        Err(ConfigError::BadValue {
            key: "max_steps".into(),
            message: format!("{steps} is not between 1 and 200"),
        })
    }
}

#[cfg(test)]
mod tests;
