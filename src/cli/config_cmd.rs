//! `redline config schema` (the JSON Schema of `.redline.toml`) and `redline config show`
//! (the settings `redline review` would use, each with where its value came from).
//!
//! Invariants: `show` resolves with the review's own code (the repository's file chosen
//! by [`repository_config`], the user's file, [`settings_from_sources`]); it calls no model,
//! needs no API key and probes no server ([`Scope::Offline`]). The API key is never
//! printed: only whether it is set and in which variable. A flag is told from its
//! environment variable by clap's value source.

use std::path::PathBuf;

use anyhow::Context;
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, FromArgMatches, Subcommand, ValueEnum};
use serde_json::Value;

use super::review::{ConfigChoice, repository_config, settings_from_sources};
use super::{EXIT_ERROR, EXIT_OK, LimitArgs, ModelArgs, error_message};
use crate::config::origin::{self, API_KEY, FileOrigin, Origins};
use crate::config::settings::{Scope, SettingFlags};
use crate::config::{CONFIG_FILE, ConfigSource};
use crate::text::short_sha;

/// `redline config`.
#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// What to print.
    #[command(subcommand)]
    pub command: ConfigCommand,
}

/// `redline config` subcommands.
// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Subcommand)]
pub enum ConfigCommand {
    /// Print the JSON Schema (draft 2020-12) of .redline.toml, for editors and validators.
    Schema(SchemaArgs),
    /// Print the settings `redline review` would use (no model call, no API key needed).
    Show(ConfigShowArgs),
}

/// The flags of `redline config schema`.
#[derive(Debug, Clone, Args)]
pub struct SchemaArgs {
    /// Output format: the JSON Schema, or the book's configuration reference rendered from it.
    #[arg(long, value_enum, default_value_t, value_name = "json|markdown")]
    pub format: SchemaFormat,
}

/// Output format of `redline config schema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum SchemaFormat {
    /// The JSON Schema, as committed in docs/redline.schema.json.
    #[default]
    Json,
    /// The configuration reference chapter of the book (docs/src/configuration-reference.md).
    Markdown,
}

/// Output format of `redline config show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ShowFormat {
    /// `key = value` lines.
    #[default]
    Text,
    /// One JSON object: `{"key": {"value": ..., "origin": ...}}`.
    Json,
}

/// The flags of `redline config show`: where to resolve, how to print, and the review's
/// own settings flags.
#[derive(Debug, Clone, Args)]
pub struct ShowFlags {
    /// Say where each value came from (flag, environment, file and line, default).
    #[arg(long)]
    pub origin: bool,
    /// The repository (default: the one containing the current directory).
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// Base revision whose .redline.toml is read (default as for `redline review`).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Use the work tree's .redline.toml, as `redline review --uncommitted` does.
    #[arg(long)]
    pub uncommitted: bool,
    /// A config file to use instead of the repository's .redline.toml.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t, value_name = "text|json")]
    pub format: ShowFormat,
    /// Model settings.
    #[command(flatten, next_help_heading = "Settings, as for redline review")]
    pub model: ModelArgs,
    /// Review strategy.
    #[arg(long, value_name = "auto|react|plan|reflect")]
    pub strategy: Option<String>,
    /// Plan-and-execute tasks run at once.
    #[arg(long, value_name = "N")]
    pub parallel: Option<usize>,
    /// Native tool calling, text-mode ReAct, or native falling back to text.
    #[arg(long, value_name = "native|text|auto")]
    pub tool_mode: Option<String>,
    /// Exit 1 when a finding is at or above this severity.
    #[arg(long, value_name = "critical|major|minor|nit|never")]
    pub fail_on: Option<String>,
    /// Model turns before the model must conclude.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u32>,
    /// Findings are not verified.
    #[arg(long = "no-verify", id = "verify", action = clap::ArgAction::SetFalse)]
    pub verify: bool,
    /// Hard limits of the review.
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// The settings keys a flag of `show` (or its variable) sets; each is also the flag's clap id.
const FLAG_KEYS: &[&str] = &[
    "provider",
    "model",
    "base_url",
    "strategy",
    "parallel",
    "tool_mode",
    "fail_on",
    "max_steps",
    "verify",
    "max_cost",
    "max_tokens",
    "timeout",
];

/// `redline config show`: its flags and, for each settings flag given, whether it came
/// from the command line or the environment.
#[derive(Debug, Clone)]
pub struct ConfigShowArgs {
    /// The flags.
    pub flags: ShowFlags,
    sources: Vec<(String, ValueSource)>,
}

impl ConfigShowArgs {
    fn sources_of(matches: &ArgMatches) -> Vec<(String, ValueSource)> {
        FLAG_KEYS
            .iter()
            .filter_map(|key| {
                let source = matches.try_get_raw(key).ok().flatten().and(
                    // `try_get_raw` checks the id exists: `value_source` would panic otherwise.
                    matches.value_source(key),
                )?;
                Some((key.to_string(), source))
            })
            .collect()
    }

