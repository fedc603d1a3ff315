//! Group commit of the intake: concurrent deliveries share transactions, and each caller still
//! gets its own outcome.
//!
//! To make a group's membership certain, a test holds the database's write lock from another
//! connection ([`WriteLock`]) while the committer is stuck on a first delivery (the plug), hands
//! over the members one by one (in a known order), and then lets go: the members are then
//! exactly the second group.

use std::collections::HashSet;
use std::future::Future;
use std::time::Duration;

use redline::queue::{
    Accepted, ForgeKind, IntakeStats, Job, JobId, JobState, NewDelivery, NewJob, Queue, QueueError,
};
use sqlx::{Connection, Executor};
use tokio::task::JoinHandle;

use super::support::{TestDb, delivery, enqueue, eventually, requested_job, review_job};

crate::backend_tests!(
    concurrent_deliveries_share_transactions,
    each_member_of_a_group_gets_its_own_outcome,
    requested_reviews_in_a_group_replace_nothing,
    a_group_holding_a_stored_delivery_is_stored_as_one,
    a_failing_member_does_not_fail_the_rest_of_its_group,
);

pub(super) type Outcome = Result<Accepted, QueueError>;

/// Another connection holding the write lock the intake needs (SQLite: the database's write
/// lock; PostgreSQL: an exclusive lock on `deliveries`), until [`WriteLock::release`].
pub(super) enum WriteLock {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

impl WriteLock {
    async fn take(db: &TestDb) -> WriteLock {
        if db.is_postgres() {
            let mut conn = sqlx::PgConnection::connect(db.url()).await.unwrap();
            conn.execute("BEGIN").await.unwrap();
            conn.execute("LOCK TABLE deliveries IN EXCLUSIVE MODE")
                .await
                .unwrap();
            WriteLock::Postgres(conn)
        } else {
            let mut conn = sqlx::SqliteConnection::connect(db.url()).await.unwrap();
            conn.execute("BEGIN IMMEDIATE").await.unwrap();
            WriteLock::Sqlite(conn)
        }
    }

    pub(super) async fn release(self) {
        match self {
            WriteLock::Sqlite(mut conn) => {
                conn.execute("ROLLBACK").await.unwrap();
            }
            WriteLock::Postgres(mut conn) => {
                conn.execute("ROLLBACK").await.unwrap();
            }
        }
    }
}

/// Runs `accept_delivery` on its own task and waits until the intake holds it (so deliveries
/// handed over one after the other reach the committer in that order).
pub(super) async fn hand_over(
    queue: &Queue,
    delivery: NewDelivery,
    job: Option<NewJob>,
) -> JoinHandle<Outcome> {
    let task_queue = queue.clone();
    hand_over_work(queue, async move {
        task_queue.accept_delivery(delivery, job).await
    })
    .await
}

/// Runs `work` (one call that goes through the intake) on its own task and waits until the
/// intake holds it.
pub(super) async fn hand_over_work<T: Send + 'static>(
    queue: &Queue,
    work: impl Future<Output = T> + Send + 'static,
) -> JoinHandle<T> {
    let held = |stats: IntakeStats| stats.waiting + stats.committing;
    let before = held(queue.intake_stats());
    let task = tokio::spawn(work);
    eventually("the intake holds the work", || async {
        held(queue.intake_stats()) > before
    })
    .await;
    task
}

/// Takes the write lock and starts a plug delivery, which the committer takes alone and is
/// stuck on until the lock goes. Returns the lock and the plug's task.
pub(super) async fn plug_the_intake(
    db: &TestDb,
    queue: &Queue,
) -> (WriteLock, JoinHandle<Outcome>) {
    let lock = WriteLock::take(db).await;
    let plug = hand_over(queue, delivery(), Some(review_job(999))).await;
    eventually("the committer is stuck on the plug", || async {
        queue.intake_stats().committing == 1
    })
    .await;
    (lock, plug)
}

pub(super) async fn outcomes(tasks: Vec<JoinHandle<Outcome>>) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    outcomes
}

pub(super) fn queued_id(outcome: &Outcome) -> JobId {
    match outcome {
        Ok(Accepted::Queued { job_id, .. }) => *job_id,
        other => panic!("expected a queued job, got {other:?}"),
    }
}

