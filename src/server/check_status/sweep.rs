//! The moments a job's check moves outside its run: when the job is stored (queued, and
//! the checks of the jobs it replaced completed), when its run ends, and the sweep of
//! checks left open.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{ChangeAt, Checks, Ended, JobStatus};
use crate::forge::ReviewRequest;
use crate::forge::status::{ReviewStatus, SkipReason};
use crate::queue::{ForgeKind, Job, JobError, JobId, JobState, RunOutcome, UnsettledCheck};

/// How often `redline serve` settles checks left open (besides at start).
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(300);

/// Longest the sweep at start may hold the workers back.
pub const START_SWEEP_TIMEOUT: Duration = Duration::from_secs(20);

/// Most checks one sweep settles (the next sweep takes the rest).
const SWEEP_BATCH: u32 = 100;

impl Checks {
    /// A review job was stored: shows it queued (jobs of a `/redline review` command or a
    /// re-run wait for their worker, which checks the requester's access first), and
    /// completes the checks of the pull request's jobs it replaced.
    pub(crate) async fn job_queued(&self, id: JobId) {
        let Some(queue) = &self.queue else { return };
        let job = match queue.job(id).await {
            Ok(Some(job)) => job,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(job = %id, %error, "the queued job's check was not shown");
                return;
            }
        };
        if !job.kind.replaces_earlier() {
            return;
        }
        if let Some(status) = self.for_job(&job) {
            status
                .show(&ReviewStatus::Queued { note: None }, true)
                .await;
        }
        // Replaced jobs, this one too if a newer job replaced it meanwhile.
        self.cancel_replaced(&job).await;
    }

    /// Completes the checks of the jobs of `job`'s pull request that were replaced
    /// (superseded before they ran, or cancelled while running), naming the newest commit.
    async fn cancel_replaced(&self, job: &Job) {
        let Some(queue) = &self.queue else { return };
        let jobs = match queue
            .jobs_for_pr(job.forge, &job.repo_full_name, job.pr_number)
            .await
        {
            Ok(jobs) => jobs,
            Err(error) => {
                tracing::warn!(job = %job.id, %error, "the replaced jobs' checks were not completed");
                return;
            }
        };
        for replaced in jobs
            .iter()
            .filter(|j| matches!(j.state, JobState::Superseded | JobState::Cancelled))
        {
            let Some(status) = self.for_job(replaced) else {
                continue;
            };
            let newer_head = newer_head(&jobs, replaced.id);
            status
                .finish(&ReviewStatus::Cancelled { newer_head }, false)
                .await;
        }
    }

    /// The newest commit of `job`'s pull request after `job`, from the queue.
    async fn newer_head_of(&self, job: &Job) -> Option<String> {
        let queue = self.queue.as_ref()?;
        let jobs = queue
            .jobs_for_pr(job.forge, &job.repo_full_name, job.pr_number)
            .await
            .ok()?;
        newer_head(&jobs, job.id)
    }

    /// Whether a newer job asked `job` to stop (rather than its worker losing the lease).
    async fn was_replaced(&self, job: &Job) -> bool {
        match &self.queue {
            Some(queue) => queue.is_cancelled(job.id).await.unwrap_or(false),
            None => false,
        }
    }

    /// A job's run ended: its check shows how (`last_attempt`: a failure is final).
    pub(crate) async fn job_ended(
        &self,
        status: &JobStatus,
        job: &Job,
        result: &Result<Ended, JobError>,
        cancel: &CancellationToken,
    ) {
        let last_attempt = job.attempts >= job.max_attempts;
        let stopped = match result {
            Ok(ended) => ended.outcome == RunOutcome::Cancelled,
            Err(_) => cancel.is_cancelled(),
        };
        if stopped {
            // A lost lease or a shutdown leaves the check to the job's next run.
            if self.was_replaced(job).await {
                let newer_head = self.newer_head_of(job).await;
                status
                    .finish(&ReviewStatus::Cancelled { newer_head }, false)
                    .await;
            }
            return;
        }
        match result {
            Ok(Ended {
                status: Some(shown),
                ..
            }) => status.finish(shown, true).await,
            Ok(_) => {}
            Err(JobError::Retryable(error)) if !last_attempt => {
                let note = format!(
                    "Attempt {} of {} failed ({error}); Redline tries again.",
                    job.attempts, job.max_attempts
                );
                let queued = ReviewStatus::Queued { note: Some(note) };
                status.show(&queued, false).await;
            }
            Err(error) => {
                let reason = crate::errors::chain(error);
                let failed = ReviewStatus::Failed {
                    reason,
                    timed_out: false,
                };
                status.finish(&failed, true).await;
            }
        }
    }

    /// Settles the checks left open: of jobs that ended (a completion that could not be
    /// shown, a process that died after the job ended, jobs replaced before they ran) and
    /// of jobs whose worker died (shown queued again: the queue runs them again, or fails
    /// them, and the next sweep completes their check). Returns how many it looked at.
    pub async fn settle(&self) -> usize {
        let Some(queue) = &self.queue else { return 0 };
        let unsettled = match queue.unsettled_checks(SWEEP_BATCH).await {
            Ok(unsettled) => unsettled,
            Err(error) => {
                tracing::warn!(%error, "the checks left open were not settled");
                return 0;
            }
        };
        for check in &unsettled {
            self.settle_one(check).await;
        }
        if !unsettled.is_empty() {
            tracing::info!(
                checks = unsettled.len(),
                "settled checks left open by ended or abandoned jobs"
            );
        }
        unsettled.len()
    }

    async fn settle_one(&self, check: &UnsettledCheck) {
        let job = &check.job;
        let Some(status) = self.for_job(job) else {
            return;
        };
        let final_status = match job.state {
            JobState::Running | JobState::Queued => {
                if let Some(shown) = &check.shown {
                    let note = "Redline's worker stopped during this review; it runs again.";
                    let queued = ReviewStatus::Queued {
                        note: Some(note.into()),
                    };
                    status.show_if_open(shown, &queued).await;
                }
                return;
            }
            JobState::Superseded | JobState::Cancelled => ReviewStatus::Cancelled {
                newer_head: self.newer_head_of(job).await,
            },
            JobState::Failed => ReviewStatus::Failed {
                reason: job
                    .last_error
                    .clone()
                    .unwrap_or_else(|| "the review stopped".into()),
                timed_out: false,
            },
            JobState::Succeeded => {
                let head = check.shown.as_ref().map(|shown| shown.head.clone());
                let carried = match &head {
                    Some(head) => status.shown_conclusion(head).await,
                    None => None,
                };
                ReviewStatus::Skipped {
                    reason: SkipReason::ResultNotShown,
                    carried,
                }
            }
        };
        status.finish(&final_status, check.shown.is_none()).await;
    }

    /// Settles checks every `every` (the first time after `every`), until the task is
    /// aborted.
    pub fn spawn_sweeper(self, every: Duration) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                self.settle().await;
            }
        })
    }
}