    /// `flag --max-steps` or `env REDLINE_MODEL` when a settings flag set `key`.
    fn flag_origin(&self, key: &str) -> Option<String> {
        let (_, source) = self.sources.iter().find(|(k, _)| k == key)?;
        let command = ShowFlags::augment_args(clap::Command::new("show"));
        let arg = command.get_arguments().find(|a| a.get_id() == key)?;
        match source {
            ValueSource::CommandLine => Some(format!("flag --{}", arg.get_long()?)),
            ValueSource::EnvVariable => Some(format!("env {}", arg.get_env()?.to_string_lossy())),
            _ => None,
        }
    }
}

impl FromArgMatches for ConfigShowArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(ConfigShowArgs {
            flags: ShowFlags::from_arg_matches(matches)?,
            sources: Self::sources_of(matches),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.flags.update_from_arg_matches(matches)?;
        self.sources = Self::sources_of(matches);
        Ok(())
    }
}

impl Args for ConfigShowArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        ShowFlags::augment_args(cmd)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        ShowFlags::augment_args_for_update(cmd)
    }
}

/// What `redline config schema` prints in `format`.
fn schema_output(format: SchemaFormat) -> String {
    use crate::config::{reference, schema};
    match format {
        SchemaFormat::Json => schema::schema_text(),
        SchemaFormat::Markdown => reference::reference_markdown(&schema::schema()),
    }
}

/// Runs `redline config` and returns the exit code.
pub fn run(args: ConfigArgs) -> i32 {
    let text = match args.command {
        ConfigCommand::Schema(args) => Ok(schema_output(args.format)),
        ConfigCommand::Show(args) => show(&args),
    };
    match text {
        Ok(text) => {
            print!("{text}");
            EXIT_OK
        }
        Err(error) => {
            eprintln!("error: {}", error_message(&error));
            EXIT_ERROR
        }
    }
}

/// One shown setting.
struct Row {
    key: String,
    value: Value,
    origin: String,
}

