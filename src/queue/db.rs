//! Connecting to SQLite or PostgreSQL, the embedded migrations, and reading job rows.

use std::borrow::Cow;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ColumnIndex, Connection, Decode, Row, SqlSafeStr, Type};
use tokio::time::{Instant, sleep, timeout};

use super::error::QueueError;
use super::types::{Job, JobId, JobKind, JobState, QueueOptions};
use crate::forge::UnknownForge;

pub(super) const SQLITE_MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "queue",
        include_str!("../../migrations/sqlite/0001_queue.sql"),
    ),
    (
        2,
        "threads",
        include_str!("../../migrations/sqlite/0002_threads.sql"),
    ),
    (
        3,
        "intake schema",
        include_str!("../../migrations/sqlite/0003_intake_schema.sql"),
    ),
    (
        4,
        "requested jobs",
        include_str!("../../migrations/sqlite/0004_requested_jobs.sql"),
    ),
    (
        5,
        "thread answers",
        include_str!("../../migrations/sqlite/0005_thread_answers.sql"),
    ),
    (
        6,
        "forges",
        include_str!("../../migrations/sqlite/0006_forges.sql"),
    ),
    (
        7,
        "checks",
        include_str!("../../migrations/sqlite/0007_checks.sql"),
    ),
];
const POSTGRES_MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "queue",
        include_str!("../../migrations/postgres/0001_queue.sql"),
    ),
    (
        2,
        "accept group",
        include_str!("../../migrations/postgres/0002_accept_group.sql"),
    ),
    (
        3,
        "threads",
        include_str!("../../migrations/postgres/0003_threads.sql"),
    ),
    (
        4,
        "requested jobs",
        include_str!("../../migrations/postgres/0004_requested_jobs.sql"),
    ),
    (
        5,
        "thread answers",
        include_str!("../../migrations/postgres/0005_thread_answers.sql"),
    ),
    (
        6,
        "forges",
        include_str!("../../migrations/postgres/0006_forges.sql"),
    ),
    (
        7,
        "intake in rust",
        include_str!("../../migrations/postgres/0007_intake_in_rust.sql"),
    ),
    (
        8,
        "checks",
        include_str!("../../migrations/postgres/0008_checks.sql"),
    ),
    (
        9,
        "store group",
        include_str!("../../migrations/postgres/0009_store_group.sql"),
    ),
    (
        10,
        "claim in order",
        include_str!("../../migrations/postgres/0010_claim_in_order.sql"),
    ),
];

/// How long start-up waits for PostgreSQL to take a connection. A refusal is retried within
/// it (the database may be starting alongside); any other error ends the wait at once.
const POSTGRES_START_TIMEOUT: Duration = Duration::from_secs(4);

/// The connection pool of one of the two supported databases.
#[derive(Clone)]
pub(crate) enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to whichever pool `$db` holds. The SQL the queue shares
/// between backends is written once with `$N` placeholders, which both databases accept.
macro_rules! with_pool {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::queue::db::Db::Sqlite($pool) => $body,
            $crate::queue::db::Db::Postgres($pool) => $body,
        }
    };
}
pub(crate) use with_pool;

impl Db {
    /// Opens the pool for `url` and applies the migrations.
    pub(crate) async fn connect(url: &str, options: &QueueOptions) -> Result<Db, QueueError> {
        let db = if url.starts_with("sqlite:") {
            Db::Sqlite(connect_sqlite(url, options).await?)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Db::Postgres(connect_postgres(url, options).await?)
        } else {
            return Err(QueueError::invalid_url(url));
        };
        db.migrate().await?;
        Ok(db)
    }

    /// `"sqlite"` or `"postgres"`.
    pub(crate) fn backend(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }

    async fn migrate(&self) -> Result<(), QueueError> {
        match self {
            Db::Sqlite(pool) => migrator(SQLITE_MIGRATIONS).run(pool).await?,
            Db::Postgres(pool) => migrator(POSTGRES_MIGRATIONS).run(pool).await?,
        }
        Ok(())
    }
}

