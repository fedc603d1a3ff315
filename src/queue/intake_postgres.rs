//! PostgreSQL: a group of deliveries in one transaction, by the rule of [`super::supersede`]
//! (the same code decides for SQLite). A statement takes an array per column, so a group
//! costs the same four round trips whatever its size: `BEGIN`, the per-PR locks with the
//! deliveries, the replacement of stored jobs with the insertion of new ones, `COMMIT`; a
//! group without jobs is one statement.
//!
//! Invariants:
//! - Intake for one pull request (forge, repository, number) is serialized across processes
//!   by a transaction-scoped advisory lock, taken before the live jobs are read. Under READ
//!   COMMITTED each statement reads a fresh snapshot, so the jobs statement, which starts
//!   after the locks are held, sees every job a previous holder committed.
//! - A group takes its locks in one global order (by key), all before it writes anything (the
//!   deliveries statement's one-time filter), so the groups of two replicas cannot deadlock
//!   on them.
//! - New jobs are inserted in group order, so their ids follow it.

use std::collections::HashSet;

use sqlx::Row;
use sqlx::postgres::{PgConnection, PgPool, PgRow};

use super::db::{state_from_row, to_millis};
use super::error::QueueError;
use super::intake_db::Entry;
use super::supersede::{GroupPlan, JobIds, Replaced, count_replaced, first_in_group};
use super::types::{Accepted, JobId};
use crate::forge::ForgeKind;

/// Locks the listed pull requests ($6, `forge:repo#number`) until the transaction ends, then
/// inserts the deliveries ($1..$5, one array per column); returns the (forge, id) of those
/// that were new. The locks are an uncorrelated subquery, so a one-time filter taken before
/// any row is inserted; the ordered subquery is not flattened, so they are taken smallest key
/// first. (Its own statement would cost a round trip more per group.)
const LOCK_AND_INSERT_DELIVERIES: &str = "INSERT INTO deliveries (forge, delivery_id, event, action, received_at) \
     SELECT u.* FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[]) AS u \
     WHERE (SELECT count(*) FROM \
       (SELECT pg_advisory_xact_lock(key) FROM \
         (SELECT DISTINCT hashtextextended(pr, 0) AS key FROM unnest($6::text[]) AS pr \
          ORDER BY key) AS keys) AS locked) >= 0 \
     ON CONFLICT (forge, delivery_id) DO NOTHING \
     RETURNING forge, delivery_id";

/// Supersedes the queued jobs and flags the running job of each listed pull request
/// ($1..$3), and inserts the new jobs ($4..$14, in array order). Both read the statement's
/// one snapshot, so the replacement never sees the jobs inserted with it. Returns the touched
/// jobs (`state` set) and the new ones (`id` set). Binds: $15 now.
const REPLACE_AND_INSERT_JOBS: &str = "WITH replaced AS ( \
       UPDATE jobs SET \
         state = CASE WHEN state = 'queued' THEN 'superseded' ELSE state END, \
         cancel_requested = CASE WHEN state = 'running' THEN TRUE ELSE cancel_requested END, \
         finished_at = CASE WHEN state = 'queued' THEN $15 ELSE finished_at END, \
         updated_at = $15 \
       WHERE state IN ('queued', 'running') AND (forge, repo_full_name, pr_number) IN \
         (SELECT * FROM unnest($1::text[], $2::text[], $3::int8[])) \
       RETURNING state, forge, repo_full_name, pr_number \
     ), inserted AS ( \
       INSERT INTO jobs (delivery_id, forge, repo_full_name, installation_id, pr_number, \
         head_sha, kind, strategy, payload, state, attempts, max_attempts, run_at, \
         cancel_requested, created_at, updated_at, finished_at) \
       SELECT u.delivery_id, u.forge, u.repo, u.installation, u.pr, u.head_sha, u.kind, \
         u.strategy, u.payload, u.state, 0, u.max_attempts, $15, FALSE, $15, $15, \
         CASE WHEN u.state = 'superseded' THEN $15::int8 END \
       FROM unnest($4::text[], $5::text[], $6::text[], $7::int8[], $8::int8[], $9::text[], \
         $10::text[], $11::text[], $12::text[], $13::text[], $14::int8[]) WITH ORDINALITY \
         AS u(delivery_id, forge, repo, installation, pr, head_sha, kind, strategy, payload, \
           state, max_attempts, position) \
       ORDER BY u.position \
       RETURNING id, forge, delivery_id \
     ) \
     SELECT state, forge, repo_full_name, pr_number, NULL::int8 AS id, NULL::text AS delivery_id \
       FROM replaced \
     UNION ALL \
     SELECT NULL, forge, NULL, NULL, id, delivery_id FROM inserted";

