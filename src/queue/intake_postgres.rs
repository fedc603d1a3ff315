//! PostgreSQL: a group of deliveries in one transaction, by the rule of [`super::supersede`]
//! (the same code decides for SQLite), in one round trip.
//!
//! A group is two statements: the per-PR locks with the deliveries, then the replacement of
//! the stored jobs with the insertion of the new ones. The second must start after the locks
//! are held (its snapshot then holds every job a previous holder committed), so the two
//! cannot be one statement; they go as one simple-protocol query, which PostgreSQL runs as one
//! implicit transaction, each statement on a snapshot of its own. What the jobs statement
//! writes depends on which deliveries are new, so the group is planned as if all were (a
//! redelivery is rare): the deliveries statement then fails on a stored one, nothing is kept,
//! and the group is stored again the long way ([`store_with_redeliveries`]: `BEGIN`, the
//! deliveries statement skipping stored ones, the plan for those that were new, the jobs
//! statement, `COMMIT`). A group without jobs is one statement either way.
//!
//! Each statement is written once ([`deliveries_sql`], [`jobs_sql`]) and reads the group from
//! a JSON document: a bind (`$1`) on the long way, a literal in the one-round-trip query,
//! which takes no binds.
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
//! - A literal document contains no `$` (each is written as the JSON escape `\u0024`), so no
//!   text of a delivery can end its dollar quote: the values stay data.

use std::collections::HashSet;
use std::sync::LazyLock;

use serde::Serialize;
use sqlx::Row;
use sqlx::postgres::{PgConnection, PgPool, PgRow};

use super::db::{state_from_row, to_millis};
use super::error::QueueError;
use super::intake_db::Entry;
use super::supersede::{GroupPlan, JobIds, Replaced, count_replaced, first_in_group};
use super::types::{Accepted, JobId};
use crate::forge::ForgeKind;

/// SQLSTATE `unique_violation`: a delivery of the group is stored already.
const UNIQUE_VIOLATION: &str = "23505";

/// Locks the pull requests of the document's `locks` (`forge:repo#number`) until the
/// transaction ends, then inserts its `deliveries`. The locks are an uncorrelated subquery,
/// so a one-time filter taken before any row is inserted; the ordered subquery is not
/// flattened, so they are taken smallest key first. With `skip_stored`, a delivery stored
/// already is skipped and the (forge, id) of the new ones returned; without, it fails the
/// statement (`unique_violation`) and nothing is returned.
fn deliveries_sql(doc: &str, skip_stored: bool) -> String {
    let tail = if skip_stored {
        " ON CONFLICT (forge, delivery_id) DO NOTHING RETURNING forge, delivery_id"
    } else {
        ""
    };
    format!(
        "WITH doc AS MATERIALIZED (SELECT {doc}::json AS v) \
         INSERT INTO deliveries (forge, delivery_id, event, action, received_at) \
         SELECT d.forge, d.delivery_id, d.event, d.action, d.received_at \
         FROM doc, json_to_recordset(doc.v -> 'deliveries') \
           AS d(forge text, delivery_id text, event text, action text, received_at int8) \
         WHERE (SELECT count(*) FROM \
           (SELECT pg_advisory_xact_lock(key) FROM \
             (SELECT DISTINCT hashtextextended(pr, 0) AS key \
              FROM doc, json_array_elements_text(doc.v -> 'locks') AS pr \
              ORDER BY key) AS keys) AS locked) >= 0{tail}"
    )
}

/// Supersedes the queued jobs and flags the running job of each pull request of the
/// document's `prs`, and inserts its `jobs` (in `position` order), at its `now`. Both read the
/// statement's one snapshot, so the replacement never sees the jobs inserted with it. Returns
/// the touched jobs (`state` set) and the new ones (`id` set).
fn jobs_sql(doc: &str) -> String {
    format!(
        "WITH doc AS MATERIALIZED (SELECT v, (v ->> 'now')::int8 AS now \
           FROM (SELECT {doc}::json AS v) AS given), \
         replaced AS ( \
           UPDATE jobs SET \
             state = CASE WHEN state = 'queued' THEN 'superseded' ELSE state END, \
             cancel_requested = CASE WHEN state = 'running' THEN TRUE ELSE cancel_requested END, \
             finished_at = CASE WHEN state = 'queued' THEN doc.now ELSE finished_at END, \
             updated_at = doc.now \
           FROM doc \
           WHERE state IN ('queued', 'running') AND (forge, repo_full_name, pr_number) IN \
             (SELECT p.forge, p.repo, p.number FROM doc AS listed, \
                json_to_recordset(listed.v -> 'prs') AS p(forge text, repo text, number int8)) \
           RETURNING state, forge, repo_full_name, pr_number \
         ), inserted AS ( \
           INSERT INTO jobs (delivery_id, forge, repo_full_name, installation_id, pr_number, \
             head_sha, kind, strategy, payload, state, attempts, max_attempts, run_at, \
             cancel_requested, created_at, updated_at, finished_at) \
           SELECT u.delivery_id, u.forge, u.repo, u.installation, u.pr, u.head_sha, u.kind, \
             u.strategy, u.payload, u.state, 0, u.max_attempts, doc.now, FALSE, doc.now, \
             doc.now, CASE WHEN u.state = 'superseded' THEN doc.now END \
           FROM doc, json_to_recordset(doc.v -> 'jobs') AS u(position int8, delivery_id text, \
             forge text, repo text, installation int8, pr int8, head_sha text, kind text, \
             strategy text, payload text, state text, max_attempts int8) \
           ORDER BY u.position \
           RETURNING id, forge, delivery_id \
         ) \
         SELECT state, forge, repo_full_name, pr_number, NULL::int8 AS id, \
           NULL::text AS delivery_id FROM replaced \
         UNION ALL \
         SELECT NULL, forge, NULL, NULL, id, delivery_id FROM inserted"
    )
}

