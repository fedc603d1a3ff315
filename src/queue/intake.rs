//! [`Queue::accept_delivery`]: record a delivery and enqueue its job atomically, with group
//! commit; workers' claims and completions join the same groups.
//!
//! Callers hand their work to one committer task per [`Queue`] (and its clones). The task
//! takes everything waiting when it is free (at most [`MAX_GROUP`] members), lets the tasks
//! the runtime already has ready hand theirs over too ([`GATHER_ROUNDS`]), and stores it all
//! in one transaction, so concurrent deliveries share one commit and one fsync; an idle
//! intake commits a lone delivery at once (no timer, no batching delay). The workers' claims
//! and completions ([`Queue::claim`], [`Queue::complete`], [`Queue::cancelled`]) are members
//! too: a no-op worker would otherwise add two commits of its own per job (on SQLite each
//! holding the database's single write lock through an fsync; on PostgreSQL each an fsync of
//! its own beside the committer's). On PostgreSQL they join only a group of at least
//! [`SHARED_MIN_DELIVERIES`] deliveries; in a smaller one they are set aside and each commits
//! on its own on the pool, on a task of their own ([`settle_aside`]), so that a lone delivery
//! stays one round trip.
//!
//! On PostgreSQL a group of several deliveries is stored in a transaction whose `COMMIT` (and
//! its fsync) runs on a task of its own while the committer stores the next group: the
//! committer's cycle is then `BEGIN` and the group's statements, not the fsync. The next
//! group's statements wait for the previous group's per-PR locks and unique keys where they
//! meet them, so they see what it wrote, as if it had committed first; its job ids are taken
//! after the previous group's.
//!
//! Invariants:
//! - A caller is answered only after the transaction holding its work committed, or with
//!   the error that kept it from committing.
//! - Within a transaction, deliveries are applied first, in arrival order, each seeing the
//!   ones before it (a redelivery within a group is a duplicate, and a later job supersedes an
//!   earlier one of the same pull request exactly as if they had arrived one after the other);
//!   then completions, then claims, each in arrival order. The members ran concurrently, so
//!   this is one order they could have run in. (Members set aside on PostgreSQL run
//!   concurrently with the group, each as it would alone.)
//! - When a group's statements fail, nothing of it is kept and each member is stored again
//!   in a transaction of its own, so one bad member does not fail the others. When its
//!   `COMMIT` fails (PostgreSQL; the connection or the server failed), every member gets
//!   [`QueueError::CommitFailed`]: the next group may already be stored, so storing them again
//!   could reorder them. (If the group
//!   commit failed only in appearance — the connection dropped after the database committed —
//!   a retried delivery finds itself stored and answers [`Accepted::Duplicate`]: still stored
//!   once; a retried completion answers [`QueueError::LeaseLost`]; a claim leases another job
//!   and the first one runs again when its lease expires, as after any crash.)
//! - No member is answered with an error that aborted the transaction it shares: on
//!   PostgreSQL such an error turns the `COMMIT` into a rollback, so it fails the group.
//! - Work handed over is stored even when its caller stops waiting.
//! - The write-ahead log is checkpointed by a task of its own ([`super::checkpoint`]), so no
//!   commit waits for a checkpoint.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{Mutex, Notify, mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::warn;

use super::checkpoint::Checkpointer;
use super::clock::Clock;
use super::db::Db;
use super::error::QueueError;
use super::intake_db::{
    Entry, Outcomes, SHARED_MIN_DELIVERIES, Staged, Store, Work, settle_on_pool,
};
use super::lease::{ClaimRequest, FinishRequest, Reaper};
use super::store::Queue;
use super::types::{Accepted, IntakeStats, Job, NewDelivery, NewJob};

/// Most members in one transaction: bounds the transaction's size and the wait of the last.
pub(super) const MAX_GROUP: usize = 256;
/// Scheduler rounds the committer lets pass before storing a group. Each round runs the
/// runtime's other ready tasks and polls its I/O, so requests already received (read, hashed,
/// parsed) hand their deliveries over and join this group instead of waiting for the next
/// commit. Under load this makes groups larger and commits (each with its fsync and its log
/// frames) fewer: at 32 connections on one core, about 20 members a commit instead of 9, and
/// 25 % less CPU per delivery on the database's thread. When no other task is ready a round
/// returns at once, so a lone delivery is not held back.
const GATHER_ROUNDS: usize = 2;
/// Members that may wait for the committer before callers wait to hand theirs over.
const CHANNEL_CAPACITY: usize = 4096;

