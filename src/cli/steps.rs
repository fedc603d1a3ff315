//! Progress for people on stderr: one line per agent step (the model's reply and the tools
//! it asked for, each by its main argument), and on a terminal a live spinner saying what
//! the run is waiting for. Redirected, the same lines are printed plainly and nothing else.
//!
//! Invariants: no line carries a tool's raw JSON arguments, and nothing from the model or
//! the repository reaches the terminal with control characters.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

use crate::agent::events::{Event, EventKind, progress_line};

/// Longest shown main argument of a tool, in characters.
const ARGUMENT_CHARS: usize = 60;

/// The human progress of one run.
#[derive(Debug)]
pub(crate) struct StepProgress {
    verbose: bool,
    started: Instant,
    live: Live,
    pending: Option<StepLine>,
    /// The reason of the last model retry shown, so a repeated one is not shown again.
    last_retry_reason: Option<String>,
    /// Said before each step's number: `verifier ` once the findings are being verified.
    phase: &'static str,
}

/// The spinner's look: the spinner cyan and the elapsed time dim, or no colour at all
/// (`--color never`, `NO_COLOR`).
fn spinner_template(colour: bool) -> &'static str {
    if colour {
        "{spinner:.cyan} {msg} {elapsed:.dim}"
    } else {
        "{spinner} {msg} {elapsed}"
    }
}

/// The spinner of a run on a terminal; cheap to clone. [`Live::stop`] clears it for good
/// (before the run asks something on the terminal); lines are then printed plainly.
#[derive(Debug, Clone)]
pub(crate) struct Live(Option<ProgressBar>);

impl Live {
    /// A spinner when stderr is a terminal, else none; coloured only with `colour`.
    pub(crate) fn on_stderr(colour: bool) -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if bar.is_hidden() {
            return Live(None);
        }
        if let Ok(style) = ProgressStyle::with_template(spinner_template(colour)) {
            bar.set_style(style);
        }
        bar.set_message("starting the review");
        bar.enable_steady_tick(Duration::from_millis(100));
        Live(Some(bar))
    }

    /// No spinner (tests, quiet runs).
    pub(crate) fn none() -> Self {
        Live(None)
    }

    /// Clears the spinner and draws it no more.
    pub(crate) fn stop(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
    }

    fn active(&self) -> Option<&ProgressBar> {
        self.0.as_ref().filter(|bar| !bar.is_hidden())
    }

    fn status(&self, message: String) {
        if let Some(bar) = self.active() {
            bar.set_message(message);
            bar.reset_elapsed();
        }
    }
}

/// A step being gathered: the model's reply, then its tool calls until each has a result.
#[derive(Debug)]
struct StepLine {
    phase: &'static str,
    step: u32,
    /// Seconds the model took and tokens of the call.
    model: Option<(f64, u64)>,
    /// Call id, what it was, whether it succeeded (once known).
    tools: Vec<(String, String, Option<bool>)>,
}

impl StepLine {
    fn new(phase: &'static str, step: u32) -> Self {
        StepLine {
            phase,
            step,
            model: None,
            tools: Vec::new(),
        }
    }

    fn text(&self) -> String {
        let tools: Vec<String> = self
            .tools
            .iter()
            .map(|(_, text, ok)| match ok {
                Some(false) => format!("{text} (failed)"),
                _ => text.clone(),
            })
            .collect();
        let did = match tools.is_empty() {
            true => "model replied".to_string(),
            false => tools.join(", "),
        };
        match self.model {
            Some((seconds, tokens)) => {
                format!(
                    "{}step {}: {did} (model {seconds:.1}s, {tokens} tokens)",
                    self.phase, self.step
                )
            }
            None => format!("{}step {}: {did}", self.phase, self.step),
        }
    }

    fn complete(&self) -> bool {
        !self.tools.is_empty() && self.tools.iter().all(|(_, _, ok)| ok.is_some())
    }
}

impl StepProgress {
    /// Progress of a run that started at `started`, on `live` when it is a spinner.
    pub(crate) fn new(verbose: bool, started: Instant, live: Live) -> Self {
        StepProgress {
            verbose,
            started,
            live,
            pending: None,
            last_retry_reason: None,
            phase: "",
        }
    }

