//! One settings resolution for every entry point (`redline review`, `redline action`,
//! `redline serve`): flags (with their environment variables), the repository's file,
//! the user's file and defaults become one typed, validated [`Settings`], built by
//! [`resolve`] and nothing else.
//!
//! Invariants: every value is parsed and checked here, once (enums for strategy, tool
//! mode and severities; durations; globs compiled); an error names the key and where
//! its value came from (flag, file and line, or default). Under [`Scope::Server`] the
//! server's model settings (provider, endpoint, model, key) always win over the
//! repository's file, a repository's `[pricing]` is not used, and its limits are
//! bounded by the server's ceilings.

use globset::GlobSet;

use super::limits::{self, LimitCeilings, LimitFlags};
use super::{ConfigError, ConfigSource, FileConfig, ModelFlags, ModelSettings};
use crate::agent::AgentConfig;
use crate::guidelines::GuidelinesConfig;
use crate::llm::tokens::ModelLimits;
use crate::prompts::Prompts;
use crate::review::diff::ChangeSet;
use crate::review::finding::Severity;
use crate::review::report::FailOn;

/// Inline comments per review when nothing says otherwise.
pub(crate) const DEFAULT_MAX_COMMENTS: usize = 25;
/// The least severe finding posted inline when nothing says otherwise: nits go to the summary.
pub(crate) const DEFAULT_INLINE_AT: &str = "minor";

/// What a command line (or a `/redline` command) sets; `None` leaves the key to the files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SettingFlags {
    /// `--provider`, `--model`, `--base-url`.
    pub model: ModelFlags,
    /// `--max-cost`, `--max-tokens`, `--timeout`.
    pub limits: LimitFlags,
    /// `--max-steps`.
    pub max_steps: Option<u32>,
    /// `--strategy`.
    pub strategy: Option<String>,
    /// `--tool-mode`.
    pub tool_mode: Option<String>,
    /// `--parallel`.
    pub parallel: Option<usize>,
    /// `--fail-on`.
    pub fail_on: Option<String>,
    /// `--max-comments`.
    pub max_comments: Option<usize>,
    /// `--no-verify` (`Some(false)`).
    pub verify: Option<bool>,
    /// `--verify-model` (`redline action`, `redline gitlab`).
    pub verify_model: Option<String>,
}

/// Who runs the review, which decides what the files may set.
#[derive(Debug, Clone)]
pub(crate) enum Scope {
    /// `redline review` and `redline action`: the user's own run.
    Local,
    /// A command that calls no model (`redline context`): resolved as a local run, but
    /// no key is needed and no model server is looked for.
    Offline,
    /// `redline serve`: the server's model settings win and its ceilings bound the limits.
    Server {
        /// The server's model settings (from its flags and environment).
        model: ModelSettings,
        /// What a repository's `max_cost` and `timeout` may be at most.
        ceilings: LimitCeilings,
    },
}

/// Everything [`resolve`] reads.
pub(crate) struct SettingsInput<'a> {
    /// Flags (clap has applied their environment variables).
    pub flags: SettingFlags,
    /// How errors name a flag's origin, e.g. `"flag"` or `"/redline command"`.
    pub flags_origin: &'a str,
    /// The process environment (API keys).
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// The user's config file.
    pub user: Option<ConfigSource>,
    /// The repository's config file (user-only keys already dropped).
    pub repository: Option<ConfigSource>,
    /// Local run or server.
    pub scope: Scope,
}

/// The resolved settings of one review.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The model to call.
    pub model: ModelSettings,
    /// The engine's settings (strategy, steps, prompts, window, limits, ...).
    pub agent: AgentConfig,
    /// Which findings fail the command.
    pub fail_on: FailOn,
    /// Which changed files are reviewed (`include`).
    pub include: IncludeFilter,
    /// On GitHub, inline comments at most per review.
    pub max_comments: usize,
    /// On GitHub, request changes when a new finding is at least this severe.
    pub request_changes_at: Option<Severity>,
    /// The least severe finding posted inline (`inline_at`); the others go to the summary.
    pub inline_at: Severity,
    /// Which project guidelines are read (`guidelines`, `guidelines_files`, `guidelines_budget`).
    pub guidelines: GuidelinesConfig,
    /// Answers in review threads (`chat_max_steps`, `chat_max_replies`, `resolve_outdated`).
    pub threads: ThreadSettings,
}

