//! SQLite: a whole group in one transaction: its deliveries in a few statements, then the
//! workers' completions and claims (see [`super::lease`]).
//!
//! Every statement costs a round trip to the connection's thread, so the group is not stored
//! member by member: its rows go in multi-row inserts (chunks of [`CHUNK_SIZES`] rows), and
//! what running the members one after the other would have done is worked out by the rule
//! of [`super::supersede`]. The database's single writer serializes intake: a group reads
//! the live jobs with every earlier group committed.

use std::collections::HashSet;
use std::sync::OnceLock;

use serde_json::{Value, json};
use sqlx::Connection;
use sqlx::Row;
use sqlx::sqlite::{SqliteConnection, SqliteRow};

use super::db::{state_from_row, to_millis};
use super::error::QueueError;
use super::intake_db::{Entry, Outcomes, StoredJob, Work};
use super::lease::{LeaseDb, Reaper};
use super::supersede::{GroupPlan, JobIds, Pr, Replaced, count_replaced, first_in_group};
use super::types::{Accepted, JobId, JobState};
use crate::forge::ForgeKind;

/// Inserts rows of `(forge, delivery_id, event, action, received_at)`, one `VALUES` tuple
/// each. Returns the keys (forge, id) actually inserted.
const INSERT_DELIVERIES: InsertRows = InsertRows {
    head: "INSERT INTO deliveries (forge, delivery_id, event, action, received_at) VALUES ",
    row: "(?, ?, ?, ?, ?)",
    tail: " ON CONFLICT (forge, delivery_id) DO NOTHING RETURNING forge, delivery_id",
};

/// Supersedes the queued jobs and flags the running job of each listed PR. Binds: $1 JSON
/// array of `[forge, repo, pr]`, $2 now. Returns each touched job's PR and new state. The live jobs'
/// per-PR index is named so that the jobs are looked up by repository and number, never found
/// by scanning every queued job (the planner, without statistics, may prefer the state index).
const REPLACE_PR_JOBS: &str = "UPDATE jobs INDEXED BY jobs_live_by_pr SET \
       state = CASE WHEN state = 'queued' THEN 'superseded' ELSE state END, \
       cancel_requested = CASE WHEN state = 'running' THEN TRUE ELSE cancel_requested END, \
       finished_at = CASE WHEN state = 'queued' THEN $2 ELSE finished_at END, \
       updated_at = $2 \
     WHERE state IN ('queued', 'running') AND (forge, repo_full_name, pr_number) IN \
       (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), \
          json_extract(value, '$[2]') FROM json_each($1)) \
     RETURNING state, forge, repo_full_name, pr_number";

/// Inserts jobs, one `VALUES` tuple each, in group order. Returns each new job's id and
/// delivery.
const INSERT_JOBS: InsertRows = InsertRows {
    head: "INSERT INTO jobs (delivery_id, forge, repo_full_name, installation_id, pr_number, \
       head_sha, kind, strategy, payload, state, attempts, max_attempts, run_at, \
       cancel_requested, created_at, updated_at, finished_at) VALUES ",
    row: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, FALSE, ?, ?, ?)",
    tail: " RETURNING id, forge, delivery_id",
};

/// Rows per statement, largest first: a group's rows go in chunks of these sizes, so each
/// insert has one of 32 shapes, each prepared once per connection (within sqlx's statement
/// cache of 100), and a group of up to 32 deliveries needs one statement per table: every
/// statement is a round trip to the connection's thread. (Rows travel as bound values:
/// shipping them as one JSON document made SQLite re-parse every row several times.)
const CHUNK_SIZES: [usize; 32] = [
    32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9,
    8, 7, 6, 5, 4, 3, 2, 1,
];

/// A multi-row `INSERT`: `head`, then `row` once per row (comma-separated), then `tail`.
struct InsertRows {
    head: &'static str,
    row: &'static str,
    tail: &'static str,
}

impl InsertRows {
    /// The statement for `rows` rows, one of [`CHUNK_SIZES`].
    fn sql(&self, rows: usize) -> String {
        let tuples = vec![self.row; rows].join(", ");
        format!("{}{tuples}{}", self.head, self.tail)
    }
}

/// The statements of `insert` for every chunk size, built once (`cache` is the insert's own).
fn chunk_statements(
    insert: &InsertRows,
    cache: &'static OnceLock<Vec<String>>,
) -> &'static [String] {
    cache.get_or_init(|| CHUNK_SIZES.iter().map(|&rows| insert.sql(rows)).collect())
}

