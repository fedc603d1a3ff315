//! The steps both pipelines take on any forge between reading the change and asking the
//! model: its commits fetched into a bare mirror within the cache's budget, the
//! repository's settings at the base commit bounded by the server's, and the review run
//! with the job's transcript.

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use super::RunnerSettings;
use crate::agent::AgentError;
use crate::config::limits::LimitCeilings;
use crate::config::settings::{self, Scope, SettingFlags, Settings, SettingsInput};
use crate::config::{CONFIG_FILE, ConfigError, ConfigSource, ModelSettings};
use crate::flow;
use crate::flow::pull::{CommitSource, FlowError, PullCommits};
use crate::queue::{Job, JobError};
use crate::review::report::ReviewReport;

/// The settings of a job (`label` names it in the log): the repository's file at the
/// base commit (as the Action reads it), the `/redline` command's strategy, bounded by
/// the server's settings (`server`, `ceilings`).
pub(crate) fn repository_settings(
    server: &ModelSettings,
    ceilings: LimitCeilings,
    label: &str,
    strategy: Option<&str>,
    commits: &PullCommits,
) -> Result<Settings, ConfigError> {
    let repository =
        ConfigSource::read_at_commit(&commits.root, &commits.base, Path::new(CONFIG_FILE))?;
    if let Some(source) = &repository {
        for warning in source.warnings() {
            tracing::warn!(job = label, "{warning}");
        }
    }
    let flags = SettingFlags {
        strategy: strategy.map(str::to_string),
        ..SettingFlags::default()
    };
    settings::resolve(SettingsInput {
        flags,
        flags_origin: "/redline command",
        env: &|_| None,
        user: None,
        repository,
        scope: Scope::Server {
            model: server.clone(),
            ceilings,
        },
    })
}

/// Reviews `commits` with the job's transcript in the cache (a job taken over after a
/// dead worker continues from it); `Ok(None)` when the review was cancelled.
pub(crate) async fn review_recorded(
    shared: &RunnerSettings,
    job: &Job,
    settings: &Settings,
    commits: &PullCommits,
    cancel: &CancellationToken,
) -> Result<Option<ReviewReport>, JobError> {
    let transcript = crate::server::job_transcript::Attempt {
        job,
        base: &commits.changes.base,
        head: commits.changes.head.as_deref().unwrap_or_default(),
        config: &settings.agent,
        settings: &settings.model,
    };
    let recorder = crate::server::job_transcript::open(&shared.cache_dir, &transcript);
    let model = (shared.model)(&settings.model);
    let model = crate::server::job_transcript::wrap(model, recorder.as_ref());
    let result =
        flow::pull::review(model, settings, commits, cancel.clone(), recorder.clone()).await;
    let error = result.as_ref().err().map(ToString::to_string);
    crate::server::job_transcript::end(recorder.as_ref(), error);
    match result {
        Ok(report) => Ok(Some(report)),
        Err(AgentError::Cancelled) => Ok(None),
        Err(AgentError::Model(e)) if e.is_retryable() => Err(JobError::Retryable(e.into())),
        Err(other) => Err(JobError::Permanent(other.into())),
    }
}

/// Where a change's mirror is and how it is fetched (a forge's step).
pub(crate) struct MirrorSource {
    /// The mirror, relative to the cache (each forge its own names).
    pub(crate) path: PathBuf,
    /// The URL it is fetched from.
    pub(crate) clone_url: String,
    /// The token it is fetched with.
    pub(crate) token: crate::llm::Secret,
}

/// Fetches `base` and `head` into the mirror `source` names in the cache and loads the
/// change since `last` (`None`: the whole change).
pub(crate) async fn fetch_source(
    shared: &RunnerSettings,
    source: MirrorSource,
    (base, head): (&str, &str),
    last: Option<String>,
) -> Result<PullCommits, JobError> {
    let mirror = Mirror {
        path: shared.cache_dir.join(source.path),
        clone_url: source.clone_url,
        cache_dir: shared.cache_dir.clone(),
        budget: shared.cache_budget_bytes,
    };
    let (base, head) = (base.to_string(), head.to_string());
    fetch_into_mirror(mirror, base, head, last, source.token).await
}

/// A repository's bare mirror in the cache, and where it is fetched from.
struct Mirror {
    /// The mirror (GitHub: `<cache>/<owner>/<name>.git`).
    path: PathBuf,
    /// The URL it is fetched from.
    clone_url: String,
    /// The cache, kept within `budget` bytes after the fetch.
    cache_dir: PathBuf,
    budget: u64,
}

/// Fetches `base` and `head` into `mirror` with `token` and loads the change since `last`;
/// then keeps the cache within its budget (the mirror just fetched stays).
async fn fetch_into_mirror(
    mirror: Mirror,
    base: String,
    head: String,
    last: Option<String>,
    token: crate::llm::Secret,
) -> Result<PullCommits, JobError> {
    let loaded = tokio::task::spawn_blocking(move || {
        let source = CommitSource::Mirror {
            path: &mirror.path,
            clone_url: &mirror.clone_url,
        };
        let loaded = flow::pull::load_commits(source, &base, &head, last.as_deref(), Some(&token));
        // The mirror just fetched is kept; older ones go until the cache fits its budget.
        for removed in
            crate::server::cache::enforce_budget(&mirror.cache_dir, mirror.budget, &mirror.path)
        {
            tracing::info!(mirror = %removed.display(), "removed from the mirror cache (--cache-budget-mb)");
        }
        loaded
    })
    .await
    .map_err(|e| JobError::Retryable(e.into()))?;
    loaded.map_err(|e| match &e {
        FlowError::Fetch(_) => JobError::Retryable(e.into()),
        FlowError::Commits(_) => JobError::Permanent(e.into()),
    })
}
