//! PostgreSQL: a group of deliveries in one round trip, by the rule of [`super::supersede`]
//! (the same code decides for SQLite). The statements are those of the database function
//! `redline_store_group` (migration 9), which decides nothing: it takes the per-PR locks,
//! inserts the deliveries, then replaces the stored jobs and inserts the new ones, each
//! statement on a snapshot of its own, from one array per column.
//!
//! What the jobs statement writes depends on which deliveries are new, so a group with jobs
//! is planned as if all were (a redelivery is rare) and sent as one call, which PostgreSQL
//! runs as one transaction: one round trip and one commit whatever the group's size. When a
//! delivery of it was stored already the call fails (`unique_violation`), nothing is kept,
//! and the group is stored again the long way ([`store_with_redeliveries`]: `BEGIN`, the
//! locks and deliveries, the plan for those that were new, the jobs, `COMMIT`). A group
//! without jobs is one call either way.
//!
//! A group of several deliveries, with the workers' completions and claims waiting with it
//! ([`stage_postgres_group`]), is one transaction: `BEGIN`, the call, the completions, the
//! claims, on one connection, then `COMMIT`, which the committer sends while it stores the
//! next group (see [`super::intake`]). There a failed statement aborts the whole transaction
//! (and a `COMMIT` after it only rolls back), so every error is the group's: a redelivery's
//! refusal makes it start over the long way in a new transaction, any other error rolls it
//! back and goes to the committer, which stores the members one at a time.
//!
//! Why a function and not one statement of data-modifying CTEs: a statement reads one
//! snapshot, taken before any lock it takes, so it could miss a job the previous holder of a
//! lock committed; a function's statements each take a snapshot of their own. (A one-round-
//! trip query of two statements reading the group from a JSON literal, tried before, was
//! 2.2x slower: its text was parsed and planned for every group, and the plan parsed the
//! document again for every live job it compared.)
//!
//! Invariants:
//! - Intake for one pull request (forge, repository, number) is serialized across processes
//!   by a transaction-scoped advisory lock, taken before the live jobs are read (see the
//!   migration).
//! - A group takes its locks in one global order (by key), all before it writes anything, so
//!   the groups of two replicas cannot deadlock on them.
//! - New jobs are inserted in group order, so their ids follow it.

use std::collections::HashSet;

use sqlx::postgres::{PgConnection, PgPool, PgRow, Postgres};
use sqlx::{Row, Transaction};

use super::db::{state_from_row, to_millis};
use super::error::QueueError;
use super::intake_db::{Entry, Outcomes, Work};
use super::lease::{LeaseDb, Reaper};
use super::supersede::{GroupPlan, JobIds, Pr, Replaced, count_replaced, first_in_group};
use super::types::{Accepted, JobId};
use crate::forge::ForgeKind;

/// SQLSTATE `unique_violation`: a delivery of the group is stored already.
const UNIQUE_VIOLATION: &str = "23505";

/// Binds: $1 locks; $2..$6 deliveries; $7 require new; $8..$10 replaced pull requests;
/// $11..$21 new jobs; $22 now. `state` first, for [`state_from_row`].
const STORE_GROUP: &str = "SELECT out_state AS state, out_kind AS kind, out_forge AS forge, \
       out_delivery_id AS delivery_id, out_repo AS repo_full_name, out_pr AS pr_number, \
       out_job_id AS id \
     FROM redline_store_group($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, \
       $15, $16, $17, $18, $19, $20, $21, $22)";

/// Stores `entries` (a group's deliveries, in arrival order) at `now`, the call its own
/// transaction; one outcome each. On error nothing is stored.
pub(super) async fn store_postgres(
    pool: &PgPool,
    entries: &[Entry],
    now: i64,
) -> Result<Vec<Accepted>, QueueError> {
    let first = first_in_group(entries);
    let mut conn = pool.acquire().await?;
    match store_planned_new(&mut conn, entries, &first, now).await {
        Err(err) if is_unique_violation(&err) => {
            drop(conn);
            let mut tx = pool.begin().await?;
            let accepted = store_with_redeliveries(&mut tx, entries, &first, now).await?;
            tx.commit().await?;
            Ok(accepted)
        }
        stored => stored,
    }
}

