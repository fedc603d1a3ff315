//! The review's state in the change's checks, as `redline serve` keeps it (what is shown
//! is [`crate::forge::status`]'s): `queued` when a review job is stored (in the background,
//! never on the webhook's path: [`Checks::job_queued`]), in progress when a worker starts
//! it, completed when the job ends ([`Checks::job_ended`]); the check of a job replaced by
//! a newer one is completed `cancelled`, naming the newer commit; checks left open by jobs
//! that ended or whose worker died are settled at start and then periodically
//! ([`Checks::settle`]).
//!
//! Invariants: showing a status never fails a review and delays it by a bounded time
//! (each forge call within [`CALL_TIMEOUT`], a wait for another process's creation within
//! [`BUSY_WAIT`]): errors are logged. A forge that refuses for want of a permission gets
//! one notice on the change (by its marker, once per change) and no more calls for the
//! job. The queue's record ([`Queue::begin_check`], [`Queue::close_check`]) makes each
//! job's check once and completes it once, whichever process or replica gets there first.

mod job_forge;
mod shown;
mod sweep;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::forge::status::{Conclusion, ReviewStatus, StatusTarget};
use crate::github::AppAuth;
use crate::gitlab::GitLabClient;
use crate::queue::{CheckSlot, ForgeKind, Job, JobId, Queue, RunOutcome, ShownCheck};

use job_forge::JobForge;
pub(crate) use shown::{broken_settings, no_review_needed, reviewed, running, show_running};
pub use sweep::{START_SWEEP_TIMEOUT, SWEEP_INTERVAL};

/// Longest a forge call of a status may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest a job waits for another process to finish creating its check.
const BUSY_WAIT: Duration = Duration::from_secs(5);
/// Pause between two looks at a check another process is creating.
const BUSY_PAUSE: Duration = Duration::from_millis(100);

/// Where the statuses of `redline serve`'s jobs go: the forges it is set up for, and the
/// queue that records each job's check.
#[derive(Clone)]
pub struct Checks {
    github: Option<AppAuth>,
    gitlab: Option<GitLabClient>,
    queue: Option<Queue>,
}

impl std::fmt::Debug for Checks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checks")
            .field("github", &self.github.is_some())
            .field("gitlab", &self.gitlab.is_some())
            .finish_non_exhaustive()
    }
}

/// A change request on a forge, as a status needs it.
#[derive(Debug, Clone, Copy)]
struct ChangeAt<'a> {
    forge: ForgeKind,
    /// `owner/name` (GitLab: the project's path).
    repository: &'a str,
    /// GitHub: the App installation that acts on it.
    installation: Option<u64>,
    number: u64,
}

/// How a job's run ended, and what its check shows for it.
#[derive(Debug)]
pub(crate) struct Ended {
    /// What the worker records.
    pub(crate) outcome: RunOutcome,
    /// The final status, when the run decided one (`None`: nothing to show, e.g. a
    /// request from someone who may not ask for a review).
    pub(crate) status: Option<ReviewStatus>,
}

impl Ended {
    /// Completed, showing `status`.
    pub(crate) fn showing(status: ReviewStatus) -> Ended {
        Ended {
            outcome: RunOutcome::Completed,
            status: Some(status),
        }
    }

    /// Completed with nothing to show.
    pub(crate) fn quietly() -> Ended {
        Ended {
            outcome: RunOutcome::Completed,
            status: None,
        }
    }

    /// Stopped at a safe point.
    pub(crate) fn cancelled() -> Ended {
        Ended {
            outcome: RunOutcome::Cancelled,
            status: None,
        }
    }
}

impl Checks {
    /// Statuses on GitHub through `github` (the App) and on GitLab through `gitlab`,
    /// recorded in `queue`.
    pub(crate) fn new(
        github: Option<AppAuth>,
        gitlab: Option<GitLabClient>,
        queue: Option<Queue>,
    ) -> Checks {
        Checks {
            github,
            gitlab,
            queue,
        }
    }

    /// The status of `job` on its forge; `None` when this server is not set up for it.
    pub(crate) fn for_job(&self, job: &Job) -> Option<JobStatus> {
        let change = ChangeAt {
            forge: job.forge,
            repository: &job.repo_full_name,
            installation: job.installation_id,
            number: job.pr_number,
        };
        self.for_change(change, job.id, job.head_sha.clone())
    }