/// Where a member's outcome goes.
type Reply<T> = oneshot::Sender<Result<T, QueueError>>;

/// Work handed to the committer, with where its outcome goes.
enum Member {
    Delivery(Entry, Reply<Accepted>),
    Finish(FinishRequest, Reply<()>),
    Claim(ClaimRequest, Reply<Option<Job>>),
}

/// The callers' side of the committer task (shared by a [`Queue`] and its clones).
pub(super) struct Intake {
    sender: mpsc::Sender<Member>,
    counters: Arc<Counters>,
}

/// What the committer shares with the rest of the queue.
pub(super) struct CommitterParts {
    pub db: Db,
    /// The queue's URL (an in-memory SQLite database needs the pool's one connection).
    pub url: String,
    /// SQLite: the process-wide write turn (see [`Queue`]).
    pub writer: Option<Arc<Mutex<()>>>,
    pub wakeup: Arc<Notify>,
    pub reaper: Reaper,
    /// The queue's clock, for the time each group is stored at.
    pub clock: Clock,
}

impl Intake {
    /// Starts the committer task (and, on an SQLite file, its checkpoint task) on the current
    /// Tokio runtime. They end when every handle to this intake is gone.
    pub(super) fn start(parts: CommitterParts) -> Intake {
        let (sender, receiver) = mpsc::channel(CHANNEL_CAPACITY);
        let counters = Arc::new(Counters::default());
        let checkpointer = Checkpointer::start(&parts.db);
        tokio::spawn(run_committer(
            parts,
            checkpointer,
            receiver,
            Arc::clone(&counters),
        ));
        Intake { sender, counters }
    }

    /// Hands the member `make` builds to the committer and waits for its outcome. `make` runs
    /// once a place in the channel is reserved, with no await until the member is sent.
    async fn submit<T>(&self, make: impl FnOnce(Reply<T>) -> Member) -> Result<T, QueueError> {
        let (reply, outcome) = oneshot::channel();
        let slot = self
            .sender
            .reserve()
            .await
            .map_err(|_| QueueError::IntakeStopped)?;
        // Counted and sent with no await in between, so a caller that stops waiting cannot
        // leave the count off.
        self.counters.waiting.fetch_add(1, Ordering::Relaxed);
        slot.send(make(reply));
        outcome.await.map_err(|_| QueueError::IntakeStopped)?
    }

    /// A claim committed with the group it joins (on PostgreSQL, see [`settle_aside`]).
    pub(super) async fn claim(&self, request: ClaimRequest) -> Result<Option<Job>, QueueError> {
        self.submit(|reply| Member::Claim(request, reply)).await
    }

    /// A completion committed with the group it joins (on PostgreSQL, see [`settle_aside`]).
    pub(super) async fn finish(&self, request: FinishRequest) -> Result<(), QueueError> {
        self.submit(|reply| Member::Finish(request, reply)).await
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
        self.intake
            .submit(|reply| Member::Delivery(entry, reply))
            .await
    }

    /// Counters of the delivery intake since this queue was opened (shared by its clones).
    pub fn intake_stats(&self) -> IntakeStats {
        self.intake.counters.snapshot()
    }
}

/// A group: the members' work, and their replies in the same order.
#[derive(Default)]
struct Group {
    deliveries: Vec<Entry>,
    finishes: Vec<FinishRequest>,
    claims: Vec<ClaimRequest>,
    delivery_replies: Vec<Reply<Accepted>>,
    finish_replies: Vec<Reply<()>>,
    claim_replies: Vec<Reply<Option<Job>>>,
}