/// The statements with the document as a bind (`$1`), prepared once per connection.
static DELIVERIES_SKIPPING_STORED: LazyLock<String> = LazyLock::new(|| deliveries_sql("$1", true));
static JOBS: LazyLock<String> = LazyLock::new(|| jobs_sql("$1"));

/// Stores `entries` (a group's deliveries, in arrival order) at `now`; one outcome each. On
/// error nothing is stored.
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
    match store_in_one_round_trip(pool, entries, now).await {
        Err(QueueError::Database(sqlx::Error::Database(err)))
            if err.code().as_deref() == Some(UNIQUE_VIOLATION) =>
        {
            store_with_redeliveries(pool, entries, now).await
        }
        stored => stored,
    }
}

/// The group planned as if every delivery were new, both statements in one query. Fails with
/// `unique_violation`, storing nothing, when a delivery was stored already.
async fn store_in_one_round_trip(
    pool: &PgPool,
    entries: &[Entry],
    now: i64,
) -> Result<Vec<Accepted>, QueueError> {
    let first = first_in_group(entries);
    let deliveries = literal(&DeliveriesDoc::of(entries, &first))?;
    let plan = GroupPlan::new(entries, first);
    let jobs = literal(&JobsDoc::of(&plan, now))?;
    let query = format!(
        "{};\n{}",
        deliveries_sql(&deliveries, false),
        jobs_sql(&jobs)
    );
    let mut conn = pool.acquire().await?;
    let rows = sqlx::raw_sql(sqlx::AssertSqlSafe(query))
        .fetch_all(&mut *conn)
        .await?;
    let (replaced, ids) = read_jobs_rows(&rows, plan.replacing())?;
    plan.outcomes(&ids, &replaced)
}

/// The group in a transaction of its own statements, for when a delivery may be stored
/// already: the plan follows which deliveries the database took as new.
async fn store_with_redeliveries(
    pool: &PgPool,
    entries: &[Entry],
    now: i64,
) -> Result<Vec<Accepted>, QueueError> {
    let mut tx = pool.begin().await?;
    let fresh = insert_deliveries(&mut tx, entries).await?;
    let plan = GroupPlan::new(entries, fresh);
    let (replaced, ids) = if plan.has_jobs() {
        let rows = sqlx::query(JOBS.as_str())
            .bind(document(&JobsDoc::of(&plan, now))?)
            .fetch_all(&mut *tx)
            .await?;
        read_jobs_rows(&rows, plan.replacing())?
    } else {
        (Replaced::new(), JobIds::new())
    };
    tx.commit().await?;
    plan.outcomes(&ids, &replaced)
}

/// Takes the advisory lock of every pull request a job of the group names, then inserts the
/// group's deliveries, skipping stored ones; `true` for each entry whose delivery is new (not
/// stored before, not earlier in the group).
async fn insert_deliveries(
    conn: &mut PgConnection,
    entries: &[Entry],
) -> Result<Vec<bool>, QueueError> {
    let first = first_in_group(entries);
    let rows = sqlx::query(DELIVERIES_SKIPPING_STORED.as_str())
        .bind(document(&DeliveriesDoc::of(entries, &first))?)
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

/// What the deliveries statement reads: the locks to take and the deliveries to insert.
#[derive(Serialize)]
struct DeliveriesDoc<'a> {
    /// `forge:repo#number` of each pull request a job of the group names.
    locks: Vec<String>,
    /// The first delivery of each (forge, id) in the group.
    deliveries: Vec<DeliveryRow<'a>>,
}

#[derive(Serialize)]
struct DeliveryRow<'a> {
    forge: &'static str,
    delivery_id: &'a str,
    event: &'a str,
    action: Option<&'a str>,
    received_at: i64,
}