    /// The status of job `job` (`JobId(0)`: none, the check is the change's alone) on
    /// `change`, at commit `head` when known.
    fn for_change(
        &self,
        change: ChangeAt<'_>,
        job: JobId,
        head: Option<String>,
    ) -> Option<JobStatus> {
        let forge = match change.forge {
            ForgeKind::GitHub => {
                let auth = self.github.as_ref()?;
                let (owner, repo) = change.repository.split_once('/')?;
                JobForge::GitHub {
                    client: auth.installation_client(change.installation?),
                    owner: owner.to_string(),
                    repo: repo.to_string(),
                    number: change.number,
                }
            }
            ForgeKind::GitLab => JobForge::GitLab {
                client: self.gitlab.clone()?,
                project: change.repository.to_string(),
                iid: change.number,
            },
        };
        Some(JobStatus {
            forge,
            queue: self.queue.clone(),
            job,
            head: Mutex::new(head),
            memory: Mutex::new(None),
            denied: AtomicBool::new(false),
        })
    }
}

/// One job's check, as its runner (or the sweep) moves it along.
pub(crate) struct JobStatus {
    forge: JobForge,
    queue: Option<Queue>,
    job: JobId,
    /// The commit the check goes on, once known.
    head: Mutex<Option<String>>,
    /// Without a queue: the check shown, and whether it is completed.
    memory: Mutex<Option<(ShownCheck, bool)>>,
    /// The forge refused for want of a permission: no more calls.
    denied: AtomicBool,
}

impl JobStatus {
    /// The commit the check goes on, when the job's event did not name it.
    pub(crate) fn set_head(&self, head: &str) {
        if let Ok(mut known) = self.head.lock()
            && known.is_none()
        {
            *known = Some(head.to_string());
        }
    }

    fn head(&self) -> Option<String> {
        self.head.lock().ok().and_then(|head| head.clone())
    }

    /// The conclusion of an earlier finished review of `head` (none when the forge does not say).
    pub(crate) async fn shown_conclusion(&self, head: &str) -> Option<Conclusion> {
        if self.denied.load(Ordering::Relaxed) {
            return None;
        }
        match tokio::time::timeout(CALL_TIMEOUT, self.forge.shown_conclusion(head)).await {
            Ok(Ok(conclusion)) => conclusion,
            Ok(Err(error)) => {
                tracing::warn!(job = %self.job, %error, "the earlier review's conclusion is unknown");
                None
            }
            Err(_) => None,
        }
    }

    /// Shows a status that is not final (queued, running): updates the check, or creates
    /// it when the job has none and `create`; a completed check is left as it is.
    pub(crate) async fn show(&self, status: &ReviewStatus, create: bool) {
        if self.denied.load(Ordering::Relaxed) {
            return;
        }
        match self.slot_when_settled(!create).await {
            Some(CheckSlot::Create) => self.create(status, false).await,
            Some(CheckSlot::Open(shown)) => {
                self.update(&shown, status).await;
            }
            _ => {}
        }
    }

    /// Shows a status that is not final on the job's check only if it is open.
    pub(crate) async fn show_if_open(&self, shown: &ShownCheck, status: &ReviewStatus) {
        if !self.denied.load(Ordering::Relaxed) {
            self.update(shown, status).await;
        }
    }

