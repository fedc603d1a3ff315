//! Run transcripts of `redline review`: where they live, how old ones are
//! pruned, and how a run starts one or resumes one.
//!
//! Invariants: a transcript is only resumed when its header matches the review
//! about to run (format, base and head commits, settings digest); a finished run
//! is never resumed; pruning never removes the current run's transcript.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context, anyhow, bail};

use super::{ReviewArgs, RunsArgs};
use crate::agent::events::EventSink;
use crate::agent::strategy::StrategyChoice;
use crate::agent::transcript::{
    EndStatus, FORMAT_VERSION, Header, Recorder, RecordingModel, RepositoryIdentity, Transcript,
    new_run_id, settings_digest,
};
use crate::agent::{AgentConfig, AgentError, Orchestrator};
use crate::config::ModelSettings;
use crate::llm::ChatModel;

/// Transcripts are files named `<run id>.jsonl`.
const EXTENSION: &str = "jsonl";

/// The transcript of the run about to start, if it keeps one.
pub(crate) struct RunTranscript {
    recorder: Option<Arc<Recorder>>,
    resumed_from: Option<usize>,
    quiet: bool,
    /// The intent section recorded by the run being resumed.
    recorded_intent: Option<String>,
}

impl RunTranscript {
    /// Starts (or, with `--resume`, continues) the transcript of a review.
    pub fn open(
        args: &ReviewArgs,
        settings: &ModelSettings,
        agent: &AgentConfig,
        has_changes: bool,
    ) -> anyhow::Result<RunTranscript> {
        let disabled = RunTranscript {
            recorder: None,
            resumed_from: None,
            quiet: args.quiet,
            recorded_intent: None,
        };
        if (args.runs.no_transcript || args.plan_only || !has_changes) && args.runs.resume.is_none()
        {
            return Ok(disabled);
        }
        let dir = runs_dir(&args.runs)?;
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create the runs directory {}", dir.display()))?;
        let header = header_for(args, settings, agent, new_run_id())?;
        let secret = settings.api_key.clone();
        let (recorder, path, resumed_from, recorded_intent) = match &args.runs.resume {
            Some(wanted) => {
                let (path, transcript) = resumable(&dir, wanted, &header)?;
                let recorder = Recorder::resume(&path, &transcript, secret).with_context(|| {
                    format!("cannot continue the transcript {}", path.display())
                })?;
                let intent = transcript.header.intent.clone();
                (recorder, path, Some(transcript.model_calls()), Some(intent))
            }
            None => {
                let path = dir.join(format!("{}.{EXTENSION}", header.run_id));
                let recorder = Recorder::create(&path, &header, secret)
                    .with_context(|| format!("cannot write the transcript {}", path.display()))?;
                (recorder, path, None, None)
            }
        };
        prune(&dir, &args.runs, &path);
        let run = RunTranscript {
            recorder: Some(Arc::new(recorder)),
            resumed_from,
            quiet: args.quiet,
            recorded_intent,
        };
        run.note(&match resumed_from {
            Some(calls) => format!(
                "resuming run {} from {} ({calls} recorded model calls)",
                run.run_id(),
                path.display()
            ),
            None => format!("run {}: transcript {}", run.run_id(), path.display()),
        });
        Ok(run)
    }

    /// The intent section of the run being resumed: the same requests as before, whatever
    /// the title, description or commit messages say now.
    pub fn recorded_intent(&self) -> Option<&str> {
        self.recorded_intent.as_deref()
    }

    fn run_id(&self) -> &str {
        self.recorder.as_ref().map(|r| r.run_id()).unwrap_or("")
    }

    fn note(&self, text: &str) {
        if !self.quiet {
            eprintln!("note: {text}");
        }
    }

    /// The run's event sink, also feeding the transcript.
    pub fn events(&self, events: EventSink) -> EventSink {
        match &self.recorder {
            Some(recorder) => events.with_tap(recorder.tap()),
            None => events,
        }
    }

    /// The model client, recording (and answering recorded calls on resume).
    pub fn model(&self, model: Arc<dyn ChatModel>) -> Arc<dyn ChatModel> {
        match &self.recorder {
            Some(recorder) => Arc::new(RecordingModel::new(model, Arc::clone(recorder))),
            None => model,
        }
    }

    /// The orchestrator, reporting tool results to the transcript.
    pub fn orchestrator(&self, orchestrator: Orchestrator) -> Orchestrator {
        match &self.recorder {
            Some(recorder) => orchestrator.with_recorder(Arc::clone(recorder)),
            None => orchestrator,
        }
    }

