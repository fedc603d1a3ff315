//! [`Queue::accept_delivery`]: record a delivery and enqueue its job atomically.

use sqlx::Row;
use sqlx::postgres::PgPool;
use sqlx::sqlite::SqlitePool;

use super::db::{Db, state_from_row, to_millis, with_pool};
use super::error::QueueError;
use super::store::{Queue, now_millis, to_db_int};
use super::types::{Accepted, JobId, JobState, NewDelivery, NewJob, QueueOptions};

const INSERT_DELIVERY: &str = "INSERT INTO deliveries (delivery_id, event, action, received_at) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (delivery_id) DO NOTHING";

/// Supersedes the PR's queued jobs and flags its running job. Binds: $1 repo, $2 PR, $3 now.
/// `RETURNING state` gives the new state: `superseded` or (still) `running`.
const REPLACE_PR_JOBS: &str = "UPDATE jobs SET \
       state = CASE WHEN state = 'queued' THEN 'superseded' ELSE state END, \
       cancel_requested = CASE WHEN state = 'running' THEN TRUE ELSE cancel_requested END, \
       finished_at = CASE WHEN state = 'queued' THEN $3 ELSE finished_at END, \
       updated_at = $3 \
     WHERE repo_full_name = $1 AND pr_number = $2 AND state IN ('queued', 'running') \
     RETURNING state";

const INSERT_JOB: &str = "INSERT INTO jobs (delivery_id, repo_full_name, installation_id, \
       pr_number, head_sha, kind, strategy, payload, state, attempts, max_attempts, run_at, \
       cancel_requested, created_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'queued', 0, $9, $10, FALSE, $10, $10) \
     RETURNING id";

/// PostgreSQL: the stored function `redline_accept_delivery` (see the migration) does the
/// three steps in one round trip, serialized per pull request.
/// Binds: $1..$4 delivery, $5 repo, $6 PR, $7 installation, $8 head, $9 kind, $10 strategy,
/// $11 payload, $12 max attempts, $13 now.
const ACCEPT_POSTGRES: &str = "SELECT out_job_id, out_superseded, out_cancel_requested \
     FROM redline_accept_delivery($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";

impl Queue {
    /// Records `delivery` and, when given, enqueues `job` — atomically.
    ///
    /// A delivery id seen before returns [`Accepted::Duplicate`] and stores nothing. A new job
    /// supersedes the PR's queued jobs and asks its running job to stop. When this returns
    /// `Ok`, the delivery and job are committed.
    pub async fn accept_delivery(
        &self,
        delivery: NewDelivery,
        job: Option<NewJob>,
    ) -> Result<Accepted, QueueError> {
        let job = job
            .map(|job| StoredJob::new(job, &self.options))
            .transpose()?;
        let turn = self.write_turn().await;
        let accepted = match (&self.db, job) {
            (db, None) => record_only(db, &delivery).await?,
            (Db::Sqlite(pool), Some(job)) => accept_sqlite(pool, &delivery, &job).await?,
            (Db::Postgres(pool), Some(job)) => accept_postgres(pool, &delivery, &job).await?,
        };
        drop(turn);
        if matches!(accepted, Accepted::Queued { .. }) {
            self.wakeup.notify_one();
        }
        Ok(accepted)
    }
}

/// Inserts the delivery alone (a single statement is its own transaction on both backends).
async fn record_only(db: &Db, delivery: &NewDelivery) -> Result<Accepted, QueueError> {
    let inserted = with_pool!(db, pool => {
        sqlx::query(INSERT_DELIVERY)
            .bind(&delivery.delivery_id)
            .bind(&delivery.event)
            .bind(&delivery.action)
            .bind(to_millis(delivery.received_at))
            .execute(pool)
            .await?
            .rows_affected()
    });
    Ok(if inserted == 0 {
        Accepted::Duplicate
    } else {
        Accepted::Recorded
    })
}

async fn accept_sqlite(
    pool: &SqlitePool,
    delivery: &NewDelivery,
    job: &StoredJob,
) -> Result<Accepted, QueueError> {
    let now = now_millis();
    let mut tx = pool.begin().await?;
    let inserted = sqlx::query(INSERT_DELIVERY)
        .bind(&delivery.delivery_id)
        .bind(&delivery.event)
        .bind(&delivery.action)
        .bind(to_millis(delivery.received_at))
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if inserted == 0 {
        return Ok(Accepted::Duplicate);
    }
    let replaced = sqlx::query(REPLACE_PR_JOBS)
        .bind(&job.repo_full_name)
        .bind(job.pr_number)
        .bind(now)
        .fetch_all(&mut *tx)
        .await?;
    let mut superseded = 0;
    let mut cancel_requested = 0;
    for row in &replaced {
        match state_from_row(row, JobId(0))? {
            JobState::Superseded => superseded += 1,
            _ => cancel_requested += 1,
        }
    }
    let id: i64 = sqlx::query(INSERT_JOB)
        .bind(&delivery.delivery_id)
        .bind(&job.repo_full_name)
        .bind(job.installation_id)
        .bind(job.pr_number)
        .bind(&job.head_sha)
        .bind(job.kind)
        .bind(&job.strategy)
        .bind(&job.payload)
        .bind(job.max_attempts)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?
        .try_get(0usize)?;
    tx.commit().await?;
    Ok(Accepted::Queued {
        job_id: JobId(id),
        superseded,
        cancel_requested,
    })
}

async fn accept_postgres(
    pool: &PgPool,
    delivery: &NewDelivery,
    job: &StoredJob,
) -> Result<Accepted, QueueError> {
    let row = sqlx::query(ACCEPT_POSTGRES)
        .bind(&delivery.delivery_id)
        .bind(&delivery.event)
        .bind(&delivery.action)
        .bind(to_millis(delivery.received_at))
        .bind(&job.repo_full_name)
        .bind(job.pr_number)
        .bind(job.installation_id)
        .bind(&job.head_sha)
        .bind(job.kind)
        .bind(&job.strategy)
        .bind(&job.payload)
        .bind(job.max_attempts)
        .bind(now_millis())
        .fetch_one(pool)
        .await?;
    let job_id: Option<i64> = row.try_get("out_job_id")?;
    let Some(job_id) = job_id else {
        return Ok(Accepted::Duplicate);
    };
    let count = |column: &str| -> Result<u64, QueueError> {
        let count: Option<i64> = row.try_get(column)?;
        Ok(count.and_then(|n| u64::try_from(n).ok()).unwrap_or(0))
    };
    Ok(Accepted::Queued {
        job_id: JobId(job_id),
        superseded: count("out_superseded")?,
        cancel_requested: count("out_cancel_requested")?,
    })
}

/// A [`NewJob`] converted to column values.
struct StoredJob {
    repo_full_name: String,
    installation_id: i64,
    pr_number: i64,
    head_sha: Option<String>,
    kind: &'static str,
    strategy: Option<String>,
    payload: String,
    max_attempts: i64,
}

impl StoredJob {
    fn new(job: NewJob, options: &QueueOptions) -> Result<StoredJob, QueueError> {
        Ok(StoredJob {
            installation_id: to_db_int(job.installation_id, "installation_id")?,
            pr_number: to_db_int(job.pr_number, "pr_number")?,
            kind: job.kind.name(),
            strategy: job.kind.strategy().map(str::to_string),
            payload: job.payload.to_string(),
            max_attempts: i64::from(options.max_attempts.max(1)),
            repo_full_name: job.repo_full_name,
            head_sha: job.head_sha,
        })
    }
}