    /// Takes in one event: finishes, starts or adds to a step line, or prints its own line.
    pub(crate) fn event(&mut self, event: &Event) {
        match &event.kind {
            EventKind::ModelCall {
                step,
                prompt_tokens,
                completion_tokens,
                latency_ms,
                ..
            } => self.model_called(*step, *latency_ms, prompt_tokens + completion_tokens),
            EventKind::ToolCall {
                step,
                id,
                name,
                arguments,
            } => self.tool_called(*step, id, tool_summary(name, arguments)),
            EventKind::ToolResult { step, id, ok, .. } => {
                self.tool_answered(*step, id, *ok);
                self.own_line(event);
            }
            EventKind::RunStarted { .. } => {
                self.own_line(event);
                self.live.status("step 1: waiting for the model".into());
            }
            // The spinner shows how long the call has been waiting.
            EventKind::ModelWaiting { .. } if self.live.active().is_some() => {}
            EventKind::RunFinished { .. } => self.run_finished(event),
            EventKind::VerificationStarted { .. } => {
                self.flush();
                self.phase = "verifier ";
                self.own_line(event);
            }
            EventKind::ModelRetry {
                attempt,
                delay_ms,
                reason,
            } => self.model_retried(event, *attempt, *delay_ms, reason),
            _ => {
                self.flush();
                self.own_line(event);
            }
        }
    }

    /// The model answered: the previous step is printed and this one starts.
    fn model_called(&mut self, step: u32, latency_ms: u64, tokens: u64) {
        self.flush();
        let mut line = StepLine::new(self.phase, step);
        line.model = Some((latency_ms as f64 / 1000.0, tokens));
        self.pending = Some(line);
        self.live
            .status(format!("{}step {step}: running tools", self.phase));
    }

    /// A tool call joins its step's line (a step not yet begun starts one).
    fn tool_called(&mut self, step: u32, id: &str, summary: String) {
        if self.pending.as_ref().is_none_or(|p| p.step != step) {
            self.flush();
            self.pending = Some(StepLine::new(self.phase, step));
        }
        if let Some(line) = self.pending.as_mut() {
            line.tools.push((id.to_string(), summary, None));
        }
    }

    /// A tool's result marks its call; the step's line is printed once every call has one.
    fn tool_answered(&mut self, step: u32, id: &str, ok: bool) {
        if let Some(line) = self.pending.as_mut().filter(|p| p.step == step) {
            if let Some(tool) = line.tools.iter_mut().find(|(i, ..)| i == id) {
                tool.2 = Some(ok);
            }
            if line.complete() {
                self.flush();
                self.live.status(format!(
                    "{}step {}: waiting for the model",
                    self.phase,
                    step + 1
                ));
            }
        }
    }

    fn run_finished(&mut self, event: &Event) {
        self.flush();
        let on_terminal = self.live.active().is_some();
        self.live.stop();
        self.own_line(event);
        // On a terminal the report follows: a blank line sets it apart.
        if on_terminal {
            eprintln!();
        }
    }

    /// A retry that failed as the previous one did says so in a few words instead
    /// of repeating the whole reason (a DNS failure's chain, five times).
    fn model_retried(&mut self, event: &Event, attempt: u32, delay_ms: u64, reason: &str) {
        self.flush();
        if self.last_retry_reason.as_deref() == Some(reason) {
            self.line(&format!(
                "model call attempt {attempt} failed (the same error); retrying in {:.1}s",
                delay_ms as f64 / 1000.0
            ));
        } else {
            self.last_retry_reason = Some(reason.to_string());
            self.own_line(event);
        }
    }