impl Group {
    fn gather(members: impl Iterator<Item = Member>) -> Group {
        let mut group = Group::default();
        for member in members {
            match member {
                Member::Delivery(entry, reply) => {
                    group.deliveries.push(entry);
                    group.delivery_replies.push(reply);
                }
                Member::Finish(request, reply) => {
                    group.finishes.push(request);
                    group.finish_replies.push(reply);
                }
                Member::Claim(request, reply) => {
                    group.claims.push(request);
                    group.claim_replies.push(reply);
                }
            }
        }
        group
    }

    /// How many members.
    fn len(&self) -> usize {
        self.deliveries.len() + self.finishes.len() + self.claims.len()
    }

    /// Moves the completions and claims, with their replies, into a group of their own.
    fn take_workers(&mut self) -> Group {
        Group {
            finishes: std::mem::take(&mut self.finishes),
            claims: std::mem::take(&mut self.claims),
            finish_replies: std::mem::take(&mut self.finish_replies),
            claim_replies: std::mem::take(&mut self.claim_replies),
            ..Group::default()
        }
    }

    fn work(&self) -> Work<'_> {
        Work {
            deliveries: &self.deliveries,
            finishes: &self.finishes,
            claims: &self.claims,
        }
    }

    /// Answers every member, and counts them. A caller that stopped waiting still had its
    /// work stored.
    fn answer(self, outcomes: Outcomes, wakeup: &Notify, counters: &Counters) {
        let deliveries = self.deliveries.len() as u64;
        counters.deliveries.fetch_add(deliveries, Ordering::Relaxed);
        counters
            .worker_members
            .fetch_add(self.len() as u64 - deliveries, Ordering::Relaxed);
        for (outcome, reply) in outcomes.deliveries.into_iter().zip(self.delivery_replies) {
            if matches!(outcome, Ok(Accepted::Queued { .. })) {
                wakeup.notify_one();
            }
            let _ = reply.send(outcome);
        }
        for (outcome, reply) in outcomes.finishes.into_iter().zip(self.finish_replies) {
            let _ = reply.send(outcome);
        }
        for (outcome, reply) in outcomes.claims.into_iter().zip(self.claim_replies) {
            let _ = reply.send(outcome);
        }
    }
}

/// The committer task: one group at a time, until every sender is gone. A group left to
/// commit (PostgreSQL, see [`Store::stage`]) commits on a task of its own while the next group
/// is stored; at most one such commit is in flight, and a group's commit is sent only after
/// the one before it ended, so groups commit in order.
async fn run_committer(
    parts: CommitterParts,
    mut checkpointer: Option<Checkpointer>,
    mut receiver: mpsc::Receiver<Member>,
    counters: Arc<Counters>,
) {
    let mut store = Store::new(parts.db.clone(), &parts.url, parts.clock.clone());
    let mut members = Vec::with_capacity(MAX_GROUP);
    let mut in_flight: Option<JoinHandle<()>> = None;
    while receiver.recv_many(&mut members, MAX_GROUP).await > 0 {
        gather_ready(&mut receiver, &mut members).await;
        counters
            .waiting
            .fetch_sub(members.len() as u64, Ordering::Relaxed);
        let mut group = Group::gather(members.drain(..));
        settle_aside(&mut group, &parts, &counters);
        let size = group.len() as u64;
        if size == 0 {
            continue;
        }
        counters.committing.store(size, Ordering::Relaxed);
        counters.largest_group.fetch_max(size, Ordering::Relaxed);
        let staged = {
            let _turn = match &parts.writer {
                Some(lock) => Some(lock.lock().await),
                None => None,
            };
            commit_group(&mut store, &parts, &group.work(), &counters).await
        };
        counters.committing.store(0, Ordering::Relaxed);
        match staged {
            Staged::Committed(outcomes) => group.answer(outcomes, &parts.wakeup, &counters),
            Staged::Pending(uncommitted) => {
                if let Some(previous) = in_flight.take() {
                    let _ = previous.await;
                }
                let wakeup = Arc::clone(&parts.wakeup);
                let counters = Arc::clone(&counters);
                in_flight = Some(tokio::spawn(async move {
                    let outcomes = match uncommitted.commit().await {
                        Ok(outcomes) => {
                            counters.commits.fetch_add(1, Ordering::Relaxed);
                            outcomes
                        }
                        Err(err) => {
                            warn!(members = group.len(), error = %err, "a group's commit failed");
                            Outcomes::commit_failed(&group.work(), &err)
                        }
                    };
                    group.answer(outcomes, &wakeup, &counters);
                }));
            }
        }
        if let Some(checkpointer) = &mut checkpointer {
            checkpointer.committed();
        }
    }
    if let Some(previous) = in_flight {
        let _ = previous.await;
    }
}

