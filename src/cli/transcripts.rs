//! Run transcripts of `redline review`: where they live, how old ones are
//! pruned, and how a run starts one or resumes one.
//!
//! Invariants: a transcript is only resumed when its header matches the review
//! about to run (format, base and head commits, settings digest); a finished run
//! is never resumed; pruning never removes the current run's transcript.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use anyhow::{Context, anyhow, bail};

use super::{ReviewArgs, RunsArgs};
use crate::agent::events::EventSink;
use crate::agent::strategy::StrategyChoice;
use crate::agent::transcript::{
    EndStatus, FORMAT_VERSION, Header, LockedTranscript, MAX_RECORD_BYTES, Recorder,
    RecordingModel, RepositoryIdentity, create_private_dir, new_run_id, settings_digest,
};
use crate::agent::{AgentConfig, AgentError, Orchestrator};
use crate::config::ModelSettings;
use crate::llm::ChatModel;

/// Transcripts are files named `<run id>.jsonl`.
const EXTENSION: &str = "jsonl";

/// The transcript of the run about to start, if it keeps one.
///
/// A new transcript of a run that fails (or stops on an error) before any model call
/// was answered is removed: it holds nothing to resume or replay.
pub(crate) struct RunTranscript {
    recorder: Option<Arc<Recorder>>,
    resumed_from: Option<usize>,
    quiet: bool,
    /// The intent section recorded by the run being resumed.
    recorded_intent: Option<String>,
    /// The file of a transcript this run created (`None` when resumed or not kept).
    created: Option<PathBuf>,
    /// Set once the run ended as finished or cancelled: the transcript stays.
    kept: AtomicBool,
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
            created: None,
            kept: AtomicBool::new(false),
        };
        if (args.runs.no_transcript || args.plan_only || !has_changes) && args.runs.resume.is_none()
        {
            return Ok(disabled);
        }
        let dir = runs_dir(&args.runs)?;
        create_private_dir(&dir)
            .with_context(|| format!("cannot create the runs directory {}", dir.display()))?;
        let header = header_for(args, settings, agent, new_run_id())?;
        let secret = settings.api_key.clone();
        let (recorder, path, resumed_from, recorded_intent) = match &args.runs.resume {
            Some(wanted) => {
                let (path, locked) = resumable(&dir, wanted, &header)?;
                let calls = locked.transcript.model_calls();
                let intent = locked.transcript.header.intent.clone();
                let recorder = Recorder::resume(locked, secret).with_context(|| {
                    format!("cannot continue the transcript {}", path.display())
                })?;
                (recorder, path, Some(calls), Some(intent))
            }
            None => {
                let path = dir.join(format!("{}.{EXTENSION}", header.run_id));
                let recorder = Recorder::create(&path, &header, secret)
                    .with_context(|| format!("cannot write the transcript {}", path.display()))?;
                (recorder, path, None, None)
            }
        };
        prune(&dir, &args.runs, &path);
        let created = resumed_from.is_none().then(|| path.clone());
        let run = RunTranscript {
            recorder: Some(Arc::new(recorder)),
            resumed_from,
            quiet: args.quiet,
            recorded_intent,
            created,
            kept: AtomicBool::new(false),
        };
        // A new run's transcript is named when the run ends with it kept ([`Self::end`]):
        // a run that fails before any model answer leaves none behind.
        if let Some(calls) = resumed_from {
            run.note(&format!(
                "resuming run {} from {} ({calls} recorded model calls)",
                run.run_id(),
                path.display()
            ));
        }
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
            None => {
                recorder.end(EndStatus::Finished, None);
                self.kept.store(true, Ordering::Relaxed);
            }
            Some(error) => recorder.end(EndStatus::Failed, Some(error.to_string())),
        }
        self.note_kept_transcript(recorder);
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
            self.kept.store(true, Ordering::Relaxed);
            recorder.end(EndStatus::Cancelled, Some(format!("stopped by {signal}")));
            self.note_kept_transcript(recorder);
            self.note(&format!("continue it with --resume {}", recorder.run_id()));
        }
    }
}

impl RunTranscript {
    /// `run ID: transcript PATH` for a new run whose transcript stays (see [`Drop`]).
    fn note_kept_transcript(&self, recorder: &Recorder) {
        let Some(path) = &self.created else {
            return;
        };
        if self.kept.load(Ordering::Relaxed)
            || recorder.live_calls() + recorder.replayed_calls() > 0
        {
            self.note(&format!(
                "run {}: transcript {}",
                recorder.run_id(),
                path.display()
            ));
        }
    }
}

