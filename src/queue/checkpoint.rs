//! Checkpointing SQLite's write-ahead log off the commit path.
//!
//! SQLite's automatic checkpoint runs inside the commit that pushes the log past its
//! threshold: that commit (and every caller waiting on its group) waits for the log to be
//! copied into the database and the database file to be synced. Instead, the committer asks
//! this task for a passive checkpoint every [`CHECKPOINT_EVERY`] commits; it runs on a
//! connection of its own while later groups commit. The automatic checkpoint stays as a
//! safety net at [`WAL_AUTOCHECKPOINT_PAGES`] (other writers, or a task that fell behind).
//!
//! Invariants: a checkpoint never changes what is committed, only where it is kept, so
//! durability is SQLite's own (`synchronous = FULL`: every commit is synced to the log before
//! it is answered). The task ends when the committer (the only sender) is gone.

use sqlx::sqlite::SqlitePool;
use tokio::sync::mpsc;
use tracing::warn;

use super::db::Db;

/// Commits between two requested checkpoints.
const CHECKPOINT_EVERY: u32 = 64;

/// Log size (pages) at which a commit checkpoints by itself (SQLite's default is 1000).
pub(super) const WAL_AUTOCHECKPOINT_PAGES: u32 = 4000;

/// The committer's handle on the checkpoint task.
pub(super) struct Checkpointer {
    requests: mpsc::Sender<()>,
    commits: u32,
}

impl Checkpointer {
    /// Starts the task for an SQLite queue; `None` on PostgreSQL.
    pub(super) fn start(db: &Db) -> Option<Checkpointer> {
        let Db::Sqlite(pool) = db else {
            return None;
        };
        // One pending request is enough: a checkpoint covers every commit before it.
        let (requests, received) = mpsc::channel(1);
        tokio::spawn(run(pool.clone(), received));
        Some(Checkpointer {
            requests,
            commits: 0,
        })
    }

    /// Counts a commit; every [`CHECKPOINT_EVERY`] commits asks for a checkpoint (never
    /// waiting: one already asked for will do).
    pub(super) fn committed(&mut self) {
        self.commits += 1;
        if self.commits >= CHECKPOINT_EVERY {
            self.commits = 0;
            let _ = self.requests.try_send(());
        }
    }
}

async fn run(pool: SqlitePool, mut requests: mpsc::Receiver<()>) {
    while requests.recv().await.is_some() {
        if pool.is_closed() {
            break;
        }
        // PASSIVE: copies what it can without waiting for (or blocking) readers and writers.
        if let Err(err) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&pool)
            .await
        {
            warn!(error = %err, "checkpointing the queue's write-ahead log failed");
        }
    }
}