/// Splits `total` rows into consecutive chunks of [`CHUNK_SIZES`]: (statement index, rows).
fn chunks(total: usize) -> Vec<(usize, std::ops::Range<usize>)> {
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < total {
        let left = total - start;
        let (index, size) = CHUNK_SIZES
            .iter()
            .copied()
            .enumerate()
            .find(|&(_, size)| size <= left)
            .unwrap_or((CHUNK_SIZES.len() - 1, 1));
        chunks.push((index, start..start + size));
        start += size;
    }
    chunks
}

/// Stores `work` in one transaction; one outcome per member, in order (deliveries, then
/// completions, then claims).
pub(super) async fn store_sqlite(
    conn: &mut SqliteConnection,
    work: &Work<'_>,
    reaper: &Reaper,
    now: i64,
) -> Result<Outcomes, QueueError> {
    let mut tx = conn.begin().await?;
    match store_work(&mut tx, work, reaper, now).await {
        Ok(outcomes) => {
            tx.commit().await?;
            Ok(outcomes)
        }
        Err(err) => {
            // Roll back now, so the connection is clean before the members are retried.
            let _ = tx.rollback().await;
            Err(err)
        }
    }
}

async fn store_work(
    conn: &mut sqlx::SqliteConnection,
    work: &Work<'_>,
    reaper: &Reaper,
    now: i64,
) -> Result<Outcomes, QueueError> {
    let mut outcomes = Outcomes::default();
    if !work.deliveries.is_empty() {
        let accepted = store_in(conn, work.deliveries, now).await?;
        outcomes.deliveries = accepted.into_iter().map(Ok).collect();
    }
    (outcomes.finishes, outcomes.claims) = LeaseDb::Sqlite(conn)
        .settle_in_transaction(work.finishes, work.claims, reaper, now)
        .await?;
    Ok(outcomes)
}

async fn store_in(
    conn: &mut sqlx::SqliteConnection,
    entries: &[Entry],
    now: i64,
) -> Result<Vec<Accepted>, QueueError> {
    let fresh = insert_deliveries(conn, entries).await?;
    let plan = GroupPlan::new(entries, fresh);
    let replaced = replace_stored_jobs(conn, plan.replacing(), now).await?;
    let ids = insert_jobs(conn, &plan, now).await?;
    plan.outcomes(&ids, &replaced)
}

