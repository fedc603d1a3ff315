//! Events of a review run, sent through a channel and rendered as JSON Lines
//! (`--events FILE`) or as progress for humans on stderr.

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::review::finding::Finding;

pub use crate::review::stats::Stats;
pub(crate) use crate::review::stats::{CompressionStats, Scores, TaskStat};

/// What happened, without the timestamp.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A run began.
    RunStarted {
        /// Strategy name.
        strategy: String,
        /// The run's id (its transcript's name), when the run keeps a transcript.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
        /// Why this strategy was chosen.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A model call completed.
    ModelCall {
        /// Agent step (1-based).
        step: u32,
        /// Prompt tokens.
        prompt_tokens: u64,
        /// Completion tokens.
        completion_tokens: u64,
        /// Of the prompt tokens, those read from the provider's prompt cache.
        #[serde(default)]
        cached_prompt_tokens: u64,
        /// Wall time of the call, retries included.
        latency_ms: u64,
    },
    /// A model call has been waiting for its reply for a while (reported every 15 s).
    ModelWaiting {
        /// The attempt that is waiting (1-based).
        attempt: u32,
        /// Seconds it has been waiting.
        elapsed_s: u64,
    },
    /// A model call failed and is being tried again.
    ModelRetry {
        /// Attempt that failed (1-based).
        attempt: u32,
        /// Delay before the next attempt.
        delay_ms: u64,
        /// Why.
        reason: String,
    },
    /// The model asked for a tool.
    ToolCall {
        /// Agent step.
        step: u32,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Raw JSON arguments, as the model wrote them.
        arguments: String,
    },
    /// A tool call finished.
    ToolResult {
        /// Agent step.
        step: u32,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Whether it succeeded.
        ok: bool,
        /// Tokens of the observation.
        tokens: u64,
        /// Wall time.
        latency_ms: u64,
    },
    /// The plan of a plan-and-execute run.
    Plan {
        /// The tasks.
        tasks: Vec<crate::agent::plan::PlanTask>,
    },
    /// One evaluation round of a reflection run.
    Evaluation {
        /// Round (1-based).
        round: u32,
        /// Overall score (0 to 10).
        score: f64,
        /// Per finding id: its score and reason.
        per_finding: Vec<crate::agent::reflection::FindingScore>,
    },
    /// The findings go to the verifier (after any strategy, before they are reported).
    VerificationStarted {
        /// Findings to verify.
        findings: usize,
        /// Verifier conversations they take.
        batches: usize,
        /// The verifier's model.
        model: String,
    },
    /// The verifier's verdict on one finding (`keep`, `drop`, or `unverified` when none
    /// could be read and the finding is kept).
    Verdict {
        /// The finding's id in its verifier conversation (`F1`, `F2`, ...).
        id: String,
        /// The finding's path.
        path: String,
        /// Its last line.
        line: u32,
        /// Its title.
        title: String,
        /// `keep`, `drop` or `unverified`.
        verdict: String,
        /// The verifier's one-line reason, when it gave a verdict.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A checked finding.
    Finding(Finding),
    /// The run ended.
    RunFinished {
        /// Final counters.
        stats: Stats,
    },
    /// A limit of the review was reached: no more model calls; finished work is kept.
    LimitReached {
        /// `cost`, `tokens` or `time`.
        limit: String,
        /// Prompt + completion tokens of the calls settled so far.
        tokens: u64,
        /// Their cost in USD, when the model's price is known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// The context was compressed before a model call.
    Compression {
        /// 1 shape, 2 prune, 3 summarise.
        stage: u8,
        /// Tokens before.
        before_tokens: u64,
        /// Tokens after.
        after_tokens: u64,
        /// Stage 2: the tool results elided, each as its call and size.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        removed: Vec<String>,
    },
    /// Something went wrong.
    Error {
        /// What, for humans (never containing secrets).
        message: String,
        /// The run ends with this error, which the command reports when it exits: progress
        /// leaves it out so that it is said once. Not part of the JSON.
        #[serde(skip)]
        fatal: bool,
    },
}

/// An event with its time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// RFC 3339 timestamp.
    pub ts: String,
    /// The event.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Hears every event synchronously as it is emitted (the transcript keeps some of them).
pub(crate) type EventTap = std::sync::Arc<dyn Fn(&EventKind) + Send + Sync>;

/// Where a run sends its events. Cheap to clone; sending never blocks and never fails the run.
#[derive(Clone, Default)]
pub(crate) struct EventSink {
    tx: Option<mpsc::UnboundedSender<Event>>,
    tap: Option<EventTap>,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("tx", &self.tx)
            .field("tap", &self.tap.is_some())
            .finish()
    }
}

impl EventSink {
    /// A sink and the receiving end of its channel.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            EventSink {
                tx: Some(tx),
                tap: None,
            },
            rx,
        )
    }

    /// The same sink, also calling `tap` with every event before it is sent.
    pub(crate) fn with_tap(mut self, tap: EventTap) -> Self {
        self.tap = Some(tap);
        self
    }

    /// A sink that drops everything.
    pub(crate) fn discard() -> Self {
        EventSink {
            tx: None,
            tap: None,
        }
    }

    /// Sends an event stamped with the current time.
    pub(crate) fn emit(&self, kind: EventKind) {
        if let Some(tap) = &self.tap {
            tap(&kind);
        }
        if let Some(tx) = &self.tx {
            let ts = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            // A closed receiver only means nobody listens any more.
            let _ = tx.send(Event { ts, kind });
        }
    }
}

