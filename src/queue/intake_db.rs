//! Storing a group of the committer's members, on either backend (SQLite in
//! [`super::intake_sqlite`]): one transaction on SQLite; on PostgreSQL one statement for the
//! deliveries, and claims and completions on the pool (the committer gets them only from
//! SQLite queues).

use sqlx::postgres::PgPool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{Connection, Row};

use super::db::{Db, is_in_memory, to_millis};
use super::error::QueueError;
use super::intake_sqlite::store_sqlite;
use super::lease::{ClaimRequest, FinishRequest, LeaseDb, Reaper};
use super::store::{now_millis, to_db_int};
use super::types::{Accepted, Job, JobId, NewDelivery, NewJob, QueueOptions};
use crate::forge::ForgeKind;

/// PostgreSQL: the stored function `redline_accept_deliveries` (see the migrations) stores a
/// whole group in one statement, members in array order. Binds: $1 forges, $2..$5
/// deliveries, $6..$12 jobs (NULL repo: no job), $13 max attempts, $14 now.
const ACCEPT_POSTGRES: &str = "SELECT r.stored, r.job_id, r.superseded, r.cancel_requested \
     FROM redline_accept_deliveries($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
       $14) \
       WITH ORDINALITY AS r(stored, job_id, superseded, cancel_requested, position) \
     ORDER BY r.position";

/// A delivery and its optional job, converted to column values.
pub(super) struct Entry {
    pub delivery: NewDelivery,
    pub job: Option<StoredJob>,
    pub max_attempts: i64,
}

/// A [`NewJob`] converted to column values.
pub(super) struct StoredJob {
    /// The delivery's forge too ([`Entry::new`] refuses a job of another forge).
    pub forge: ForgeKind,
    pub repo_full_name: String,
    pub installation_id: Option<i64>,
    pub pr_number: i64,
    pub head_sha: Option<String>,
    pub kind: &'static str,
    pub strategy: Option<String>,
    pub payload: String,
    /// Queueing it supersedes the PR's earlier jobs ([`super::types::JobKind::replaces_earlier`]).
    pub replaces: bool,
}

impl Entry {
    /// Checks and converts; a value the database cannot hold is refused here.
    pub(super) fn new(
        delivery: NewDelivery,
        job: Option<NewJob>,
        options: &QueueOptions,
    ) -> Result<Entry, QueueError> {
        if let Some(job) = job.as_ref().filter(|job| job.forge != delivery.forge) {
            return Err(QueueError::InvalidJob {
                reason: format!(
                    "a {} delivery cannot queue a {} job",
                    delivery.forge, job.forge
                ),
            });
        }
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
            forge: job.forge,
            installation_id: job
                .installation_id
                .map(|id| to_db_int(id, "installation_id"))
                .transpose()?,
            pr_number: to_db_int(job.pr_number, "pr_number")?,
            kind: job.kind.name(),
            replaces: job.kind.replaces_earlier(),
            strategy: job.kind.strategy().map(str::to_string),
            payload: job.payload.to_string(),
            repo_full_name: job.repo_full_name,
            head_sha: job.head_sha,
        })
    }
}

/// The work of one group, by kind, each in arrival order.
pub(super) struct Work<'a> {
    pub deliveries: &'a [Entry],
    pub finishes: &'a [FinishRequest],
    pub claims: &'a [ClaimRequest],
}

impl<'a> Work<'a> {
    /// How many members.
    pub(super) fn len(&self) -> usize {
        self.deliveries.len() + self.finishes.len() + self.claims.len()
    }

    /// Each member as a group of its own, deliveries first, then finishes, then claims.
    pub(super) fn singles(&self) -> impl Iterator<Item = Work<'a>> + use<'a> {
        let deliveries = self.deliveries.iter().map(|entry| Work {
            deliveries: std::slice::from_ref(entry),
            finishes: &[],
            claims: &[],
        });
        let finishes = self.finishes.iter().map(|request| Work {
            deliveries: &[],
            finishes: std::slice::from_ref(request),
            claims: &[],
        });
        let claims = self.claims.iter().map(|request| Work {
            deliveries: &[],
            finishes: &[],
            claims: std::slice::from_ref(request),
        });
        deliveries.chain(finishes).chain(claims)
    }
}

/// One outcome per member of a [`Work`], in the same order.
#[derive(Debug, Default)]
pub(super) struct Outcomes {
    pub deliveries: Vec<Result<Accepted, QueueError>>,
    pub finishes: Vec<Result<(), QueueError>>,
    pub claims: Vec<Result<Option<Job>, QueueError>>,
}