/// Stores `entries` (a group's deliveries, in arrival order); one outcome each. On error
/// nothing is stored.
pub(super) async fn store_postgres(
    pool: &PgPool,
    entries: &[Entry],
    now: i64,
) -> Result<Vec<Accepted>, QueueError> {
    if entries.iter().all(|entry| entry.job.is_none()) {
        // One statement is its own transaction; nothing to lock.
        let mut conn = pool.acquire().await?;
        let fresh = insert_deliveries(&mut conn, entries).await?;
        return GroupPlan::new(entries, fresh).outcomes(&JobIds::new(), &Replaced::new());
    }
    let mut tx = pool.begin().await?;
    let fresh = insert_deliveries(&mut tx, entries).await?;
    let plan = GroupPlan::new(entries, fresh);
    let (replaced, ids) = if plan.has_jobs() {
        replace_and_insert_jobs(&mut tx, &plan, now).await?
    } else {
        (Replaced::new(), JobIds::new())
    };
    tx.commit().await?;
    plan.outcomes(&ids, &replaced)
}

/// Takes the advisory lock of every pull request a job of the group names, then inserts the
/// group's deliveries; `true` for each entry whose delivery is new (not stored before, not
/// earlier in the group).
async fn insert_deliveries(
    conn: &mut PgConnection,
    entries: &[Entry],
) -> Result<Vec<bool>, QueueError> {
    let first = first_in_group(entries);
    let mut columns = DeliveryColumns::default();
    for (entry, _) in entries.iter().zip(&first).filter(|(_, first)| **first) {
        let delivery = &entry.delivery;
        columns.forges.push(delivery.forge.as_str());
        columns.ids.push(delivery.delivery_id.as_str());
        columns.events.push(delivery.event.as_str());
        columns.actions.push(delivery.action.as_deref());
        columns.received_at.push(to_millis(delivery.received_at));
    }
    let lock_keys: Vec<String> = entries
        .iter()
        .filter_map(|entry| entry.job.as_ref())
        .map(|job| format!("{}:{}#{}", job.forge, job.repo_full_name, job.pr_number))
        .collect();
    let rows = sqlx::query(LOCK_AND_INSERT_DELIVERIES)
        .bind(columns.forges)
        .bind(columns.ids)
        .bind(columns.events)
        .bind(columns.actions)
        .bind(columns.received_at)
        .bind(lock_keys)
        .fetch_all(&mut *conn)
        .await?;
    let mut inserted = HashSet::with_capacity(rows.len());
    for row in &rows {
        if let Some(forge) = forge_from_row(row)? {
            inserted.insert((forge, row.try_get::<String, _>("delivery_id")?));
        }
    }
    Ok(entries
        .iter()
        .zip(first)
        .map(|(entry, first)| {
            let delivery = &entry.delivery;
            first && inserted.contains(&(delivery.forge, delivery.delivery_id.clone()))
        })
        .collect())
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

/// Replaces the stored jobs of the plan's replacing pull requests and inserts its new jobs,
/// in one statement.
async fn replace_and_insert_jobs<'a>(
    conn: &mut PgConnection,
    plan: &GroupPlan<'a>,
    now: i64,
) -> Result<(Replaced<'a>, JobIds), QueueError> {
    let prs = plan.replacing();
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
    let rows = sqlx::query(REPLACE_AND_INSERT_JOBS)
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
    let mut replaced = Replaced::new();
    let mut ids = JobIds::with_capacity(rows.len());
    for row in &rows {
        let forge = forge_from_row(row)?;
        match row.try_get::<Option<i64>, _>("id")? {
            Some(id) => {
                if let Some(forge) = forge {
                    ids.insert((forge, row.try_get("delivery_id")?), id);
                }
            }
            None => {
                let state = state_from_row(row, JobId(0))?;
                let repo: String = row.try_get("repo_full_name")?;
                let number: i64 = row.try_get("pr_number")?;
                count_replaced(&mut replaced, prs, (forge, &repo, number), state);
            }
        }
    }
    Ok((replaced, ids))
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