/// PostgreSQL: takes the claims and completions out of a group of fewer than
/// [`SHARED_MIN_DELIVERIES`] deliveries and settles them on a task of their own, each in a
/// transaction of its own on the pool, so the group (a lone delivery: one call) and the next
/// one do not wait for them. Other groups are left whole.
fn settle_aside(group: &mut Group, parts: &CommitterParts, counters: &Arc<Counters>) {
    let Db::Postgres(pool) = &parts.db else {
        return;
    };
    let has_workers = !group.finishes.is_empty() || !group.claims.is_empty();
    if !has_workers || group.deliveries.len() >= SHARED_MIN_DELIVERIES {
        return;
    }
    let aside = group.take_workers();
    let pool = pool.clone();
    let reaper = parts.reaper.clone();
    let clock = parts.clock.clone();
    let wakeup = Arc::clone(&parts.wakeup);
    let counters = Arc::clone(counters);
    tokio::spawn(async move {
        let (finishes, claims) = settle_on_pool(
            &pool,
            &aside.finishes,
            &aside.claims,
            &reaper,
            clock.now_millis(),
        )
        .await;
        let outcomes = Outcomes {
            deliveries: Vec::new(),
            finishes,
            claims,
        };
        aside.answer(outcomes, &wakeup, &counters);
    });
}

/// Adds to `members` what the runtime's ready tasks hand over during [`GATHER_ROUNDS`]
/// scheduler rounds (at most [`MAX_GROUP`] members in all).
async fn gather_ready(receiver: &mut mpsc::Receiver<Member>, members: &mut Vec<Member>) {
    for _ in 0..GATHER_ROUNDS {
        if members.len() >= MAX_GROUP {
            return;
        }
        tokio::task::yield_now().await;
        while members.len() < MAX_GROUP {
            match receiver.try_recv() {
                Ok(member) => members.push(member),
                Err(_) => break,
            }
        }
    }
}

/// Stores a group in one transaction (left to commit, see [`Store::stage`]); when that fails,
/// each member in one of its own. The outcomes are one per member, in the group's order.
async fn commit_group(
    store: &mut Store,
    parts: &CommitterParts,
    work: &Work<'_>,
    counters: &Counters,
) -> Staged {
    counters.groups.fetch_add(1, Ordering::Relaxed);
    let err = match store.stage(work, &parts.reaper).await {
        Ok(Staged::Committed(outcomes)) => {
            counters.commits.fetch_add(1, Ordering::Relaxed);
            return Staged::Committed(outcomes);
        }
        Ok(pending) => return pending,
        Err(err) if work.len() == 1 => return Staged::Committed(Outcomes::failed(work, err)),
        Err(err) => err,
    };
    warn!(members = work.len(), error = %err,
        "group commit failed; storing its members one at a time");
    counters.groups_retried.fetch_add(1, Ordering::Relaxed);
    let mut outcomes = Outcomes::default();
    for single in work.singles() {
        match store.store(&single, &parts.reaper).await {
            Ok(alone) => {
                counters.commits.fetch_add(1, Ordering::Relaxed);
                outcomes.extend(alone);
            }
            Err(err) => outcomes.extend(Outcomes::failed(&single, err)),
        }
    }
    Staged::Committed(outcomes)
}

/// The live counters behind [`IntakeStats`].
#[derive(Default)]
struct Counters {
    deliveries: AtomicU64,
    worker_members: AtomicU64,
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
            worker_members: read(&self.worker_members),
            groups: read(&self.groups),
            commits: read(&self.commits),
            groups_retried: read(&self.groups_retried),
            largest_group: read(&self.largest_group),
            waiting: read(&self.waiting),
            committing: read(&self.committing),
        }
    }
}