async fn concurrent_deliveries_share_transactions(db: &TestDb) {
    let queue = db.queue().await;
    let (lock, plug) = plug_the_intake(db, &queue).await;
    let mut tasks = Vec::new();
    for pr in 0..40u64 {
        tasks.push(hand_over(&queue, delivery(), Some(review_job(pr % 20))).await);
    }
    lock.release().await;
    assert!(matches!(plug.await.unwrap(), Ok(Accepted::Queued { .. })));
    let outcomes = outcomes(tasks).await;
    let ids: HashSet<_> = outcomes.iter().map(queued_id).collect();
    assert_eq!(ids.len(), 40, "every caller got its own job");

    let stats = queue.intake_stats();
    assert_eq!(stats.deliveries, 41);
    assert_eq!(
        stats.commits, 2,
        "the plug alone, then the 40 together: {stats:?}"
    );
    assert_eq!(stats.largest_group, 40);
    assert_eq!((stats.waiting, stats.committing), (0, 0));
    assert_eq!(queue.delivery_count().await.unwrap(), 41);
    // 20 PRs got two jobs each, in order: the second of each superseded the first.
    let counts = queue.counts_by_state().await.unwrap();
    assert_eq!(
        counts[&JobState::Queued],
        21,
        "the plug's job and one per PR"
    );
    assert_eq!(counts[&JobState::Superseded], 20);
}

async fn each_member_of_a_group_gets_its_own_outcome(db: &TestDb) {
    let queue = db.queue().await;
    // PR 1 has a running job and a queued one before the group arrives.
    let running = enqueue(&queue, 1).await;
    assert_eq!(
        queue
            .claim("w", Duration::from_secs(60))
            .await
            .unwrap()
            .unwrap()
            .id,
        running
    );
    let queued_before = enqueue(&queue, 1).await;
    let (lock, plug) = plug_the_intake(db, &queue).await;
    let first = delivery();
    let ping = NewDelivery {
        event: "ping".into(),
        action: None,
        ..delivery()
    };
    let tasks = vec![
        hand_over(&queue, first.clone(), Some(review_job(1))).await,
        hand_over(&queue, delivery(), Some(review_job(2))).await,
        hand_over(&queue, first.clone(), Some(review_job(1))).await,
        hand_over(&queue, ping.clone(), None).await,
        hand_over(&queue, ping, None).await,
        hand_over(&queue, delivery(), Some(review_job(1))).await,
    ];
    lock.release().await;
    plug.await.unwrap().unwrap();
    let outcomes = outcomes(tasks).await;
    assert_eq!(queue.intake_stats().largest_group, 6, "one group of six");

    let superseded_job = queued_id(&outcomes[0]);
    assert!(
        matches!(
            outcomes[0],
            Ok(Accepted::Queued {
                superseded: 1,
                cancel_requested: 1,
                ..
            })
        ),
        "{:?}",
        outcomes[0]
    );
    queued_id(&outcomes[1]);
    assert_eq!(outcomes[2].as_ref().ok(), Some(&Accepted::Duplicate));
    assert_eq!(outcomes[3].as_ref().ok(), Some(&Accepted::Recorded));
    assert_eq!(outcomes[4].as_ref().ok(), Some(&Accepted::Duplicate));
    assert!(
        matches!(
            outcomes[5],
            Ok(Accepted::Queued {
                superseded: 1,
                cancel_requested: 1,
                ..
            })
        ),
        "{:?}",
        outcomes[5]
    );
    let newest = queued_id(&outcomes[5]);
    let states: Vec<_> = queue
        .jobs_for_pr(ForgeKind::GitHub, "owner/repo", 1)
        .await
        .unwrap()
        .into_iter()
        .map(|job| (job.id, job.state, job.cancel_requested))
        .collect();
    assert_eq!(
        states,
        vec![
            (running, JobState::Running, true),
            (queued_before, JobState::Superseded, false),
            (superseded_job, JobState::Superseded, false),
            (newest, JobState::Queued, false),
        ],
        "oldest first, as if the deliveries had arrived one by one"
    );
    // Two before, the plug, four distinct deliveries of the group.
    assert_eq!(queue.delivery_count().await.unwrap(), 7);
}

