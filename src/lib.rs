//! Redline: a code-review agent.
//!
//! A review reads a change ([`review::diff::ChangeSet`]), lets a model explore the
//! repository through [`tools`] in a loop run by the [`agent`], checks the
//! findings against the diff ([`review`]) and renders or publishes them.

// Library code reports failures as errors; tests may unwrap.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod agent;
mod cli;
pub mod config;
pub mod context;
pub mod eval;
#[cfg(test)]
mod fuzzing;
pub mod github;
pub mod guidelines;
pub mod llm;
pub mod prompts;
pub mod queue;
pub mod repo;
pub mod review;
pub mod review_flow;
pub mod server;
pub mod text;
pub mod thread_flow;
pub mod tools;

/// The `redline` command line: parse a [`Cli`], then [`run`] it for the exit code.
pub use cli::{Cli, run};
