//! Transcripts of App review jobs: `CACHE_DIR/.runs/job-<id>.jsonl`.
//!
//! A job whose worker died (its lease ran out) or whose attempt failed in a
//! retryable way is taken again; the next attempt continues from the job's
//! transcript, so answered model calls are not paid for twice. Invariants: a
//! transcript is only continued when its header (format, commits, settings
//! digest) matches the attempt; any other transcript of the job is replaced; a
//! transcript never decides whether a job runs (errors are logged, not fatal);
//! it is removed once the job is done for good.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::AgentConfig;
use crate::agent::transcript::{
    EndStatus, FORMAT_VERSION, Header, LockedTranscript, Recorder, RecordingModel,
    RepositoryIdentity, TranscriptError, create_private_dir, settings_digest,
};
use crate::config::ModelSettings;
use crate::llm::ChatModel;
use crate::queue::Job;

/// The directory of job transcripts (a name no GitHub owner can have).
fn runs_dir(cache_dir: &Path) -> PathBuf {
    cache_dir.join(".runs")
}

fn path_of(cache_dir: &Path, job: &Job) -> PathBuf {
    runs_dir(cache_dir).join(format!("job-{}.jsonl", job.id))
}

/// What one attempt of a job reviews.
pub(crate) struct Attempt<'a> {
    /// The job.
    pub job: &'a Job,
    /// First reviewed commit's parent (the last reviewed head or the merge base).
    pub base: &'a str,
    /// The head commit.
    pub head: &'a str,
    /// The engine's settings for this attempt.
    pub config: &'a AgentConfig,
    /// The model settings (the key is only used for redaction).
    pub settings: &'a ModelSettings,
}

/// The recorder of this attempt: continuing the job's transcript when it matches,
/// else a new one. `None` when no transcript can be written, or when another
/// process (a worker whose lease ran out) still writes it.
pub(crate) fn open(cache_dir: &Path, attempt: &Attempt<'_>) -> Option<Arc<Recorder>> {
    let dir = runs_dir(cache_dir);
    if let Err(error) = create_private_dir(&dir) {
        tracing::warn!(job = %attempt.job.id, %error, "cannot create the transcript directory");
        return None;
    }
    let path = path_of(cache_dir, attempt.job);
    let header = header(attempt);
    let secret = attempt.settings.api_key.clone();
    match LockedTranscript::open(&path) {
        Ok(locked) => {
            let differs = locked.transcript.header.differences(&header);
            if differs.is_empty() {
                let calls = locked.transcript.model_calls();
                match Recorder::resume(locked, secret.clone()) {
                    Ok(recorder) => {
                        tracing::info!(
                            job = %attempt.job.id,
                            recorded_calls = calls,
                            "continuing the job from its transcript"
                        );
                        return Some(Arc::new(recorder));
                    }
                    Err(error) => {
                        tracing::warn!(job = %attempt.job.id, %error, "cannot continue the job's transcript")
                    }
                }
            } else {
                tracing::info!(job = %attempt.job.id, differs = %differs.join("; "), "the job's transcript is for another review; starting over");
            }
        }
        Err(error @ TranscriptError::Locked { .. }) => {
            tracing::warn!(job = %attempt.job.id, %error, "the job's transcript is in use; this attempt keeps none");
            return None;
        }
        Err(_) => {}
    }
    let _ = std::fs::remove_file(&path);
    match Recorder::create(&path, &header, secret) {
        Ok(recorder) => Some(Arc::new(recorder)),
        Err(error) => {
            tracing::warn!(job = %attempt.job.id, %error, "cannot write the job's transcript");
            None
        }
    }
}

/// `model`, recording into (and answering from) `recorder`.
pub(crate) fn wrap(
    model: Arc<dyn ChatModel>,
    recorder: Option<&Arc<Recorder>>,
) -> Arc<dyn ChatModel> {
    match recorder {
        Some(recorder) => Arc::new(RecordingModel::new(model, Arc::clone(recorder))),
        None => model,
    }
}

/// Ends the attempt's transcript.
pub(crate) fn end(recorder: Option<&Arc<Recorder>>, error: Option<String>) {
    if let Some(recorder) = recorder {
        match error {
            None => recorder.end(EndStatus::Finished, None),
            Some(error) => recorder.end(EndStatus::Failed, Some(error)),
        }
    }
}

/// Removes the job's transcript: the job is done for good (published, cancelled or failed).
pub(crate) fn remove(cache_dir: &Path, job: &Job) {
    let _ = std::fs::remove_file(path_of(cache_dir, job));
}

fn header(attempt: &Attempt<'_>) -> Header {
    let settings = attempt.settings;
    let description = format!(
        "{}\n{}\n{}",
        attempt.config.settings_description(),
        settings.provider,
        settings.model
    );
    Header {
        format: FORMAT_VERSION,
        redline: env!("CARGO_PKG_VERSION").to_string(),
        run_id: format!("job-{}", attempt.job.id),
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        strategy: format!("{:?}", attempt.config.strategy),
        settings_digest: settings_digest(&description),
        repository: RepositoryIdentity {
            root: attempt.job.repo_full_name.clone(),
            origin: None,
        },
        base: attempt.base.to_string(),
        head: attempt.head.to_string(),
        uncommitted: false,
        model: settings.model.clone(),
        provider: settings.provider.name().to_string(),
        invocation: Vec::new(),
        intent: attempt.config.intent.clone(),
    }
}
