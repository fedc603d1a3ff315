//! Runs Redline's work-tree search on any directory and prints every match as
//! `path:line:text`, like `rg -n --no-heading`, so `benches/search_vs_rg.sh`
//! can time the two as separate processes.
//!
//! Usage: `search_bench [--fixed] [--ignore-case] [--max N] PATTERN DIR`

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, anyhow};

use redline::repo::search::{SearchOptions, search_dir};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("search_bench: {message:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    let (options, dir) = parse_args(std::env::args().skip(1))?;
    let output = search_dir(&dir, &options).context("search")?;
    let stdout = std::io::stdout().lock();
    let mut out = BufWriter::with_capacity(64 * 1024, stdout);
    for found in &output.matches {
        writeln!(out, "{}:{}:{}", found.path, found.line, found.text)?;
    }
    out.flush()?;
    if output.is_truncated() {
        eprintln!(
            "kept {} of {} matching lines",
            output.matches.len(),
            output.total_matches
        );
    }
    Ok(())
}

fn parse_args(args: impl Iterator<Item = String>) -> anyhow::Result<(SearchOptions, PathBuf)> {
    let mut options = SearchOptions {
        max_results: usize::MAX,
        max_line_chars: usize::MAX,
        ..SearchOptions::new(String::new())
    };
    let mut positional = Vec::new();
    let mut args = args;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--fixed" => options.fixed_string = true,
            "--ignore-case" => options.case_insensitive = true,
            "--max" => {
                let n = args.next().context("--max needs a number")?;
                options.max_results = n.parse().map_err(|_| anyhow!("bad --max `{n}`"))?;
            }
            _ => positional.push(arg),
        }
    }
    match <[String; 2]>::try_from(positional) {
        Ok([pattern, dir]) => {
            options.pattern = pattern;
            Ok((options, PathBuf::from(dir)))
        }
        Err(_) => Err(anyhow!(
            "usage: search_bench [--fixed] [--ignore-case] [--max N] PATTERN DIR"
        )),
    }
}