fn show(args: &ConfigShowArgs) -> anyhow::Result<String> {
    let flags = &args.flags;
    let start = match &flags.repo {
        Some(path) => path.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let root = crate::repo::discover(&start)?;
    let range = crate::repo::resolve_range(&root, flags.base.as_deref(), "HEAD")?;
    let choice = ConfigChoice {
        config: flags.config.as_deref(),
        uncommitted: flags.uncommitted,
        quiet: false,
    };
    let repository = repository_config(&root, &choice, &range.base)?;
    let env = crate::config::env_var;
    let user = ConfigSource::read_user(&env)?;
    let settings = settings_from_sources(
        setting_flags(flags),
        "flag",
        repository.clone(),
        user.clone(),
        Scope::Offline,
    )?;
    let mut files = Vec::new();
    if let Some(source) = &repository {
        let (name, note) = match (&flags.config, flags.uncommitted) {
            (Some(path), _) => (path.display().to_string(), String::new()),
            (None, true) => (CONFIG_FILE.to_string(), "(work tree)".to_string()),
            (None, false) => (
                CONFIG_FILE.to_string(),
                format!("(base {})", short_sha(&range.base)),
            ),
        };
        files.push(FileOrigin { source, name, note });
    }
    if let Some(source) = &user {
        let path = crate::config::sources::user_config_path(&env)
            .map(|p| home_relative(&p, &env))
            .unwrap_or_else(|| source.origin().to_string());
        files.push(FileOrigin {
            source,
            name: path,
            note: String::new(),
        });
    }
    let flag_origin = |key: &str| args.flag_origin(key);
    let origins = Origins {
        flag: &flag_origin,
        files,
        env: &env,
    };
    let mut rows: Vec<Row> = origin::values(&settings)
        .into_iter()
        .map(|(key, value)| Row {
            origin: origins.of(&key),
            key,
            value,
        })
        .collect();
    let (value, origin) = origins.api_key(settings.model.provider);
    let at = rows
        .iter()
        .position(|r| r.key == "base_url")
        .map_or(0, |i| i + 1);
    rows.insert(
        at,
        Row {
            key: API_KEY.into(),
            value,
            origin,
        },
    );
    Ok(match flags.format {
        ShowFormat::Text => render_text(&rows, flags.origin),
        ShowFormat::Json => render_json(&rows, flags.origin),
    })
}

fn setting_flags(flags: &ShowFlags) -> SettingFlags {
    SettingFlags {
        model: flags.model.flags(),
        limits: flags.limits.flags(),
        max_steps: flags.max_steps,
        strategy: flags.strategy.clone(),
        tool_mode: flags.tool_mode.clone(),
        parallel: flags.parallel,
        fail_on: flags.fail_on.clone(),
        max_comments: None,
        verify: (!flags.verify).then_some(false),
        verify_model: None,
    }
}

/// `path` with the home directory written `~`.
fn home_relative(path: &std::path::Path, env: &dyn Fn(&str) -> Option<String>) -> String {
    env("HOME")
        .filter(|home| !home.is_empty())
        .and_then(|home| path.strip_prefix(home).ok())
        .map(|rest| format!("~/{}", rest.display()))
        .unwrap_or_else(|| path.display().to_string())
}

/// Widest `key = value` that origins are aligned after; longer lines are not padded.
const ALIGN_MAX: usize = 48;

/// `key = value` lines, TOML-like, with `# origin` after each when asked.
fn render_text(rows: &[Row], with_origin: bool) -> String {
    let lines: Vec<String> = rows
        .iter()
        .map(|row| format!("{} = {}", row.key, toml_like(&row.value)))
        .collect();
    let width = lines
        .iter()
        .map(|l| l.chars().count())
        .filter(|w| *w <= ALIGN_MAX)
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (line, row) in lines.iter().zip(rows) {
        if with_origin {
            out.push_str(&format!("{line:<width$}  # {}\n", row.origin));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// A value as TOML writes it; not set is `(none)`.
fn toml_like(value: &Value) -> String {
    match value {
        Value::Null => "(none)".into(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_like).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{ {} }}",
            map.iter()
                .map(|(k, v)| format!("{k} = {}", toml_like(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// `{"key": {"value": ..., "origin": ...}}`, origins only when asked.
fn render_json(rows: &[Row], with_origin: bool) -> String {
    let mut object = serde_json::Map::new();
    for row in rows {
        let mut entry = serde_json::Map::new();
        entry.insert("value".into(), row.value.clone());
        if with_origin {
            entry.insert("origin".into(), Value::String(row.origin.clone()));
        }
        object.insert(row.key.clone(), Value::Object(entry));
    }
    let text = serde_json::to_string_pretty(&Value::Object(object)).unwrap_or_default();
    format!("{text}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_print_as_toml_and_not_set_as_none() {
        assert_eq!(toml_like(&json!("a\"b")), "\"a\\\"b\"");
        assert_eq!(toml_like(&json!(["x", 1])), "[\"x\", 1]");
        assert_eq!(toml_like(&Value::Null), "(none)");
        assert_eq!(
            toml_like(&json!({"input": 0.4, "output": 1.6})),
            "{ input = 0.4, output = 1.6 }"
        );
    }

    #[test]
    fn the_home_directory_is_written_as_a_tilde() {
        let env = |k: &str| (k == "HOME").then(|| "/home/u".to_string());
        assert_eq!(
            home_relative(
                std::path::Path::new("/home/u/.config/redline/config.toml"),
                &env
            ),
            "~/.config/redline/config.toml"
        );
        assert_eq!(
            home_relative(std::path::Path::new("/etc/x.toml"), &env),
            "/etc/x.toml"
        );
    }
}
