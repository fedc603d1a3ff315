//! Workers' claims and completions riding in the intake's group commits, on both backends (on
//! PostgreSQL in a group of two deliveries or more): each is applied once, in the group's
//! transaction, and an error in that transaction fails the whole group, whose members are
//! then stored one at a time; none is lost or applied twice.
//!
//! Groups are formed as in [`super::intake`]: the committer is stuck on a plug delivery while
//! the members are handed over one by one, then let go.

use redline::queue::{Accepted, ForgeKind, Job, JobId, JobState, Queue, QueueError};
use sqlx::{Connection, Executor, Row};

use super::intake::{
    LEASE, Outcome, hand_over, hand_over_claim, hand_over_completion, plug_the_intake, queued_id,
    refuse_poisoned_jobs,
};
use super::support::{TestDb, delivery, enqueue, eventually, requested_job, review_job};

crate::backend_tests!(
    claims_and_completions_in_a_group_are_applied_once,
    claims_and_completions_of_a_failed_group_are_stored_alone,
    a_group_with_workers_holding_a_stored_delivery_is_stored_as_one,
);

async fn job(queue: &Queue, id: JobId) -> Job {
    queue.job(id).await.unwrap().expect("the job")
}

/// How many jobs run (a claim applied twice would lease a second one).
async fn running(queue: &Queue) -> u64 {
    queue.counts_by_state().await.unwrap()[&JobState::Running]
}

/// A job `worker` leased once, by one claim.
fn leased_once(job: &Job, worker: &str) -> bool {
    job.state == JobState::Running
        && job.lease_owner.as_deref() == Some(worker)
        && job.attempts == 1
}

/// Two deliveries, two completions of one job (the second too late), two claims: one group,
/// one transaction; each is applied once and told its own outcome.
async fn claims_and_completions_in_a_group_are_applied_once(db: &TestDb) {
    let queue = db.queue().await;
    let held = enqueue(&queue, 1).await;
    assert_eq!(queue.claim("w1", LEASE).await.unwrap().unwrap().id, held);
    let (lock, plug) = plug_the_intake(db, &queue).await;
    let second = hand_over(&queue, delivery(), Some(review_job(2))).await;
    let third = hand_over(&queue, delivery(), Some(review_job(3))).await;
    let completed = hand_over_completion(&queue, held, "w1").await;
    let claimed = hand_over_claim(&queue, "w2").await;
    let claimed_too = hand_over_claim(&queue, "w3").await;
    let completed_again = hand_over_completion(&queue, held, "w1").await;
    lock.release().await;
    let plug_job = queued_id(&plug.await.unwrap());
    let second = queued_id(&second.await.unwrap());
    let third = queued_id(&third.await.unwrap());
    completed.await.unwrap().unwrap();
    let again = completed_again.await.unwrap();
    assert!(
        matches!(again, Err(QueueError::LeaseLost(id)) if id == held),
        "a job is settled once: {again:?}"
    );
    let claimed = claimed.await.unwrap().unwrap().expect("a job to claim");
    let claimed_too = claimed_too.await.unwrap().unwrap().expect("a job to claim");

    let stats = queue.intake_stats();
    assert_eq!(stats.largest_group, 6, "one transaction of six: {stats:?}");
    assert_eq!(stats.groups_retried, 0, "{stats:?}");
    // Claims come after the group's deliveries, oldest runnable job first.
    assert_eq!((claimed.id, claimed_too.id), (plug_job, second));
    assert_eq!(job(&queue, held).await.state, JobState::Succeeded);
    assert!(leased_once(&job(&queue, plug_job).await, "w2"));
    assert!(leased_once(&job(&queue, second).await, "w3"));
    assert_eq!(job(&queue, third).await.state, JobState::Queued);
    assert_eq!(running(&queue).await, 2);
    assert_eq!(queue.delivery_count().await.unwrap(), 4);
}