    /// Ends the transcript: `None` when the run produced its output, else its error.
    pub fn end(&self, error: Option<&AgentError>) {
        let Some(recorder) = &self.recorder else {
            return;
        };
        match error {
            None => recorder.end(EndStatus::Finished, None),
            Some(error) => recorder.end(EndStatus::Failed, Some(error.to_string())),
        }
        if self.resumed_from.is_some() {
            self.note(&format!(
                "resumed run {}: {} model calls answered from the transcript, {} sent to the model, {} tool results reused",
                recorder.run_id(),
                recorder.replayed_calls(),
                recorder.live_calls(),
                recorder.reused_tools()
            ));
        }
    }

    /// Ends the transcript of a run stopped by a signal (it may be resumed).
    pub fn cancelled(&self, signal: &str) {
        if let Some(recorder) = &self.recorder {
            recorder.end(EndStatus::Cancelled, Some(format!("stopped by {signal}")));
            self.note(&format!("continue it with --resume {}", recorder.run_id()));
        }
    }
}

/// `--runs-dir`, else `$XDG_STATE_HOME/redline/runs`, else `~/.local/state/redline/runs`.
pub(crate) fn runs_dir(args: &RunsArgs) -> anyhow::Result<PathBuf> {
    if let Some(dir) = &args.runs_dir {
        return Ok(dir.clone());
    }
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(state) = absolute("XDG_STATE_HOME") {
        return Ok(state.join("redline").join("runs"));
    }
    match absolute("HOME") {
        Some(home) => Ok(home.join(".local/state/redline/runs")),
        None => bail!(
            "no runs directory: set --runs-dir, XDG_STATE_HOME or HOME (or pass --no-transcript)"
        ),
    }
}

/// The header of the review `args` describe.
pub(crate) fn header_for(
    args: &ReviewArgs,
    settings: &ModelSettings,
    agent: &AgentConfig,
    run_id: String,
) -> anyhow::Result<Header> {
    let start = match &args.repo {
        Some(path) => path.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let root = crate::repo::discover(&start)?;
    let range = crate::repo::resolve_range(&root, args.base.as_deref(), &args.head)?;
    let strategy = match agent.strategy {
        StrategyChoice::Auto => "auto".to_string(),
        StrategyChoice::Fixed(strategy) => strategy.name().to_string(),
    };
    // Every setting that shapes the review; the key is not part of it (and `Secret` never prints).
    let description = format!(
        "{}\n{}\n{}",
        agent.settings_description(),
        settings.provider,
        settings.model
    );
    Ok(Header {
        format: FORMAT_VERSION,
        redline: env!("CARGO_PKG_VERSION").to_string(),
        run_id,
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        strategy,
        settings_digest: settings_digest(&description),
        repository: RepositoryIdentity {
            root: root.display().to_string(),
            origin: origin_url(&root),
        },
        invocation: invocation(args, &root, &range.base, &range.head),
        base: range.base,
        head: range.head,
        uncommitted: args.uncommitted,
        model: settings.model.clone(),
        provider: settings.provider.name().to_string(),
        intent: agent.intent.clone(),
    })
}

/// The `origin` remote's URL without user name or password.
fn origin_url(root: &Path) -> Option<String> {
    let repo = git2::Repository::open(root).ok()?;
    let remote = repo.find_remote("origin").ok()?;
    let raw = remote.url().ok()?.to_string();
    match url::Url::parse(&raw) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            Some(parsed.to_string())
        }
        // `git@host:path` has no secret part.
        Err(_) => Some(raw),
    }
}

/// The `redline review` arguments that select the same change and settings.
fn invocation(args: &ReviewArgs, root: &Path, base: &str, head: &str) -> Vec<String> {
    let mut out: Vec<String> = vec![
        "--repo".into(),
        root.display().to_string(),
        "--base".into(),
        base.into(),
        "--head".into(),
        head.into(),
    ];
    if args.uncommitted {
        out.push("--uncommitted".into());
    }
    let absolute = |p: &PathBuf| {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.clone())
            .display()
            .to_string()
    };
    let options = [
        ("--strategy", args.strategy.clone()),
        ("--max-steps", args.max_steps.map(|n| n.to_string())),
        ("--parallel", args.parallel.map(|n| n.to_string())),
        ("--tool-mode", args.tool_mode.clone()),
        ("--config", args.config.as_ref().map(absolute)),
        ("--plan", args.plan.as_ref().map(absolute)),
        ("--max-cost", args.limits.max_cost.clone()),
        ("--max-tokens", args.limits.max_tokens.clone()),
        ("--timeout", args.limits.timeout.clone()),
    ];
    for (flag, value) in options {
        if let Some(value) = value {
            out.push(flag.into());
            out.push(value);
        }
    }
    out
}