/// In one group: a requested review, a push, another requested review of the same pull
/// request. As one by one: the push replaces the stored job and the first request, and
/// asks the running job to stop; the requests replace nothing.
async fn requested_reviews_in_a_group_replace_nothing(db: &TestDb) {
    let queue = db.queue().await;
    let running = enqueue(&queue, 1).await;
    let claimed = queue.claim("w", Duration::from_secs(60)).await.unwrap();
    assert_eq!(claimed.map(|job| job.id), Some(running));
    let stored = enqueue(&queue, 1).await;
    let (lock, plug) = plug_the_intake(db, &queue).await;
    let tasks = vec![
        hand_over(&queue, delivery(), Some(requested_job(1))).await,
        hand_over(&queue, delivery(), Some(review_job(1))).await,
        hand_over(&queue, delivery(), Some(requested_job(1))).await,
    ];
    lock.release().await;
    plug.await.unwrap().unwrap();
    let outcomes = outcomes(tasks).await;
    assert_eq!(queue.intake_stats().largest_group, 3, "one group of three");
    let replaced = |outcome: &Outcome| match outcome {
        Ok(Accepted::Queued {
            superseded,
            cancel_requested,
            ..
        }) => (*superseded, *cancel_requested),
        other => panic!("expected a queued job, got {other:?}"),
    };
    assert_eq!(replaced(&outcomes[0]), (0, 0));
    assert_eq!(
        replaced(&outcomes[1]),
        (2, 1),
        "the stored job and the first request"
    );
    assert_eq!(replaced(&outcomes[2]), (0, 0));
    let states: Vec<_> = queue
        .jobs_for_pr(ForgeKind::GitHub, "owner/repo", 1)
        .await
        .unwrap()
        .into_iter()
        .map(|job| (job.id, job.state))
        .collect();
    assert_eq!(
        states,
        vec![
            (running, JobState::Running),
            (stored, JobState::Superseded),
            (queued_id(&outcomes[0]), JobState::Superseded),
            (queued_id(&outcomes[1]), JobState::Queued),
            (queued_id(&outcomes[2]), JobState::Queued),
        ]
    );
}

