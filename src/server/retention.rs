//! Pruning old deliveries (and finished jobs) from the queue on a schedule.
//!
//! Invariant: a delivery is kept at least the retention period after it was received, so
//! redeliveries within it are still recognised as duplicates (GitHub lets users redeliver
//! deliveries of the past three days, hence a default above that).

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::task::JoinHandle;
use tracing::{info, warn};

use crate::queue::{Queue, QueueError};

/// How long deliveries are kept by default.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Time between two prunes of a running server.
pub(crate) const PRUNE_INTERVAL: Duration = Duration::from_secs(3600);

/// Deletes deliveries received, and finished jobs last updated, more than `retention` before
/// `now`. Returns the number of rows deleted.
pub async fn prune_once(
    queue: &Queue,
    retention: Duration,
    now: DateTime<Utc>,
) -> Result<u64, QueueError> {
    let retention = chrono::Duration::from_std(retention).unwrap_or(chrono::Duration::MAX);
    let cutoff = now
        .checked_sub_signed(retention)
        .unwrap_or(DateTime::<Utc>::MIN_UTC);
    queue.prune(cutoff).await
}

/// Prunes at start and then every `interval` until the task is aborted. Failures are
/// logged and retried at the next turn.
pub(crate) fn spawn_pruner(
    queue: Queue,
    retention: Duration,
    interval: Duration,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            match prune_once(&queue, retention, Utc::now()).await {
                Ok(0) => {}
                Ok(deleted) => info!(deleted, "pruned old deliveries and finished jobs"),
                Err(err) => warn!(error = %err, "pruning old deliveries failed"),
            }
        }
    })
}