    /// Completes the job's check with `status` (a final one). With `create`, a job without
    /// a check gets one, completed at once.
    pub(crate) async fn finish(&self, status: &ReviewStatus, create: bool) {
        if self.denied.load(Ordering::Relaxed) {
            return;
        }
        let deadline = tokio::time::Instant::now() + BUSY_WAIT;
        loop {
            if let Some(shown) = self.close().await {
                if !self.update(&shown, status).await {
                    self.reopen().await;
                }
                return;
            }
            match self.slot(!create).await {
                Some(CheckSlot::Create) => return self.create(status, true).await,
                Some(CheckSlot::Busy) | Some(CheckSlot::Open(_))
                    if tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(BUSY_PAUSE).await;
                }
                _ => return,
            }
        }
    }

    /// The job's check, waiting (boundedly) while another process creates it.
    async fn slot_when_settled(&self, look_only: bool) -> Option<CheckSlot> {
        let deadline = tokio::time::Instant::now() + BUSY_WAIT;
        loop {
            match self.slot(look_only).await {
                Some(CheckSlot::Busy) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(BUSY_PAUSE).await;
                }
                Some(CheckSlot::Busy) => {
                    tracing::warn!(job = %self.job, "the check is still being created elsewhere; status not shown");
                    return None;
                }
                other => return other,
            }
        }
    }

    /// The job's check; [`CheckSlot::Create`] claims its creation (unless `look_only`).
    async fn slot(&self, look_only: bool) -> Option<CheckSlot> {
        let Some(queue) = &self.queue else {
            let memory = self.memory.lock().ok()?;
            return Some(match &*memory {
                None if look_only => CheckSlot::Absent,
                None => CheckSlot::Create,
                Some((_, true)) => CheckSlot::Closed,
                Some((shown, false)) => CheckSlot::Open(shown.clone()),
            });
        };
        if look_only {
            // Whether a check is open, without claiming a creation.
            return match queue.check(self.job).await {
                Ok(slot) => Some(slot),
                Err(error) => {
                    tracing::warn!(job = %self.job, %error, "the job's check is not known");
                    None
                }
            };
        }
        match queue.begin_check(self.job).await {
            Ok(slot) => Some(slot),
            Err(error) => {
                tracing::warn!(job = %self.job, %error, "the job's check is not known");
                None
            }
        }
    }

    /// Creates the check (the caller holds the creation claim) showing `status`.
    async fn create(&self, status: &ReviewStatus, completed: bool) {
        let Some(head) = self.head() else {
            self.record_not_created().await;
            return;
        };
        let job = self.job.to_string();
        let target = StatusTarget {
            head: &head,
            job: &job,
            id: None,
        };
        match self.call(&target, status).await {
            Some(id) => {
                let shown = ShownCheck { id, head };
                self.record_created(shown, completed).await;
            }
            None => self.record_not_created().await,
        }
    }

    /// Shows `status` on the check `shown`; whether the forge took it.
    async fn update(&self, shown: &ShownCheck, status: &ReviewStatus) -> bool {
        let job = self.job.to_string();
        let target = StatusTarget {
            head: &shown.head,
            job: &job,
            id: shown.id,
        };
        self.call(&target, status).await.is_some()
    }

    /// One forge call; `Some(id)` when it went through. Errors are logged; a refused
    /// permission is noticed once and stops further calls.
    async fn call(&self, target: &StatusTarget<'_>, status: &ReviewStatus) -> Option<Option<u64>> {
        let shown = tokio::time::timeout(CALL_TIMEOUT, self.forge.show(target, status)).await;
        match shown {
            Ok(Ok(id)) => Some(id),
            Ok(Err(error)) if error.is_denied() => {
                self.denied.store(true, Ordering::Relaxed);
                tracing::warn!(job = %self.job, %error, "the forge refuses Redline's status (missing permission); reviews go on without it");
                self.forge.denied_notice().await;
                None
            }
            Ok(Err(error)) => {
                tracing::warn!(job = %self.job, %error, "the review's status was not shown");
                None
            }
            Err(_) => {
                tracing::warn!(job = %self.job, "showing the review's status timed out");
                None
            }
        }
    }

    async fn record_created(&self, shown: ShownCheck, completed: bool) {
        let Some(queue) = &self.queue else {
            if let Ok(mut memory) = self.memory.lock() {
                *memory = Some((shown, completed));
            }
            return;
        };
        if let Err(error) = queue
            .check_created(self.job, shown.id, &shown.head, completed)
            .await
        {
            tracing::warn!(job = %self.job, %error, "the job's check was not recorded");
        }
    }

    async fn record_not_created(&self) {
        if let Some(queue) = &self.queue
            && let Err(error) = queue.check_not_created(self.job).await
        {
            tracing::warn!(job = %self.job, %error, "the job's check claim was not released");
        }
    }

    /// Claims the completion of the open check.
    async fn close(&self) -> Option<ShownCheck> {
        let Some(queue) = &self.queue else {
            let mut memory = self.memory.lock().ok()?;
            return match &mut *memory {
                Some((shown, closed)) if !*closed => {
                    *closed = true;
                    Some(shown.clone())
                }
                _ => None,
            };
        };
        match queue.close_check(self.job).await {
            Ok(shown) => shown,
            Err(error) => {
                tracing::warn!(job = %self.job, %error, "the job's check could not be closed");
                None
            }
        }
    }

    async fn reopen(&self) {
        if let Some(queue) = &self.queue {
            if let Err(error) = queue.reopen_check(self.job).await {
                tracing::warn!(job = %self.job, %error, "the job's check was not reopened");
            }
        } else if let Ok(mut memory) = self.memory.lock()
            && let Some((_, closed)) = &mut *memory
        {
            *closed = false;
        }
    }
}

#[cfg(test)]
mod tests;
