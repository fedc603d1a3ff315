//! The arguments of each command, as clap reads them (flags, variables, defaults, help
//! headings); `cli.rs` keeps the command list and the dispatch.

use std::path::PathBuf;

use clap::Args;

use super::{ColorWhen, ServeLimitArgs};

/// The variables `redline review --help` names besides those shown with their flags.
pub(super) const REVIEW_ENVIRONMENT: &str = "\
Environment:
  REDLINE_API_KEY   The model API key (else OPENAI_API_KEY or ANTHROPIC_API_KEY, by provider)
  NO_COLOR          When set, no colour with --color auto
  XDG_CONFIG_HOME   Your config file is $XDG_CONFIG_HOME/redline/config.toml (else ~/.config/...)
  Variables shown with a flag ([env: ...]) set it; a flag given wins.";

/// `redline man DIR`.
#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// The directory to write the pages into (created when missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// `redline completions SHELL`.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `redline eval`: cases from a file or mined from a repository, reviewed under every
/// (strategy, model) pair.
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["cases", "mine", "mutate"])))]
#[command(group(clap::ArgGroup::new("generated").args(["mine", "mutate"])))]
pub struct EvalArgs {
    /// The cases to run (JSON Lines, version 1).
    #[arg(long, value_name = "FILE.jsonl")]
    pub cases: Option<PathBuf>,
    /// Mine cases from this repository's history: behaviour fixes with their source put back (and --clean commits).
    #[arg(long, value_name = "REPO")]
    pub mine: Option<PathBuf>,
    /// Fix cases to mine at most: fixes that change a test first, then newest first.
    #[arg(long, default_value_t = 20, value_name = "N", requires = "mine")]
    pub limit: usize,
    /// Mine only commits made on or after this date (YYYY-MM-DD).
    #[arg(long, value_name = "DATE", requires = "mine")]
    pub since: Option<String>,
    /// Also mine N ordinary (non-fix) commits as clean cases, to count false findings.
    #[arg(long, default_value_t = 0, value_name = "N", requires = "mine")]
    pub clean: usize,
    /// Plant bugs in one change of this repository: each case is the change --base..--head plus one realistic bug on an added line.
    #[arg(long, value_name = "REPO", requires_all = ["base", "head"])]
    pub mutate: Option<PathBuf>,
    /// The base revision of the change to plant bugs in.
    #[arg(long, value_name = "REV", requires = "mutate")]
    pub base: Option<String>,
    /// The head revision of the change to plant bugs in.
    #[arg(long, value_name = "REV", requires = "mutate")]
    pub head: Option<String>,
    /// Mutants (cases) to plant at most, spread across files and kinds.
    #[arg(long, default_value_t = 10, value_name = "N", requires = "mutate")]
    pub mutants: usize,
    /// The seed of the mutants' choice: the same seed gives the same mutants.
    #[arg(long, default_value_t = 1, value_name = "S", requires = "mutate")]
    pub seed: u64,
    /// Save the mined or planted cases here (JSON Lines) for reuse with --cases.
    #[arg(long, value_name = "FILE", requires = "generated")]
    pub write_cases: Option<PathBuf>,
    /// Keep only fixes that change a test too (fixes with a test change rank first anyway).
    #[arg(long, requires = "mine")]
    pub require_test: bool,
    /// List the candidate fixes (or the mutants), kept or skipped and why, and stop: no review, no model, no key.
    #[arg(long, requires = "generated", conflicts_with_all = ["write_cases", "baseline"])]
    pub list: bool,
    /// A strategy to evaluate; repeat for several (default: the configured one).
    #[arg(
        long = "strategy",
        env = "REDLINE_STRATEGY",
        value_name = "auto|react|plan|reflect"
    )]
    pub strategies: Vec<String>,
    /// A model to evaluate; repeat for several (default: the configured one).
    #[arg(long = "model", env = "REDLINE_MODEL", value_name = "MODEL")]
    pub models: Vec<String>,
    /// Model API protocol: openai (any OpenAI-compatible server) or anthropic.
    #[arg(long, env = "REDLINE_PROVIDER", value_name = "openai|anthropic")]
    pub provider: Option<String>,
    /// API root (e.g. http://localhost:11434/v1 for Ollama).
    #[arg(long, env = "REDLINE_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,
    /// Reviews run at once.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub parallel: usize,
    /// Report format.
    #[arg(long, default_value = "text", value_name = "text|markdown|json|html")]
    pub format: String,
    /// Ask a judge model whether each finding near a planted or mined bug describes it: judged recall beside proximity recall.
    #[arg(long)]
    pub judge: bool,
    /// The judge's model (default: the first evaluated model).
    #[arg(long, value_name = "MODEL", requires = "judge")]
    pub judge_model: Option<String>,
    /// Write the report here instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// An earlier JSON report: show the change of every figure and the cases newly caught or lost.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Where each review's JSON Lines events go (default: `$XDG_STATE_HOME/redline/eval/<time>`).
    #[arg(long, value_name = "DIR")]
    pub events_dir: Option<PathBuf>,
    /// Model turns of each review.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u32>,
    /// Score the findings as reviewed, without verifying them (the baseline of verification).
    #[arg(long)]
    pub no_verify: bool,
    /// A config file to use instead of each case's .redline.toml at its base revision.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// No progress on stderr.
    #[arg(short, long)]
    pub quiet: bool,
    /// Hard limits of each review.
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// `redline check` (App settings come from the environment, as for `redline serve`).
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Model settings.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Check the App settings even when none is set in the environment.
    #[arg(long)]
    pub app: bool,
}

