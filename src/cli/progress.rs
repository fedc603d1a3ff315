//! Renders run events: progress for humans on stderr, JSON Lines to a file.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

use crate::agent::events::{Event, progress_line};

/// How much progress to print on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    /// Nothing.
    Quiet,
    /// Steps, tools and the end.
    Normal,
    /// Also tool results and findings.
    Verbose,
}

/// Starts the task that consumes events; it ends when every sender is dropped.
/// The events file is created before the run starts so a bad path fails early.
pub fn spawn_event_consumers(
    mut rx: UnboundedReceiver<Event>,
    verbosity: Verbosity,
    events_file: Option<&Path>,
) -> std::io::Result<JoinHandle<()>> {
    let mut file = match events_file {
        Some(path) => Some(std::io::BufWriter::new(std::fs::File::create(path)?)),
        None => None,
    };
    let started = Instant::now();
    Ok(tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            if let Some(file) = file.as_mut()
                && let Ok(line) = serde_json::to_string(&event)
            {
                // A full disk must not abort the review; the result still reaches stdout.
                let _ = writeln!(file, "{line}");
            }
            if verbosity != Verbosity::Quiet
                && let Some(line) = progress_line(&event, verbosity == Verbosity::Verbose)
            {
                eprintln!("[{:>6.1}s] {line}", started.elapsed().as_secs_f64());
            }
        }
        if let Some(mut file) = file {
            let _ = file.flush();
        }
    }))
}