    /// Prints `text` as a progress line, above the spinner when there is one.
    pub(crate) fn line(&mut self, text: &str) {
        let text = format!("[{:>6.1}s] {text}", self.started.elapsed().as_secs_f64());
        match self.live.active() {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    /// Ends the progress: the step being gathered is printed, the spinner cleared.
    pub(crate) fn finish(&mut self) {
        self.flush();
        self.live.stop();
    }

    fn own_line(&mut self, event: &Event) {
        if let Some(text) = progress_line(event, self.verbose) {
            self.line(&printable(&text));
        }
    }

    fn flush(&mut self) {
        if let Some(line) = self.pending.take() {
            self.line(&line.text());
        }
    }
}

/// A tool call as people read it: the tool and its main argument, never its raw JSON.
pub(crate) fn tool_summary(name: &str, arguments: &str) -> String {
    let Ok(value) = serde_json::from_str::<Value>(arguments) else {
        return format!("{} (unreadable arguments)", printable(name));
    };
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(printable);
    let count = |key: &str| value.get(key).and_then(Value::as_array).map(Vec::len);
    let argument = match name {
        "read_file" => text("path").map(|path| {
            let start = value.get("start_line").and_then(Value::as_u64);
            let end = value.get("end_line").and_then(Value::as_u64);
            match (start, end) {
                (Some(start), Some(end)) => format!("{path}:{start}-{end}"),
                (Some(start), None) => format!("{path}:{start}"),
                _ => path,
            }
        }),
        "search" => text("pattern").map(|pattern| match text("path_glob") {
            Some(glob) => format!("{} in {glob}", quoted(&pattern)),
            None => quoted(&pattern),
        }),
        "list_files" => text("dir").or_else(|| text("glob")),
        "diff" => text("path"),
        "submit_review" => count("findings").map(|n| plural(n, "finding")),
        "submit_plan" => count("tasks").map(|n| plural(n, "task")),
        "submit_evaluation" => value
            .get("score")
            .and_then(Value::as_f64)
            .map(|score| format!("(score {score})")),
        _ => ["path", "pattern", "dir", "glob", "query"]
            .iter()
            .find_map(|key| text(key)),
    };
    match argument {
        Some(argument) if !argument.is_empty() => {
            format!("{} {}", printable(name), shortened(&argument))
        }
        _ => printable(name),
    }
}

fn plural(count: usize, noun: &str) -> String {
    format!("({})", crate::text::count(count, noun, &format!("{noun}s")))
}

fn quoted(pattern: &str) -> String {
    format!("\"{pattern}\"")
}

fn shortened(text: &str) -> String {
    let mut short: String = text.chars().take(ARGUMENT_CHARS).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

/// Without control characters: names and arguments come from the model.
fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--color never` (and `NO_COLOR`) leave the spinner without colour or dimming.
    #[test]
    fn the_spinner_is_coloured_only_when_colour_is_on() {
        for colour in [true, false] {
            let template = spinner_template(colour);
            assert!(ProgressStyle::with_template(template).is_ok(), "{template}");
            let styled = template.contains(":.");
            assert_eq!(styled, colour, "{template}");
        }
    }

    #[test]
    fn tools_are_named_with_their_main_argument_not_their_json() {
        let cases = [
            ("read_file", r#"{"path":"src/a.rs"}"#, "read_file src/a.rs"),
            (
                "read_file",
                r#"{"path":"src/a.rs","start_line":3,"end_line":9}"#,
                "read_file src/a.rs:3-9",
            ),
            (
                "search",
                r#"{"pattern":"fn main","path_glob":"*.rs"}"#,
                "search \"fn main\" in *.rs",
            ),
            ("list_files", r#"{"dir":"src"}"#, "list_files src"),
            ("diff", "{}", "diff"),
            (
                "submit_review",
                r#"{"findings":[{"body":"x"},{"body":"y"}],"summary":"s"}"#,
                "submit_review (2 findings)",
            ),
            ("submit_plan", r#"{"tasks":[{}]}"#, "submit_plan (1 task)"),
            ("answer", r#"{"text":"{\"a\":1}"}"#, "answer"),
            ("read_file", "{not json", "read_file (unreadable arguments)"),
        ];
        for (name, arguments, expected) in cases {
            assert_eq!(tool_summary(name, arguments), expected, "{arguments}");
        }
        let long = format!(r#"{{"path":"{}"}}"#, "a".repeat(100));
        let summary = tool_summary("read_file", &long);
        assert!(
            summary.ends_with('…') && summary.chars().count() < 75,
            "{summary}"
        );
        assert_eq!(
            tool_summary("read_file", r#"{"path":"a\u001b[2Jb"}"#),
            "read_file a[2Jb"
        );
    }

    fn event(kind: EventKind) -> Event {
        Event {
            ts: String::new(),
            kind,
        }
    }

    #[test]
    fn a_step_is_one_line_once_its_tools_are_done() {
        let mut progress = StepProgress::new(false, Instant::now(), Live::none());
        progress.event(&event(EventKind::ModelCall {
            step: 2,
            prompt_tokens: 1000,
            completion_tokens: 40,
            cached_prompt_tokens: 0,
            latency_ms: 1500,
        }));
        for (id, name, args) in [
            ("a", "read_file", r#"{"path":"src/a.rs"}"#),
            ("b", "search", r#"{"pattern":"x"}"#),
        ] {
            progress.event(&event(EventKind::ToolCall {
                step: 2,
                id: id.into(),
                name: name.into(),
                arguments: args.into(),
            }));
        }
        let pending = progress.pending.as_ref().expect("gathering step 2");
        assert!(!pending.complete());
        for (id, ok) in [("a", true), ("b", false)] {
            progress.event(&event(EventKind::ToolResult {
                step: 2,
                id: id.into(),
                name: String::new(),
                ok,
                tokens: 1,
                latency_ms: 1,
            }));
        }
        assert!(progress.pending.is_none(), "printed once complete");
        let line = StepLine {
            phase: "",
            step: 2,
            model: Some((1.5, 1040)),
            tools: vec![
                ("a".into(), "read_file src/a.rs".into(), Some(true)),
                ("b".into(), "search \"x\"".into(), Some(false)),
            ],
        };
        assert_eq!(
            line.text(),
            "step 2: read_file src/a.rs, search \"x\" (failed) (model 1.5s, 1040 tokens)"
        );
    }
}
