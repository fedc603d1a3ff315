//! Storing a group of the committer's members, on either backend (SQLite in
//! [`super::intake_sqlite`], PostgreSQL in [`super::intake_postgres`], both by the rule of
//! [`super::supersede`]): one transaction on SQLite. On PostgreSQL, a group of at least
//! [`SHARED_MIN_DELIVERIES`] deliveries is one transaction with its claims and completions
//! too; a smaller group's deliveries are one call (no `BEGIN`, no `COMMIT`: a lone delivery
//! stays one round trip), and its claims and completions commit each on its own on the pool
//! (the committer hands those to a task of their own, [`settle_on_pool`], so they do not hold
//! up the next group).

use sqlx::Connection;
use sqlx::postgres::PgPool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};

use super::clock::Clock;
use super::db::{Db, is_in_memory};
use super::error::QueueError;
use super::intake_postgres::{Uncommitted, stage_postgres_group, store_postgres};
use super::intake_sqlite::store_sqlite;
use super::lease::{ClaimRequest, FinishRequest, LeaseDb, Reaper, WorkerOutcomes};
use super::store::to_db_int;
use super::types::{Accepted, Job, NewDelivery, NewJob, QueueOptions};
use crate::forge::ForgeKind;

/// PostgreSQL: the fewest deliveries in a group for its claims and completions to join its
/// transaction. One delivery alone is one call, one round trip; with the workers' members it
/// would be `BEGIN`, the call, their statements and `COMMIT`, and its caller would wait for
/// all of them. From two deliveries on, sharing saves more commits than it adds round trips.
pub(super) const SHARED_MIN_DELIVERIES: usize = 2;

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
    /// The outcomes of `work` whose group's `COMMIT` failed with `err`: each member fails.
    pub(super) fn commit_failed(work: &Work<'_>, err: &QueueError) -> Outcomes {
        let failed = || QueueError::CommitFailed(err.to_string());
        Outcomes {
            deliveries: work.deliveries.iter().map(|_| Err(failed())).collect(),
            finishes: work.finishes.iter().map(|_| Err(failed())).collect(),
            claims: work.claims.iter().map(|_| Err(failed())).collect(),
        }
    }

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

/// A group stored by [`Store::stage`].
pub(super) enum Staged {
    Committed(Outcomes),
    /// Stored in a transaction still to commit (PostgreSQL).
    Pending(Uncommitted),
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
    /// The queue's clock: each group is stored at its time.
    clock: Clock,
}

impl Store {
    /// `url` is the queue's, to tell an in-memory SQLite database.
    pub(super) fn new(db: Db, url: &str, clock: Clock) -> Store {
        let own = match &db {
            Db::Sqlite(pool) if !is_in_memory(url) => Some((*pool.connect_options()).clone()),
            _ => None,
        };
        Store {
            db,
            own,
            conn: None,
            clock,
        }
    }

    /// Stores `work` as [`Store::store`] does, except that on PostgreSQL a group of at least
    /// [`SHARED_MIN_DELIVERIES`] deliveries is left uncommitted, for the caller to commit
    /// while it stores the next group.
    pub(super) async fn stage(
        &mut self,
        work: &Work<'_>,
        reaper: &Reaper,
    ) -> Result<Staged, QueueError> {
        if let Db::Postgres(pool) = &self.db
            && work.deliveries.len() >= SHARED_MIN_DELIVERIES
        {
            let now = self.clock.now_millis();
            let staged = stage_postgres_group(pool, work, reaper, now).await?;
            return Ok(Staged::Pending(staged));
        }
        self.store(work, reaper).await.map(Staged::Committed)
    }

    /// Stores `work`; one outcome per member. On error nothing of the deliveries is stored
    /// (and, on SQLite, nothing of the rest). Once the pool is closed, nothing is stored.
    pub(super) async fn store(
        &mut self,
        work: &Work<'_>,
        reaper: &Reaper,
    ) -> Result<Outcomes, QueueError> {
        let now = self.clock.now_millis();
        let pool = match &self.db {
            Db::Postgres(pool) => return store_postgres_work(pool, work, reaper, now).await,
            Db::Sqlite(pool) => pool,
        };
        if pool.is_closed() {
            self.conn = None;
            return Err(sqlx::Error::PoolClosed.into());
        }
        let Some(options) = &self.own else {
            let mut conn = pool.acquire().await?;
            return store_sqlite(&mut conn, work, reaper, now).await;
        };
        let conn = match &mut self.conn {
            Some(conn) => conn,
            None => self
                .conn
                .insert(SqliteConnection::connect_with(options).await?),
        };
        let stored = store_sqlite(conn, work, reaper, now).await;
        if matches!(stored, Err(QueueError::Database(_))) {
            // The connection may be what failed: the next group opens a fresh one.
            self.conn = None;
        }
        stored
    }
}

/// PostgreSQL: a group of at least [`SHARED_MIN_DELIVERIES`] deliveries, with its claims and
/// completions, in one transaction; otherwise the deliveries in one call (its own
/// transaction) and each claim and completion on its own.
async fn store_postgres_work(
    pool: &PgPool,
    work: &Work<'_>,
    reaper: &Reaper,
    now: i64,
) -> Result<Outcomes, QueueError> {
    if work.deliveries.len() >= SHARED_MIN_DELIVERIES {
        return stage_postgres_group(pool, work, reaper, now)
            .await?
            .commit()
            .await;
    }
    let mut outcomes = Outcomes::default();
    if !work.deliveries.is_empty() {
        let accepted = store_postgres(pool, work.deliveries, now).await?;
        outcomes.deliveries = accepted.into_iter().map(Ok).collect();
    }
    (outcomes.finishes, outcomes.claims) =
        settle_on_pool(pool, work.finishes, work.claims, reaper, now).await;
    Ok(outcomes)
}

/// PostgreSQL: each completion, then each claim, in a transaction of its own on the pool;
/// each outcome (errors too) the member's own.
pub(super) async fn settle_on_pool(
    pool: &PgPool,
    finishes: &[FinishRequest],
    claims: &[ClaimRequest],
    reaper: &Reaper,
    now: i64,
) -> WorkerOutcomes {
    let mut finished = Vec::with_capacity(finishes.len());
    for request in finishes {
        finished.push(LeaseDb::Postgres(pool).finish(request, now).await);
    }
    let mut claimed = Vec::with_capacity(claims.len());
    for request in claims {
        claimed.push(LeaseDb::Postgres(pool).claim(request, reaper, now).await);
    }
    (finished, claimed)
}
