//! Storing a group of deliveries in one transaction, on either backend.

use sqlx::Row;
use sqlx::postgres::PgPool;
use sqlx::sqlite::{SqliteConnection, SqlitePool};

use super::db::{Db, state_from_row, to_millis};
use super::error::QueueError;
use super::store::{now_millis, to_db_int};
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

/// PostgreSQL: the stored function `redline_accept_deliveries` (see the migrations) stores a
/// whole group in one statement, members in array order. Binds: $1..$4 deliveries, $5..$11
/// jobs (NULL repo: no job), $12 max attempts, $13 now.
const ACCEPT_POSTGRES: &str = "SELECT r.stored, r.job_id, r.superseded, r.cancel_requested \
     FROM redline_accept_deliveries($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
       WITH ORDINALITY AS r(stored, job_id, superseded, cancel_requested, position) \
     ORDER BY r.position";

/// A delivery and its optional job, converted to column values.
pub(super) struct Entry {
    delivery: NewDelivery,
    job: Option<StoredJob>,
    max_attempts: i64,
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
}

impl Entry {
    /// Checks and converts; a value the database cannot hold is refused here.
    pub(super) fn new(
        delivery: NewDelivery,
        job: Option<NewJob>,
        options: &QueueOptions,
    ) -> Result<Entry, QueueError> {
        let job = job.map(StoredJob::new).transpose()?;
        Ok(Entry {
            delivery,
            job,
            max_attempts: i64::from(options.max_attempts.max(1)),
        })
    }
}

impl StoredJob {
    fn new(job: NewJob) -> Result<StoredJob, QueueError> {
        Ok(StoredJob {
            installation_id: to_db_int(job.installation_id, "installation_id")?,
            pr_number: to_db_int(job.pr_number, "pr_number")?,
            kind: job.kind.name(),
            strategy: job.kind.strategy().map(str::to_string),
            payload: job.payload.to_string(),
            repo_full_name: job.repo_full_name,
            head_sha: job.head_sha,
        })
    }
}

/// Stores `entries` in one transaction, in order; one outcome per entry. On error nothing of
/// the group is stored.
pub(super) async fn store_group(db: &Db, entries: &[Entry]) -> Result<Vec<Accepted>, QueueError> {
    match db {
        Db::Sqlite(pool) => store_sqlite(pool, entries).await,
        Db::Postgres(pool) => store_postgres(pool, entries).await,
    }
}

async fn store_sqlite(pool: &SqlitePool, entries: &[Entry]) -> Result<Vec<Accepted>, QueueError> {
    let now = now_millis();
    let mut tx = pool.begin().await?;
    let mut accepted = Vec::with_capacity(entries.len());
    for entry in entries {
        match accept_sqlite(&mut tx, entry, now).await {
            Ok(outcome) => accepted.push(outcome),
            Err(err) => {
                // Roll back now, so the connection is clean before the members are retried.
                let _ = tx.rollback().await;
                return Err(err);
            }
        }
    }
    tx.commit().await?;
    Ok(accepted)
}

/// One entry, inside the group's transaction.
async fn accept_sqlite(
    conn: &mut SqliteConnection,
    entry: &Entry,
    now: i64,
) -> Result<Accepted, QueueError> {
    let delivery = &entry.delivery;
    let inserted = sqlx::query(INSERT_DELIVERY)
        .bind(&delivery.delivery_id)
        .bind(&delivery.event)
        .bind(&delivery.action)
        .bind(to_millis(delivery.received_at))
        .execute(&mut *conn)
        .await?
        .rows_affected();
    let Some(job) = &entry.job else {
        return Ok(if inserted == 0 {
            Accepted::Duplicate
        } else {
            Accepted::Recorded
        });
    };
    if inserted == 0 {
        return Ok(Accepted::Duplicate);
    }
    let replaced = sqlx::query(REPLACE_PR_JOBS)
        .bind(&job.repo_full_name)
        .bind(job.pr_number)
        .bind(now)
        .fetch_all(&mut *conn)
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
        .bind(entry.max_attempts)
        .bind(now)
        .fetch_one(&mut *conn)
        .await?
        .try_get(0usize)?;
    Ok(Accepted::Queued {
        job_id: JobId(id),
        superseded,
        cancel_requested,
    })
}

/// One statement (so one transaction) for the whole group.
async fn store_postgres(pool: &PgPool, entries: &[Entry]) -> Result<Vec<Accepted>, QueueError> {
    let columns = PgColumns::from(entries);
    let max_attempts = entries.first().map_or(1, |entry| entry.max_attempts);
    let rows = sqlx::query(ACCEPT_POSTGRES)
        .bind(columns.delivery_ids)
        .bind(columns.events)
        .bind(columns.actions)
        .bind(columns.received_at)
        .bind(columns.repos)
        .bind(columns.prs)
        .bind(columns.installations)
        .bind(columns.head_shas)
        .bind(columns.kinds)
        .bind(columns.strategies)
        .bind(columns.payloads)
        .bind(max_attempts)
        .bind(now_millis())
        .fetch_all(pool)
        .await?;
    if rows.len() != entries.len() {
        return Err(QueueError::Database(sqlx::Error::RowNotFound));
    }
    rows.iter().map(accepted_from_pg_row).collect()
}

fn accepted_from_pg_row(row: &sqlx::postgres::PgRow) -> Result<Accepted, QueueError> {
    let stored: bool = row.try_get("stored")?;
    let job_id: Option<i64> = row.try_get("job_id")?;
    let count = |column: &str| -> Result<u64, QueueError> {
        let count: Option<i64> = row.try_get(column)?;
        Ok(count.and_then(|n| u64::try_from(n).ok()).unwrap_or(0))
    };
    Ok(match (stored, job_id) {
        (false, _) => Accepted::Duplicate,
        (true, None) => Accepted::Recorded,
        (true, Some(job_id)) => Accepted::Queued {
            job_id: JobId(job_id),
            superseded: count("superseded")?,
            cancel_requested: count("cancel_requested")?,
        },
    })
}

/// A group as one array per column (PostgreSQL binds arrays, not rows).
#[derive(Default)]
struct PgColumns {
    delivery_ids: Vec<String>,
    events: Vec<String>,
    actions: Vec<Option<String>>,
    received_at: Vec<i64>,
    repos: Vec<Option<String>>,
    prs: Vec<Option<i64>>,
    installations: Vec<Option<i64>>,
    head_shas: Vec<Option<String>>,
    kinds: Vec<Option<String>>,
    strategies: Vec<Option<String>>,
    payloads: Vec<Option<String>>,
}

impl From<&[Entry]> for PgColumns {
    fn from(entries: &[Entry]) -> Self {
        let mut columns = PgColumns::default();
        for Entry { delivery, job, .. } in entries {
            columns.delivery_ids.push(delivery.delivery_id.clone());
            columns.events.push(delivery.event.clone());
            columns.actions.push(delivery.action.clone());
            columns.received_at.push(to_millis(delivery.received_at));
            columns
                .repos
                .push(job.as_ref().map(|job| job.repo_full_name.clone()));
            columns.prs.push(job.as_ref().map(|job| job.pr_number));
            columns
                .installations
                .push(job.as_ref().map(|job| job.installation_id));
            columns
                .head_shas
                .push(job.as_ref().and_then(|job| job.head_sha.clone()));
            columns
                .kinds
                .push(job.as_ref().map(|job| job.kind.to_string()));
            columns
                .strategies
                .push(job.as_ref().and_then(|job| job.strategy.clone()));
            columns
                .payloads
                .push(job.as_ref().map(|job| job.payload.clone()));
        }
        columns
    }
}
