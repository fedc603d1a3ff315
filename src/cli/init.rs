//! `redline init`: writes a commented `.redline.toml` with the defaults and, with
//! `--action`, the GitHub workflow of the book's GitHub Action chapter, then prints what to do next.
//!
//! Invariants: an existing file is never overwritten without `--force`: without it, only
//! the missing files are written (`init` then `init --action` adds the workflow), and when
//! every target exists nothing is written and that is an error. Nothing is written outside
//! the repository: a target, or a directory on its way (`.github`, `.github/workflows`),
//! whose real location is outside (a symbolic link a clone can carry) is refused, as is
//! a target that is itself a link or not a regular file (a FIFO), before anything is
//! written; files are opened without following links and without waiting.

use std::path::PathBuf;

use anyhow::{Context, bail};

use super::{EXIT_ERROR, EXIT_OK, InitArgs};
use crate::config::CONFIG_FILE;

/// Where `--action` writes the workflow, relative to the repository root.
pub(crate) const WORKFLOW_FILE: &str = ".github/workflows/redline.yml";

/// The commented config: every setting `.redline.toml` accepts, each on a `# key = value`
/// line (tables as `# [table]`), at its default where it has one. Unit tests uncomment
/// them all and check them against the code's defaults, and compare the keys with the
/// ones the parser accepts, so a new setting without a line here fails.
const CONFIG_TEMPLATE: &str = r#"# Redline review settings for this repository (written by `redline init`).
# Every setting is commented out, at its default where it has one (the others, such as
# temperature or context_window, show an example value): uncomment a line to change it.
# The file is read from the base commit of a change, so a change cannot alter its own review.
# Where your API key goes (`provider`, `base_url`) is never read from this file: use flags,
# REDLINE_* variables or your own ~/.config/redline/config.toml, where these two work:
# provider = "openai"
# base_url = "https://api.openai.com/v1"

# Model name (the default of the openai provider; any name your endpoint serves).
# model = "gpt-4.1-mini"

# Review strategy: auto, react, plan or reflect.
# strategy = "auto"

# Model turns of a ReAct run (1 to 200).
# max_steps = 10

# Sampling temperature, 0 to 2 (none by default: the provider's own).
# temperature = 0.2

# Exit 1 (`redline review`) or fail the Action step when a finding is at or above:
# critical, major, minor, nit or never.
# fail_on = "never"

# Only changed files matching one of these globs are reviewed (empty: all).
# include = []

# Changed files matching one of these globs are listed by name, not reviewed,
# for example ["docs/**", "**/*.snap"].
# exclude = []

# Extra review instructions (none by default).
# instructions = "We target Rust 1.85; flag any use of unsafe."

# Project guidelines quoted to the model: on or off, the files read (in precedence order),
# and the tokens of their text at most.
# guidelines = true
# guidelines_files = ["AGENTS.md", "CLAUDE.md", ".cursorrules", ".cursor/rules/*.md", ".cursor/rules/*.mdc", ".github/copilot-instructions.md", ".redline/rules/*.md"]
# guidelines_budget = 2000

# Open the review with a walkthrough: one line per area of the change saying what it does.
# walkthrough = true

# Verify every finding before it is posted: a verifier conversation keeps or drops each one,
# with a reason (dropped findings are listed in the JSON report only). `verify_model` may name
# a cheaper model on the same provider (default: `model`).
# verify = true
# verify_model = "gpt-4.1-mini"

# Tokens at most of what the author says the change does (title, description, the issues it
# closes, commit messages), shown to the model as a claim to check (0 leaves it out).
# intent_budget = 1000

# Native tool calling, text-mode ReAct, or native falling back to text: native, text, auto.
# tool_mode = "auto"

# Plan-and-execute tasks run at once.
# parallel = 4

# The model's window and reply reserve in tokens (default: from the model table).
# context_window = 128000
# max_output_tokens = 8192

# Context compression: tool results always kept whole, the share of the usable window past
# which seen results are elided, and the share at which the history is summarised.
# keep_tool_results = 3
# prune_threshold = 0.55
# summary_threshold = 0.7

# Tokens of one plan-and-execute task's first message (default: the first-message budget).
# task_budget = 20000

# On GitHub: inline comments at most per review; the rest go to the summary comment.
# max_comments = 25

# The least severe finding posted as an inline comment (GitHub and GitLab); less severe ones
# are listed, collapsed, in the summary comment: critical, major, minor or nit.
# inline_at = "minor"

# On GitHub: post REQUEST_CHANGES when a new finding is at or above a severity
# (none by default: always COMMENT).
# request_changes = "major"

