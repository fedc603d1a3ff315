//! [`Queue`]: connection, the job life cycle (claim, lease, heartbeat, finish) and inspection.

use crate::forge::ForgeKind;
use crate::text::prefix_at_char_boundary;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::Row;
use tokio::sync::{Mutex, MutexGuard, Notify};

use super::db::{Db, job_columns, job_from_row, state_from_row, to_millis, with_pool};
use super::error::QueueError;
use super::intake::{CommitterParts, Intake};
use super::lease::{ClaimRequest, FinishRequest, Reaper, millis_after};
use super::types::{FailOutcome, Job, JobId, JobState, QueueOptions, RetryDecision};

/// Longest failure reason kept in the database.
const MAX_REASON_BYTES: usize = 4000;

/// The durable job queue, on SQLite or PostgreSQL. Cheap to clone (clones share the pool).
///
/// Timestamps come from this process's clock; workers on several machines need synced clocks
/// (leases are tens of seconds, so ordinary NTP drift does not matter).
#[derive(Clone)]
pub struct Queue {
    pub(super) db: Db,
    pub(super) options: Arc<QueueOptions>,
    pub(super) wakeup: Arc<Notify>,
    /// SQLite only: writers of this process take turns here instead of spinning in SQLite's
    /// busy handler, whose sleeps would dominate tail latency.
    sqlite_writer: Option<Arc<Mutex<()>>>,
    /// Hands deliveries to the group committer.
    pub(super) intake: Arc<Intake>,
}

impl fmt::Debug for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue")
            .field("backend", &self.db.backend())
            .field("options", &self.options)
            .finish()
    }
}

impl Queue {
    /// Connects to `sqlite://PATH` (created if missing, WAL mode, busy timeout) or
    /// `postgres://...`, and applies the migrations. Starts the task that commits deliveries
    /// on the current Tokio runtime; use the queue on that runtime.
    pub async fn connect(url: &str) -> Result<Queue, QueueError> {
        Queue::connect_with(url, QueueOptions::default()).await
    }

    /// [`Queue::connect`] with explicit options.
    pub async fn connect_with(url: &str, options: QueueOptions) -> Result<Queue, QueueError> {
        let db = Db::connect(url, &options).await?;
        let sqlite_writer = matches!(db, Db::Sqlite(_)).then(|| Arc::new(Mutex::new(())));
        let wakeup = Arc::new(Notify::new());
        let intake = Intake::start(CommitterParts {
            db: db.clone(),
            url: url.to_string(),
            writer: sqlite_writer.clone(),
            wakeup: Arc::clone(&wakeup),
            reaper: Reaper::default(),
            clock: options.clock.clone(),
        });
        Ok(Queue {
            db,
            options: Arc::new(options),
            wakeup,
            sqlite_writer,
            intake: Arc::new(intake),
        })
    }

    /// The options in force.
    pub fn options(&self) -> &QueueOptions {
        &self.options
    }

    /// The current time by the queue's clock, in the database's milliseconds.
    pub(super) fn now_millis(&self) -> i64 {
        self.options.clock.now_millis()
    }