/// Model calls of one answer in a review thread when nothing says otherwise.
pub(crate) const DEFAULT_CHAT_MAX_STEPS: u32 = 4;
/// Redline's answers in one review thread when nothing says otherwise.
pub(crate) const DEFAULT_CHAT_MAX_REPLIES: u32 = 5;
/// The most model calls `chat_max_steps` may allow: an answer is a short run.
const MAX_CHAT_STEPS: u32 = 20;
/// The most answers `chat_max_replies` may allow in one thread.
const MAX_CHAT_REPLIES: u32 = 100;

/// How Redline takes part in review threads on GitHub.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadSettings {
    /// Model calls at most of one answer (1 to 20).
    pub chat_max_steps: u32,
    /// Redline's answers at most in one thread (0 turns answers off; at most 100).
    pub chat_max_replies: u32,
    /// Resolve Redline's threads whose lines changed and whose finding was not raised again.
    pub resolve_outdated: bool,
}

impl Default for ThreadSettings {
    fn default() -> Self {
        ThreadSettings {
            chat_max_steps: DEFAULT_CHAT_MAX_STEPS,
            chat_max_replies: DEFAULT_CHAT_MAX_REPLIES,
            resolve_outdated: false,
        }
    }
}

/// The changed files the `include` globs select (all when there are none).
#[derive(Debug, Clone)]
pub struct IncludeFilter {
    include: GlobSet,
    patterns: Vec<String>,
    any: bool,
}

impl IncludeFilter {
    /// Compiles `patterns` (from `key`); a bad glob is an error naming it.
    pub fn new(patterns: &[String], key: &str) -> Result<Self, ConfigError> {
        Ok(IncludeFilter {
            include: glob_set(patterns, key)?,
            patterns: patterns.to_vec(),
            any: patterns.is_empty(),
        })
    }

    /// The globs, as given.
    pub(crate) fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Keeps the selected files in `changes`; returns the paths of the others.
    pub fn apply(&self, changes: &mut ChangeSet) -> Vec<String> {
        let mut skipped = Vec::new();
        changes.files.retain(|f| {
            let keep = self.any || self.include.is_match(&f.path);
            if !keep {
                skipped.push(f.path.clone());
            }
            keep
        });
        skipped
    }
}

fn glob_set(patterns: &[String], key: &str) -> Result<GlobSet, ConfigError> {
    crate::repo::glob::compile_set(patterns).map_err(|(pattern, e)| ConfigError::BadValue {
        key: key.to_string(),
        message: format!("bad glob `{pattern}`: {}", e.kind()),
    })
}

/// Builds the settings of one review; the one resolution every entry point uses.
pub(crate) fn resolve(input: SettingsInput<'_>) -> Result<Settings, ConfigError> {
    let origins = Origins {
        flags: &input.flags,
        flags_origin: input.flags_origin,
        sources: [input.repository.as_ref(), input.user.as_ref()],
    };
    if matches!(input.scope, Scope::Local) {
        // Every flag and file error is reported before local discovery probes and says
        // what it found: checked first as a command that calls no model would be.
        resolve_unlocated(&input, &Scope::Offline).map_err(|e| origins.locate(e))?;
    }
    resolve_unlocated(&input, &input.scope).map_err(|e| origins.locate(e))
}

