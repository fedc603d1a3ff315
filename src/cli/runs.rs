//! `redline runs`: the recorded runs of the runs directory, newest first, with how each
//! ended and what it cost; and how `redline replay` finds a run by id or `latest`.
//!
//! Only transcripts count (a regular file named `<run id>.jsonl` whose first line is a
//! header, as pruning decides); a transcript that cannot be read is listed as such.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail};
use serde::Serialize;

use super::transcripts::{latest_transcript, runs_dir_or, transcript_paths};
use super::{EXIT_ERROR, EXIT_OK, RunsListArgs};
use crate::agent::transcript::{EndStatus, Transcript, is_run_id};

/// One listed run.
#[derive(Debug, Serialize)]
struct Listed {
    id: String,
    /// `finished`, `failed`, `cancelled`, `unfinished` (no end record: running or killed),
    /// or `unreadable`.
    status: &'static str,
    created: String,
    /// The strategy that ran (as configured when the run did not finish).
    strategy: String,
    model: String,
    repository: String,
    /// USD at the price table; `null` when the model had no price or the run did not finish.
    cost_usd: Option<f64>,
    path: PathBuf,
}

/// Runs `redline runs` and returns the exit code.
pub fn run(args: RunsListArgs) -> i32 {
    match list(&args) {
        Ok(()) => EXIT_OK,
        Err(error) => {
            eprintln!("error: {}", super::error_message(&error));
            EXIT_ERROR
        }
    }
}

fn list(args: &RunsListArgs) -> anyhow::Result<()> {
    let json = match args.format.as_str() {
        "text" => false,
        "json" => true,
        other => bail!(
            "--format: {}",
            crate::text::unknown_value("format", other, &["text", "json"])
        ),
    };
    let dir = runs_dir_or(args.runs_dir.as_ref())?;
    let mut paths = transcript_paths(&dir);
    // A run id starts with its time: newest first.
    paths.sort_by(|a, b| b.file_name().cmp(&a.file_name()));
    let runs: Vec<Listed> = paths.iter().map(|path| listed(path)).collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
        return Ok(());
    }
    if runs.is_empty() {
        println!("no runs in {}", dir.display());
        return Ok(());
    }
    println!(
        "{:<27} {:<10} {:<24} {:<12} {:>9}",
        "RUN", "STATUS", "CREATED", "STRATEGY", "COST"
    );
    for run in &runs {
        let cost = run
            .cost_usd
            .map(|c| format!("${c:.4}"))
            .unwrap_or_else(|| "-".into());
        println!(
            "{:<27} {:<10} {:<24} {:<12} {:>9}",
            run.id, run.status, run.created, run.strategy, cost
        );
    }
    Ok(())
}

fn listed(path: &Path) -> Listed {
    let id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Ok(transcript) = Transcript::read(path) else {
        return Listed {
            id,
            status: "unreadable",
            created: String::new(),
            strategy: String::new(),
            model: String::new(),
            repository: String::new(),
            cost_usd: None,
            path: path.to_path_buf(),
        };
    };
    let status = match transcript.end() {
        Some(EndStatus::Finished) => "finished",
        Some(EndStatus::Failed) => "failed",
        Some(EndStatus::Cancelled) => "cancelled",
        None => "unfinished",
    };
    let stats = transcript.final_stats();
    let header = &transcript.header;
    Listed {
        id,
        status,
        created: header.created.clone(),
        strategy: stats
            .as_ref()
            .map(|s| s.strategy.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| header.strategy.clone()),
        model: header.model.clone(),
        repository: header.repository.root.clone(),
        cost_usd: stats.and_then(|s| s.cost_usd),
        path: path.to_path_buf(),
    }
}

/// The transcript `wanted` names for `redline replay`: a file, a run id of the runs
/// directory, or `latest`, the newest run of the repository at `repo` (or containing the
/// current directory), else the newest of all.
pub(crate) fn transcript_for_replay(
    wanted: &Path,
    runs_dir: Option<&PathBuf>,
    repo: Option<&Path>,
) -> anyhow::Result<PathBuf> {
    let name = wanted.to_string_lossy();
    if wanted.exists() || (name != "latest" && !is_run_id(&name)) {
        return Ok(wanted.to_path_buf());
    }
    let dir = runs_dir_or(runs_dir)?;
    if name == "latest" {
        let start = match repo {
            Some(path) => Some(path.to_path_buf()),
            None => std::env::current_dir().ok(),
        };
        let root = start
            .and_then(|start| crate::repo::discover(&start).ok())
            .map(|root| root.display().to_string());
        return latest_transcript(&dir, root.as_deref())
            .ok_or_else(|| anyhow!("latest: no transcript in {}", dir.display()));
    }
    let path = dir.join(format!("{name}.jsonl"));
    if !path.is_file() {
        bail!("run {name}: no transcript {}", path.display());
    }
    Ok(path)
}
