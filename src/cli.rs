//! The command line: `redline review`, `redline context`, `redline action`, `redline gitlab`,
//! `redline serve`, `redline init`, `redline check`, `redline eval`.

mod action;
mod action_thread;
mod args;
mod check;
mod ci_settings;
mod color;
mod completions;
mod config_cmd;
mod context;
mod env_args;
mod eval;
mod files;
mod gitlab;
mod gitlab_hook_token;
pub(crate) mod init;
mod intent_args;
mod output;
mod pipe;
mod progress;
mod replay;
mod review;
mod runs;
mod serve;
mod serve_forges;
mod signals;
mod steps;
mod transcripts;
mod workflow;

use clap::{Parser, Subcommand};

pub use args::*;
pub use color::ColorWhen;
pub use config_cmd::ConfigArgs;
pub use env_args::parse;
pub use gitlab_hook_token::GitlabHookTokenArgs;
pub use pipe::end_quietly_on_closed_stdout;
pub(crate) use serve::ServeLimitArgs;

/// Exit code: done, nothing at or above `--fail-on`.
pub(crate) const EXIT_OK: i32 = 0;
/// Exit code: done, and some finding is at or above `--fail-on`.
pub(crate) const EXIT_FINDINGS: i32 = 1;
/// Exit code: error (arguments, git, model, config).
pub(crate) const EXIT_ERROR: i32 = 2;
/// Exit code: the review was stopped by SIGINT (Ctrl-C).
pub(crate) const EXIT_SIGINT: i32 = 130;
/// Exit code: the review was stopped by SIGTERM.
pub(crate) const EXIT_SIGTERM: i32 = 143;

/// Redline: a code-review agent.
#[derive(Debug, Parser)]
#[command(name = "redline", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Review a change in a local repository.
    #[command(after_help = REVIEW_ENVIRONMENT)]
    Review(ReviewArgs),
    /// Show what the model would see first for a change, and its size (no model needed).
    Context(ContextArgs),
    /// Review the pull request of a GitHub Actions event and post the review.
    Action(ActionArgs),
    /// Review the merge request of a GitLab CI merge request pipeline and post the review.
    Gitlab(GitlabArgs),
    /// Print the webhook token of a GitLab project (derived from GITLAB_WEBHOOK_SECRET and its id).
    GitlabHookToken(GitlabHookTokenArgs),
    /// Run as a GitHub App: webhook server, durable queue and review workers.
    Serve(ServeArgs),
    /// Re-run a recorded review offline from its transcript (no model, no key).
    Replay(ReplayArgs),
    /// List the recorded runs, newest first: id, status, created, strategy, cost.
    Runs(RunsListArgs),
    /// Write a commented .redline.toml (and with --action the GitHub workflow) and say what to do next.
    Init(InitArgs),
    /// Verify the settings without reviewing: the model answers, the App key, the webhook secret, the database.
    Check(CheckArgs),
    /// Measure review quality: replay reverted bug fixes (and clean commits) and score the findings.
    Eval(EvalArgs),
    /// The settings: their JSON Schema, and the values a review would use with their origins.
    Config(ConfigArgs),
    /// Print a shell completion script: redline completions bash|zsh|fish|powershell.
    Completions(CompletionsArgs),
    /// Write the man pages (redline.1, redline-review.1, ...) into DIR, as the release archives ship them.
    #[command(hide = true)]
    Man(ManArgs),
}

/// The message of a command's error for the user: the error, then each cause that the
/// message before it does not already contain, joined by `: ` (as `{:#}` prints an
/// `anyhow::Error`, without repeating a cause a library error already shows in its own text).
pub(crate) fn error_message(error: &anyhow::Error) -> String {
    crate::errors::chain(error.as_ref())
}

/// Runs a parsed command line and returns the process exit code.
pub async fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Review(args) => review::run(args).await,
        Command::Context(args) => context::run(args),
        Command::Action(args) => action::run(args).await,
        Command::Gitlab(args) => gitlab::run(args).await,
        Command::GitlabHookToken(args) => gitlab_hook_token::run(&args),
        Command::Serve(args) => serve::run(args).await,
        Command::Replay(args) => replay::run(args).await,
        Command::Runs(args) => runs::run(args),
        Command::Init(args) => init::run(args),
        Command::Check(args) => check::run(args).await,
        Command::Eval(args) => eval::run(args).await,
        Command::Config(args) => config_cmd::run(args),
        Command::Completions(args) => completions::completions(args.shell),
        Command::Man(args) => completions::man(&args.dir),
    }
}

#[cfg(test)]
mod tests {
    use super::error_message;
    use anyhow::Context;

    #[derive(Debug, thiserror::Error)]
    enum Inner {
        #[error("disk full")]
        Full,
    }

    #[derive(Debug, thiserror::Error)]
    enum Outer {
        #[error("saving failed: {0}")]
        Save(#[from] Inner),
    }

    #[test]
    fn a_context_is_joined_to_its_cause() {
        let error = Err::<(), _>(Inner::Full)
            .context("cannot write out.txt")
            .unwrap_err();
        assert_eq!(error_message(&error), "cannot write out.txt: disk full");
    }

    #[test]
    fn a_library_error_keeps_its_cause_up_to_the_edge() {
        let missing = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let error = Err::<(), _>(crate::config::ConfigError::Read {
            origin: "x.toml".into(),
            source: missing.into(),
        })
        .context("loading the settings")
        .unwrap_err();
        assert_eq!(
            error_message(&error),
            "loading the settings: cannot read config x.toml: no such file"
        );
        let io = error
            .chain()
            .find_map(|cause| cause.downcast_ref::<std::io::Error>());
        assert_eq!(
            io.map(std::io::Error::kind),
            Some(std::io::ErrorKind::NotFound)
        );
    }

    #[test]
    fn a_cause_the_error_already_shows_is_not_repeated() {
        let error = Err::<(), _>(Outer::from(Inner::Full))
            .context("--output x")
            .unwrap_err();
        assert_eq!(
            error_message(&error),
            "--output x: saving failed: disk full"
        );
    }
}