# On GitHub: model calls at most of one answer in a review thread, answers at most in one
# thread, and whether threads whose finding a new review did not raise again are resolved.
# chat_max_steps = 4
# chat_max_replies = 5
# resolve_outdated = false

# Hard limits per review, none by default: USD at the price table, prompt + completion
# tokens over all calls, and wall time.
# max_cost = 0.50
# max_tokens = 2000000
# timeout = "10m"

# Model call timeouts.
# connect_timeout = "10s"
# first_byte_timeout = "90s"
# stream_idle_timeout = "60s"
# request_timeout = "300s"

# Extra signals for `strategy = "auto"` to plan (off unless set), the paths that make a change
# security-sensitive, and whether reflection is always chosen.
# [auto]
# plan_min_files = 12
# plan_min_lines = 600
# plan_min_languages = 3
# plan_min_dirs = 4
# sensitive_paths = ["auth", "login", "password", "passwd", "secret", "token", "crypto", "cipher", "permission", "acl", "session", "oauth", "jwt", "sanitiz", "security", "sql", ".github/workflows"]
# prefer_reflection = false

# The reflection strategy: evaluation rounds at most, the score (0 to 10) under which a finding
# is dropped, and the overall score at which it stops.
# [reflection]
# max_rounds = 3
# drop_below = 5.0
# target = 8.0

# Replace a built-in prompt (prompts/*.md) with this text (none by default).
# [prompts]
# system = "You review code changes."
# task = "Review the change."
# final_turn = "Submit your review now."
# corrective = "Call a tool."

# Prices in USD per million tokens of a model the built-in table lacks (for max_cost and the cost).
# [pricing."my-model"]
# input = 0.40
# cached_input = 0.10
# cache_write = 0.50
# output = 1.60
"#;

/// The workflow of the book's GitHub Action chapter (`docs/src/github-action.md`); `{action}` is the action reference.
const WORKFLOW_TEMPLATE: &str = r#"name: redline
on:
  pull_request:
    types: [opened, synchronize, reopened, ready_for_review]
  issue_comment:
    types: [created]          # `/redline review` (optionally `--strategy plan`) on a pull request
  pull_request_review_comment:
    types: [created]          # replies in Redline's review threads, `/redline ignore`
permissions:
  contents: read
  pull-requests: write
  issues: read                # the issues a pull request closes, shown to the model as its intent
jobs:
  review:
    if: >-
      github.event_name == 'pull_request' ||
      (github.event.issue.pull_request && startsWith(github.event.comment.body, '/redline review')) ||
      (github.event_name == 'pull_request_review_comment' && github.event.comment.user.type != 'Bot')
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0
      # A release tag downloads a prebuilt binary; any other ref builds one with cargo
      # (then add `- uses: dtolnay/rust-toolchain@stable` before this step).
      # The model, strategy, fail_on and max_comments come from .redline.toml at the base
      # commit; an input set here (model, strategy, fail-on, max-comments) would win over it.
      # A pull request from a fork runs without secrets: its step ends with a notice, and a
      # maintainer's `/redline review` comment reviews it (that run has the key).
      - uses: {action}
        with:
          api-key: ${{ secrets.OPENAI_API_KEY }}
"#;

/// Runs `redline init` and returns the exit code.
pub fn run(args: InitArgs) -> i32 {
    match init(&args) {
        Ok(()) => EXIT_OK,
        Err(error) => {
            eprintln!("error: {}", super::error_message(&error));
            EXIT_ERROR
        }
    }
}

/// The `.redline.toml` that `redline init` writes: the template under a `#:schema` line.
pub(crate) fn config_text() -> String {
    format!("#:schema {}\n{CONFIG_TEMPLATE}", schema_reference())
}

/// Where editors find the schema of the file `init` writes (Taplo and Even Better TOML
/// read a first-line `#:schema` comment): the schema committed in Redline's repository
/// (`docs/redline.schema.json`) at this release's tag, so it describes the keys of the
/// binary that wrote the file rather than whatever the default branch has since added.
/// A URL, not a path: the file lives in the user's repository, where no copy of the schema is.
pub(crate) fn schema_reference() -> String {
    format!(
        "https://raw.githubusercontent.com/{}/v{}/{}",
        published_repository(),
        env!("CARGO_PKG_VERSION"),
        crate::config::schema::SCHEMA_PATH
    )
}

/// The workflow that `redline init --action` writes, using the action at `action`
/// (`owner/name@ref`).
pub(crate) fn workflow_text(action: &str) -> String {
    WORKFLOW_TEMPLATE.replace("{action}", action)
}

