//! [`Queue::accept_delivery`]: record a delivery and enqueue its job atomically, with group
//! commit.
//!
//! Callers hand their delivery to one committer task per [`Queue`] (and its clones). The task
//! takes every delivery waiting when it is free (at most [`MAX_GROUP`]) and stores them in one
//! transaction, so concurrent deliveries share one commit and one fsync; an idle intake commits
//! a lone delivery at once (no batching delay).
//!
//! Invariants:
//! - A caller is answered only after the transaction holding its delivery committed, or with
//!   the error that kept it from committing.
//! - Members of a group are applied in arrival order, each seeing the ones before it: a
//!   redelivery within a group is a duplicate, and a later job supersedes an earlier one of
//!   the same pull request exactly as if they had arrived one after the other.
//! - When a group's transaction fails, nothing of it is kept and each member is stored again
//!   in a transaction of its own, so one bad delivery does not fail the others. (If the group
//!   commit failed only in appearance — the connection dropped after the database committed —
//!   the retry finds the delivery stored and answers [`Accepted::Duplicate`]: still stored
//!   once.)
//! - A delivery handed over is stored even when its caller stops waiting.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{Mutex, Notify, mpsc, oneshot};
use tracing::warn;

use super::db::Db;
use super::error::QueueError;
use super::intake_db::{Entry, store_group};
use super::store::Queue;
use super::types::{Accepted, IntakeStats, NewDelivery, NewJob};

/// Most deliveries in one transaction: bounds the transaction's size and the wait of the last.
pub(super) const MAX_GROUP: usize = 256;
/// Deliveries that may wait for the committer before callers wait to hand theirs over.
const CHANNEL_CAPACITY: usize = 4096;

/// One delivery handed to the committer, with where its outcome goes.
struct Member {
    entry: Entry,
    reply: oneshot::Sender<Result<Accepted, QueueError>>,
}

/// The callers' side of the committer task (shared by a [`Queue`] and its clones).
pub(super) struct Intake {
    sender: mpsc::Sender<Member>,
    counters: Arc<Counters>,
}

/// What the committer shares with the rest of the queue.
pub(super) struct CommitterParts {
    pub db: Db,
    /// SQLite: the process-wide write turn (see [`Queue`]).
    pub writer: Option<Arc<Mutex<()>>>,
    pub wakeup: Arc<Notify>,
}

impl Intake {
    /// Starts the committer task on the current Tokio runtime. It ends when every handle to
    /// this intake is gone.
    pub(super) fn start(parts: CommitterParts) -> Intake {
        let (sender, receiver) = mpsc::channel(CHANNEL_CAPACITY);
        let counters = Arc::new(Counters::default());
        tokio::spawn(run_committer(parts, receiver, Arc::clone(&counters)));
        Intake { sender, counters }
    }
}

impl Queue {
    /// Records `delivery` and, when given, enqueues `job` — atomically.
    ///
    /// A delivery id seen before returns [`Accepted::Duplicate`] and stores nothing. A new job
    /// supersedes the PR's queued jobs and asks its running job to stop. When this returns
    /// `Ok`, the delivery and job are committed. Concurrent calls share one transaction
    /// (group commit); each gets its own outcome.
    pub async fn accept_delivery(
        &self,
        delivery: NewDelivery,
        job: Option<NewJob>,
    ) -> Result<Accepted, QueueError> {
        let entry = Entry::new(delivery, job, &self.options)?;
        let (reply, outcome) = oneshot::channel();
        let slot = self
            .intake
            .sender
            .reserve()
            .await
            .map_err(|_| QueueError::IntakeStopped)?;
        // Counted and sent with no await in between, so a caller that stops waiting cannot
        // leave the count off.
        self.intake.counters.waiting.fetch_add(1, Ordering::Relaxed);
        slot.send(Member { entry, reply });
        outcome.await.map_err(|_| QueueError::IntakeStopped)?
    }

    /// Counters of the delivery intake since this queue was opened (shared by its clones).
    pub fn intake_stats(&self) -> IntakeStats {
        self.intake.counters.snapshot()
    }
}

/// The committer task: one group at a time, until every sender is gone.
async fn run_committer(
    parts: CommitterParts,
    mut receiver: mpsc::Receiver<Member>,
    counters: Arc<Counters>,
) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while receiver.recv_many(&mut group, MAX_GROUP).await > 0 {
        let size = group.len() as u64;
        counters.waiting.fetch_sub(size, Ordering::Relaxed);
        counters.committing.store(size, Ordering::Relaxed);
        counters.largest_group.fetch_max(size, Ordering::Relaxed);
        let (entries, replies): (Vec<Entry>, Vec<_>) = group
            .drain(..)
            .map(|member| (member.entry, member.reply))
            .unzip();
        let outcomes = {
            let _turn = match &parts.writer {
                Some(lock) => Some(lock.lock().await),
                None => None,
            };
            commit_group(&parts.db, &entries, &counters).await
        };
        counters.committing.store(0, Ordering::Relaxed);
        counters.deliveries.fetch_add(size, Ordering::Relaxed);
        for (outcome, reply) in outcomes.into_iter().zip(replies) {
            if matches!(outcome, Ok(Accepted::Queued { .. })) {
                parts.wakeup.notify_one();
            }
            // A caller that stopped waiting still had its delivery stored.
            let _ = reply.send(outcome);
        }
    }
}

/// Stores a group in one transaction; when that fails, each member in one of its own.
/// Returns one outcome per entry, in order.
async fn commit_group(
    db: &Db,
    entries: &[Entry],
    counters: &Counters,
) -> Vec<Result<Accepted, QueueError>> {
    counters.groups.fetch_add(1, Ordering::Relaxed);
    let err = match store_group(db, entries).await {
        Ok(accepted) => {
            counters.commits.fetch_add(1, Ordering::Relaxed);
            return accepted.into_iter().map(Ok).collect();
        }
        Err(err) if entries.len() == 1 => return vec![Err(err)],
        Err(err) => err,
    };
    warn!(members = entries.len(), error = %err,
        "group commit failed; storing its deliveries one at a time");
    counters.groups_retried.fetch_add(1, Ordering::Relaxed);
    let mut outcomes = Vec::with_capacity(entries.len());
    for entry in entries {
        let alone = store_group(db, std::slice::from_ref(entry)).await;
        if alone.is_ok() {
            counters.commits.fetch_add(1, Ordering::Relaxed);
        }
        outcomes.push(alone.and_then(|accepted| {
            accepted
                .into_iter()
                .next()
                .ok_or(QueueError::Database(sqlx::Error::RowNotFound))
        }));
    }
    outcomes
}

/// The live counters behind [`IntakeStats`].
#[derive(Default)]
struct Counters {
    deliveries: AtomicU64,
    groups: AtomicU64,
    commits: AtomicU64,
    groups_retried: AtomicU64,
    largest_group: AtomicU64,
    waiting: AtomicU64,
    committing: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> IntakeStats {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        IntakeStats {
            deliveries: read(&self.deliveries),
            groups: read(&self.groups),
            commits: read(&self.commits),
            groups_retried: read(&self.groups_retried),
            largest_group: read(&self.largest_group),
            waiting: read(&self.waiting),
            committing: read(&self.committing),
        }
    }
}
