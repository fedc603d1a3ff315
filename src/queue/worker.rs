//! The worker pool: claims jobs, keeps their leases alive while a [`JobRunner`] runs them,
//! relays "a newer push arrived" as a cancellation, and records the result.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::task::JoinSet;
use tokio::time::{Instant, interval_at, sleep, timeout};
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use super::error::QueueError;
use super::store::Queue;
use super::types::{FailOutcome, Job, RetryDecision};

/// The answer of the heartbeat in flight; pending while there is none.
async fn heartbeat_done(
    in_flight: &mut Option<BoxFuture<'_, Result<bool, QueueError>>>,
) -> Result<bool, QueueError> {
    match in_flight {
        Some(heartbeat) => heartbeat.await,
        None => std::future::pending().await,
    }
}

/// How a worker's run of a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum JobOutcome {
    /// The runner finished.
    Succeeded,
    /// Stopped for a newer job of the same PR.
    Cancelled,
    /// Failed and queued again.
    Retried,
    /// Failed for good.
    Failed,
    /// The lease was lost to another worker; the result was discarded.
    LeaseLost,
    /// The queue could not record the result; the job will be re-run after its lease expires.
    Unrecorded,
}

impl JobOutcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            JobOutcome::Succeeded => "succeeded",
            JobOutcome::Cancelled => "cancelled",
            JobOutcome::Retried => "retried",
            JobOutcome::Failed => "failed",
            JobOutcome::LeaseLost => "lease_lost",
            JobOutcome::Unrecorded => "unrecorded",
        }
    }
}

/// Told of every job a worker finished, however it ended (the server counts them in its metrics).
pub trait JobObserver: Send + Sync {
    /// `outcome` of a run that took `duration`.
    fn job_finished(&self, outcome: JobOutcome, duration: std::time::Duration);
}

/// Runs one job. The real implementation (the review engine) lives elsewhere.
#[async_trait]
pub trait JobRunner: Send + Sync {
    /// Runs `job`. When `cancel` fires (a newer job for the same PR arrived, or this worker
    /// lost its lease), stop at the next safe point, publish nothing, and return
    /// [`RunOutcome::Cancelled`].
    async fn run(&self, job: &Job, cancel: CancellationToken) -> Result<RunOutcome, JobError>;
}

/// How a run that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// The job did its work.
    Completed,
    /// The job stopped at a safe point after its cancellation token fired.
    Cancelled,
}

/// What made a run fail: any error (its causes kept as its chain), or a message
/// (`"...".into()`).
pub type JobCause = Box<dyn std::error::Error + Send + Sync>;

/// Why a run failed. Recorded as its whole chain ([`crate::errors::chain`]).
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Worth another attempt (network trouble, rate limit, timeout).
    #[error("{0}")]
    Retryable(#[source] JobCause),
    /// Retrying cannot help (PR gone, permission denied, bad input).
    #[error("{0}")]
    Permanent(#[source] JobCause),
}

impl JobError {
    /// Whether the queue should retry the job.
    pub(crate) fn retry_decision(&self) -> RetryDecision {
        match self {
            JobError::Retryable(_) => RetryDecision::Retry,
            JobError::Permanent(_) => RetryDecision::GiveUp,
        }
    }
}

/// Settings of a [`WorkerPool`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerConfig {
    /// Concurrent workers (default 4).
    pub workers: usize,
    /// How long a claim or heartbeat keeps a job leased (default 60 s).
    pub lease: Duration,
    /// How often an idle worker looks for work (default 1 s); a job enqueued by this process
    /// wakes a worker at once.
    pub poll_interval: Duration,
    /// How often a busy worker renews its lease and checks for cancellation (default 15 s;
    /// capped at half the lease).
    pub heartbeat_interval: Duration,
    /// How long [`WorkerPool::shutdown`] waits for running jobs (default 30 s).
    pub shutdown_timeout: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            workers: 4,
            lease: Duration::from_secs(60),
            poll_interval: Duration::from_secs(1),
            heartbeat_interval: Duration::from_secs(15),
            shutdown_timeout: Duration::from_secs(30),
        }
    }
}

/// How [`WorkerPool::shutdown`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownOutcome {
    /// Every worker finished its job and stopped.
    Drained,
    /// The deadline passed; these workers were aborted mid-job. Their jobs are re-run by
    /// another worker once the leases expire.
    TimedOut {
        /// Workers aborted.
        abandoned: usize,
    },
}

/// Workers draining a [`Queue`]. Dropping the pool aborts the workers at once (like a crash);
/// call [`WorkerPool::shutdown`] to stop gracefully.
#[derive(Debug)]
pub struct WorkerPool {
    stop: CancellationToken,
    tasks: JoinSet<()>,
    worker_ids: Vec<String>,
    shutdown_timeout: Duration,
}

