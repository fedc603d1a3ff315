//! `redline completions SHELL` and the hidden `redline man DIR`: the shell completion scripts
//! and the man page, both generated from the command line's own definition (so they never
//! fall behind a flag). `scripts/dist.sh` ships them in the release archives.

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;

use super::{Cli, EXIT_ERROR, EXIT_OK};

/// Prints the completion script for `shell` on stdout.
pub(crate) fn completions(shell: clap_complete::Shell) -> i32 {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "redline", &mut script);
    write_stdout(&script)
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
