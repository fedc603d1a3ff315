//! Parsing the command line with an empty environment variable treated as unset.
//!
//! clap takes an `env = "REDLINE_…"` variable's value even when it is the empty string,
//! and compose files (`${REDLINE_PROVIDER:-}`) and Actions inputs pass unset settings as
//! empty strings. Invariant: an argument whose variable is empty (or only whitespace) is
//! parsed as if the variable were not set, so the config file and the defaults apply, as
//! they do for every other read of the environment ([`crate::config::env_var`]).

use clap::{CommandFactory, FromArgMatches};

use super::Cli;

/// The command line of this process, parsed; exits with clap's message on a bad one.
pub fn parse() -> Cli {
    let mut command = without_empty_env(Cli::command());
    let matches = command.clone().get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut command).exit())
}

/// `command` and its subcommands with every argument whose variable is empty detached
/// from that variable.
pub(crate) fn without_empty_env(command: clap::Command) -> clap::Command {
    command
        .mut_args(|arg| {
            let empty = arg
                .get_env()
                .and_then(std::env::var_os)
                .is_some_and(|value| value.to_string_lossy().trim().is_empty());
            if empty {
                arg.env(None::<&'static str>)
            } else {
                arg
            }
        })
        .mut_subcommands(without_empty_env)
}
