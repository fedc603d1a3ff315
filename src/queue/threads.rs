//! What the queue database keeps about review threads: the comments Redline claimed to
//! answer, and the findings dismissed on each pull request.
//!
//! Invariants: a comment is claimed at most once per repository (the primary key decides,
//! whichever process asks first); dismissing is idempotent; a thread's answer count only
//! grows while it is below the cap asked with (one statement decides, so concurrent
//! answers on one replica or many never pass it).

use sqlx::Row;

use super::db::with_pool;
use super::error::QueueError;
use super::store::{Queue, to_db_int};

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
            .bind(self.now_millis())
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(inserted == 1)
    }

    /// Counts one more answer in review thread `root_id` of `repo_full_name` when fewer
    /// than `max` are counted: `true` when counted (the answer may be posted). A thread
    /// not counted yet starts from `posted`, the answers GitHub already shows.
    pub async fn reserve_answer(
        &self,
        repo_full_name: &str,
        root_id: u64,
        max: u32,
        posted: usize,
    ) -> Result<bool, QueueError> {
        let posted = i64::try_from(posted).unwrap_or(i64::MAX);
        if posted >= i64::from(max) {
            return Ok(false);
        }
        let root_id = to_db_int(root_id, "root_id")?;
        let _turn = self.write_turn().await;
        let counted = with_pool!(&self.db, pool => {
            sqlx::query(
                "INSERT INTO thread_answers (repo_full_name, root_id, answers, updated_at) \
                 VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (repo_full_name, root_id) DO UPDATE \
                 SET answers = thread_answers.answers + 1, updated_at = $4 \
                 WHERE thread_answers.answers < $5",
            )
            .bind(repo_full_name)
            .bind(root_id)
            .bind(posted + 1)
            .bind(self.now_millis())
            .bind(i64::from(max))
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(counted == 1)
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
        let now = self.now_millis();
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