impl Outcomes {
    /// The outcome of a one-member `work` whose transaction failed with `err`.
    pub(super) fn failed(work: &Work<'_>, err: QueueError) -> Outcomes {
        let mut outcomes = Outcomes::default();
        if !work.deliveries.is_empty() {
            outcomes.deliveries.push(Err(err));
        } else if !work.finishes.is_empty() {
            outcomes.finishes.push(Err(err));
        } else if !work.claims.is_empty() {
            outcomes.claims.push(Err(err));
        }
        outcomes
    }

    /// Appends `more` after these, kind by kind.
    pub(super) fn extend(&mut self, more: Outcomes) {
        self.deliveries.extend(more.deliveries);
        self.finishes.extend(more.finishes);
        self.claims.extend(more.claims);
    }
}

/// Where the committer stores its groups. On an SQLite file, a connection of its own kept
/// from group to group: in WAL mode a connection drops its page cache whenever another one
/// wrote, and the committer is the only regular writer, so its cache stays valid (a pool hands
/// out its idle connections in turn). In memory (one database per connection) and on
/// PostgreSQL, the pool.
pub(super) struct Store {
    db: Db,
    /// The options of the committer's own connection (SQLite files only).
    own: Option<SqliteConnectOptions>,
    conn: Option<SqliteConnection>,
}

impl Store {
    /// `url` is the queue's, to tell an in-memory SQLite database.
    pub(super) fn new(db: Db, url: &str) -> Store {
        let own = match &db {
            Db::Sqlite(pool) if !is_in_memory(url) => Some((*pool.connect_options()).clone()),
            _ => None,
        };
        Store {
            db,
            own,
            conn: None,
        }
    }

    /// Stores `work`; one outcome per member. On error nothing of the deliveries is stored
    /// (and, on SQLite, nothing of the rest). Once the pool is closed, nothing is stored.
    pub(super) async fn store(
        &mut self,
        work: &Work<'_>,
        reaper: &Reaper,
    ) -> Result<Outcomes, QueueError> {
        let pool = match &self.db {
            Db::Postgres(pool) => return store_postgres_work(pool, work, reaper).await,
            Db::Sqlite(pool) => pool,
        };
        if pool.is_closed() {
            self.conn = None;
            return Err(sqlx::Error::PoolClosed.into());
        }
        let Some(options) = &self.own else {
            let mut conn = pool.acquire().await?;
            return store_sqlite(&mut conn, work, reaper).await;
        };
        let conn = match &mut self.conn {
            Some(conn) => conn,
            None => self
                .conn
                .insert(SqliteConnection::connect_with(options).await?),
        };
        let stored = store_sqlite(conn, work, reaper).await;
        if matches!(stored, Err(QueueError::Database(_))) {
            // The connection may be what failed: the next group opens a fresh one.
            self.conn = None;
        }
        stored
    }
}

/// PostgreSQL: the deliveries in one statement; claims and completions each on its own,
/// their errors their own.
async fn store_postgres_work(
    pool: &PgPool,
    work: &Work<'_>,
    reaper: &Reaper,
) -> Result<Outcomes, QueueError> {
    let mut outcomes = Outcomes::default();
    if !work.deliveries.is_empty() {
        let accepted = store_postgres(pool, work.deliveries).await?;
        outcomes.deliveries = accepted.into_iter().map(Ok).collect();
    }
    let now = now_millis();
    for request in work.finishes {
        outcomes
            .finishes
            .push(LeaseDb::Postgres(pool).finish(request, now).await);
    }
    for request in work.claims {
        outcomes
            .claims
            .push(LeaseDb::Postgres(pool).claim(request, reaper, now).await);
    }
    Ok(outcomes)
}

/// One statement (so one transaction) for the whole group.
async fn store_postgres(pool: &PgPool, entries: &[Entry]) -> Result<Vec<Accepted>, QueueError> {
    let columns = PgColumns::from(entries);
    let max_attempts = entries.first().map_or(1, |entry| entry.max_attempts);
    let rows = sqlx::query(ACCEPT_POSTGRES)
        .bind(columns.forges)
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
    forges: Vec<&'static str>,
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
            columns.forges.push(delivery.forge.as_str());
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
                .push(job.as_ref().and_then(|job| job.installation_id));
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
