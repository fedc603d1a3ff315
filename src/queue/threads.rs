//! What the queue database keeps about review threads: the comments Redline claimed to
//! answer, and the findings dismissed on each pull request.
//!
//! Invariants: a comment is claimed at most once per repository (the primary key decides,
//! whichever process asks first); dismissing is idempotent.

use sqlx::Row;

use super::db::with_pool;
use super::error::QueueError;
use super::store::{Queue, now_millis, to_db_int};

impl Queue {
    /// Claims review comment `comment_id` of `repo_full_name` for an answer: `true` the
    /// first time, `false` ever after (a redelivery, another replica).
    pub async fn claim_comment(
        &self,
        repo_full_name: &str,
        comment_id: u64,
    ) -> Result<bool, QueueError> {
        let comment_id = to_db_int(comment_id, "comment_id")?;
        let _turn = self.write_turn().await;
        let inserted = with_pool!(&self.db, pool => {
            sqlx::query(
                "INSERT INTO answered_comments (repo_full_name, comment_id, answered_at) \
                 VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            )
            .bind(repo_full_name)
            .bind(comment_id)
            .bind(now_millis())
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(inserted == 1)
    }

    /// Records `keys` as dismissed on pull request `repo_full_name#pr_number`.
    pub async fn dismiss(
        &self,
        repo_full_name: &str,
        pr_number: u64,
        keys: &[String],
    ) -> Result<(), QueueError> {
        let pr_number = to_db_int(pr_number, "pr_number")?;
        let _turn = self.write_turn().await;
        let now = now_millis();
        for key in keys {
            with_pool!(&self.db, pool => {
                sqlx::query(
                    "INSERT INTO dismissed_findings \
                     (repo_full_name, pr_number, finding_key, dismissed_at) \
                     VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                )
                .bind(repo_full_name)
                .bind(pr_number)
                .bind(key)
                .bind(now)
                .execute(pool)
                .await?
                .rows_affected()
            });
        }
        Ok(())
    }

    /// The keys dismissed on pull request `repo_full_name#pr_number`.
    pub async fn dismissed(
        &self,
        repo_full_name: &str,
        pr_number: u64,
    ) -> Result<Vec<String>, QueueError> {
        let pr_number = to_db_int(pr_number, "pr_number")?;
        with_pool!(&self.db, pool => {
            sqlx::query(
                "SELECT finding_key FROM dismissed_findings \
                 WHERE repo_full_name = $1 AND pr_number = $2 ORDER BY finding_key",
            )
            .bind(repo_full_name)
            .bind(pr_number)
            .fetch_all(pool)
            .await?
            .iter()
            .map(|row| row.try_get::<String, _>(0usize).map_err(QueueError::from))
            .collect()
        })
    }
}