impl<'a> DeliveriesDoc<'a> {
    /// `first`: per entry, whether it is the first of its (forge, delivery id) in the group.
    fn of(entries: &'a [Entry], first: &[bool]) -> DeliveriesDoc<'a> {
        let deliveries = entries
            .iter()
            .zip(first)
            .filter(|(_, first)| **first)
            .map(|(entry, _)| DeliveryRow {
                forge: entry.delivery.forge.as_str(),
                delivery_id: &entry.delivery.delivery_id,
                event: &entry.delivery.event,
                action: entry.delivery.action.as_deref(),
                received_at: to_millis(entry.delivery.received_at),
            })
            .collect();
        let locks = entries
            .iter()
            .filter_map(|entry| entry.job.as_ref())
            .map(|job| format!("{}:{}#{}", job.forge, job.repo_full_name, job.pr_number))
            .collect();
        DeliveriesDoc { locks, deliveries }
    }
}

/// What the jobs statement reads: the time, the pull requests whose stored jobs are replaced
/// and the new jobs.
#[derive(Serialize)]
struct JobsDoc<'a> {
    now: i64,
    prs: Vec<PrRow<'a>>,
    jobs: Vec<JobRow<'a>>,
}

#[derive(Serialize)]
struct PrRow<'a> {
    forge: &'static str,
    repo: &'a str,
    number: i64,
}

#[derive(Serialize)]
struct JobRow<'a> {
    position: usize,
    delivery_id: &'a str,
    forge: &'static str,
    repo: &'a str,
    installation: Option<i64>,
    pr: i64,
    head_sha: Option<&'a str>,
    kind: &'static str,
    strategy: Option<&'a str>,
    payload: &'a str,
    state: &'static str,
    max_attempts: i64,
}

impl<'a> JobsDoc<'a> {
    fn of(plan: &GroupPlan<'a>, now: i64) -> JobsDoc<'a> {
        let prs = plan
            .replacing()
            .iter()
            .map(|&(forge, repo, number)| PrRow {
                forge: forge.as_str(),
                repo,
                number,
            })
            .collect();
        let jobs = plan
            .jobs()
            .enumerate()
            .map(|(position, (entry, job, state))| JobRow {
                position,
                delivery_id: &entry.delivery.delivery_id,
                forge: job.forge.as_str(),
                repo: &job.repo_full_name,
                installation: job.installation_id,
                pr: job.pr_number,
                head_sha: job.head_sha.as_deref(),
                kind: job.kind,
                strategy: job.strategy.as_deref(),
                payload: &job.payload,
                state: state.as_str(),
                max_attempts: entry.max_attempts,
            })
            .collect();
        JobsDoc { now, prs, jobs }
    }
}

/// A document as JSON text, for a bind.
fn document(doc: &impl Serialize) -> Result<String, QueueError> {
    serde_json::to_string(doc).map_err(|err| sqlx::Error::Encode(Box::new(err)).into())
}

/// A document as a dollar-quoted literal. `$` occurs in JSON text only inside strings, where
/// `\u0024` means the same character; with none left, nothing inside can end the quote.
fn literal(doc: &impl Serialize) -> Result<String, QueueError> {
    let json = document(doc)?.replace('$', "\\u0024");
    Ok(format!("$doc${json}$doc$"))
}

/// Reads the jobs statement's rows: what the replacement touched, per listed pull request,
/// and the new jobs' ids.
fn read_jobs_rows<'a>(
    rows: &[PgRow],
    prs: &[super::supersede::Pr<'a>],
) -> Result<(Replaced<'a>, JobIds), QueueError> {
    let mut replaced = Replaced::new();
    let mut ids = JobIds::with_capacity(rows.len());
    for row in rows {
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

/// The forge named in a returned row's `forge` column (`None`: a name this build does not
/// know, which no row it wrote has).
fn forge_from_row(row: &PgRow) -> Result<Option<ForgeKind>, QueueError> {
    Ok(row.try_get::<String, _>("forge")?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_document_holds_no_dollar_and_reads_back_the_same() {
        let hostile = "$doc$'; DROP TABLE jobs; --$$\\u0024\"\n\u{1F600}";
        let doc = PrRow {
            forge: "github",
            repo: hostile,
            number: 1,
        };
        let quoted = literal(&doc).expect("serializes");
        let inner = quoted
            .strip_prefix("$doc$")
            .and_then(|rest| rest.strip_suffix("$doc$"))
            .expect("dollar-quoted");
        assert!(!inner.contains('$'), "{inner}");
        let read: serde_json::Value = serde_json::from_str(inner).expect("JSON");
        assert_eq!(read["repo"], hostile);
    }

    #[test]
    fn each_statement_is_written_once_for_both_ways() {
        assert!(deliveries_sql("$1", true).contains("ON CONFLICT"));
        assert!(!deliveries_sql("$1", false).contains("ON CONFLICT"));
        assert_eq!(
            deliveries_sql("$1", false),
            DELIVERIES_SKIPPING_STORED.replace(
                " ON CONFLICT (forge, delivery_id) DO NOTHING RETURNING forge, delivery_id",
                ""
            )
        );
        assert_eq!(jobs_sql("$x$[]$x$"), JOBS.replace("$1", "$x$[]$x$"));
    }
}