fn resolve_unlocated(input: &SettingsInput<'_>, scope: &Scope) -> Result<Settings, ConfigError> {
    let mut file = super::merge_sources(input.user.as_ref(), input.repository.as_ref())?;
    let flags = &input.flags;
    let model = match scope {
        // With no key and no endpoint chosen, a model server on this machine is looked for.
        Scope::Local => super::discovery::resolve_or_discover(&flags.model, &file, input.env)?,
        Scope::Offline => super::resolve_model_choice(&flags.model, &file)?,
        Scope::Server { model, .. } => {
            // The server's model and prices: the file changes only how long a call may wait.
            for (key, set) in [
                ("model", file.model.is_some()),
                ("verify_model", file.verify_model.is_some()),
                ("pricing", !file.pricing.is_empty()),
            ] {
                if set {
                    tracing::info!(
                        key,
                        "the repository's config sets a key the server decides; ignored"
                    );
                }
            }
            file.model = None;
            file.verify_model = None;
            file.pricing.clear();
            ModelSettings {
                timeouts: super::resolve_timeouts(&file)?,
                ..model.clone()
            }
        }
    };
    if model.model.trim().is_empty() {
        // An empty name (`--model ""`, `REDLINE_MODEL=`) is a mistake, not a choice.
        return Err(bad_value("model", "the model name is empty"));
    }
    let mut agent = agent_config(flags, &file, &model)?;
    match scope {
        Scope::Local | Scope::Offline => limits::apply_to_agent(&mut agent, &flags.limits, &file)?,
        Scope::Server { ceilings, .. } => {
            agent.review_limits =
                limits::repository_limits(&file, ceilings, agent.price, &agent.model)?;
            agent.verification.price = agent.price;
        }
    }
    let fail_on = pick(&flags.fail_on, &file.fail_on, "never")
        .parse()
        .map_err(|message| bad_value("fail_on", message))?;
    let request_changes_at = file
        .request_changes
        .as_deref()
        .map(|level| level.parse::<Severity>())
        .transpose()
        .map_err(|message| bad_value("request_changes", message))?;
    let inline_at = file
        .inline_at
        .as_deref()
        .unwrap_or(DEFAULT_INLINE_AT)
        .parse::<Severity>()
        .map_err(|message| bad_value("inline_at", message))?;
    Ok(Settings {
        model,
        agent,
        fail_on,
        include: IncludeFilter::new(&file.include, "include")?,
        max_comments: flags
            .max_comments
            .or(file.max_comments)
            .unwrap_or(DEFAULT_MAX_COMMENTS),
        request_changes_at,
        inline_at,
        guidelines: guidelines_config(&file)?,
        threads: thread_settings(&file)?,
    })
}

/// `chat_max_steps`, `chat_max_replies` and `resolve_outdated`, ranges checked.
fn thread_settings(file: &FileConfig) -> Result<ThreadSettings, ConfigError> {
    let defaults = ThreadSettings::default();
    let chat_max_steps = file.chat_max_steps.unwrap_or(defaults.chat_max_steps);
    if !(1..=MAX_CHAT_STEPS).contains(&chat_max_steps) {
        return Err(bad_value(
            "chat_max_steps",
            format!("{chat_max_steps} is not between 1 and {MAX_CHAT_STEPS}"),
        ));
    }
    let chat_max_replies = file.chat_max_replies.unwrap_or(defaults.chat_max_replies);
    if chat_max_replies > MAX_CHAT_REPLIES {
        return Err(bad_value(
            "chat_max_replies",
            format!("{chat_max_replies} is more than {MAX_CHAT_REPLIES}"),
        ));
    }
    Ok(ThreadSettings {
        chat_max_steps,
        chat_max_replies,
        resolve_outdated: file.resolve_outdated.unwrap_or(defaults.resolve_outdated),
    })
}

/// `guidelines`, `guidelines_files` (globs checked) and `guidelines_budget`.
fn guidelines_config(file: &FileConfig) -> Result<GuidelinesConfig, ConfigError> {
    let defaults = GuidelinesConfig::default();
    let files = file.guidelines_files.clone().unwrap_or(defaults.files);
    glob_set(&files, "guidelines_files")?;
    if let Some(outside) = files
        .iter()
        .find(|f| !crate::guidelines::is_repository_path(f))
    {
        return Err(bad_value(
            "guidelines_files",
            format!("`{outside}` is not a path inside the repository"),
        ));
    }
    Ok(GuidelinesConfig {
        enabled: file.guidelines.unwrap_or(defaults.enabled),
        files,
        budget: file.guidelines_budget.unwrap_or(defaults.budget),
    })
}

