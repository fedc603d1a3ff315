//! Errors of the queue.

use super::types::JobId;

/// Why a queue operation failed.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// The URL is neither `sqlite:` nor `postgres://`/`postgresql://`, or does not parse.
    /// Only the scheme is shown: the URL may carry a password.
    #[error(
        "unsupported or malformed queue database URL (scheme {scheme:?}); expected sqlite://PATH or postgres://..."
    )]
    InvalidUrl {
        /// The scheme part of the URL, if any.
        scheme: String,
    },
    /// Start-up could not connect to the database: the cause (refused, unknown database,
    /// authentication, ...) is in the message, as the database said it, without the line
    /// of the server's own source that PostgreSQL adds (`at line 768`), which means nothing
    /// to whoever reads it. (Not a `source`: its text would bring that line back.)
    #[error("cannot connect to the queue database: {}", database_message(.0))]
    Connect(sqlx::Error),
    /// Start-up got no answer from the database in time (host unreachable or not listening).
    #[error("the queue database did not answer within {seconds} s (host unreachable?)")]
    ConnectTimeout {
        /// How long start-up waited.
        seconds: u64,
    },
    /// The task that commits deliveries is gone (the Tokio runtime that opened the queue
    /// shut down); the delivery was not stored.
    #[error("the queue's intake is not running; the delivery was not stored")]
    IntakeStopped,
    /// The database refused or failed an operation.
    #[error("queue database error: {0}")]
    Database(#[from] sqlx::Error),
    /// The commit of the group holding the work failed (PostgreSQL): most likely nothing of it
    /// was stored, but if the connection broke after the database committed, it was.
    #[error("queue database error: the group's commit failed: {0}")]
    CommitFailed(String),
    /// Applying the embedded migrations failed.
    #[error("queue migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The caller does not hold the job's lease (it expired and another worker took the job,
    /// or the job already finished).
    #[error("job {0} is not leased by this worker")]
    LeaseLost(JobId),
    /// A job to enqueue has a value the database cannot hold.
    #[error("invalid job: {reason}")]
    InvalidJob {
        /// What was wrong.
        reason: String,
    },
    /// No job has this id.
    #[error("job {0} not found")]
    NotFound(JobId),
    /// A stored row could not be read back.
    #[error("job {id} is unreadable: {reason}")]
    Corrupt {
        /// The job.
        id: JobId,
        /// What was wrong.
        reason: String,
    },
}

/// A database error as its reader needs it: the database's own message, without where in
/// the server's source it was raised.
fn database_message(error: &sqlx::Error) -> String {
    match error {
        sqlx::Error::Database(database) => {
            format!("error returned from database: {}", database.message())
        }
        other => other.to_string(),
    }
}

impl QueueError {
    /// An [`QueueError::InvalidUrl`] for `url`, keeping only its scheme.
    pub(crate) fn invalid_url(url: &str) -> Self {
        let scheme = url.split_once(':').map(|(scheme, _)| scheme).unwrap_or("");
        let scheme = if scheme.len() <= 16 && scheme.chars().all(|c| c.is_ascii_alphanumeric()) {
            scheme.to_string()
        } else {
            "?".to_string()
        };
        QueueError::InvalidUrl { scheme }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_url_never_shows_the_password() {
        let err = QueueError::invalid_url("mysql://user:hunter2@db/x");
        let text = err.to_string();
        assert!(text.contains("mysql"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }
}
