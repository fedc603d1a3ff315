//! Claiming and finishing jobs: the statements, run inside the committer's transaction (see
//! [`super::intake`]; on PostgreSQL only in a group of several deliveries) or, on PostgreSQL,
//! straight on the pool.
//!
//! Invariants:
//! - A claim leases at most one job, never one of a pull request (of its forge) that has a
//!   running job (the database's unique index enforces it too), and reaps expired leases
//!   first at most once per [`REAP_INTERVAL_MS`], or whenever it finds nothing runnable.
//! - A finish changes only a job that is running under the caller's lease; otherwise the
//!   caller gets [`QueueError::LeaseLost`] and nothing changes.
//! - Only [`QueueError::Database`] errors abort the transaction a statement runs in; the other
//!   errors are the member's own outcome (its statement's effect stays, as it would alone).
//! - A claim that meets another claim of its pull request (a unique violation) answers `None`
//!   only where the failed statement is all that fails: on the pool, or on SQLite (which rolls
//!   back the statement alone). In a PostgreSQL transaction the error aborts the whole
//!   transaction, so it is returned: answering `None` there would let the `COMMIT` silently
//!   roll back every other member of the group.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use sqlx::postgres::{PgConnection, PgPool};
use sqlx::sqlite::SqliteConnection;

use super::db::{job_columns, job_from_row};
use super::error::QueueError;
use super::types::{Job, JobId, JobState};

/// The claim statement, with the row lock clause PostgreSQL adds (see
/// [`LeaseDb::claim_next`]). Binds: $1 worker, $2 lease end, $3 now.
macro_rules! claim_sql {
    ($lock:literal) => {
        concat!(
            "UPDATE jobs SET state = 'running', lease_owner = $1, lease_until = $2, \
               attempts = attempts + 1, updated_at = $3 \
             WHERE id = (SELECT j.id FROM jobs j \
               WHERE ((j.state = 'queued' AND j.run_at <= $3) \
                   OR (j.state = 'running' AND j.lease_until < $3 \
                       AND NOT j.cancel_requested AND j.attempts < j.max_attempts)) \
                 AND NOT EXISTS (SELECT 1 FROM jobs o \
                   WHERE o.forge = j.forge AND o.repo_full_name = j.repo_full_name \
                     AND o.pr_number = j.pr_number \
                     AND o.state = 'running' AND o.id <> j.id) \
               ORDER BY j.run_at, j.id LIMIT 1 ",
            $lock,
            ") RETURNING ",
            job_columns!()
        )
    };
}

/// Settles expired leases that must not be re-run: asked to stop → cancelled, last attempt →
/// failed. Binds: $1 now.
macro_rules! reap_sql {
    ($lock:literal) => {
        concat!(
            "UPDATE jobs SET \
               state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'failed' END, \
               last_error = CASE WHEN cancel_requested THEN last_error \
                 ELSE 'worker lease expired on the last attempt' END, \
               lease_until = NULL, finished_at = $1, updated_at = $1 \
             WHERE id IN (SELECT id FROM jobs \
               WHERE state = 'running' AND lease_until < $1 \
                 AND (cancel_requested OR attempts >= max_attempts) ",
            $lock,
            ")"
        )
    };
}

/// Binds: $1 id, $2 worker, $3 state, $4 now.
const FINISH_SQL: &str = "UPDATE jobs SET state = $3, lease_until = NULL, finished_at = $4, \
       updated_at = $4 \
     WHERE id = $1 AND lease_owner = $2 AND state = 'running'";

/// How often (milliseconds) a busy queue settles jobs of dead workers; an idle one does it
/// whenever a claim finds nothing.
const REAP_INTERVAL_MS: i64 = 1000;

/// A worker asking for the oldest runnable job.
#[derive(Debug, Clone)]
pub(super) struct ClaimRequest {
    pub worker: String,
    pub lease: Duration,
}

/// A worker settling the job it holds.
#[derive(Debug, Clone)]
pub(super) struct FinishRequest {
    pub id: JobId,
    pub worker: String,
    pub state: JobState,
}

/// When expired leases were last reaped (shared by a queue's clones and its committer).
#[derive(Debug, Clone, Default)]
pub(super) struct Reaper {
    last_ms: Arc<AtomicI64>,
}

impl Reaper {
    /// Whether the periodic reap is due at `now`.
    fn due(&self, now: i64) -> bool {
        now.saturating_sub(self.last_ms.load(Ordering::Relaxed)) >= REAP_INTERVAL_MS
    }