/// The head of the newest job after `id` among a pull request's `jobs` (oldest first).
fn newer_head(jobs: &[Job], id: JobId) -> Option<String> {
    jobs.iter()
        .filter(|job| job.id > id)
        .filter_map(|job| job.head_sha.clone())
        .next_back()
}

impl Checks {
    /// A delivery named a draft change (`forge`'s): its commit is shown skipped, in a
    /// completed check of its own (no job runs). A draft whose delivery does not name its
    /// commit shows nothing.
    pub(crate) async fn draft(&self, forge: ForgeKind, review: ReviewRequest) {
        let head = review.head.sha;
        if head.is_empty() {
            return;
        }
        let change = ChangeAt {
            forge,
            repository: &review.change.repository,
            installation: review.change.ids.installation,
            number: review.change.number,
        };
        // No job: the check is recorded nowhere (a redelivery is not handed over again).
        let checks = Checks {
            queue: None,
            ..self.clone()
        };
        let Some(status) = checks.for_change(change, JobId(0), Some(head)) else {
            return;
        };
        let skipped = ReviewStatus::Skipped {
            reason: SkipReason::Draft,
            carried: None,
        };
        status.finish(&skipped, true).await;
    }

    /// The intake's hook for drafts: each is shown skipped in a task of its own.
    pub(crate) fn draft_hook(&self) -> crate::server::DraftHook {
        let checks = self.clone();
        std::sync::Arc::new(move |forge, review| {
            let checks = checks.clone();
            tokio::spawn(async move { checks.draft(forge, review).await });
        })
    }

    /// The intake's hook: each stored review job's check is shown in a task of its own.
    pub(crate) fn queued_hook(&self) -> crate::server::JobQueuedHook {
        let checks = self.clone();
        std::sync::Arc::new(move |id| {
            let checks = checks.clone();
            tokio::spawn(async move { checks.job_queued(id).await });
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::JobKind;

    fn job(id: i64, head: Option<&str>) -> Job {
        let now = chrono::Utc::now();
        Job {
            id: JobId(id),
            delivery_id: None,
            forge: ForgeKind::GitHub,
            repo_full_name: "o/r".into(),
            installation_id: Some(9),
            pr_number: 7,
            head_sha: head.map(str::to_string),
            kind: JobKind::Review { strategy: None },
            payload: serde_json::Value::Null,
            state: JobState::Superseded,
            attempts: 0,
            max_attempts: 3,
            run_at: now,
            lease_owner: None,
            lease_until: None,
            cancel_requested: false,
            last_error: None,
            created_at: now,
            finished_at: None,
        }
    }

    #[test]
    fn the_newer_commit_is_the_newest_job_s_after_the_replaced_one() {
        let jobs = [
            job(1, Some("a")),
            job(2, Some("b")),
            job(3, None),
            job(4, Some("d")),
            job(5, None),
        ];
        assert_eq!(newer_head(&jobs, JobId(1)).as_deref(), Some("d"));
        assert_eq!(newer_head(&jobs, JobId(4)), None);
    }
}
