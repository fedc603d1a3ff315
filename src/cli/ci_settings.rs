//! The settings of a review in a CI job of either forge (`redline action`, `redline
//! gitlab`): the job's inputs and variables over the config file of the change's base
//! commit.
//!
//! Invariants: the repository's rules come from the base commit, so a change cannot alter
//! its own review; no repository file chooses where the key goes (`provider`, `base_url`
//! are dropped by [`local_settings`]); a strategy asked for in a comment is checked here,
//! so that its error names the comment rather than the job's input. Nothing here knows
//! which forge runs the job: the caller says how a warning is shown.

use std::path::Path;

use anyhow::anyhow;

use super::CiArgs;
use super::review::local_settings;
use crate::agent::strategy::StrategyChoice;
use crate::config::settings::{SettingFlags, Settings};
use crate::config::{CONFIG_FILE, ConfigSource};
use crate::flow::pull::PullCommits;

/// The settings of a review of `commits`: `args` over the config file at `commits.base`.
/// `strategy` is the one a `/redline review --strategy NAME` comment asked for (it wins
/// over the job's input); `warn` shows each warning about the repository's config file in
/// the job's log.
pub(super) fn ci_settings(
    args: &CiArgs,
    commits: &PullCommits,
    strategy: Option<&str>,
    warn: &dyn Fn(&str),
) -> anyhow::Result<Settings> {
    let config_path = args.config.as_deref().unwrap_or(Path::new(CONFIG_FILE));
    let repository = ConfigSource::read_at_commit(&commits.root, &commits.base, config_path)?;
    if let Some(source) = &repository {
        // `local_settings` repeats them on stderr.
        for warning in source.warnings() {
            warn(&warning);
        }
    }
    if let Some(name) = strategy {
        name.parse::<StrategyChoice>()
            .map_err(|e| anyhow!("/redline review --strategy: {e}"))?;
    }
    let flags = SettingFlags {
        model: args.model.flags(),
        limits: args.limits.flags(),
        max_steps: args.max_steps,
        strategy: strategy.map(str::to_string).or(args.strategy.clone()),
        fail_on: args.fail_on.clone(),
        max_comments: args.max_comments,
        // `verify: true` (the input's default) leaves it to the config file.
        verify: (!args.verify).then_some(false),
        verify_model: args.verify_model.clone(),
        ..SettingFlags::default()
    };
    local_settings(flags, "input or variable", repository)
}