    fn reaped(&self, now: i64) {
        self.last_ms.store(now, Ordering::Relaxed);
    }
}

/// Where the lease statements run: inside the committer's SQLite transaction, inside the
/// committer's PostgreSQL transaction, or straight on the PostgreSQL pool. The claim policy
/// and the statements are written once for all three.
pub(super) enum LeaseDb<'a> {
    Sqlite(&'a mut SqliteConnection),
    Postgres(&'a PgPool),
    /// A connection in the committer's transaction (a group's deliveries, completions, claims).
    PostgresTransaction(&'a mut PgConnection),
}

/// Outcomes of a group's completions and claims, each the member's own.
pub(super) type WorkerOutcomes = (
    Vec<Result<(), QueueError>>,
    Vec<Result<Option<Job>, QueueError>>,
);

/// Runs `$body` with `$exec` bound to the executor `$db` holds (each arm type-checks on its
/// own, so the body is written once for both databases).
macro_rules! on_lease_db {
    ($db:expr, $exec:ident => $body:expr) => {
        match $db {
            LeaseDb::Sqlite(conn) => {
                let $exec = &mut **conn;
                $body
            }
            LeaseDb::Postgres(pool) => {
                let $exec = *pool;
                $body
            }
            LeaseDb::PostgresTransaction(conn) => {
                let $exec = &mut **conn;
                $body
            }
        }
    };
}

impl LeaseDb<'_> {
    /// Settles `finishes`, then leases for `claims`, each in arrival order, in the transaction
    /// this connection is in: each member's own outcome, or the database error that aborts
    /// the transaction (and with it the whole group).
    pub(super) async fn settle_in_transaction(
        &mut self,
        finishes: &[FinishRequest],
        claims: &[ClaimRequest],
        reaper: &Reaper,
        now: i64,
    ) -> Result<WorkerOutcomes, QueueError> {
        let mut finished = Vec::with_capacity(finishes.len());
        for request in finishes {
            finished.push(own_outcome(self.finish(request, now).await)?);
        }
        let mut claimed = Vec::with_capacity(claims.len());
        for request in claims {
            claimed.push(own_outcome(self.claim(request, reaper, now).await)?);
        }
        Ok((finished, claimed))
    }

    /// Leases the oldest runnable job to the requester, reaping expired leases first when
    /// the periodic reap is due, or when nothing is runnable.
    pub(super) async fn claim(
        &mut self,
        request: &ClaimRequest,
        reaper: &Reaper,
        now: i64,
    ) -> Result<Option<Job>, QueueError> {
        let reaped_first = reaper.due(now);
        if reaped_first {
            self.reap(reaper, now).await?;
        }
        let job = self.claim_next(request, now).await?;
        if job.is_some() || reaped_first {
            return Ok(job);
        }
        // Nothing runnable: a dead worker's job may be blocking its PR.
        if self.reap(reaper, now).await? == 0 {
            return Ok(None);
        }
        self.claim_next(request, now).await
    }

    /// Settles a job the requester holds; [`QueueError::LeaseLost`] when it holds none.
    pub(super) async fn finish(
        &mut self,
        request: &FinishRequest,
        now: i64,
    ) -> Result<(), QueueError> {
        let updated = on_lease_db!(self, exec => {
            sqlx::query(FINISH_SQL)
                .bind(request.id.0)
                .bind(&request.worker)
                .bind(request.state.as_str())
                .bind(now)
                .execute(exec)
                .await?
                .rows_affected()
        });
        if updated == 0 {
            return Err(QueueError::LeaseLost(request.id));
        }
        Ok(())
    }

    async fn claim_next(
        &mut self,
        request: &ClaimRequest,
        now: i64,
    ) -> Result<Option<Job>, QueueError> {
        // SQLite runs the claim as one atomic write; PostgreSQL workers pass over a row another
        // one is taking.
        let sql = match self {
            LeaseDb::Sqlite(_) => claim_sql!(""),
            LeaseDb::Postgres(_) | LeaseDb::PostgresTransaction(_) => {
                claim_sql!("FOR UPDATE SKIP LOCKED")
            }
        };
        // See the module's invariants: in a PostgreSQL transaction the conflict is the group's.
        let conflict_fails_statement_only = !matches!(self, LeaseDb::PostgresTransaction(_));
        let claimed = on_lease_db!(self, exec => {
            sqlx::query(sql)
                .bind(&request.worker)
                .bind(millis_after(now, request.lease))
                .bind(now)
                .fetch_optional(exec)
                .await
                .map(|row| row.map(|row| job_from_row(&row)))
        });
        match claimed {
            // Another claim of a job of the same PR committed first.
            Err(sqlx::Error::Database(err))
                if err.is_unique_violation() && conflict_fails_statement_only =>
            {
                Ok(None)
            }
            Err(err) => Err(err.into()),
            Ok(job) => job.transpose(),
        }
    }

    async fn reap(&mut self, reaper: &Reaper, now: i64) -> Result<u64, QueueError> {
        reaper.reaped(now);
        // On PostgreSQL, rows another worker is settling are skipped rather than waited for.
        let sql = match self {
            LeaseDb::Sqlite(_) => reap_sql!(""),
            LeaseDb::Postgres(_) | LeaseDb::PostgresTransaction(_) => {
                reap_sql!("FOR UPDATE SKIP LOCKED")
            }
        };
        Ok(on_lease_db!(self, exec => {
            sqlx::query(sql).bind(now).execute(exec).await?.rows_affected()
        }))
    }
}

/// A member's own outcome, or (a database error) the error that aborts its transaction.
fn own_outcome<T>(result: Result<T, QueueError>) -> Result<Result<T, QueueError>, QueueError> {
    match result {
        Err(QueueError::Database(err)) => Err(QueueError::Database(err)),
        other => Ok(other),
    }
}

/// `now` (milliseconds) plus `duration`, saturating.
pub(super) fn millis_after(now: i64, duration: Duration) -> i64 {
    now.saturating_add(i64::try_from(duration.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use sqlx::{Connection, Executor, PgConnection};

    use super::job_columns;

    use super::super::db::Db;
    use crate::queue::QueueOptions;

    /// On PostgreSQL the claim walks the live jobs' index in order and stops at the first job
    /// it can take: a plain index scan, which marks the entries of dead row versions (every
    /// superseded or finished job leaves one) as it passes. A bitmap scan never marks them, so
    /// after a burst of pushes every claim would visit all of them until autovacuum came.
    #[tokio::test]
    async fn a_postgres_claim_walks_the_live_jobs_in_order() {
        let Ok(base) = std::env::var("REDLINE_TEST_POSTGRES_URL") else {
            // As the integration tests do: a skip never passes silently on CI.
            assert!(
                std::env::var_os("CI").is_none(),
                "REDLINE_TEST_POSTGRES_URL is not set on CI, where it is expected"
            );
            eprintln!("skipped: REDLINE_TEST_POSTGRES_URL is not set");
            return;
        };
        let schema = format!("claim_plan_{}", std::process::id());
        let mut admin = PgConnection::connect(&base).await.expect("connect");
        let create = format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}");
        admin
            .execute(sqlx::AssertSqlSafe(create))
            .await
            .expect("schema");
        let separator = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{separator}options[search_path]={schema}");
        let Db::Postgres(pool) = Db::connect(&url, &QueueOptions::default())
            .await
            .expect("migrated")
        else {
            panic!("a PostgreSQL URL opens PostgreSQL");
        };
        // Many jobs of the past and a few live ones, as the planner will meet them.
        pool.execute(
            "INSERT INTO jobs (delivery_id, forge, repo_full_name, installation_id, pr_number, \
               kind, payload, state, max_attempts, run_at, created_at, updated_at) \
             SELECT 'd' || n, 'github', 'o/r', 1, n % 64, 'review', '{}', \
               CASE WHEN n > 5000 - 5 THEN 'queued' \
                 WHEN n % 2 = 0 THEN 'superseded' ELSE 'succeeded' END, \
               3, n, n, n \
             FROM generate_series(1, 5000) AS n; \
             ANALYZE jobs",
        )
        .await
        .expect("jobs");
        let plan: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "EXPLAIN {}",
            claim_sql!("FOR UPDATE SKIP LOCKED")
        )))
        .bind("worker")
        .bind(10_000_i64)
        .bind(9_000_i64)
        .fetch_all(&pool)
        .await
        .expect("plan");
        pool.close().await;
        let drop = format!("DROP SCHEMA {schema} CASCADE");
        admin
            .execute(sqlx::AssertSqlSafe(drop))
            .await
            .expect("drop");
        let plan = plan.join("\n");
        assert!(
            plan.contains("Index Scan using jobs_runnable_in_order on jobs j"),
            "{plan}"
        );
        assert!(!plan.contains("Bitmap") && !plan.contains("Sort"), "{plan}");
    }
}