impl WorkerPool {
    /// Starts `config.workers` workers (at least one) on the current Tokio runtime.
    pub fn start(
        queue: Queue,
        runner: Arc<dyn JobRunner>,
        config: WorkerConfig,
        metrics: Arc<dyn JobObserver>,
    ) -> WorkerPool {
        let stop = CancellationToken::new();
        let mut tasks = JoinSet::new();
        let prefix = worker_prefix();
        let settings = Settings::from(&config);
        let worker_ids: Vec<String> = (0..config.workers.max(1))
            .map(|index| format!("{prefix}-w{index}"))
            .collect();
        for id in &worker_ids {
            let worker = Worker {
                id: id.clone(),
                queue: queue.clone(),
                runner: Arc::clone(&runner),
                settings: settings.clone(),
                metrics: Arc::clone(&metrics),
                stop: stop.clone(),
            };
            tasks.spawn(worker.run());
        }
        info!(
            workers = worker_ids.len(),
            backend = queue.backend(),
            "worker pool started"
        );
        WorkerPool {
            stop,
            tasks,
            worker_ids,
            shutdown_timeout: config.shutdown_timeout,
        }
    }

    /// The ids the workers lease jobs under (unique per pool).
    pub fn worker_ids(&self) -> &[String] {
        &self.worker_ids
    }

    /// Stops claiming and waits, up to the configured deadline, for running jobs to finish.
    /// Running jobs are not cancelled.
    pub async fn shutdown(mut self) -> ShutdownOutcome {
        self.stop.cancel();
        let drained = timeout(self.shutdown_timeout, async {
            while self.tasks.join_next().await.is_some() {}
        })
        .await;
        match drained {
            Ok(()) => {
                info!("worker pool drained");
                ShutdownOutcome::Drained
            }
            Err(_) => {
                let abandoned = self.tasks.len();
                self.tasks.abort_all();
                warn!(
                    abandoned,
                    "worker pool shutdown timed out; aborting running jobs"
                );
                ShutdownOutcome::TimedOut { abandoned }
            }
        }
    }
}

/// `host-pid-nonce`, so leases of a restarted process never look like the old one's.
fn worker_prefix() -> String {
    let host = crate::config::env_var("HOSTNAME").unwrap_or_else(|| "redline".to_string());
    format!(
        "{host}-{}-{:04x}",
        std::process::id(),
        rand::random::<u16>()
    )
}

/// [`WorkerConfig`] with intervals made safe for timers.
#[derive(Debug, Clone)]
struct Settings {
    lease: Duration,
    poll_interval: Duration,
    heartbeat_interval: Duration,
}

impl From<&WorkerConfig> for Settings {
    fn from(config: &WorkerConfig) -> Self {
        let min = Duration::from_millis(1);
        Settings {
            lease: config.lease.max(min),
            poll_interval: config.poll_interval.max(min),
            heartbeat_interval: config.heartbeat_interval.min(config.lease / 2).max(min),
        }
    }
}

struct Worker {
    id: String,
    queue: Queue,
    runner: Arc<dyn JobRunner>,
    settings: Settings,
    metrics: Arc<dyn JobObserver>,
    stop: CancellationToken,
}

impl Worker {
    async fn run(self) {
        while !self.stop.is_cancelled() {
            match self.queue.claim(&self.id, self.settings.lease).await {
                Ok(Some(job)) => self.process(job).await,
                Ok(None) => self.idle().await,
                Err(err) => {
                    warn!(worker = %self.id, error = %err, "claiming a job failed");
                    self.idle().await;
                }
            }
        }
        debug!(worker = %self.id, "worker stopped");
    }

    async fn idle(&self) {
        tokio::select! {
            _ = sleep(self.settings.poll_interval) => {}
            _ = self.queue.job_enqueued() => {}
            _ = self.stop.cancelled() => {}
        }
    }

    async fn process(&self, job: Job) {
        info!(
            worker = %self.id,
            job = %job.id,
            repo = %job.repo_full_name,
            pr = job.pr_number,
            attempt = job.attempts,
            "job claimed"
        );
        let started = Instant::now();
        let (result, lease_lost) = self.run_with_heartbeat(&job).await;
        let outcome = if lease_lost {
            JobOutcome::LeaseLost
        } else {
            self.settle(&job, result).await
        };
        info!(worker = %self.id, job = %job.id, outcome = outcome.as_str(), "job finished");
        self.metrics.job_finished(outcome, started.elapsed());
    }