/// A group stored in a transaction not yet committed, and its members' outcomes (valid once
/// the commit succeeds).
pub(super) struct Uncommitted {
    tx: Transaction<'static, Postgres>,
    outcomes: Outcomes,
}

impl Uncommitted {
    /// Commits the group; its members' outcomes, or the error of the `COMMIT`.
    pub(super) async fn commit(self) -> Result<Outcomes, QueueError> {
        self.tx.commit().await?;
        Ok(self.outcomes)
    }
}

/// Stores a group's deliveries, then its workers' completions and claims, in one transaction
/// on one connection (`BEGIN`, the call, the completions, the claims), and returns it for the
/// caller to commit: one commit for all. Any error rolls all of it back and is returned (the
/// committer then stores the members one at a time); no error is answered as a member's
/// outcome while the transaction goes on, since PostgreSQL would then turn the `COMMIT` into
/// a silent rollback.
pub(super) async fn stage_postgres_group(
    pool: &PgPool,
    work: &Work<'_>,
    reaper: &Reaper,
    now: i64,
) -> Result<Uncommitted, QueueError> {
    let first = first_in_group(work.deliveries);
    let mut tx = pool.begin().await?;
    let accepted = match store_planned_new(&mut tx, work.deliveries, &first, now).await {
        Err(err) if is_unique_violation(&err) => {
            // The failed call aborted the transaction: the group again, the long way.
            tx.rollback().await?;
            tx = pool.begin().await?;
            store_with_redeliveries(&mut tx, work.deliveries, &first, now).await
        }
        stored => stored,
    };
    let settled = match accepted {
        Ok(accepted) => LeaseDb::PostgresTransaction(&mut tx)
            .settle_in_transaction(work.finishes, work.claims, reaper, now)
            .await
            .map(|workers| (accepted, workers)),
        Err(err) => Err(err),
    };
    match settled {
        Ok((accepted, (finishes, claims))) => Ok(Uncommitted {
            tx,
            outcomes: Outcomes {
                deliveries: accepted.into_iter().map(Ok).collect(),
                finishes,
                claims,
            },
        }),
        Err(err) => {
            // Roll back now, so the connection goes back to the pool clean.
            let _ = tx.rollback().await;
            Err(err)
        }
    }
}

/// Stores the deliveries `first` marks, planned as if each were new, in one call on `conn`.
/// When one was stored already the call fails with a unique violation and keeps nothing
/// (within a transaction, the transaction is aborted).
async fn store_planned_new(
    conn: &mut PgConnection,
    entries: &[Entry],
    first: &[bool],
    now: i64,
) -> Result<Vec<Accepted>, QueueError> {
    if !entries.iter().any(|entry| entry.job.is_some()) {
        // Nothing to lock or plan: the call skips stored deliveries and says which were new.
        let stored = Call::new(entries, first, None, now)
            .run(conn, false)
            .await?;
        let fresh = stored.fresh(entries, first);
        return GroupPlan::new(entries, fresh).outcomes(&JobIds::new(), &Replaced::new());
    }
    let plan = GroupPlan::new(entries, first.to_vec());
    let stored = Call::new(entries, first, Some(&plan), now)
        .run(conn, true)
        .await?;
    plan.outcomes(&stored.ids, &stored.replaced)
}

/// Whether `err` is the call's refusal of a delivery stored already.
fn is_unique_violation(err: &QueueError) -> bool {
    matches!(err, QueueError::Database(sqlx::Error::Database(err))
        if err.code().as_deref() == Some(UNIQUE_VIOLATION))
}