async fn connect_sqlite(url: &str, options: &QueueOptions) -> Result<SqlitePool, QueueError> {
    let connect = SqliteConnectOptions::from_str(url)
        .map_err(|_| QueueError::invalid_url(url))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // A job is acknowledged to GitHub only after its commit is on disk.
        .synchronous(SqliteSynchronous::Full)
        // The committer's checkpoint task keeps the log short; see `checkpoint`.
        .pragma(
            "wal_autocheckpoint",
            super::checkpoint::WAL_AUTOCHECKPOINT_PAGES.to_string(),
        )
        // Statement journals and the scratch tables of `RETURNING` stay off the disk.
        .pragma("temp_store", "memory")
        .busy_timeout(options.sqlite_busy_timeout);
    // Each connection to `sqlite::memory:` is a database of its own, which vanishes when the
    // connection closes: keep exactly one, forever.
    let in_memory = is_in_memory(url);
    let pool = SqlitePoolOptions::new()
        .max_connections(if in_memory {
            1
        } else {
            options.max_connections.max(1)
        })
        .min_connections(u32::from(in_memory))
        .idle_timeout(if in_memory {
            None
        } else {
            Some(Duration::from_secs(600))
        })
        .max_lifetime(if in_memory {
            None
        } else {
            Some(Duration::from_secs(1800))
        })
        // A ping per checkout would cost a round trip on every query; a dead connection
        // surfaces as an error on its next use instead.
        .test_before_acquire(false)
        .connect_with(connect)
        .await?;
    Ok(pool)
}

/// Whether an SQLite URL names an in-memory database (one per connection).
pub(crate) fn is_in_memory(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

async fn connect_postgres(url: &str, options: &QueueOptions) -> Result<PgPool, QueueError> {
    let connect = PgConnectOptions::from_str(url).map_err(|_| QueueError::invalid_url(url))?;
    probe_postgres(&connect).await?;
    let pool = PgPoolOptions::new()
        .max_connections(options.max_connections.max(1))
        .test_before_acquire(false)
        .connect_with(connect)
        .await?;
    Ok(pool)
}

/// Opens (and closes) one connection, so that a database that is unreachable, refuses, or
/// rejects the login fails start-up within [`POSTGRES_START_TIMEOUT`] with its cause. (The
/// pool would retry a refusal, silently, until its 30 s acquire timeout, and then report only
/// that it timed out.)
async fn probe_postgres(options: &PgConnectOptions) -> Result<(), QueueError> {
    let deadline = Instant::now() + POSTGRES_START_TIMEOUT;
    let mut pause = Duration::from_millis(50);
    let mut last_refusal = None;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        match timeout(remaining, PgConnection::connect_with(options)).await {
            Ok(Ok(conn)) => {
                // A failed goodbye does not make the database unusable.
                let _ = conn.close().await;
                return Ok(());
            }
            Ok(Err(err)) if is_refusal(&err) => last_refusal = Some(err),
            Ok(Err(err)) => return Err(QueueError::Connect(err)),
            Err(_) => {
                return Err(match last_refusal {
                    Some(err) => QueueError::Connect(err),
                    None => QueueError::ConnectTimeout {
                        seconds: POSTGRES_START_TIMEOUT.as_secs(),
                    },
                });
            }
        }
        if Instant::now() + pause >= deadline {
            return Err(last_refusal.map_or(
                QueueError::ConnectTimeout {
                    seconds: POSTGRES_START_TIMEOUT.as_secs(),
                },
                QueueError::Connect,
            ));
        }
        sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(500));
    }
}

/// Errors worth another try while the database may still be starting: nothing listens yet,
/// "the database system is starting up" (57P03), or too many connections (53300).
fn is_refusal(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Io(io) => io.kind() == std::io::ErrorKind::ConnectionRefused,
        sqlx::Error::Database(db) => matches!(db.code().as_deref(), Some("57P03" | "53300")),
        _ => false,
    }
}