impl Drop for RunTranscript {
    /// Removes a transcript this run created when the run did not end as finished or
    /// cancelled and no model call was answered: a failure before the first answer
    /// (a bad output path, an unreachable endpoint) leaves no run behind.
    fn drop(&mut self) {
        let (Some(path), Some(recorder)) = (&self.created, &self.recorder) else {
            return;
        };
        if self.kept.load(Ordering::Relaxed)
            || recorder.live_calls() + recorder.replayed_calls() > 0
        {
            return;
        }
        let _ = std::fs::remove_file(path);
    }
}

/// `--runs-dir`, else `$XDG_STATE_HOME/redline/runs`, else `~/.local/state/redline/runs`.
pub(crate) fn runs_dir(args: &RunsArgs) -> anyhow::Result<PathBuf> {
    runs_dir_or(args.runs_dir.as_ref())
}

/// `dir` (a `--runs-dir`), else the default runs directory (see [`runs_dir`]).
pub(crate) fn runs_dir_or(dir: Option<&PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = dir {
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
    if args.no_verify {
        out.push("--no-verify".into());
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

/// The transcript `wanted` names (`latest`: this repository's newest), locked for
/// this process and checked against `current`.
fn resumable(
    dir: &Path,
    wanted: &str,
    current: &Header,
) -> anyhow::Result<(PathBuf, LockedTranscript)> {
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
    let locked = LockedTranscript::open(&path)?;
    let transcript = &locked.transcript;
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
    Ok((path, locked))
}

/// The paths of the transcripts in `dir` (see [`transcripts`]).
pub(crate) fn transcript_paths(dir: &Path) -> Vec<PathBuf> {
    transcripts(dir)
        .into_iter()
        .map(|(path, ..)| path)
        .collect()
}

/// The newest transcript in `dir` of the repository `root`, or of any when `None`.
pub(crate) fn latest_transcript(dir: &Path, root: Option<&str>) -> Option<PathBuf> {
    match root {
        Some(root) => latest_of(dir, root),
        None => {
            let mut paths = transcript_paths(dir);
            paths.sort_by(|a, b| b.file_name().cmp(&a.file_name()));
            paths.into_iter().next()
        }
    }
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

/// The header line of a transcript, without reading the rest (nor more than a
/// record's length of it, nor through a symbolic link).
fn first_header(path: &Path) -> Option<Header> {
    use std::io::{BufRead, Read};
    let file = super::files::open_no_follow(std::fs::OpenOptions::new().read(true), path).ok()?;
    let mut line = Vec::new();
    std::io::BufReader::new(file.take(MAX_RECORD_BYTES as u64))
        .read_until(b'\n', &mut line)
        .ok()?;
    match serde_json::from_slice(&line).ok()? {
        crate::agent::transcript::Record::Header(header) => Some(header),
        _ => None,
    }
}

/// Whether `name` is a transcript's: `<run id>.jsonl` with a run id as
/// [`new_run_id`] makes them (`20260101T120000Z-0a1b2c3d`).
fn is_transcript_name(name: &str) -> bool {
    let Some(id) = name.strip_suffix(&format!(".{EXTENSION}")) else {
        return false;
    };
    let Some((time, suffix)) = id.split_once('-') else {
        return false;
    };
    let time = time.as_bytes();
    let digits = |range: std::ops::Range<usize>| time[range].iter().all(u8::is_ascii_digit);
    time.len() == 16
        && digits(0..8)
        && time[8] == b'T'
        && digits(9..15)
        && time[15] == b'Z'
        && suffix.len() == 8
        && suffix
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Transcripts in `dir`: path, size, last modification. Only regular files (a
/// symbolic link is not followed) with a transcript's name whose first line is a
/// header count; nothing else in the directory is ever a transcript.
fn transcripts(dir: &Path) -> Vec<(PathBuf, u64, SystemTime)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(is_transcript_name))
        .filter_map(|e| {
            let path = e.path();
            let meta = std::fs::symlink_metadata(&path).ok()?;
            if !meta.file_type().is_file() {
                return None;
            }
            first_header(&path)?;
            Some((path, meta.len(), meta.modified().ok()?))
        })
        .collect()
}

/// Deletes transcripts older than `--runs-max-age`, then the oldest while all
/// take more than `--runs-max-size`; `keep` is never deleted, nor any file that
/// is not a transcript (see [`transcripts`]).
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
#[path = "transcripts_tests.rs"]
mod tests;