/// The group in two calls on `conn`, which is in a transaction, for when a delivery may be
/// stored already: the plan follows which deliveries the database took as new.
async fn store_with_redeliveries(
    conn: &mut PgConnection,
    entries: &[Entry],
    first: &[bool],
    now: i64,
) -> Result<Vec<Accepted>, QueueError> {
    let stored = Call::new(entries, first, None, now)
        .run(conn, false)
        .await?;
    let plan = GroupPlan::new(entries, stored.fresh(entries, first));
    let jobs = if plan.has_jobs() {
        Call::jobs_only(&plan, now).run(conn, false).await?
    } else {
        Stored::default()
    };
    plan.outcomes(&jobs.ids, &jobs.replaced)
}

/// The arguments of one call of `redline_store_group`.
#[derive(Default)]
struct Call<'a> {
    /// `forge:repo#number` of each pull request a job of the group names.
    locks: Vec<String>,
    deliveries: DeliveryColumns<'a>,
    prs: Vec<Pr<'a>>,
    jobs: JobColumns<'a>,
    now: i64,
}

impl<'a> Call<'a> {
    /// Locks the pull requests the group's jobs name and inserts the first delivery of each
    /// (forge, id) (`first`, per entry); with `plan`, also its jobs.
    fn new(
        entries: &'a [Entry],
        first: &[bool],
        plan: Option<&GroupPlan<'a>>,
        now: i64,
    ) -> Call<'a> {
        let mut call = match plan {
            Some(plan) => Call::jobs_only(plan, now),
            None => Call {
                now,
                ..Call::default()
            },
        };
        for (entry, _) in entries.iter().zip(first).filter(|(_, first)| **first) {
            call.deliveries.push(entry);
        }
        call.locks = entries
            .iter()
            .filter_map(|entry| entry.job.as_ref())
            .map(|job| format!("{}:{}#{}", job.forge, job.repo_full_name, job.pr_number))
            .collect();
        call
    }

    /// The plan's replacement of stored jobs and its new jobs, nothing else (the locks are
    /// held and the deliveries inserted already).
    fn jobs_only(plan: &GroupPlan<'a>, now: i64) -> Call<'a> {
        let mut jobs = JobColumns::default();
        for (entry, job, state) in plan.jobs() {
            jobs.delivery_ids.push(entry.delivery.delivery_id.as_str());
            jobs.forges.push(job.forge.as_str());
            jobs.repos.push(job.repo_full_name.as_str());
            jobs.installations.push(job.installation_id);
            jobs.prs.push(job.pr_number);
            jobs.head_shas.push(job.head_sha.as_deref());
            jobs.kinds.push(job.kind);
            jobs.strategies.push(job.strategy.as_deref());
            jobs.payloads.push(job.payload.as_str());
            jobs.states.push(state.as_str());
            jobs.max_attempts.push(entry.max_attempts);
        }
        Call {
            prs: plan.replacing().to_vec(),
            jobs,
            now,
            ..Call::default()
        }
    }

    /// Runs the call. With `require_new`, a delivery stored already fails it
    /// (`unique_violation`).
    async fn run(
        self,
        conn: &mut PgConnection,
        require_new: bool,
    ) -> Result<Stored<'a>, QueueError> {
        let Call {
            locks,
            deliveries,
            prs,
            jobs,
            now,
        } = self;
        let rows = sqlx::query(STORE_GROUP)
            .bind(locks)
            .bind(deliveries.forges)
            .bind(deliveries.ids)
            .bind(deliveries.events)
            .bind(deliveries.actions)
            .bind(deliveries.received_at)
            .bind(require_new)
            .bind(prs.iter().map(|pr| pr.0.as_str()).collect::<Vec<_>>())
            .bind(prs.iter().map(|pr| pr.1).collect::<Vec<_>>())
            .bind(prs.iter().map(|pr| pr.2).collect::<Vec<_>>())
            .bind(jobs.delivery_ids)
            .bind(jobs.forges)
            .bind(jobs.repos)
            .bind(jobs.installations)
            .bind(jobs.prs)
            .bind(jobs.head_shas)
            .bind(jobs.kinds)
            .bind(jobs.strategies)
            .bind(jobs.payloads)
            .bind(jobs.states)
            .bind(jobs.max_attempts)
            .bind(now)
            .fetch_all(&mut *conn)
            .await?;
        Stored::read(&rows, &prs)
    }
}