/// The transcript `wanted` names (`latest`: this repository's newest), checked against `current`.
fn resumable(dir: &Path, wanted: &str, current: &Header) -> anyhow::Result<(PathBuf, Transcript)> {
    let path = match wanted {
        "latest" => latest_of(dir, &current.repository.root).ok_or_else(|| {
            anyhow!(
                "--resume latest: no transcript of {} in {}",
                current.repository.root,
                dir.display()
            )
        })?,
        id if crate::agent::transcript::is_run_id(id) => dir.join(format!("{id}.{EXTENSION}")),
        other => bail!("--resume: `{other}` is not a run id or `latest`"),
    };
    let transcript = Transcript::read(&path)?;
    let id = &transcript.header.run_id;
    if transcript.end() == Some(EndStatus::Finished) {
        bail!("run {id} already finished; there is nothing to resume");
    }
    let differs = transcript.header.differences(current);
    if !differs.is_empty() {
        bail!(
            "cannot resume run {id}: its transcript differs from this review: {}",
            differs.join("; ")
        );
    }
    Ok((path, transcript))
}

/// The newest transcript (by run id, which starts with its time) whose repository is `root`.
fn latest_of(dir: &Path, root: &str) -> Option<PathBuf> {
    let mut candidates = transcripts(dir);
    candidates.sort_by(|a, b| b.0.file_name().cmp(&a.0.file_name()));
    candidates
        .into_iter()
        .map(|(path, ..)| path)
        .find(|path| first_header(path).is_some_and(|h| h.repository.root == root))
}

/// The header line of a transcript, without reading the rest.
fn first_header(path: &Path) -> Option<Header> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(file).read_line(&mut line).ok()?;
    match serde_json::from_str(&line).ok()? {
        crate::agent::transcript::Record::Header(header) => Some(header),
        _ => None,
    }
}

/// Transcripts in `dir`: path, size, last modification.
fn transcripts(dir: &Path) -> Vec<(PathBuf, u64, SystemTime)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == EXTENSION))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            Some((e.path(), meta.len(), meta.modified().ok()?))
        })
        .collect()
}

/// Deletes transcripts older than `--runs-max-age`, then the oldest while all
/// take more than `--runs-max-size`; `keep` is never deleted.
pub(crate) fn prune(dir: &Path, args: &RunsArgs, keep: &Path) -> usize {
    let max_age = Duration::from_secs(args.runs_max_age.saturating_mul(86_400));
    let max_bytes = args.runs_max_size.saturating_mul(1024 * 1024);
    let now = SystemTime::now();
    let mut files = transcripts(dir);
    files.retain(|(path, ..)| path != keep);
    files.sort_by_key(|(_, _, modified)| *modified);
    let mut total: u64 = files.iter().map(|(_, size, _)| size).sum::<u64>()
        + std::fs::metadata(keep).map(|m| m.len()).unwrap_or(0);
    let mut removed = 0;
    for (path, size, modified) in files {
        let too_old = now.duration_since(modified).unwrap_or_default() > max_age;
        if (too_old || total > max_bytes) && std::fs::remove_file(&path).is_ok() {
            total = total.saturating_sub(size);
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, bytes: usize, age_days: u64) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, vec![b'x'; bytes]).unwrap();
        let modified = SystemTime::now() - Duration::from_secs(age_days * 86_400 + 60);
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(modified).unwrap();
        path
    }

    #[test]
    fn prunes_by_age_then_oldest_first_by_size_and_keeps_the_current_run() {
        let dir = tempfile::tempdir().unwrap();
        let old = write(dir.path(), "old.jsonl", 10, 40);
        let older_big = write(dir.path(), "a.jsonl", 600 * 1024, 5);
        let newer_big = write(dir.path(), "b.jsonl", 600 * 1024, 1);
        let current = write(dir.path(), "current.jsonl", 10, 90);
        let other = write(dir.path(), "notes.txt", 10, 90);
        let args = RunsArgs {
            runs_max_age: 30,
            runs_max_size: 1,
            ..RunsArgs::default()
        };
        assert_eq!(prune(dir.path(), &args, &current), 2);
        assert!(!old.exists(), "older than --runs-max-age");
        assert!(
            !older_big.exists(),
            "the oldest goes first while over the size"
        );
        assert!(newer_big.exists() && current.exists() && other.exists());
    }

    #[test]
    fn the_runs_dir_flag_wins() {
        let args = RunsArgs {
            runs_dir: Some(PathBuf::from("/tmp/r")),
            ..RunsArgs::default()
        };
        assert_eq!(runs_dir(&args).unwrap(), PathBuf::from("/tmp/r"));
    }
}