/// `redline init`.
#[derive(Debug, Clone, Args)]
pub struct InitArgs {
    /// The directory to write into (default: the root of the repository containing the current directory, else the current directory).
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// Also write .github/workflows/redline.yml, the workflow that runs the Redline action.
    #[arg(long)]
    pub action: bool,
    /// Overwrite files that exist.
    #[arg(long)]
    pub force: bool,
}

/// `redline replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// The run: a transcript file, a run id, or `latest` (this repository's newest run).
    #[arg(value_name = "FILE|RUN_ID|latest")]
    pub file: PathBuf,
    /// Directory of run transcripts, where a run id or `latest` is looked for.
    #[arg(long, env = "REDLINE_RUNS_DIR", value_name = "DIR")]
    pub runs_dir: Option<PathBuf>,
    /// Output format.
    #[arg(long, default_value = "text", value_name = "text|markdown|json|sarif")]
    pub format: String,
    /// Print the history the model saw at this model call (1-based, after compression) and stop.
    #[arg(long, value_name = "STEP")]
    pub until: Option<usize>,
    /// The repository, when it is no longer where the transcript says.
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// Re-run the review without its verification stage (the recorded verifier calls are not asked).
    #[arg(long)]
    pub no_verify: bool,
    /// Colour the text output: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(
        long,
        value_enum,
        default_value_t,
        value_name = "WHEN",
        hide_possible_values = true
    )]
    pub color: ColorWhen,
}

/// `redline runs`.
#[derive(Debug, Clone, Args)]
pub struct RunsListArgs {
    /// Directory of run transcripts (default: $XDG_STATE_HOME/redline/runs, else ~/.local/state/redline/runs).
    #[arg(long, env = "REDLINE_RUNS_DIR", value_name = "DIR")]
    pub runs_dir: Option<PathBuf>,
    /// Output format.
    #[arg(long, default_value = "text", value_name = "text|json")]
    pub format: String,
}

/// The most seconds a `*-secs` flag takes (366 days, the longest duration accepted).
const MAX_SECS: u64 = 366 * 86_400;

