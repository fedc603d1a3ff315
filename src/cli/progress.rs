//! Renders run events: progress for humans on stderr (see [`super::steps`]: one line per
//! step, a spinner on a terminal), JSON Lines to a file.
//!
//! Invariants: every event is written to the events file (one `write` per line, no
//! user-space buffer) and to stderr as soon as the consumer receives it, so a run that
//! is killed leaves every event sent before it; a run stopped by a signal ends the file
//! with one `run_finished` record carrying `"cancelled": true` (see [`EventLog::cancelled`]).

use std::fs::File;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::steps::{Live, StepProgress};
use crate::agent::events::{Event, EventKind, Stats};
use crate::review::finding::Finding;

/// How much progress to print on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verbosity {
    /// Nothing.
    Quiet,
    /// Steps, tools and the end.
    Normal,
    /// Also tool results and findings.
    Verbose,
}

/// The task writing events as they come; [`EventConsumer::finish`] stops it.
#[derive(Debug)]
pub(crate) struct EventConsumer {
    stop: oneshot::Sender<()>,
    task: JoinHandle<EventLog>,
    hold: Arc<AtomicBool>,
    live: Live,
}

impl EventConsumer {
    /// From now on a `run_finished` event is taken in (its counters) but not written: the
    /// run was stopped by a signal, and [`EventLog::cancelled`] writes its one last record.
    pub fn hold_run_finished(&self) {
        self.hold.store(true, Ordering::SeqCst);
    }

    /// The run's spinner, to clear before the run asks something on the terminal.
    pub fn live(&self) -> Live {
        self.live.clone()
    }

    /// Writes every event sent so far, stops the task and hands back the log.
    pub async fn finish(self) -> Option<EventLog> {
        // The task may already have ended (every sender dropped); then there is nobody to tell.
        let _ = self.stop.send(());
        self.task.await.ok()
    }
}

/// Starts the task that consumes events, writing them to `file` (the events file, opened
/// by the caller before the run starts, so a bad path fails before any model call).
/// `colour`: whether stderr may be coloured (`--color`, `NO_COLOR`, a terminal).
pub(crate) fn spawn_event_consumers(
    mut rx: UnboundedReceiver<Event>,
    verbosity: Verbosity,
    file: Option<File>,
    colour: bool,
) -> EventConsumer {
    let hold = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let live = match verbosity {
        Verbosity::Quiet => Live::none(),
        _ => Live::on_stderr(colour),
    };
    let human = (verbosity != Verbosity::Quiet)
        .then(|| StepProgress::new(verbosity == Verbosity::Verbose, started, live.clone()));
    let mut log = EventLog {
        file,
        human,
        started,
        seen: Seen::default(),
        hold: hold.clone(),
    };
    let (stop, mut stopped) = oneshot::channel();
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                biased;
                event = rx.recv() => match event {
                    Some(event) => log.record(&event),
                    None => break,
                },
                _ = &mut stopped => {
                    // Everything already sent is written before the log is handed back.
                    while let Ok(event) = rx.try_recv() {
                        log.record(&event);
                    }
                    break;
                }
            }
        }
        // However the run ended, the last step is printed and the spinner cleared.
        if let Some(human) = log.human.as_mut() {
            human.finish();
        }
        log
    });
    EventConsumer {
        stop,
        task,
        hold,
        live,
    }
}

/// The events file and stderr progress of one run, and what its events told so far.
#[derive(Debug)]
pub(crate) struct EventLog {
    file: Option<File>,
    /// Progress on stderr, unless quiet.
    human: Option<StepProgress>,
    started: Instant,
    seen: Seen,
    hold: Arc<AtomicBool>,
}

/// Counters and findings gathered from the events, for the record of a cancelled run.
#[derive(Debug, Default)]
struct Seen {
    stats: Stats,
    finished: Option<Stats>,
    findings: Vec<Finding>,
}

/// The last record of a run stopped by a signal: a `run_finished` event (readable as
/// one) with `cancelled`, the signal, the counters and the findings known so far.
#[derive(Serialize)]
struct CancelledRecord<'a> {
    ts: String,
    #[serde(rename = "type")]
    kind: &'static str,
    cancelled: bool,
    signal: &'a str,
    stats: &'a Stats,
    findings: &'a [Finding],
}

impl EventLog {
    fn record(&mut self, event: &Event) {
        self.seen.absorb(&event.kind);
        if matches!(event.kind, EventKind::RunFinished { .. }) && self.hold.load(Ordering::SeqCst) {
            return;
        }
        if let Ok(line) = serde_json::to_string(event) {
            self.write_line(&line);
        }
        if let Some(human) = self.human.as_mut() {
            human.event(event);
        }
    }

    /// Ends the log of a run stopped by `signal` (`SIGINT`, `SIGTERM`).
    pub fn cancelled(&mut self, signal: &str) {
        let mut stats = self
            .seen
            .finished
            .clone()
            .unwrap_or_else(|| self.seen.stats.clone());
        if self.seen.finished.is_none() {
            stats.duration_ms = self.started.elapsed().as_millis() as u64;
        }
        let record = CancelledRecord {
            ts: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            kind: "run_finished",
            cancelled: true,
            signal,
            stats: &stats,
            findings: &self.seen.findings,
        };
        if let Ok(line) = serde_json::to_string(&record) {
            self.write_line(&line);
        }
        if let Some(human) = self.human.as_mut() {
            human.finish();
            human.line(&format!(
                "review cancelled by {signal} after {} model calls",
                stats.model_calls
            ));
        }
    }

    fn write_line(&mut self, line: &str) {
        if let Some(file) = self.file.as_mut() {
            // One write per line, straight to the file. A full disk must not abort the
            // review (the result still reaches stdout), but it is said once on stderr.
            let written = file
                .write_all(format!("{line}\n").as_bytes())
                .and_then(|_| file.flush());
            if let Err(err) = written {
                self.file = None;
                eprintln!("warning: cannot write --events ({err}); no more events are recorded");
            }
        }
    }
}

impl Seen {
    fn absorb(&mut self, kind: &EventKind) {
        match kind {
            EventKind::RunStarted { strategy, .. } if self.stats.strategy.is_empty() => {
                self.stats.strategy = strategy.clone();
            }
            EventKind::ModelCall {
                prompt_tokens,
                completion_tokens,
                cached_prompt_tokens,
                ..
            } => {
                self.stats.steps += 1;
                self.stats.model_calls += 1;
                self.stats.prompt_tokens += prompt_tokens;
                self.stats.completion_tokens += completion_tokens;
                self.stats.cached_prompt_tokens += cached_prompt_tokens;
            }
            EventKind::ToolCall { .. } => self.stats.tool_calls += 1,
            EventKind::Finding(finding) => self.findings.push(finding.clone()),
            EventKind::RunFinished { stats } => self.finished = Some(stats.clone()),
            _ => {}
        }
    }
}
