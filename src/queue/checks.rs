//! What the queue keeps of each job's check beside the change (GitHub: a check run;
//! GitLab: a commit status): whether it is shown, its forge id and commit, and whether it
//! is completed.
//!
//! Invariants: one statement decides each step, whichever process or replica asks:
//! at most one caller at a time creates a job's check ([`Queue::begin_check`]; a claim
//! whose holder died is taken over once it is [`STALE_CREATION`] old), and exactly one
//! completes it ([`Queue::close_check`]), so a check is never made twice nor completed
//! twice by Redline. A completed check stays completed.

use std::time::Duration;

use sqlx::Row;

use super::db::{job_columns, job_from_row, with_pool};
use super::error::QueueError;
use super::lease::millis_after;
use super::store::Queue;
use super::types::{Job, JobId};

/// How old a creation claim must be before another process may take it over (its holder
/// died: a creation is one request).
pub const STALE_CREATION: Duration = Duration::from_secs(120);

/// A job's check as the queue records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckSlot {
    /// None was shown (or its creation was abandoned): the caller now holds the claim to
    /// create it, and must report [`Queue::check_created`] or [`Queue::check_not_created`].
    Create,
    /// Shown and not completed.
    Open(ShownCheck),
    /// Another caller is creating it.
    Busy,
    /// Completed.
    Closed,
    /// None shown, none being created (only [`Queue::check`] says so: [`Queue::begin_check`]
    /// claims the creation instead).
    Absent,
}

/// A check shown on the forge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownCheck {
    /// The forge's id of it (GitHub's check run; GitLab's statuses need none).
    pub id: Option<u64>,
    /// The commit it is on.
    pub head: String,
}

/// A job whose check was left open, and the check.
#[derive(Debug, Clone, PartialEq)]
pub struct UnsettledCheck {
    /// The job.
    pub job: Job,
    /// Its check; `None` while a creation claim is held (stale, see [`Queue::unsettled_checks`]).
    pub shown: Option<ShownCheck>,
}

impl Queue {
    /// Claims the creation of job `id`'s check when it has none (or a stale claim), else
    /// says what it has.
    pub async fn begin_check(&self, id: JobId) -> Result<CheckSlot, QueueError> {
        let now = self.now_millis();
        let stale_before = now.saturating_sub(millis_after(0, STALE_CREATION));
        let _turn = self.write_turn().await;
        let claimed = with_pool!(&self.db, pool => {
            sqlx::query(
                "UPDATE jobs SET check_state = 'creating', check_at = $2 \
                 WHERE id = $1 AND (check_state IS NULL \
                   OR (check_state = 'creating' AND check_at < $3))",
            )
            .bind(id.0)
            .bind(now)
            .bind(stale_before)
            .execute(pool)
            .await?
            .rows_affected()
        });
        if claimed == 1 {
            return Ok(CheckSlot::Create);
        }
        self.check(id).await
    }

    /// What job `id`'s check is, claiming nothing.
    pub async fn check(&self, id: JobId) -> Result<CheckSlot, QueueError> {
        let row = with_pool!(&self.db, pool => {
            let row = sqlx::query("SELECT check_state, check_id, check_sha FROM jobs WHERE id = $1")
                .bind(id.0)
                .fetch_optional(pool)
                .await?
                .ok_or(QueueError::NotFound(id))?;
            (
                row.try_get::<Option<String>, _>(0usize)?,
                row.try_get::<Option<i64>, _>(1usize)?,
                row.try_get::<Option<String>, _>(2usize)?,
            )
        });
        Ok(match row {
            (Some(state), id, Some(head)) if state == "open" => CheckSlot::Open(ShownCheck {
                id: id.and_then(|id| u64::try_from(id).ok()),
                head,
            }),
            (Some(state), _, _) if state == "closed" => CheckSlot::Closed,
            (None, _, _) => CheckSlot::Absent,
            _ => CheckSlot::Busy,
        })
    }