/// The benchmark knob of the first message's after-context (`N`, `block`, `block:N`;
/// see `benches/README.md`): read here once, for measurements only, not a setting.
fn bench_context_after() -> Result<crate::context::AfterContext, ConfigError> {
    match super::env_var(BENCH_CONTEXT_AFTER) {
        None => Ok(crate::context::AfterContext::default()),
        Some(value) => value
            .parse()
            .map_err(|message: String| bad_value(BENCH_CONTEXT_AFTER, message)),
    }
}

/// The environment variable of [`bench_context_after`].
const BENCH_CONTEXT_AFTER: &str = "REDLINE_BENCH_CONTEXT_AFTER";

fn bad_value(key: &str, message: impl ToString) -> ConfigError {
    ConfigError::BadValue {
        key: key.to_string(),
        message: message.to_string(),
    }
}

fn pick(flag: &Option<String>, file: &Option<String>, default: &str) -> String {
    flag.clone()
        .or_else(|| file.clone())
        .unwrap_or_else(|| default.to_string())
}

/// The engine's settings: flags > file > defaults, each value checked. The steps run in
/// this order so that, of several bad values, the same one is reported first.
fn agent_config(
    flags: &SettingFlags,
    file: &FileConfig,
    model: &ModelSettings,
) -> Result<AgentConfig, ConfigError> {
    let mut agent = AgentConfig::new(model.model.clone());
    apply_run_choices(&mut agent, flags, file)?;
    apply_context_sizes(&mut agent, file, model)?;
    agent.reflection = file.reflection.clone();
    agent.verification.enabled = flags.verify.or(file.verify).unwrap_or(true);
    agent.verification.model = verify_model(flags, file, model)?;
    agent.parallel = flags.parallel.or(file.parallel).unwrap_or(4);
    if !(1..=32).contains(&agent.parallel) {
        return Err(bad_value(
            "parallel",
            format!("{} is not between 1 and 32", agent.parallel),
        ));
    }
    if !(1..=10).contains(&agent.reflection.max_rounds) {
        return Err(bad_value(
            "reflection.max_rounds",
            format!("{} is not between 1 and 10", agent.reflection.max_rounds),
        ));
    }
    Ok(agent)
}

/// How the run goes: steps, sampling, instructions, prompts, strategy, tool mode, what it
/// leaves out, and the first message's after-context.
fn apply_run_choices(
    agent: &mut AgentConfig,
    flags: &SettingFlags,
    file: &FileConfig,
) -> Result<(), ConfigError> {
    agent.max_steps = super::check_max_steps(
        flags
            .max_steps
            .or(file.max_steps)
            .unwrap_or(super::DEFAULT_MAX_STEPS),
    )?;
    agent.temperature = file.temperature;
    agent.instructions = file.instructions.clone();
    agent.walkthrough = file.walkthrough.unwrap_or(true);
    agent.prompts = Prompts::with_overrides(&file.prompts);
    agent.strategy = pick(&flags.strategy, &file.strategy, "auto")
        .parse()
        .map_err(|message: String| bad_value("strategy", message))?;
    agent.tool_mode = pick(&flags.tool_mode, &file.tool_mode, "auto")
        .parse()
        .map_err(|message: String| bad_value("tool_mode", message))?;
    agent.auto = file.auto.clone();
    // Checked here so a bad glob is the user's error, not a note to the model.
    glob_set(&file.exclude, "exclude")?;
    agent.exclude = file.exclude.clone();
    agent.context_after = bench_context_after()?;
    Ok(())
}

/// The model's window and reply size, and the budgets and thresholds of the context stages.
fn apply_context_sizes(
    agent: &mut AgentConfig,
    file: &FileConfig,
    model: &ModelSettings,
) -> Result<(), ConfigError> {
    let table = ModelLimits::for_model(&model.model);
    agent.limits = ModelLimits {
        context_window: file.context_window.unwrap_or(table.context_window),
        max_output_tokens: file.max_output_tokens.unwrap_or(table.max_output_tokens),
    };
    super::check_limits(agent.limits)?;
    agent.max_reply_tokens = agent.limits.max_output_tokens.min(8192);
    if let Some(keep) = file.keep_tool_results {
        agent.keep_tool_results = keep;
    }
    if let Some(threshold) = file.prune_threshold {
        agent.prune_threshold = checked_threshold("prune_threshold", threshold)?;
    }
    if let Some(threshold) = file.summary_threshold {
        agent.summary_threshold = checked_threshold("summary_threshold", threshold)?;
    }
    agent.task_budget = checked_task_budget(file.task_budget)?;
    agent.intent_budget = file
        .intent_budget
        .unwrap_or(crate::intent::DEFAULT_INTENT_BUDGET);
    Ok(())
}