    /// Runs the job while renewing its lease. Returns the run's result and whether the lease
    /// was lost meanwhile.
    ///
    /// The heartbeat in flight is polled beside the job, never awaited on its own: on SQLite
    /// both take the process's write turn, and a job suspended while holding it (mid-write)
    /// would never release it to a heartbeat awaited alone (every writer of the process,
    /// claims and intake included, would then wait forever).
    async fn run_with_heartbeat(&self, job: &Job) -> (Result<RunOutcome, JobError>, bool) {
        let cancel = CancellationToken::new();
        let run = AssertUnwindSafe(self.runner.run(job, cancel.clone())).catch_unwind();
        tokio::pin!(run);
        let every = self.settings.heartbeat_interval;
        let mut beat = interval_at(Instant::now() + every, every);
        let mut in_flight: Option<BoxFuture<'_, Result<bool, QueueError>>> = None;
        let mut lease_lost = false;
        loop {
            tokio::select! {
                result = &mut run => {
                    let result = result.unwrap_or_else(|_| {
                        error!(worker = %self.id, job = %job.id, "job runner panicked");
                        Err(JobError::Retryable("job runner panicked".into()))
                    });
                    return (result, lease_lost);
                }
                _ = beat.tick(), if !lease_lost && in_flight.is_none() => {
                    in_flight = Some(Box::pin(self.queue.heartbeat(job.id, &self.id, self.settings.lease)));
                }
                renewed = heartbeat_done(&mut in_flight), if in_flight.is_some() => {
                    in_flight = None;
                    lease_lost |= self.after_heartbeat(job, renewed, &cancel);
                }
            }
        }
    }

    /// Acts on a heartbeat's answer; returns whether the lease is lost.
    fn after_heartbeat(
        &self,
        job: &Job,
        renewed: Result<bool, QueueError>,
        cancel: &CancellationToken,
    ) -> bool {
        match renewed {
            Ok(true) if !cancel.is_cancelled() => {
                info!(job = %job.id, "a newer job for this PR arrived; cancelling");
                cancel.cancel();
            }
            Ok(_) => {}
            Err(QueueError::LeaseLost(_)) => {
                warn!(job = %job.id, worker = %self.id, "lease lost; stopping the job");
                cancel.cancel();
                return true;
            }
            Err(err) => warn!(job = %job.id, error = %err, "heartbeat failed"),
        }
        false
    }

    /// Records the run's result, retrying briefly if the database hiccups.
    async fn settle(&self, job: &Job, result: Result<RunOutcome, JobError>) -> JobOutcome {
        const TRIES: u32 = 3;
        for attempt in 1..=TRIES {
            match self.record(job, &result).await {
                Ok(outcome) => return outcome,
                Err(QueueError::LeaseLost(_)) => return JobOutcome::LeaseLost,
                Err(err) if attempt < TRIES => {
                    warn!(job = %job.id, error = %err, "recording the job result failed; retrying");
                    sleep(self.settings.poll_interval).await;
                }
                Err(err) => {
                    error!(job = %job.id, error = %err, "could not record the job result");
                }
            }
        }
        JobOutcome::Unrecorded
    }

    async fn record(
        &self,
        job: &Job,
        result: &Result<RunOutcome, JobError>,
    ) -> Result<JobOutcome, QueueError> {
        match result {
            Ok(RunOutcome::Completed) => {
                self.queue.complete(job.id, &self.id).await?;
                Ok(JobOutcome::Succeeded)
            }
            Ok(RunOutcome::Cancelled) => {
                self.queue.cancelled(job.id, &self.id).await?;
                Ok(JobOutcome::Cancelled)
            }
            Err(err) => {
                let error = crate::errors::chain(err);
                let outcome = self
                    .queue
                    .fail(job.id, &self.id, &error, err.retry_decision())
                    .await?;
                // Logged after the queue decided: a retryable error on the last attempt
                // is a final failure, not a retry.
                Ok(match outcome {
                    FailOutcome::Retrying { run_at } => {
                        warn!(job = %job.id, %error, %run_at, "job failed; will retry");
                        JobOutcome::Retried
                    }
                    FailOutcome::Failed => {
                        error!(job = %job.id, %error, "job failed for good; giving up");
                        JobOutcome::Failed
                    }
                    FailOutcome::Cancelled => {
                        warn!(job = %job.id, %error, "job failed; cancelled for a newer one");
                        JobOutcome::Cancelled
                    }
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeat_is_capped_at_half_the_lease() {
        let config = WorkerConfig {
            lease: Duration::from_secs(10),
            heartbeat_interval: Duration::from_secs(60),
            ..WorkerConfig::default()
        };
        assert_eq!(
            Settings::from(&config).heartbeat_interval,
            Duration::from_secs(5)
        );
    }

    #[test]
    fn zero_intervals_become_one_millisecond() {
        let config = WorkerConfig {
            lease: Duration::ZERO,
            poll_interval: Duration::ZERO,
            heartbeat_interval: Duration::ZERO,
            ..WorkerConfig::default()
        };
        let settings = Settings::from(&config);
        assert_eq!(settings.poll_interval, Duration::from_millis(1));
        assert_eq!(settings.heartbeat_interval, Duration::from_millis(1));
    }

    #[test]
    fn errors_map_to_retry_decisions() {
        assert_eq!(
            JobError::Retryable("x".into()).retry_decision(),
            RetryDecision::Retry
        );
        assert_eq!(
            JobError::Permanent("x".into()).retry_decision(),
            RetryDecision::GiveUp
        );
    }
}