async fn claims_and_completions_of_a_failed_group_are_stored_alone(db: &TestDb) {
    let queue = db.queue().await;
    refuse_poisoned_jobs(db).await;
    let held = enqueue(&queue, 1).await;
    assert_eq!(queue.claim("w1", LEASE).await.unwrap().unwrap().id, held);
    let mut poisoned = review_job(3);
    poisoned.head_sha = Some("poison".into());
    let (lock, plug) = plug_the_intake(db, &queue).await;
    let good = hand_over(&queue, delivery(), Some(review_job(2))).await;
    let refused = hand_over(&queue, delivery(), Some(poisoned)).await;
    let completed = hand_over_completion(&queue, held, "w1").await;
    let claimed = hand_over_claim(&queue, "w2").await;
    lock.release().await;
    let plug_job = queued_id(&plug.await.unwrap());
    let good = queued_id(&good.await.unwrap());
    let err = refused
        .await
        .unwrap()
        .expect_err("the poisoned job is refused");
    assert!(err.to_string().contains("poisoned job"), "{err}");
    completed.await.unwrap().unwrap();
    let claimed = claimed.await.unwrap().unwrap().expect("a job to claim");

    let stats = queue.intake_stats();
    assert_eq!(stats.largest_group, 4, "{stats:?}");
    assert_eq!(stats.groups_retried, 1, "{stats:?}");
    assert_eq!(claimed.id, plug_job);
    assert!(leased_once(&job(&queue, plug_job).await, "w2"));
    assert_eq!(running(&queue).await, 1);
    assert_eq!(job(&queue, good).await.state, JobState::Queued);
    assert_eq!(job(&queue, held).await.state, JobState::Succeeded);
    let again = queue.complete(held, "w1").await;
    assert!(
        matches!(again, Err(QueueError::LeaseLost(_))),
        "completed once: {again:?}"
    );
    // The first, the plug and the good one of the group.
    assert_eq!(queue.delivery_count().await.unwrap(), 3);
}

/// A redelivery in a group with workers' members: on PostgreSQL the group's first call fails
/// and aborts the transaction, and the group starts over the long way, still as one.
async fn a_group_with_workers_holding_a_stored_delivery_is_stored_as_one(db: &TestDb) {
    let queue = db.queue().await;
    let redelivered = delivery();
    let held = queued_id(
        &queue
            .accept_delivery(redelivered.clone(), Some(review_job(1)))
            .await,
    );
    assert_eq!(queue.claim("w1", LEASE).await.unwrap().unwrap().id, held);
    let (lock, plug) = plug_the_intake(db, &queue).await;
    let fresh = hand_over(&queue, delivery(), Some(review_job(2))).await;
    let again = hand_over(&queue, redelivered, Some(review_job(1))).await;
    let completed = hand_over_completion(&queue, held, "w1").await;
    let claimed = hand_over_claim(&queue, "w2").await;
    lock.release().await;
    let plug_job = queued_id(&plug.await.unwrap());
    let fresh = queued_id(&fresh.await.unwrap());
    assert_eq!(again.await.unwrap().ok(), Some(Accepted::Duplicate));
    completed.await.unwrap().unwrap();
    let claimed = claimed.await.unwrap().unwrap().expect("a job to claim");

    let stats = queue.intake_stats();
    assert_eq!(stats.largest_group, 4, "{stats:?}");
    assert_eq!(stats.groups_retried, 0, "stored as one: {stats:?}");
    assert_eq!(claimed.id, plug_job);
    assert!(leased_once(&job(&queue, plug_job).await, "w2"));
    assert_eq!(running(&queue).await, 1);
    assert_eq!(job(&queue, held).await.state, JobState::Succeeded);
    assert_eq!(job(&queue, fresh).await.state, JobState::Queued);
    assert_eq!(queue.delivery_count().await.unwrap(), 3);
}