/// A share of the context window at which a context stage starts: 0.1 to 0.95.
fn checked_threshold(key: &str, threshold: f32) -> Result<f32, ConfigError> {
    if !(0.1..=0.95).contains(&threshold) {
        return Err(bad_value(
            key,
            format!("{threshold} is not between 0.1 and 0.95"),
        ));
    }
    Ok(threshold)
}

/// The verifier's own model (flag > file), `None` when it is the reviewer's; an empty
/// name is a mistake, not a choice.
fn verify_model(
    flags: &SettingFlags,
    file: &FileConfig,
    model: &ModelSettings,
) -> Result<Option<String>, ConfigError> {
    let verify_model = flags
        .verify_model
        .as_deref()
        .or(file.verify_model.as_deref());
    match verify_model.map(str::trim) {
        Some("") => Err(bad_value("verify_model", "the model name is empty")),
        Some(name) if name != model.model => Ok(Some(name.to_string())),
        _ => Ok(None),
    }
}

fn checked_task_budget(budget: Option<usize>) -> Result<Option<usize>, ConfigError> {
    let min = crate::context::STAGE1_MIN_BUDGET;
    match budget {
        Some(budget) if budget < min => Err(bad_value(
            "task_budget",
            format!("{budget} is below the smallest first-message budget ({min})"),
        )),
        other => Ok(other),
    }
}

/// Where each key's value came from, to name it in errors.
struct Origins<'a> {
    flags: &'a SettingFlags,
    flags_origin: &'a str,
    /// Highest precedence first.
    sources: [Option<&'a ConfigSource>; 2],
}

impl Origins<'_> {
    /// A [`ConfigError::BadValue`] with the origin of its key added.
    fn locate(&self, error: ConfigError) -> ConfigError {
        match error {
            ConfigError::BadValue { key, message } => match self.origin_of(&key) {
                Some(origin) => ConfigError::Setting {
                    key,
                    origin,
                    message,
                },
                None => ConfigError::BadValue { key, message },
            },
            other => other,
        }
    }

    fn origin_of(&self, key: &str) -> Option<String> {
        if let Some(flag) = self.flag_of(key) {
            return Some(match self.flags_origin {
                "flag" => flag.to_string(),
                origin => format!("{origin} {flag}"),
            });
        }
        let source = self.sources.iter().flatten().find(|s| s.has_key(key))?;
        Some(match source.position_of(key) {
            Some(at) => format!("{}:{at}", source.origin()),
            None => source.origin().to_string(),
        })
    }

    fn flag_of(&self, key: &str) -> Option<&'static str> {
        let f = self.flags;
        let (set, flag) = match key {
            "provider" => (f.model.provider.is_some(), "--provider"),
            "model" => (f.model.model.is_some(), "--model"),
            "base_url" => (f.model.base_url.is_some(), "--base-url"),
            "max_steps" => (f.max_steps.is_some(), "--max-steps"),
            "strategy" => (f.strategy.is_some(), "--strategy"),
            "tool_mode" => (f.tool_mode.is_some(), "--tool-mode"),
            "parallel" => (f.parallel.is_some(), "--parallel"),
            "fail_on" => (f.fail_on.is_some(), "--fail-on"),
            "max_comments" => (f.max_comments.is_some(), "--max-comments"),
            "verify" => (f.verify.is_some(), "--no-verify"),
            "verify_model" => (f.verify_model.is_some(), "--verify-model"),
            _ => (false, ""),
        };
        set.then_some(flag)
    }
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