/// One line of human progress for an event, or `None` for events not worth a line. Model
/// calls and tool calls are gathered into one line per step by the command line's progress.
pub(crate) fn progress_line(event: &Event, verbose: bool) -> Option<String> {
    match &event.kind {
        EventKind::RunStarted {
            strategy, reason, ..
        } => Some(run_started_line(strategy, reason.as_deref(), verbose)),
        EventKind::ModelWaiting { attempt, elapsed_s } => Some(match attempt {
            1 => format!("waiting for the model ({elapsed_s}s so far)"),
            _ => format!("waiting for the model (attempt {attempt}, {elapsed_s}s so far)"),
        }),
        EventKind::ModelRetry {
            attempt,
            delay_ms,
            reason,
        } => Some(format!(
            "model call attempt {attempt} failed ({reason}); retrying in {:.1}s",
            *delay_ms as f64 / 1000.0
        )),
        EventKind::ToolResult {
            name, ok: false, ..
        } => Some(format!("  {name} failed (the model is told why)")),
        EventKind::ToolResult {
            name,
            tokens,
            latency_ms,
            ..
        } if verbose => Some(format!("  {name}: {tokens} tokens in {latency_ms} ms")),
        EventKind::VerificationStarted {
            findings, model, ..
        } => Some(format!(
            "verifying {} ({model})",
            crate::text::count(*findings, "finding", "findings")
        )),
        EventKind::Verdict {
            path,
            line,
            title,
            verdict,
            reason,
            ..
        } if verbose || verdict == "drop" => Some(verdict_line(
            verdict,
            &format!("{path}:{line}"),
            title,
            reason.as_deref(),
        )),
        EventKind::Finding(f) if verbose => Some(format!(
            "  finding: {} {} {}",
            f.severity,
            f.location(),
            f.title
        )),
        EventKind::RunFinished { stats } => Some(run_finished_line(stats)),
        EventKind::LimitReached { limit, tokens, .. } => Some(limit_reached_line(limit, *tokens)),
        EventKind::Error { fatal: true, .. } => None,
        EventKind::Error { message, .. } => Some(format!("error: {message}")),
        _ => None,
    }
}

/// `review started (strategy)`; why the strategy was chosen is detail, shown when verbose,
/// so that the default line stays short.
fn run_started_line(strategy: &str, reason: Option<&str>, verbose: bool) -> String {
    match reason {
        Some(reason) if verbose => format!("review started ({strategy}: {reason})"),
        _ => format!("review started ({strategy})"),
    }
}

/// The verifier's verdict on the finding at `location`, with its reason when it gave one.
fn verdict_line(verdict: &str, location: &str, title: &str, reason: Option<&str>) -> String {
    let reason = reason
        .filter(|r| !r.is_empty())
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    format!("  verifier: {verdict} {location} {title}{reason}")
}

/// The closing line: steps, calls, tokens, the cost when known, and the wall time.
fn run_finished_line(stats: &Stats) -> String {
    format!(
        "review finished: {}, {} model calls, {} tool calls, {} tokens, {}{:.1}s",
        match stats.steps {
            1 => "1 step".to_string(),
            n => format!("{n} steps"),
        },
        stats.model_calls,
        stats.tool_calls,
        stats.prompt_tokens + stats.completion_tokens,
        stats
            .cost_usd
            .map(|c| format!("${c:.4}, "))
            .unwrap_or_default(),
        stats.duration_ms as f64 / 1000.0
    )
}

