//! `redline replay FILE`: re-runs a recorded review offline. The orchestrator
//! runs again over the same change and settings; every model call is answered
//! from the transcript (no network, no key), recorded tool results are reused,
//! and the report is printed as `redline review` printed it. Findings that
//! differ from the recorded ones (a changed prompt, a new check) are shown as a
//! diff on stderr. `--until STEP` prints the history the model saw at one call.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use async_trait::async_trait;
use clap::Parser;

use super::review::{local_request, notices_on_stderr};
use super::transcripts::header_for;
use super::{Cli, Command, EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, ReplayArgs};
use crate::agent::transcript::{DecodedCall, Recorder, RecordingModel, Transcript};
use crate::flow::local::{LocalOutcome, PlanChoice};
use crate::llm::{ChatModel, ChatRequest, ChatResponse, LlmError, Message};
use crate::review::finding::Finding;
use crate::review::render::{Format, RenderOptions, RepoSources, render_with};

/// Runs `redline replay` and returns the exit code: 0 when the findings match the
/// recording, 1 when they differ, 2 on errors.
pub async fn run(args: ReplayArgs) -> i32 {
    match replay(args).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", super::error_message(&error));
            EXIT_ERROR
        }
    }
}

/// The model of an offline replay: anything the transcript cannot answer fails.
struct Offline;

#[async_trait]
impl ChatModel for Offline {
    async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
        Err(LlmError::Connect(
            "replay is offline and the transcript holds no reply for this request".into(),
        ))
    }
}

async fn replay(args: ReplayArgs) -> anyhow::Result<i32> {
    let format: Format = args.format.parse().context("--format")?;
    let path = super::runs::transcript_for_replay(
        &args.file,
        args.runs_dir.as_ref(),
        args.repo.as_deref(),
    )?;
    let transcript = Transcript::read(&path)?;
    if let Some(step) = args.until {
        print!("{}", history_at(&transcript, step, format)?);
        return Ok(EXIT_OK);
    }
    let review_args = review_args(&transcript, args.repo, args.no_verify)?;
    let mut request = local_request(&review_args)?;
    // A plan-only run keeps no transcript: a recorded `--plan-only` is a review, as ever.
    if request.output.plan == PlanChoice::PlanOnly {
        request.output.plan = PlanChoice::Review;
    }
    let mut prepared = request.prepare(&mut notices_on_stderr(true))?;
    // The author's words as the model saw them, not as the sources say now.
    prepared.settings.agent.intent = transcript.header.intent.clone();
    let settings = &prepared.settings;
    let now = header_for(
        &review_args,
        &settings.model,
        &settings.agent,
        String::new(),
    )?;
    if now.settings_digest != transcript.header.settings_digest {
        eprintln!(
            "note: the settings differ from the recording (digest {} now {}); replies are matched by their place in each conversation",
            transcript.header.settings_digest, now.settings_digest
        );
    }
    let recorder = Arc::new(Recorder::replay(&transcript));
    let model = Arc::new(RecordingModel::new(
        Arc::new(Offline),
        Arc::clone(&recorder),
    ));
    let orchestrator = prepared.orchestrator(model).with_recorder(recorder);
    let LocalOutcome::Report(mut report) = prepared.run(&orchestrator).await? else {
        bail!("the transcript's invocation asks for a plan, not a review");
    };
    // Wall time is the one counter a replay cannot reproduce: the recorded one is shown.
    if let Some(stats) = transcript.final_stats() {
        report.stats.duration_ms = stats.duration_ms;
        if let (Some(replayed), Some(recorded)) =
            (report.stats.verification.as_mut(), stats.verification)
        {
            replayed.duration_ms = recorded.duration_ms;
        }
    }
    let options = RenderOptions {
        color: args.color.for_stream(&std::io::stdout()),
        sources: &RepoSources::new(&prepared.workspace),
    };
    print!("{}", render_with(&report, format, &options));
    let recorded = transcript.findings();
    let diff = findings_diff(&recorded, &report.findings);
    if diff.is_empty() {
        eprintln!(
            "replay: {}, as recorded",
            crate::text::count(report.findings.len(), "finding", "findings")
        );
        return Ok(EXIT_OK);
    }
    eprintln!("replay: the findings differ from the recording (- recorded, + replayed):");
    eprint!("{diff}");
    Ok(EXIT_FINDINGS)
}