/// The migrations, embedded in the binary. Built by hand rather than with `sqlx::migrate!`
/// because that macro needs sqlx's `macros` feature, which the project does not enable.
fn migrator(migrations: &[(i64, &'static str, &'static str)]) -> Migrator {
    Migrator::with_migrations(
        migrations
            .iter()
            .map(|&(version, description, sql)| {
                Migration::new(
                    version,
                    Cow::Borrowed(description),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
}

/// The columns every job query returns, in the order [`job_from_row`] reads them by name.
macro_rules! job_columns {
    () => {
        "id, delivery_id, forge, repo_full_name, installation_id, pr_number, head_sha, kind, strategy, \
         payload, state, attempts, max_attempts, run_at, lease_owner, lease_until, \
         cancel_requested, last_error, created_at, finished_at"
    };
}
pub(crate) use job_columns;

/// Reads a row selected with [`job_columns!`] from either backend.
pub(crate) fn job_from_row<R>(row: &R) -> Result<Job, QueueError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> bool: Decode<'r, R::Database> + Type<R::Database>,
{
    let id = JobId(row.try_get::<i64, _>("id")?);
    let corrupt = |reason: String| QueueError::Corrupt { id, reason };
    let unfit = |error: StoredValueError| corrupt(error.to_string());
    let kind = match row.try_get::<String, _>("kind")?.as_str() {
        "review" => JobKind::Review {
            strategy: row.try_get("strategy")?,
        },
        "requested" => JobKind::Requested {
            strategy: row.try_get("strategy")?,
        },
        other => return Err(corrupt(format!("unknown kind {other:?}"))),
    };
    let payload: String = row.try_get("payload")?;
    let state: String = row.try_get("state")?;
    let forge: String = row.try_get("forge")?;
    let installation_id: Option<i64> = row.try_get("installation_id")?;
    Ok(Job {
        id,
        delivery_id: row.try_get("delivery_id")?,
        forge: forge
            .parse()
            .map_err(|e: UnknownForge| corrupt(e.to_string()))?,
        repo_full_name: row.try_get("repo_full_name")?,
        installation_id: installation_id.map(to_u64).transpose().map_err(unfit)?,
        pr_number: to_u64(row.try_get("pr_number")?).map_err(unfit)?,
        head_sha: row.try_get("head_sha")?,
        kind,
        payload: serde_json::from_str(&payload).map_err(|e| corrupt(format!("payload: {e}")))?,
        state: state.parse().map_err(corrupt)?,
        attempts: to_u32(row.try_get("attempts")?).map_err(unfit)?,
        max_attempts: to_u32(row.try_get("max_attempts")?).map_err(unfit)?,
        run_at: to_time(row.try_get("run_at")?).map_err(unfit)?,
        lease_owner: row.try_get("lease_owner")?,
        lease_until: to_optional_time(row.try_get("lease_until")?).map_err(unfit)?,
        cancel_requested: row.try_get("cancel_requested")?,
        last_error: row.try_get("last_error")?,
        created_at: to_time(row.try_get("created_at")?).map_err(unfit)?,
        finished_at: to_optional_time(row.try_get("finished_at")?).map_err(unfit)?,
    })
}

/// Reads the `state` column of a `RETURNING state` row.
pub(crate) fn state_from_row<R>(row: &R, id: JobId) -> Result<JobState, QueueError>
where
    R: Row,
    usize: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    let state: String = row.try_get(0usize)?;
    state
        .parse()
        .map_err(|reason| QueueError::Corrupt { id, reason })
}

/// Milliseconds since the Unix epoch, the unit of every stored timestamp.
pub(crate) fn to_millis(time: DateTime<Utc>) -> i64 {
    time.timestamp_millis()
}

/// A stored number that does not fit its field (the reason of [`QueueError::Corrupt`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum StoredValueError {
    /// Milliseconds outside the range of a date.
    #[error("bad timestamp {0}")]
    Timestamp(i64),
    /// A negative id or number.
    #[error("negative value {0}")]
    Negative(i64),
    /// A count past `u32`.
    #[error("out-of-range count {0}")]
    Count(i64),
}

fn to_time(millis: i64) -> Result<DateTime<Utc>, StoredValueError> {
    DateTime::from_timestamp_millis(millis).ok_or(StoredValueError::Timestamp(millis))
}

fn to_optional_time(millis: Option<i64>) -> Result<Option<DateTime<Utc>>, StoredValueError> {
    millis.map(to_time).transpose()
}

fn to_u64(value: i64) -> Result<u64, StoredValueError> {
    u64::try_from(value).map_err(|_| StoredValueError::Negative(value))
}

fn to_u32(value: i64) -> Result<u32, StoredValueError> {
    u32::try_from(value).map_err(|_| StoredValueError::Count(value))
}

#[cfg(test)]
mod tests;