/// Inserts the group's deliveries; `true` for each entry whose delivery is new (not stored
/// before, not earlier in the group).
async fn insert_deliveries(
    conn: &mut sqlx::SqliteConnection,
    entries: &[Entry],
) -> Result<Vec<bool>, QueueError> {
    let first = first_in_group(entries);
    static STATEMENTS: OnceLock<Vec<String>> = OnceLock::new();
    let statements = chunk_statements(&INSERT_DELIVERIES, &STATEMENTS);
    let rows: Vec<&Entry> = entries
        .iter()
        .zip(&first)
        .filter(|(_, first)| **first)
        .map(|(entry, _)| entry)
        .collect();
    let mut inserted: HashSet<(ForgeKind, String)> = HashSet::with_capacity(rows.len());
    for (statement, range) in chunks(rows.len()) {
        let mut query = sqlx::query(statements[statement].as_str());
        for entry in &rows[range] {
            let delivery = &entry.delivery;
            query = query
                .bind(delivery.forge.as_str())
                .bind(delivery.delivery_id.as_str())
                .bind(delivery.event.as_str())
                .bind(delivery.action.as_deref())
                .bind(to_millis(delivery.received_at));
        }
        for row in query.fetch_all(&mut *conn).await? {
            if let Some(forge) = forge_from_row(&row, 0)? {
                inserted.insert((forge, row.try_get::<String, _>(1usize)?));
            }
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

/// The forge named in column `index` of a `RETURNING` row (`None`: a name this build does not
/// know, which no row it wrote has).
fn forge_from_row(row: &SqliteRow, index: usize) -> Result<Option<ForgeKind>, QueueError> {
    Ok(row.try_get::<String, _>(index)?.parse().ok())
}

/// Supersedes the stored queued jobs and flags the running jobs of `prs`. Returns, per PR,
/// how many were superseded and how many asked to stop.
async fn replace_stored_jobs<'a>(
    conn: &mut sqlx::SqliteConnection,
    prs: &[Pr<'a>],
    now: i64,
) -> Result<Replaced<'a>, QueueError> {
    let mut replaced = Replaced::new();
    if prs.is_empty() {
        return Ok(replaced);
    }
    let list: Vec<Value> = prs
        .iter()
        .map(|(forge, repo, pr)| json!([forge.as_str(), repo, pr]))
        .collect();
    let rows = sqlx::query(REPLACE_PR_JOBS)
        .bind(Value::Array(list).to_string())
        .bind(now)
        .fetch_all(&mut *conn)
        .await?;
    for row in &rows {
        let state = state_from_row(row, JobId(0))?;
        let forge = forge_from_row(row, 1)?;
        let repo: String = row.try_get(2usize)?;
        let number: i64 = row.try_get(3usize)?;
        count_replaced(&mut replaced, prs, (forge, &repo, number), state);
    }
    Ok(replaced)
}

/// Inserts the plan's new jobs in group order. Returns job ids by delivery (forge and id).
async fn insert_jobs(
    conn: &mut sqlx::SqliteConnection,
    plan: &GroupPlan<'_>,
    now: i64,
) -> Result<JobIds, QueueError> {
    if !plan.has_jobs() {
        return Ok(JobIds::new());
    }
    static STATEMENTS: OnceLock<Vec<String>> = OnceLock::new();
    let statements = chunk_statements(&INSERT_JOBS, &STATEMENTS);
    let jobs: Vec<(&Entry, &StoredJob, JobState)> = plan.jobs().collect();
    let mut ids = JobIds::with_capacity(jobs.len());
    for (statement, range) in chunks(jobs.len()) {
        let mut query = sqlx::query(statements[statement].as_str());
        for &(entry, job, state) in &jobs[range] {
            let finished_at = (state == JobState::Superseded).then_some(now);
            query = query
                .bind(entry.delivery.delivery_id.as_str())
                .bind(job.forge.as_str())
                .bind(job.repo_full_name.as_str())
                .bind(job.installation_id)
                .bind(job.pr_number)
                .bind(job.head_sha.as_deref())
                .bind(job.kind)
                .bind(job.strategy.as_deref())
                .bind(job.payload.as_str())
                .bind(state.as_str())
                .bind(entry.max_attempts)
                .bind(now)
                .bind(now)
                .bind(now)
                .bind(finished_at);
        }
        for row in query.fetch_all(&mut *conn).await? {
            if let Some(forge) = forge_from_row(&row, 1)? {
                ids.insert(
                    (forge, row.try_get::<String, _>(2usize)?),
                    row.try_get::<i64, _>(0usize)?,
                );
            }
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_every_row_once_in_order_with_the_largest_sizes() {
        for total in 0..=100 {
            let chunks = chunks(total);
            let mut next = 0;
            for (statement, range) in &chunks {
                assert_eq!(range.start, next, "{total}");
                assert_eq!(CHUNK_SIZES[*statement], range.len(), "{total}");
                next = range.end;
            }
            assert_eq!(next, total);
            assert_eq!(chunks.len(), total.div_ceil(32), "{total}: {chunks:?}");
        }
    }

    #[tokio::test]
    async fn the_supersede_looks_up_each_listed_pull_request_in_the_live_index() {
        use sqlx::sqlite::SqliteConnectOptions;
        use std::str::FromStr;

        let options = SqliteConnectOptions::from_str("sqlite::memory:").expect("url");
        let mut conn = SqliteConnection::connect_with(&options)
            .await
            .expect("open");
        for (_, _, sql) in super::super::db::SQLITE_MIGRATIONS {
            sqlx::raw_sql(*sql)
                .execute(&mut conn)
                .await
                .expect("schema");
        }
        let plan: Vec<String> = sqlx::query(sqlx::AssertSqlSafe(format!(
            "EXPLAIN QUERY PLAN {REPLACE_PR_JOBS}"
        )))
        .bind("[[\"github\", \"o/r\", 7]]")
        .bind(1_i64)
        .fetch_all(&mut conn)
        .await
        .expect("plan")
        .iter()
        .map(|row| row.try_get::<String, _>(3usize).expect("detail"))
        .collect();
        assert!(
            plan.iter().any(|step| step.contains(
                "USING INDEX jobs_live_by_pr (forge=? AND repo_full_name=? AND pr_number=?)"
            )),
            "{plan:?}"
        );
    }

    #[test]
    fn statements_have_one_tuple_per_row() {
        let sql = INSERT_DELIVERIES.sql(3);
        assert_eq!(sql.matches("(?, ?, ?, ?, ?)").count(), 3, "{sql}");
        assert!(sql.ends_with("RETURNING forge, delivery_id"), "{sql}");
        let placeholders = INSERT_JOBS.sql(2).matches('?').count();
        assert_eq!(placeholders, 2 * 15);
    }
}