/// `redline serve` (App credentials come from the environment).
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:3000", value_name = "ADDR")]
    pub listen: String,
    /// Reviews run at once (at least 1).
    #[arg(long, default_value = "4", value_parser = crate::server::limits::parse_count, value_name = "N")]
    pub workers: usize,
    /// Where bare mirrors of reviewed repositories are kept.
    #[arg(long, env = "REDLINE_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Also review draft pull requests.
    #[arg(long, env = "REDLINE_REVIEW_DRAFTS")]
    pub review_drafts: bool,
    /// Disk budget of the mirror cache in MiB (least recently used mirrors are removed).
    #[arg(
        long,
        env = "REDLINE_CACHE_BUDGET_MB",
        default_value_t = 10_240,
        value_name = "MIB"
    )]
    pub cache_budget_mb: u64,
    /// Post a short notice on the pull request when its review fails for good.
    #[arg(long, env = "REDLINE_FAILURE_NOTICE")]
    pub failure_notice: bool,
    /// Seconds a job stays leased without a heartbeat (a dead worker's job is taken again after this).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=MAX_SECS), value_name = "SECS")]
    pub lease_secs: u64,
    /// Seconds between a busy worker's heartbeats (lease renewal and cancellation check).
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=MAX_SECS), value_name = "SECS")]
    pub heartbeat_secs: u64,
    /// Connection and request limits, delivery retention.
    #[command(flatten)]
    pub limits: ServeLimitArgs,
    /// Model settings.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Most a repository's review may cost, in USD (the repository's `max_cost` is lowered to it; without one it applies).
    /// Default 2 for a model with a built-in price.
    #[arg(long, env = "REDLINE_MAX_COST_CEILING", value_name = "USD")]
    pub max_cost_ceiling: Option<String>,
    /// Most prompt + completion tokens a repository's review may use (bounds its `max_tokens`
    /// the same way). Default 2000000 for a model without a built-in price.
    #[arg(long, env = "REDLINE_MAX_TOKENS_CEILING", value_name = "N")]
    pub max_tokens_ceiling: Option<String>,
    /// Longest a repository's review may run, e.g. 15m (bounds the repository's `timeout` the same way).
    #[arg(long, env = "REDLINE_TIMEOUT_CEILING", value_name = "DURATION")]
    pub timeout_ceiling: Option<String>,
}

/// What `redline action` and `redline gitlab` both read: the model, the review's
/// settings and its limits, each from a flag or the variable the CI job sets.
#[derive(Debug, Clone, Args)]
pub struct CiArgs {
    /// Model settings.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Review strategy.
    #[arg(long, env = "REDLINE_STRATEGY", value_name = "auto|react|plan|reflect")]
    pub strategy: Option<String>,
    /// Fail the step (the Action's, the GitLab job) when a finding is at or above this severity.
    #[arg(
        long,
        env = "REDLINE_FAIL_ON",
        value_name = "critical|major|minor|nit|never"
    )]
    pub fail_on: Option<String>,
    /// Config file path in the repository (read from the base commit).
    #[arg(long, env = "REDLINE_CONFIG", value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Inline comments at most; the rest go to the summary.
    #[arg(long, env = "REDLINE_MAX_COMMENTS", value_name = "N")]
    pub max_comments: Option<usize>,
    /// Model turns of a run.
    #[arg(long, env = "REDLINE_MAX_STEPS", value_name = "N")]
    pub max_steps: Option<u32>,
    /// Report the findings without verifying them; REDLINE_VERIFY=false does the same (true leaves it to the config file's `verify`).
    #[arg(
        long = "no-verify",
        id = "verify",
        env = "REDLINE_VERIFY",
        action = clap::ArgAction::SetFalse,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub verify: bool,
    /// The verifier's model (same provider and endpoint); default the config file's `verify_model`, else the review's model.
    #[arg(long, env = "REDLINE_VERIFY_MODEL", value_name = "MODEL")]
    pub verify_model: Option<String>,
    /// Hard limits of the review.
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// `redline action` (settings come from the environment the Action sets).
#[derive(Debug, Clone, Args)]
pub struct ActionArgs {
    /// What the Action shares with `redline gitlab`.
    #[command(flatten)]
    pub ci: CiArgs,
    /// Also review draft pull requests.
    #[arg(long, env = "REDLINE_REVIEW_DRAFTS")]
    pub review_drafts: bool,
}

/// `redline gitlab` (settings come from the job's variables, as for `redline action`;
/// drafts are GitLab's pipeline rules' business).
#[derive(Debug, Clone, Args)]
pub struct GitlabArgs {
    /// What the job shares with `redline action`.
    #[command(flatten)]
    pub ci: CiArgs,
    /// Also write the findings as a GitLab Code Quality report (gl-code-quality-report.json).
    #[arg(long, env = "REDLINE_CODE_QUALITY", value_name = "FILE")]
    pub code_quality: Option<PathBuf>,
}