    /// Records the check of job `id` created on commit `head` (`check_id`: the forge's id),
    /// open, or completed already when `completed`.
    pub async fn check_created(
        &self,
        id: JobId,
        check_id: Option<u64>,
        head: &str,
        completed: bool,
    ) -> Result<(), QueueError> {
        let check_id = check_id.and_then(|id| i64::try_from(id).ok());
        let state = if completed { "closed" } else { "open" };
        let _turn = self.write_turn().await;
        with_pool!(&self.db, pool => {
            sqlx::query(
                "UPDATE jobs SET check_state = $2, check_id = $3, check_sha = $4, check_at = $5 \
                 WHERE id = $1 AND check_state = 'creating'",
            )
            .bind(id.0)
            .bind(state)
            .bind(check_id)
            .bind(head)
            .bind(self.now_millis())
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Gives up the creation claim of job `id`'s check (the forge refused or failed), so
    /// that a later step may try again.
    pub async fn check_not_created(&self, id: JobId) -> Result<(), QueueError> {
        let _turn = self.write_turn().await;
        with_pool!(&self.db, pool => {
            sqlx::query(
                "UPDATE jobs SET check_state = NULL, check_at = NULL \
                 WHERE id = $1 AND check_state = 'creating'",
            )
            .bind(id.0)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Claims the completion of job `id`'s open check: its id and commit for the one
    /// caller that gets it, `None` for any other (none open, or completed already).
    pub async fn close_check(&self, id: JobId) -> Result<Option<ShownCheck>, QueueError> {
        let _turn = self.write_turn().await;
        let row = with_pool!(&self.db, pool => {
            match sqlx::query(
                "UPDATE jobs SET check_state = 'closed', check_at = $2 \
                 WHERE id = $1 AND check_state = 'open' RETURNING check_id, check_sha",
            )
            .bind(id.0)
            .bind(self.now_millis())
            .fetch_optional(pool)
            .await?
            {
                Some(row) => Some((
                    row.try_get::<Option<i64>, _>(0usize)?,
                    row.try_get::<Option<String>, _>(1usize)?,
                )),
                None => None,
            }
        });
        Ok(row.map(|(check_id, head)| ShownCheck {
            id: check_id.and_then(|id| u64::try_from(id).ok()),
            head: head.unwrap_or_default(),
        }))
    }

    /// Opens job `id`'s check again after its completion could not be shown (so that the
    /// next sweep completes it).
    pub async fn reopen_check(&self, id: JobId) -> Result<(), QueueError> {
        let _turn = self.write_turn().await;
        with_pool!(&self.db, pool => {
            sqlx::query("UPDATE jobs SET check_state = 'open' WHERE id = $1 AND check_state = 'closed'")
                .bind(id.0)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// Jobs whose check is left unsettled, oldest first, at most `limit`: open on a job
    /// that finished or whose worker's lease expired, or whose creation claim went stale.
    pub async fn unsettled_checks(&self, limit: u32) -> Result<Vec<UnsettledCheck>, QueueError> {
        let now = self.now_millis();
        let stale_before = now.saturating_sub(millis_after(0, STALE_CREATION));
        with_pool!(&self.db, pool => {
            sqlx::query(concat!(
                "SELECT ", job_columns!(), ", check_state, check_id, check_sha FROM jobs \
                 WHERE (check_state = 'open' OR (check_state = 'creating' AND check_at < $2)) \
                   AND (state IN ('succeeded', 'failed', 'cancelled', 'superseded') \
                     OR (state = 'running' AND lease_until < $1)) \
                 ORDER BY id LIMIT $3"
            ))
            .bind(now)
            .bind(stale_before)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
            .iter()
            .map(|row| {
                let job = job_from_row(row)?;
                let state: Option<String> = row.try_get("check_state")?;
                let check_id: Option<i64> = row.try_get("check_id")?;
                let head: Option<String> = row.try_get("check_sha")?;
                let shown = match (state.as_deref(), head) {
                    (Some("open"), Some(head)) => Some(ShownCheck {
                        id: check_id.and_then(|id| u64::try_from(id).ok()),
                        head,
                    }),
                    _ => None,
                };
                Ok(UnsettledCheck { job, shown })
            })
            .collect()
        })
    }
}
