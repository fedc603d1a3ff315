//! Redline: a code-review agent.
//!
//! A review reads a change ([`review::diff::ChangeSet`]), lets a model explore the
//! repository through [`tools`] in a loop run by the [`agent`], checks the
//! findings against the diff ([`review`]) and renders or publishes them. The [`flow`]s
//! turn a typed request (a local change, a pull request, a comment in a review thread)
//! into that run, for the command line and the App alike.
//!
//! Forges: [`forge`] holds what GitHub and GitLab share (anchoring, fingerprints, the
//! summary, dismissals, commands, notices, rate limits, the `Forge` trait the flows publish
//! through); [`github`] and [`gitlab`] hold their API clients, payload types and `Forge`
//! implementations. `forge` and `flow` import neither forge, and neither forge imports the
//! other; in the [`server`], the webhook intake and the job and answer pipelines are shared,
//! and each forge's part (its webhook, job steps and answer steps) lives in `server/github/`
//! or `server/gitlab/` (`tests/layering.rs` holds all of it).

// Library code reports failures as errors; tests may unwrap.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod agent;
mod backoff;
mod cli;
pub mod config;
pub mod context;
mod errors;
pub mod eval;
pub mod flow;
pub mod forge;
#[cfg(test)]
mod fuzzing;
pub mod github;
pub mod gitlab;
pub mod guidelines;
pub mod intent;
pub mod llm;
pub mod prompts;
pub mod queue;
mod redirect;
pub mod repo;
pub mod review;
pub mod server;
pub mod syntax;
pub mod text;
pub mod tools;

/// The `redline` command line: parse a [`Cli`], then [`run`] it for the exit code.
pub use cli::{Cli, end_quietly_on_closed_stdout, parse, run};
/// What the model wrote cannot be used; the text tells it what to fix.
pub use errors::ModelReplyError;

/// The Tokio runtime every entry point runs on: Tokio's multi-thread runtime (a worker thread
/// per core the process may use), and on a single core a current-thread runtime. On one core
/// both run every task on one thread (blocking work goes to the blocking pool either way), but
/// the current-thread scheduler skips the multi-thread one's cross-thread bookkeeping on every
/// wake: `redline serve` pinned to one core used 13 % less CPU per webhook delivery.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let mut builder = if cores == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = builder.enable_all().build()?;
    tracing::info!(cores, "async runtime started");
    Ok(runtime)
}