/// A group holding a delivery stored before (a redelivery) is still stored as one group, as
/// if one by one: the redelivery is a duplicate, the rest is new. (PostgreSQL plans a group as
/// if every delivery were new; this one is then stored the long way, not member by member.)
async fn a_group_holding_a_stored_delivery_is_stored_as_one(db: &TestDb) {
    let queue = db.queue().await;
    let redelivered = delivery();
    let stored = queued_id(
        &queue
            .accept_delivery(redelivered.clone(), Some(review_job(1)))
            .await,
    );
    let (lock, plug) = plug_the_intake(db, &queue).await;
    let tasks = vec![
        hand_over(&queue, delivery(), Some(review_job(2))).await,
        hand_over(&queue, redelivered, Some(review_job(1))).await,
        hand_over(&queue, delivery(), Some(review_job(1))).await,
    ];
    lock.release().await;
    plug.await.unwrap().unwrap();
    let outcomes = outcomes(tasks).await;
    let stats = queue.intake_stats();
    assert_eq!(stats.largest_group, 3, "one group of three: {stats:?}");
    assert_eq!(
        stats.groups_retried, 0,
        "not stored member by member: {stats:?}"
    );

    let other_pr = queued_id(&outcomes[0]);
    assert_eq!(outcomes[1].as_ref().ok(), Some(&Accepted::Duplicate));
    assert!(
        matches!(
            outcomes[2],
            Ok(Accepted::Queued {
                superseded: 1,
                cancel_requested: 0,
                ..
            })
        ),
        "{:?}",
        outcomes[2]
    );
    let states = |pr| {
        let queue = queue.clone();
        async move {
            queue
                .jobs_for_pr(ForgeKind::GitHub, "owner/repo", pr)
                .await
                .unwrap()
                .into_iter()
                .map(|job| (job.id, job.state))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        states(1).await,
        vec![
            (stored, JobState::Superseded),
            (queued_id(&outcomes[2]), JobState::Queued),
        ]
    );
    assert_eq!(states(2).await, vec![(other_pr, JobState::Queued)]);
    // The first, the plug and the two new ones of the group.
    assert_eq!(queue.delivery_count().await.unwrap(), 4);
}

/// Makes the database refuse to store a job whose head is `poison`.
pub(super) async fn refuse_poisoned_jobs(db: &TestDb) {
    if db.is_postgres() {
        let mut conn = sqlx::PgConnection::connect(db.url()).await.unwrap();
        conn.execute(
            "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN IF NEW.head_sha = 'poison' THEN RAISE EXCEPTION 'poisoned job'; END IF; \
             RETURN NEW; END $$",
        )
        .await
        .unwrap();
        conn.execute(
            "CREATE TRIGGER refuse_poison BEFORE INSERT ON jobs \
             FOR EACH ROW EXECUTE FUNCTION refuse_poison()",
        )
        .await
        .unwrap();
    } else {
        let mut conn = sqlx::SqliteConnection::connect(db.url()).await.unwrap();
        conn.execute(
            "CREATE TRIGGER refuse_poison BEFORE INSERT ON jobs \
             WHEN NEW.head_sha = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned job'); END",
        )
        .await
        .unwrap();
    }
}

async fn a_failing_member_does_not_fail_the_rest_of_its_group(db: &TestDb) {
    let queue = db.queue().await;
    refuse_poisoned_jobs(db).await;
    let mut poisoned = review_job(3);
    poisoned.head_sha = Some("poison".into());
    let poisoned_delivery = delivery();
    let (lock, plug) = plug_the_intake(db, &queue).await;
    let tasks = vec![
        hand_over(&queue, delivery(), Some(review_job(1))).await,
        hand_over(&queue, poisoned_delivery.clone(), Some(poisoned)).await,
        hand_over(&queue, delivery(), Some(review_job(2))).await,
        hand_over(&queue, delivery(), None).await,
    ];
    lock.release().await;
    plug.await.unwrap().unwrap();
    let outcomes = outcomes(tasks).await;

    let first = queued_id(&outcomes[0]);
    let err = outcomes[1]
        .as_ref()
        .expect_err("the poisoned job is refused");
    assert!(err.to_string().contains("poisoned job"), "{err}");
    let third = queued_id(&outcomes[2]);
    assert_eq!(outcomes[3].as_ref().ok(), Some(&Accepted::Recorded));

    let stats = queue.intake_stats();
    assert_eq!(stats.largest_group, 4, "the four were one group: {stats:?}");
    assert_eq!(stats.groups_retried, 1);
    // The plug, then the three good members stored alone.
    assert_eq!(stats.commits, 4);
    for id in [first, third] {
        assert_eq!(
            queue.job(id).await.unwrap().unwrap().state,
            JobState::Queued
        );
    }
    assert!(
        queue
            .jobs_for_pr(ForgeKind::GitHub, "owner/repo", 3)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        queue.delivery_count().await.unwrap(),
        4,
        "the plug and three"
    );
    // The refused delivery left no trace: once the database takes it, it is stored.
    let retried = queue
        .accept_delivery(poisoned_delivery, Some(review_job(3)))
        .await
        .unwrap();
    assert!(matches!(retried, Accepted::Queued { .. }), "{retried:?}");
}

pub(super) const LEASE: Duration = Duration::from_secs(60);

/// A completion of `id` by `worker`, handed over to the intake.
pub(super) async fn hand_over_completion(
    queue: &Queue,
    id: JobId,
    worker: &'static str,
) -> JoinHandle<Result<(), QueueError>> {
    let task_queue = queue.clone();
    hand_over_work(queue, async move { task_queue.complete(id, worker).await }).await
}

/// A claim by `worker`, handed over to the intake.
pub(super) async fn hand_over_claim(
    queue: &Queue,
    worker: &'static str,
) -> JoinHandle<Result<Option<Job>, QueueError>> {
    let task_queue = queue.clone();
    hand_over_work(queue, async move { task_queue.claim(worker, LEASE).await }).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_claims_and_completions_share_the_deliveries_transaction() {
    let db = TestDb::sqlite();
    let queue = db.queue().await;
    let held = enqueue(&queue, 1).await;
    assert_eq!(queue.claim("w1", LEASE).await.unwrap().unwrap().id, held);
    let (lock, plug) = plug_the_intake(&db, &queue).await;
    let delivered = hand_over(&queue, delivery(), Some(review_job(2))).await;
    let completed = hand_over_completion(&queue, held, "w1").await;
    let claimed = hand_over_claim(&queue, "w2").await;
    let completed_again = hand_over_completion(&queue, held, "w1").await;
    lock.release().await;
    let plug_job = queued_id(&plug.await.unwrap());
    let new_job = queued_id(&delivered.await.unwrap());
    completed.await.unwrap().unwrap();
    let claimed = claimed.await.unwrap().unwrap().expect("a job to claim");
    let again = completed_again.await.unwrap();
    assert!(
        matches!(again, Err(QueueError::LeaseLost(id)) if id == held),
        "a job is settled once: {again:?}"
    );

    let stats = queue.intake_stats();
    assert_eq!(stats.largest_group, 4, "one group of four: {stats:?}");
    // The first enqueue and claim, the plug, the group.
    assert_eq!((stats.commits, stats.groups_retried), (4, 0), "{stats:?}");
    assert_eq!(
        (stats.deliveries, stats.worker_members),
        (3, 4),
        "{stats:?}"
    );
    // Claims come after the group's deliveries: the oldest runnable job is the plug's.
    assert_eq!(claimed.id, plug_job);
    let state = |id| {
        let queue = queue.clone();
        async move { queue.job(id).await.unwrap().unwrap() }
    };
    assert_eq!(state(held).await.state, JobState::Succeeded);
    let running = state(plug_job).await;
    assert_eq!(
        (running.state, running.lease_owner.as_deref()),
        (JobState::Running, Some("w2"))
    );
    assert_eq!(state(new_job).await.state, JobState::Queued);
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_claims_and_completions_of_a_failed_group_are_stored_alone() {
    let db = TestDb::sqlite();
    let queue = db.queue().await;
    refuse_poisoned_jobs(&db).await;
    let held = enqueue(&queue, 1).await;
    assert_eq!(queue.claim("w1", LEASE).await.unwrap().unwrap().id, held);
    let mut poisoned = review_job(3);
    poisoned.head_sha = Some("poison".into());
    let (lock, plug) = plug_the_intake(&db, &queue).await;
    let refused = hand_over(&queue, delivery(), Some(poisoned)).await;
    let completed = hand_over_completion(&queue, held, "w1").await;
    let claimed = hand_over_claim(&queue, "w2").await;
    lock.release().await;
    let plug_job = queued_id(&plug.await.unwrap());
    let err = refused
        .await
        .unwrap()
        .expect_err("the poisoned job is refused");
    assert!(err.to_string().contains("poisoned job"), "{err}");
    completed.await.unwrap().unwrap();
    let claimed = claimed.await.unwrap().unwrap().expect("a job to claim");
    assert_eq!(claimed.id, plug_job);

    let stats = queue.intake_stats();
    assert_eq!(stats.largest_group, 3, "{stats:?}");
    assert_eq!(stats.groups_retried, 1, "{stats:?}");
    assert_eq!(
        queue.job(held).await.unwrap().unwrap().state,
        JobState::Succeeded
    );
    let again = queue.complete(held, "w1").await;
    assert!(
        matches!(again, Err(QueueError::LeaseLost(_))),
        "completed once: {again:?}"
    );
    db.cleanup().await;
}

/// On one thread, as `redline serve` runs on a one-core machine: the first delivery wakes the
/// committer while nine other callers are still on their way (each gives the runtime one
/// turn before handing over, as a request still being read would). The committer lets the
/// ready tasks run before it stores the group, so all ten share one commit; storing the first
/// one at once would take two.
#[tokio::test(flavor = "current_thread")]
async fn deliveries_ready_on_the_runtime_join_the_group_being_formed() {
    let db = TestDb::sqlite();
    let queue = db.queue().await;
    let mut tasks = Vec::new();
    let first = queue.clone();
    tasks.push(tokio::spawn(async move {
        first.accept_delivery(delivery(), Some(review_job(0))).await
    }));
    for pr in 1..10 {
        let later = queue.clone();
        tasks.push(tokio::spawn(async move {
            tokio::task::yield_now().await;
            later
                .accept_delivery(delivery(), Some(review_job(pr)))
                .await
        }));
    }
    let outcomes = outcomes(tasks).await;
    assert_eq!(
        outcomes.iter().map(queued_id).collect::<HashSet<_>>().len(),
        10
    );
    let stats = queue.intake_stats();
    assert_eq!((stats.deliveries, stats.commits), (10, 1), "{stats:?}");
    assert_eq!(stats.largest_group, 10, "{stats:?}");
    db.cleanup().await;
}