/// `owner/name@vVERSION`: this release of the repository Redline is published from.
pub(crate) fn action_reference() -> String {
    format!("{}@v{}", published_repository(), env!("CARGO_PKG_VERSION"))
}

/// `owner/name` of the GitHub repository Redline is published from: the one the binary was
/// built from when that is on github.com (`REDLINE_REPOSITORY_URL` at build time, a fork's
/// release), else Cargo.toml's `repository` (a unit test keeps that a github.com URL).
fn published_repository() -> &'static str {
    crate::review::render::sarif::information_uri()
        .and_then(github_path)
        .or_else(|| github_path(env!("CARGO_PKG_REPOSITORY")))
        .unwrap_or(env!("CARGO_PKG_REPOSITORY"))
}

/// `owner/name` of a `https://github.com/owner/name` URL, else `None`.
fn github_path(url: &str) -> Option<&str> {
    url.strip_prefix("https://github.com/")
        .map(|path| path.trim_end_matches('/').trim_end_matches(".git"))
        .filter(|path| path.split('/').count() == 2 && !path.contains(' '))
}

fn init(args: &InitArgs) -> anyhow::Result<()> {
    let root = match &args.repo {
        Some(path) => path.clone(),
        None => {
            let cwd = std::env::current_dir().context("cannot read the current directory")?;
            // The repository's root when inside one, so the files land where Redline reads them.
            match crate::repo::discover(&cwd) {
                Ok(root) => root,
                Err(_) => {
                    eprintln!(
                        "note: {} is not in a git repository; writing there (Redline reads .redline.toml at the root of the repository it reviews: run `redline init` inside it, or pass --repo DIR)",
                        cwd.display()
                    );
                    cwd
                }
            }
        }
    };
    if !root.is_dir() {
        bail!("{} is not a directory", root.display());
    }
    let real_root = std::fs::canonicalize(&root)
        .with_context(|| format!("cannot resolve {}", root.display()))?;
    let action = action_reference();
    let mut files: Vec<(PathBuf, String)> = vec![(root.join(CONFIG_FILE), config_text())];
    if args.action {
        files.push((root.join(WORKFLOW_FILE), workflow_text(&action)));
    }
    for relative in files
        .iter()
        .filter_map(|(path, _)| path.strip_prefix(&root).ok())
    {
        super::files::check_inside(&root, &real_root, relative)?;
    }
    if !args.force {
        let (existing, missing): (Vec<_>, Vec<_>) = files
            .into_iter()
            .partition(|(path, _)| path.symlink_metadata().is_ok());
        if missing.is_empty() {
            let names: Vec<String> = existing
                .iter()
                .map(|(path, _)| path.display().to_string())
                .collect();
            bail!(
                "{} already {}; nothing was written (pass --force to overwrite)",
                names.join(" and "),
                if names.len() == 1 { "exists" } else { "exist" }
            );
        }
        for (path, _) in &existing {
            println!("kept {} (it exists; --force overwrites it)", path.display());
        }
        files = missing;
    }
    for (path, text) in &files {
        super::files::write_in_workspace(&root, path, text)?;
        println!("wrote {}", path.display());
    }
    println!();
    print!("{}", next_steps(args.action));
    Ok(())
}

/// What to do after `init`: the secret, the model, a first review.
fn next_steps(action: bool) -> String {
    let mut steps = vec![
        "Choose the model: `model` in .redline.toml (default gpt-4.1-mini; any model your endpoint serves); the workflow leaves it to that file.".to_string(),
        "Review locally: set OPENAI_API_KEY (or ANTHROPIC_API_KEY with --provider anthropic), or run a local Ollama, llama.cpp, LM Studio or vLLM server, which `redline review` finds by itself; then run `redline review`.".to_string(),
    ];
    if action {
        steps.insert(
            0,
            "Add the model's API key as a repository secret named OPENAI_API_KEY (Settings > Secrets and variables > Actions, or `gh secret set OPENAI_API_KEY`); for Anthropic set `provider: anthropic` in the workflow and pass the Anthropic key.".to_string(),
        );
        steps.push(format!(
            "Commit {CONFIG_FILE} and {WORKFLOW_FILE}; the next pull request gets a review."
        ));
    } else {
        steps.push(format!(
            "Commit {CONFIG_FILE}; `redline init --action` also writes the GitHub workflow."
        ));
    }
    let mut text = String::from("Next steps:\n");
    for (i, step) in steps.iter().enumerate() {
        text.push_str(&format!("  {}. {step}\n", i + 1));
    }
    text
}

#[cfg(test)]
#[path = "init_tests.rs"]
mod tests;
