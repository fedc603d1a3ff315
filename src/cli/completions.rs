//! `redline completions SHELL` and the hidden `redline man DIR`: the shell completion scripts
//! and the man page, both generated from the command line's own definition (so they never
//! fall behind a flag). `scripts/dist.sh` ships them in the release archives.

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;

use super::{Cli, EXIT_ERROR, EXIT_OK};

/// Prints the completion script for `shell` on stdout.
pub(crate) fn completions(shell: clap_complete::Shell) -> i32 {
    let mut command = completion_command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "redline", &mut script);
    write_stdout(&script)
}

/// The command line as the completion scripts offer it: without hidden subcommands (`man`
/// is for release scripts), and with the choices of every flag whose value name lists them
/// (`text|markdown|json|sarif`) as its possible values, so that the shell offers those
/// rather than file names. Only the scripts see these choices: the values are still
/// checked where they are read, which knows their aliases and suggests the closest.
fn completion_command() -> clap::Command {
    let full = Cli::command();
    let visible: Vec<clap::Command> = full
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .cloned()
        .collect();
    let top = clap::Command::new(full.get_name().to_string())
        .args(full.get_arguments().cloned())
        .subcommands(visible);
    with_choices(top)
}

/// `command` (and its subcommands) with each listed choice as a possible value.
fn with_choices(command: clap::Command) -> clap::Command {
    command
        .mut_args(|arg| {
            let listed = arg
                .get_value_names()
                .and_then(|names| names.first())
                .map(|name| name.to_string())
                .filter(|name| name.contains('|'));
            match listed {
                Some(name) if arg.get_possible_values().is_empty() => {
                    let choices: Vec<String> = name.split('|').map(str::to_string).collect();
                    arg.value_parser(clap::builder::PossibleValuesParser::new(choices))
                }
                _ => arg,
            }
        })
        .mut_subcommands(with_choices)
}

/// Writes the man pages of `redline` and each visible subcommand (`redline-review.1`, ...)
/// into `dir`, creating it when missing.
pub(crate) fn man(dir: &Path) -> i32 {
    let written =
        std::fs::create_dir_all(dir).and_then(|_| clap_mangen::generate_to(Cli::command(), dir));
    match written {
        Ok(()) => EXIT_OK,
        Err(err) => {
            eprintln!(
                "error: cannot write the man pages to {}: {err}",
                dir.display()
            );
            EXIT_ERROR
        }
    }
}

fn write_stdout(bytes: &[u8]) -> i32 {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|_| stdout.flush()) {
        Ok(()) => EXIT_OK,
        // The reader stopped reading (`| head`): nothing is wrong.
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(err) => {
            eprintln!("error: cannot write to stdout: {err}");
            EXIT_ERROR
        }
    }
}