/// PostgreSQL: a claim in the group's transaction meets another claim of its pull request (a
/// unique violation, which aborts the transaction). Answering that claim "nothing to claim"
/// would let the `COMMIT` silently roll back the group's deliveries after telling their
/// callers they were queued; instead the group fails and its members are stored alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_claim_meeting_another_in_a_group_fails_the_group_not_its_members() {
    let test = "postgres_a_claim_meeting_another_in_a_group_fails_the_group_not_its_members";
    let Some(db) = TestDb::postgres(test).await else {
        return;
    };
    let queue = db.queue().await;
    // Two runnable jobs of PR 1 (requested reviews replace nothing).
    let first = queued_id(
        &queue
            .accept_delivery(delivery(), Some(requested_job(1)))
            .await,
    );
    let taken = queued_id(
        &queue
            .accept_delivery(delivery(), Some(requested_job(1)))
            .await,
    );
    // Another process is leasing the second one, not yet committed.
    let mut other = sqlx::PgConnection::connect(db.url()).await.unwrap();
    other.execute("BEGIN").await.unwrap();
    sqlx::query(
        "UPDATE jobs SET state = 'running', lease_owner = 'other', attempts = 1 WHERE id = $1",
    )
    .bind(taken.0)
    .execute(&mut other)
    .await
    .unwrap();
    let other_pid: i32 = sqlx::query("SELECT pg_backend_pid()")
        .fetch_one(&mut other)
        .await
        .unwrap()
        .get(0);
    let (lock, plug) = plug_the_intake(&db, &queue).await;
    let deliveries = vec![
        hand_over(&queue, delivery(), Some(review_job(2))).await,
        hand_over(&queue, delivery(), Some(review_job(3))).await,
    ];
    let claimed = hand_over_claim(&queue, "w").await;
    lock.release().await;
    let plug_job = queued_id(&plug.await.unwrap());
    // The group's claim takes the first job and waits on the other lease of its PR.
    let waits = |pid: i32| {
        let url = db.url().to_string();
        async move {
            let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
            let waiting: i64 = sqlx::query(
                "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
            )
            .bind(pid)
            .fetch_one(&mut conn)
            .await
            .unwrap()
            .get(0);
            waiting > 0
        }
    };
    eventually("the group's claim waits on the other lease", || {
        waits(other_pid)
    })
    .await;
    other.execute("COMMIT").await.unwrap();

    let mut stored = Vec::new();
    for task in deliveries {
        let outcome: Outcome = task.await.unwrap();
        stored.push(queued_id(&outcome));
    }
    // What the callers were told is what the database kept.
    assert_eq!(queue.delivery_count().await.unwrap(), 5);
    for id in stored {
        let kept = queue.job(id).await.unwrap().map(|job| job.state);
        assert_eq!(kept, Some(JobState::Queued), "job {id}");
    }
    let stats = queue.intake_stats();
    assert_eq!(stats.groups_retried, 1, "{stats:?}");
    // Stored alone, the claim passes over PR 1 (its other job runs) to the oldest other job.
    let claimed = claimed.await.unwrap().unwrap().expect("a job to claim");
    assert_eq!(claimed.id, plug_job);
    assert!(leased_once(&job(&queue, plug_job).await, "w"));
    assert_eq!(job(&queue, first).await.state, JobState::Queued);
    assert_eq!(
        job(&queue, taken).await.lease_owner.as_deref(),
        Some("other")
    );
    assert_eq!(running(&queue).await, 2, "the other lease and the claim");
    db.cleanup().await;
}

/// PostgreSQL: a group of several deliveries whose statements succeed but whose `COMMIT`
/// fails (here a deferred constraint trigger refuses one of its jobs at commit time) tells
/// every member so ([`QueueError::CommitFailed`]) and keeps none of it; the intake goes on
/// storing the next deliveries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_group_whose_commit_fails_tells_every_member_and_keeps_nothing() {
    let test = "postgres_a_group_whose_commit_fails_tells_every_member_and_keeps_nothing";
    let Some(db) = TestDb::postgres(test).await else {
        return;
    };
    let queue = db.queue().await;
    let mut conn = sqlx::PgConnection::connect(db.url()).await.unwrap();
    conn.execute(
        "CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.head_sha = 'refused-at-commit' THEN \
         RAISE EXCEPTION 'refused at commit'; END IF; RETURN NULL; END $$",
    )
    .await
    .unwrap();
    conn.execute(
        "CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON jobs \
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_at_commit()",
    )
    .await
    .unwrap();
    let before = queue.delivery_count().await.unwrap();
    let (lock, plug) = plug_the_intake(&db, &queue).await;
    let mut refused = review_job(3);
    refused.head_sha = Some("refused-at-commit".into());
    let members = vec![
        hand_over(&queue, delivery(), Some(review_job(2))).await,
        hand_over(&queue, delivery(), Some(refused)).await,
    ];
    lock.release().await;
    queued_id(&plug.await.unwrap());
    for task in members {
        let outcome: Outcome = task.await.unwrap();
        assert!(
            matches!(outcome, Err(QueueError::CommitFailed(ref text)) if text.contains("refused at commit")),
            "{outcome:?}"
        );
    }
    assert_eq!(
        queue.delivery_count().await.unwrap(),
        before + 1,
        "the plug only"
    );
    for pr in [2, 3] {
        let jobs = queue
            .jobs_for_pr(ForgeKind::GitHub, "owner/repo", pr)
            .await
            .unwrap();
        assert!(jobs.is_empty(), "PR {pr}: {jobs:?}");
    }
    let next = queue.accept_delivery(delivery(), Some(review_job(4))).await;
    assert_eq!(job(&queue, queued_id(&next)).await.state, JobState::Queued);
    db.cleanup().await;
}
