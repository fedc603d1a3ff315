//! `redline gitlab-hook-token <PROJECT_ID>`: prints the token a GitLab project's webhook
//! must carry (`X-Gitlab-Token`), derived from `GITLAB_WEBHOOK_SECRET` and the project's id
//! ([`crate::gitlab::project_hook_token`]).
//!
//! Invariants: the master secret is read from the environment only (never a flag, which
//! would land in shell history and process lists) and never printed; the output is the one
//! project's token and a newline.

use clap::Args;

use super::{EXIT_ERROR, EXIT_OK};
use crate::llm::Secret;

/// `redline gitlab-hook-token`.
#[derive(Debug, Clone, Args)]
pub struct GitlabHookTokenArgs {
    /// The project's numeric id (Settings > General on GitLab).
    #[arg(value_name = "PROJECT_ID")]
    pub project_id: u64,
}

/// Prints the project's token; exit 2 when `GITLAB_WEBHOOK_SECRET` is not set.
pub fn run(args: &GitlabHookTokenArgs) -> i32 {
    let Some(master) = crate::config::env_var("GITLAB_WEBHOOK_SECRET") else {
        eprintln!(
            "error: GITLAB_WEBHOOK_SECRET is not set (the master secret `redline serve` uses)"
        );
        return EXIT_ERROR;
    };
    let master = Secret::new(master);
    println!(
        "{}",
        crate::gitlab::project_hook_token(&master, args.project_id)
    );
    EXIT_OK
}