/// The `redline review` arguments of the recorded run, offline: the model's
/// address is a local one that is never called, so no key is needed.
fn review_args(
    transcript: &Transcript,
    repo: Option<PathBuf>,
    no_verify: bool,
) -> anyhow::Result<super::ReviewArgs> {
    let header = &transcript.header;
    let mut argv: Vec<String> = vec!["redline".into(), "review".into()];
    let mut recorded = header.invocation.iter().cloned();
    while let Some(arg) = recorded.next() {
        if arg == "--repo" {
            let path = recorded.next().unwrap_or_default();
            argv.push(arg);
            argv.push(
                repo.as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or(path),
            );
        } else {
            argv.push(arg);
        }
    }
    if no_verify && !argv.iter().any(|arg| arg == "--no-verify") {
        argv.push("--no-verify".into());
    }
    argv.extend(
        [
            "--provider",
            &header.provider,
            "--model",
            &header.model,
            "--base-url",
            "http://127.0.0.1:9/redline-replay",
            "--quiet",
            "--no-transcript",
        ]
        .map(String::from),
    );
    match Cli::try_parse_from(&argv) {
        Ok(Cli {
            command: Command::Review(args),
        }) => Ok(args),
        Ok(_) => bail!("the transcript's invocation is not a review"),
        Err(error) => Err(error).context("the transcript's invocation cannot be read"),
    }
}

/// What changed between the recorded findings and the replayed ones, one line each.
fn findings_diff(recorded: &[Finding], replayed: &[Finding]) -> String {
    let line =
        |sign: char, f: &Finding| format!("{sign} {} {} {}\n", f.severity, f.location(), f.title);
    let mut diff = String::new();
    for finding in recorded.iter().filter(|f| !replayed.contains(f)) {
        diff.push_str(&line('-', finding));
    }
    for finding in replayed.iter().filter(|f| !recorded.contains(f)) {
        diff.push_str(&line('+', finding));
    }
    diff
}

/// The history the model saw at model call `step` (1-based), and its reply.
fn history_at(transcript: &Transcript, step: usize, format: Format) -> anyhow::Result<String> {
    let calls = transcript.decoded_calls();
    let Some(call) = step.checked_sub(1).and_then(|i| calls.get(i)) else {
        bail!(
            "--until {step}: the transcript has {} model calls (steps 1 to {})",
            calls.len(),
            calls.len()
        );
    };
    if format == Format::Json {
        let value = serde_json::json!({
            "step": step,
            "conversation": call.conversation,
            "seq": call.seq,
            "messages": call.messages,
            "tools": call.tools,
            "reply": call.reply,
        });
        return Ok(serde_json::to_string_pretty(&value).map(|s| s + "\n")?);
    }
    Ok(history_text(step, call))
}

fn history_text(step: usize, call: &DecodedCall) -> String {
    let mut out = format!(
        "model call {step} (conversation {}, call {} of it), {} messages, tools: {}\n",
        call.conversation,
        call.seq,
        call.messages.len(),
        if call.tools.is_empty() {
            "none".to_string()
        } else {
            call.tools.join(", ")
        }
    );
    for message in &call.messages {
        out.push_str(&message_text(message));
    }
    out.push_str("=== reply ===\n");
    out.push_str(&message_text(&Message::Assistant {
        content: call.reply.content.clone(),
        tool_calls: call.reply.tool_calls.clone(),
    }));
    out
}

fn message_text(message: &Message) -> String {
    let mut out = match message {
        Message::System { content } => format!("=== system ===\n{content}\n"),
        Message::User { content } => format!("=== user ===\n{content}\n"),
        Message::Assistant { content, .. } => format!("=== assistant ===\n{content}\n"),
        Message::Tool {
            call_id,
            name,
            content,
            is_error,
        } => {
            let failed = if *is_error { ", failed" } else { "" };
            format!("=== tool {name} ({call_id}{failed}) ===\n{content}\n")
        }
    };
    if let Message::Assistant { tool_calls, .. } = message {
        for call in tool_calls {
            out.push_str(&format!(
                "-> {} {} ({})\n",
                call.name, call.arguments, call.id
            ));
        }
    }
    out
}