/// A limit reached (or the run interrupted), after how many tokens.
fn limit_reached_line(limit: &str, tokens: u64) -> String {
    let what = match limit {
        "interrupted" => "interrupted".to_string(),
        limit => format!("{limit} limit reached"),
    };
    format!("{what} after {tokens} tokens: no more model calls; finished work is kept")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialise_with_type_and_ts() {
        let event = Event {
            ts: "2026-01-01T00:00:00.000Z".into(),
            kind: EventKind::ToolCall {
                step: 1,
                id: "c1".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            },
        };
        let json: serde_json::Value = serde_json::to_value(&event).expect("serialise");
        assert_eq!(json["type"], "tool_call");
        assert_eq!(json["ts"], "2026-01-01T00:00:00.000Z");
        assert_eq!(json["name"], "read_file");
    }

    #[test]
    fn waiting_calls_get_a_progress_line() {
        let waiting = |attempt| Event {
            ts: String::new(),
            kind: EventKind::ModelWaiting {
                attempt,
                elapsed_s: 45,
            },
        };
        let first = progress_line(&waiting(1), false).expect("a line");
        assert!(
            first.contains("waiting") && first.contains("45s"),
            "{first}"
        );
        let retry = progress_line(&waiting(3), false).expect("a line");
        assert!(retry.contains("attempt 3"), "{retry}");
        let json = serde_json::to_value(waiting(1)).expect("serialise");
        assert_eq!(json["type"], "model_waiting");
        assert_eq!(json["elapsed_s"], 45);
    }

    /// The line of `kind` when quiet and when verbose.
    fn lines(kind: EventKind) -> (Option<String>, Option<String>) {
        let event = Event {
            ts: String::new(),
            kind,
        };
        (progress_line(&event, false), progress_line(&event, true))
    }

    #[test]
    fn progress_lines_say_the_start_the_verdicts_the_limits_and_the_end() {
        let started = lines(EventKind::RunStarted {
            strategy: "react".into(),
            run_id: None,
            reason: Some("small change".into()),
        });
        assert_eq!(started.0.as_deref(), Some("review started (react)"));
        assert_eq!(
            started.1.as_deref(),
            Some("review started (react: small change)")
        );
        let verdict = |verdict: &str, reason: Option<&str>| EventKind::Verdict {
            id: "F1".into(),
            path: "src/calc.rs".into(),
            line: 7,
            title: "Ratio".into(),
            verdict: verdict.into(),
            reason: reason.map(str::to_string),
        };
        // A dropped finding is said even when quiet; a kept one only when verbose.
        let dropped = "  verifier: drop src/calc.rs:7 Ratio (not reachable)";
        let dropped_lines = lines(verdict("drop", Some("not reachable")));
        assert_eq!(dropped_lines.0.as_deref(), Some(dropped));
        assert_eq!(dropped_lines.1.as_deref(), Some(dropped));
        let kept = lines(verdict("keep", Some("")));
        assert_eq!(kept.0, None);
        assert_eq!(
            kept.1.as_deref(),
            Some("  verifier: keep src/calc.rs:7 Ratio")
        );
        let finished = |steps, cost_usd| EventKind::RunFinished {
            stats: Stats {
                steps,
                model_calls: 3,
                tool_calls: 4,
                prompt_tokens: 100,
                completion_tokens: 20,
                cost_usd,
                duration_ms: 2_500,
                ..Stats::default()
            },
        };
        assert_eq!(
            lines(finished(1, Some(0.01234))).0.as_deref(),
            Some("review finished: 1 step, 3 model calls, 4 tool calls, 120 tokens, $0.0123, 2.5s")
        );
        assert_eq!(
            lines(finished(2, None)).0.as_deref(),
            Some("review finished: 2 steps, 3 model calls, 4 tool calls, 120 tokens, 2.5s")
        );
        let limit = |limit: &str| EventKind::LimitReached {
            limit: limit.into(),
            tokens: 900,
            cost_usd: None,
        };
        assert_eq!(
            lines(limit("cost")).0.as_deref(),
            Some("cost limit reached after 900 tokens: no more model calls; finished work is kept")
        );
        assert_eq!(
            lines(limit("interrupted")).0.as_deref(),
            Some("interrupted after 900 tokens: no more model calls; finished work is kept")
        );
    }
}