/// What a call reports: the deliveries it stored, the stored jobs it touched, the new jobs'
/// ids.
#[derive(Default)]
struct Stored<'a> {
    deliveries: HashSet<(ForgeKind, String)>,
    replaced: Replaced<'a>,
    ids: JobIds,
}

impl<'a> Stored<'a> {
    fn read(rows: &[PgRow], prs: &[Pr<'a>]) -> Result<Stored<'a>, QueueError> {
        let mut stored = Stored::default();
        for row in rows {
            let forge = forge_from_row(row)?;
            match row.try_get::<String, _>("kind")?.as_str() {
                "delivery" => {
                    if let Some(forge) = forge {
                        stored
                            .deliveries
                            .insert((forge, row.try_get("delivery_id")?));
                    }
                }
                "job" => {
                    if let Some(forge) = forge {
                        let id: i64 = row.try_get("id")?;
                        stored.ids.insert((forge, row.try_get("delivery_id")?), id);
                    }
                }
                _ => {
                    let state = state_from_row(row, JobId(0))?;
                    let repo: String = row.try_get("repo_full_name")?;
                    let number: i64 = row.try_get("pr_number")?;
                    count_replaced(&mut stored.replaced, prs, (forge, &repo, number), state);
                }
            }
        }
        Ok(stored)
    }

    /// Per entry: its delivery was stored by this call (new, and first in the group).
    fn fresh(&self, entries: &[Entry], first: &[bool]) -> Vec<bool> {
        entries
            .iter()
            .zip(first)
            .map(|(entry, &first)| {
                let delivery = &entry.delivery;
                first
                    && self
                        .deliveries
                        .contains(&(delivery.forge, delivery.delivery_id.clone()))
            })
            .collect()
    }
}

/// The group's deliveries, one array per column.
#[derive(Default)]
struct DeliveryColumns<'a> {
    forges: Vec<&'static str>,
    ids: Vec<&'a str>,
    events: Vec<&'a str>,
    actions: Vec<Option<&'a str>>,
    received_at: Vec<i64>,
}

impl<'a> DeliveryColumns<'a> {
    fn push(&mut self, entry: &'a Entry) {
        let delivery = &entry.delivery;
        self.forges.push(delivery.forge.as_str());
        self.ids.push(delivery.delivery_id.as_str());
        self.events.push(delivery.event.as_str());
        self.actions.push(delivery.action.as_deref());
        self.received_at.push(to_millis(delivery.received_at));
    }
}

/// The group's new jobs, one array per column.
#[derive(Default)]
struct JobColumns<'a> {
    delivery_ids: Vec<&'a str>,
    forges: Vec<&'static str>,
    repos: Vec<&'a str>,
    installations: Vec<Option<i64>>,
    prs: Vec<i64>,
    head_shas: Vec<Option<&'a str>>,
    kinds: Vec<&'static str>,
    strategies: Vec<Option<&'a str>>,
    payloads: Vec<&'a str>,
    states: Vec<&'static str>,
    max_attempts: Vec<i64>,
}

/// The forge named in a returned row's `forge` column (`None`: a name this build does not
/// know, which no row it wrote has).
fn forge_from_row(row: &PgRow) -> Result<Option<ForgeKind>, QueueError> {
    Ok(row.try_get::<String, _>("forge")?.parse().ok())
}