    /// `"sqlite"` or `"postgres"`.
    pub(crate) fn backend(&self) -> &'static str {
        self.db.backend()
    }

    /// Waits for this process's turn to write (SQLite); `None` on PostgreSQL.
    pub(super) async fn write_turn(&self) -> Option<MutexGuard<'_, ()>> {
        match &self.sqlite_writer {
            Some(lock) => Some(lock.lock().await),
            None => None,
        }
    }

    /// Resolves when this process enqueued a job (a hint for idle workers; they poll anyway,
    /// since other processes enqueue too).
    pub(crate) async fn job_enqueued(&self) {
        self.wakeup.notified().await;
    }

    /// Leases the oldest runnable job to `worker_id` for `lease`.
    ///
    /// Runnable: queued and due, or running with an expired lease (its worker died; the queue
    /// is at-least-once). A job is never claimed while another job of its PR is running.
    /// The claim is committed by the intake's committer, in the transaction of the deliveries
    /// and other claims waiting with it (on PostgreSQL, only with two deliveries or more; see
    /// [`super::intake`]).
    pub async fn claim(&self, worker_id: &str, lease: Duration) -> Result<Option<Job>, QueueError> {
        let request = ClaimRequest {
            worker: worker_id.to_string(),
            lease,
        };
        self.intake.claim(request).await
    }

    /// Extends the lease of a job `worker_id` holds. Returns whether the job was asked to stop.
    pub async fn heartbeat(
        &self,
        id: JobId,
        worker_id: &str,
        lease: Duration,
    ) -> Result<bool, QueueError> {
        let _turn = self.write_turn().await;
        let now = self.now_millis();
        let lease_until = millis_after(now, lease);
        let cancel: Option<bool> = with_pool!(&self.db, pool => {
            sqlx::query(
                "UPDATE jobs SET lease_until = $3, updated_at = $4 \
                 WHERE id = $1 AND lease_owner = $2 AND state = 'running' \
                 RETURNING cancel_requested",
            )
            .bind(id.0)
            .bind(worker_id)
            .bind(lease_until)
            .bind(now)
            .fetch_optional(pool)
            .await?
            .map(|row| row.try_get::<bool, _>(0usize))
            .transpose()?
        });
        cancel.ok_or(QueueError::LeaseLost(id))
    }

    /// Whether the job was asked to stop (or already stopped for that reason).
    pub async fn is_cancelled(&self, id: JobId) -> Result<bool, QueueError> {
        let job = self.job(id).await?.ok_or(QueueError::NotFound(id))?;
        Ok(job.cancel_requested || matches!(job.state, JobState::Cancelled | JobState::Superseded))
    }

    /// Marks a job `worker_id` holds as succeeded.
    pub async fn complete(&self, id: JobId, worker_id: &str) -> Result<(), QueueError> {
        self.finish(id, worker_id, JobState::Succeeded).await
    }

    /// Marks a job `worker_id` holds as cancelled (it stopped at a safe point).
    pub async fn cancelled(&self, id: JobId, worker_id: &str) -> Result<(), QueueError> {
        self.finish(id, worker_id, JobState::Cancelled).await
    }

    /// Settles a job `worker_id` holds, through the committer (see [`Queue::claim`]).
    async fn finish(&self, id: JobId, worker_id: &str, state: JobState) -> Result<(), QueueError> {
        let request = FinishRequest {
            id,
            worker: worker_id.to_string(),
            state,
        };
        self.intake.finish(request).await
    }

    /// Records a failure of a job `worker_id` holds. With [`RetryDecision::Retry`] and attempts
    /// left, the job is queued again after an exponential backoff; otherwise it fails with
    /// `reason`. A job asked to stop is cancelled rather than retried.
    pub async fn fail(
        &self,
        id: JobId,
        worker_id: &str,
        reason: &str,
        retry: RetryDecision,
    ) -> Result<FailOutcome, QueueError> {
        let (attempts, max_attempts): (i64, i64) = with_pool!(&self.db, pool => {
            let row = sqlx::query(
                "SELECT attempts, max_attempts FROM jobs \
                 WHERE id = $1 AND lease_owner = $2 AND state = 'running'",
            )
            .bind(id.0)
            .bind(worker_id)
            .fetch_optional(pool)
            .await?
            .ok_or(QueueError::LeaseLost(id))?;
            (row.try_get(0usize)?, row.try_get(1usize)?)
        });
        let retry = retry == RetryDecision::Retry && attempts < max_attempts;
        let backoff = self
            .options
            .backoff(u32::try_from(attempts).unwrap_or(u32::MAX));
        let _turn = self.write_turn().await;
        let now = self.now_millis();
        let run_at = millis_after(now, backoff);
        let state = with_pool!(&self.db, pool => {
            sqlx::query(
                "UPDATE jobs SET \
                   state = CASE WHEN cancel_requested THEN 'cancelled' \
                     WHEN $3 THEN 'queued' ELSE 'failed' END, \
                   finished_at = CASE WHEN cancel_requested OR NOT $3 THEN $6 ELSE NULL END, \
                   run_at = CASE WHEN $3 THEN $4 ELSE run_at END, \
                   lease_until = NULL, last_error = $5, updated_at = $6 \
                 WHERE id = $1 AND lease_owner = $2 AND state = 'running' AND attempts = $7 \
                 RETURNING state",
            )
            .bind(id.0)
            .bind(worker_id)
            .bind(retry)
            .bind(run_at)
            .bind(prefix_at_char_boundary(reason, MAX_REASON_BYTES))
            .bind(now)
            .bind(attempts)
            .fetch_optional(pool)
            .await?
            .map(|row| state_from_row(&row, id))
            .transpose()?
        });
        match state {
            None => Err(QueueError::LeaseLost(id)),
            Some(JobState::Queued) => Ok(FailOutcome::Retrying {
                run_at: from_millis(run_at),
            }),
            Some(JobState::Cancelled) => Ok(FailOutcome::Cancelled),
            Some(_) => Ok(FailOutcome::Failed),
        }
    }

    /// One job by id.
    pub async fn job(&self, id: JobId) -> Result<Option<Job>, QueueError> {
        with_pool!(&self.db, pool => {
            sqlx::query(concat!("SELECT ", job_columns!(), " FROM jobs WHERE id = $1"))
                .bind(id.0)
                .fetch_optional(pool)
                .await?
                .map(|row| job_from_row(&row))
                .transpose()
        })
    }

    /// The jobs of one pull (merge) request of `forge`, oldest first.
    pub async fn jobs_for_pr(
        &self,
        forge: ForgeKind,
        repo_full_name: &str,
        pr_number: u64,
    ) -> Result<Vec<Job>, QueueError> {
        let pr_number = to_db_int(pr_number, "pr_number")?;
        with_pool!(&self.db, pool => {
            sqlx::query(concat!(
                "SELECT ", job_columns!(),
                " FROM jobs WHERE forge = $1 AND repo_full_name = $2 AND pr_number = $3 \
                 ORDER BY id"
            ))
            .bind(forge.as_str())
            .bind(repo_full_name)
            .bind(pr_number)
            .fetch_all(pool)
            .await?
            .iter()
            .map(job_from_row)
            .collect()
        })
    }

    /// How many deliveries are recorded (dedupe table size).
    pub async fn delivery_count(&self) -> Result<u64, QueueError> {
        self.count("SELECT COUNT(*) FROM deliveries").await
    }

    /// Jobs waiting in the queue (state `queued`, due or not).
    pub async fn depth(&self) -> Result<u64, QueueError> {
        self.count("SELECT COUNT(*) FROM jobs WHERE state = 'queued'")
            .await
    }

    async fn count(&self, sql: &'static str) -> Result<u64, QueueError> {
        let count: i64 = with_pool!(&self.db, pool => {
            sqlx::query(sql).fetch_one(pool).await?.try_get(0usize)?
        });
        Ok(u64::try_from(count).unwrap_or(0))
    }

    /// Number of jobs in each state (every state present, zero included).
    pub async fn counts_by_state(&self) -> Result<BTreeMap<JobState, u64>, QueueError> {
        let rows: Vec<(String, i64)> = with_pool!(&self.db, pool => {
            sqlx::query("SELECT state, COUNT(*) FROM jobs GROUP BY state")
                .fetch_all(pool)
                .await?
                .iter()
                .map(|row| Ok((row.try_get(0usize)?, row.try_get(1usize)?)))
                .collect::<Result<_, sqlx::Error>>()?
        });
        let mut counts: BTreeMap<JobState, u64> =
            JobState::ALL.into_iter().map(|state| (state, 0)).collect();
        for (state, count) in rows {
            if let Ok(state) = state.parse() {
                counts.insert(state, u64::try_from(count).unwrap_or(0));
            }
        }
        Ok(counts)
    }

    /// Deletes deliveries received, finished jobs last updated, and review comments
    /// claimed for an answer, before `before` (an old comment's answer still carries its
    /// marker in the thread). Dismissed findings stay. Returns the number of rows deleted.
    pub async fn prune(&self, before: DateTime<Utc>) -> Result<u64, QueueError> {
        let before = to_millis(before);
        let _turn = self.write_turn().await;
        let deleted = with_pool!(&self.db, pool => {
            let deliveries = sqlx::query("DELETE FROM deliveries WHERE received_at < $1")
                .bind(before)
                .execute(pool)
                .await?
                .rows_affected();
            let jobs = sqlx::query(
                "DELETE FROM jobs WHERE updated_at < $1 \
                 AND state IN ('succeeded', 'failed', 'cancelled', 'superseded')",
            )
            .bind(before)
            .execute(pool)
            .await?
            .rows_affected();
            let claims = sqlx::query("DELETE FROM answered_comments WHERE answered_at < $1")
                .bind(before)
                .execute(pool)
                .await?
                .rows_affected();
            deliveries + jobs + claims
        });
        Ok(deleted)
    }

    /// Closes the connection pool; later operations fail. Clones share the pool.
    pub async fn close(&self) {
        with_pool!(&self.db, pool => pool.close().await);
    }

    /// Checks that the database answers (for `/healthz`).
    pub async fn ping(&self) -> Result<(), QueueError> {
        with_pool!(&self.db, pool => {
            sqlx::query("SELECT 1").execute(pool).await?;
        });
        Ok(())
    }
}

pub(super) fn to_db_int(value: u64, field: &'static str) -> Result<i64, QueueError> {
    i64::try_from(value).map_err(|_| QueueError::InvalidJob {
        reason: format!("{field} {value} is out of range"),
    })
}

fn from_millis(millis: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(millis).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(prefix_at_char_boundary("héllo", 2), "h");
        assert_eq!(prefix_at_char_boundary("hello", 10), "hello");
    }
}