/// Hard limits of one review (flags > environment > config file).
#[derive(Debug, Clone, Default, Args)]
pub struct LimitArgs {
    /// Stop before the review's cost would pass this many USD (at the price table).
    #[arg(
        long,
        env = "REDLINE_MAX_COST",
        value_name = "USD",
        allow_hyphen_values = true
    )]
    pub max_cost: Option<String>,
    /// Stop before prompt + completion tokens over all model calls would pass N.
    #[arg(
        long,
        env = "REDLINE_MAX_TOKENS",
        value_name = "N",
        allow_hyphen_values = true
    )]
    pub max_tokens: Option<String>,
    /// Stop the review after this wall time (e.g. 90s, 10m); calls in flight are cancelled.
    #[arg(
        long,
        env = "REDLINE_TIMEOUT",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub timeout: Option<String>,
}

impl LimitArgs {
    /// As config flags.
    pub fn flags(&self) -> crate::config::limits::LimitFlags {
        crate::config::limits::LimitFlags {
            max_cost: self.max_cost.clone(),
            max_tokens: self.max_tokens.clone(),
            timeout: self.timeout.clone(),
        }
    }
}

/// `redline context`.
#[derive(Debug, Clone, Args)]
pub struct ContextArgs {
    /// The repository (default: the one containing the current directory).
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// Base revision (default as for `redline review`).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Head revision.
    #[arg(long, value_name = "REV", default_value = "HEAD")]
    pub head: String,
    /// The model whose tokenizer and window to use.
    #[arg(long, env = "REDLINE_MODEL")]
    pub model: Option<String>,
    /// Output format.
    #[arg(long, default_value = "text", value_name = "text|json")]
    pub format: String,
    /// Also print the shaped first message itself (text format), after the summary.
    #[arg(long)]
    pub show: bool,
    /// Shape the work tree's uncommitted changes too (and use its .redline.toml).
    #[arg(long)]
    pub uncommitted: bool,
    /// A config file to use instead of the repository's .redline.toml (default: the file
    /// as it is at the base revision, as `redline review` reads it).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// What the change is for, besides its commit messages.
    #[command(flatten)]
    pub intent: IntentArgs,
}

/// What the author says a local change does, besides the commit messages of base..head.
#[derive(Debug, Clone, Default, Args)]
pub struct IntentArgs {
    /// The change's title, as a pull request's would be.
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// A file with the change's description (`-`: standard input; a review reading it there
    /// asks no plan confirmation, as with --yes).
    #[arg(long, value_name = "FILE")]
    pub description_file: Option<PathBuf>,
    /// The description as text (an eval case's `body`; no flag).
    #[arg(skip)]
    pub description: Option<String>,
}

impl IntentArgs {
    /// Whether the description is read from standard input.
    pub(crate) fn reads_stdin(&self) -> bool {
        self.description_file.as_deref() == Some(std::path::Path::new("-"))
    }
}

/// Model selection, shared by every command that talks to a model.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// Model API protocol: openai (any OpenAI-compatible server) or anthropic.
    #[arg(long, env = "REDLINE_PROVIDER", value_name = "openai|anthropic")]
    pub provider: Option<String>,
    /// Model name.
    #[arg(long, env = "REDLINE_MODEL")]
    pub model: Option<String>,
    /// API root (e.g. http://localhost:11434/v1 for Ollama).
    #[arg(long, env = "REDLINE_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,
}

impl ModelArgs {
    /// As config flags.
    pub fn flags(&self) -> crate::config::ModelFlags {
        crate::config::ModelFlags {
            provider: self.provider.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
        }
    }
}

/// `redline review`. Fields are in `--help` order: a flattened group's heading holds for
/// the fields after it, so each field after the first group names its own.
#[derive(Debug, Clone, Args)]
pub struct ReviewArgs {
    /// The repository (default: the one containing the current directory).
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// Base revision (default: merge-base of HEAD with origin/HEAD, else main, else master).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Head revision.
    #[arg(long, value_name = "REV", default_value = "HEAD")]
    pub head: String,
    /// Also review staged and unstaged changes in the work tree (and use its .redline.toml).
    #[arg(long)]
    pub uncommitted: bool,
    /// A config file to use instead of the repository's .redline.toml (default: the file
    /// as it is at the base revision; the work tree's with --uncommitted).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the review plan and stop (JSON with --format json).
    #[arg(long, conflicts_with = "plan")]
    pub plan_only: bool,
    /// Run this plan (as printed by --plan-only --format json, possibly edited).
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// Do not ask for confirmation of the plan on a terminal.
    #[arg(short, long)]
    pub yes: bool,
    /// Model settings.
    #[command(flatten, next_help_heading = "Model")]
    pub model: ModelArgs,
    /// Review strategy [default: auto].
    #[arg(long, value_name = "auto|react|plan|reflect", help_heading = "Model")]
    pub strategy: Option<String>,
    /// Plan-and-execute tasks run at once [default: 4].
    #[arg(long, value_name = "N", help_heading = "Model")]
    pub parallel: Option<usize>,
    /// Native tool calling, text-mode ReAct, or native falling back to text [default: auto].
    #[arg(long, value_name = "native|text|auto", help_heading = "Model")]
    pub tool_mode: Option<String>,
    /// Report the findings without verifying them (a verifier conversation keeps or drops each by default).
    #[arg(long, help_heading = "Model")]
    pub no_verify: bool,
    /// Output format.
    #[arg(
        long,
        default_value = "text",
        value_name = "text|markdown|json|sarif",
        help_heading = "Output"
    )]
    pub format: String,
    /// Write the result here instead of stdout.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,
    /// Write a JSON Lines event log here.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub events: Option<PathBuf>,
    /// Colour the text output: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(
        long,
        value_enum,
        default_value_t,
        value_name = "WHEN",
        hide_possible_values = true,
        help_heading = "Output"
    )]
    pub color: ColorWhen,
    /// Exit 1 when a finding is at or above this severity [default: never].
    #[arg(
        long,
        value_name = "critical|major|minor|nit|never",
        help_heading = "Output"
    )]
    pub fail_on: Option<String>,
    /// More progress detail on stderr.
    #[arg(short, long, conflicts_with = "quiet", help_heading = "Output")]
    pub verbose: bool,
    /// No progress on stderr.
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,
    /// Model turns before the model must conclude [default: 10].
    #[arg(long, value_name = "N", help_heading = "Limits")]
    pub max_steps: Option<u32>,
    /// Hard limits of the review.
    #[command(flatten, next_help_heading = "Limits")]
    pub limits: LimitArgs,
    /// Run transcripts: where they are kept, pruning, resuming.
    #[command(flatten, next_help_heading = "Transcripts")]
    pub runs: RunsArgs,
    /// What the change is for, besides its commit messages.
    #[command(flatten, next_help_heading = "What the change is for")]
    pub intent: IntentArgs,
}

/// Where `redline review` keeps its run transcripts, and which run to resume.
#[derive(Debug, Clone, Default, Args)]
pub struct RunsArgs {
    /// Directory of run transcripts (default: $XDG_STATE_HOME/redline/runs, else ~/.local/state/redline/runs).
    #[arg(long, env = "REDLINE_RUNS_DIR", value_name = "DIR")]
    pub runs_dir: Option<PathBuf>,
    /// Write no transcript for this run.
    #[arg(long, conflicts_with = "resume")]
    pub no_transcript: bool,
    /// Continue a run that did not finish: its id, or `latest` (this repository's newest run).
    #[arg(long, value_name = "RUN_ID|latest", conflicts_with_all = ["plan_only", "plan"])]
    pub resume: Option<String>,
    /// Transcripts older than this many days are deleted when a review starts.
    #[arg(long, default_value_t = 30, value_name = "DAYS")]
    pub runs_max_age: u64,
    /// The oldest transcripts are deleted while all of them take more than this many MiB.
    #[arg(long, default_value_t = 512, value_name = "MIB")]
    pub runs_max_size: u64,
}
