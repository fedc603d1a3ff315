//! What the queue keeps of each job's check: one creation, one completion, and the checks
//! left unsettled by jobs that ended or whose worker died.

use std::time::Duration;

use redline::queue::{CheckSlot, JobState, RetryDecision, ShownCheck};

use super::support::{TestDb, enqueue};

crate::backend_tests!(
    a_check_is_created_once_and_completed_once,
    a_failed_creation_or_a_dead_creator_lets_another_create_it,
    unsettled_checks_are_those_of_ended_jobs_and_dead_workers,
    a_database_of_the_previous_release_gets_the_check_columns,
);

async fn a_check_is_created_once_and_completed_once(db: &TestDb) {
    let queue = db.queue().await;
    let job = enqueue(&queue, 1).await;
    assert_eq!(queue.check(job).await.unwrap(), CheckSlot::Absent);
    assert_eq!(queue.begin_check(job).await.unwrap(), CheckSlot::Create);
    assert_eq!(
        queue.begin_check(job).await.unwrap(),
        CheckSlot::Busy,
        "a second caller waits"
    );
    queue
        .check_created(job, Some(77), "abc", false)
        .await
        .unwrap();
    let shown = ShownCheck {
        id: Some(77),
        head: "abc".into(),
    };
    assert_eq!(
        queue.begin_check(job).await.unwrap(),
        CheckSlot::Open(shown.clone())
    );
    assert_eq!(queue.close_check(job).await.unwrap(), Some(shown.clone()));
    assert_eq!(
        queue.close_check(job).await.unwrap(),
        None,
        "completed once"
    );
    assert_eq!(queue.begin_check(job).await.unwrap(), CheckSlot::Closed);
    // A completion the forge refused is tried again by the next sweep.
    queue.reopen_check(job).await.unwrap();
    assert_eq!(queue.check(job).await.unwrap(), CheckSlot::Open(shown));

    // A check created completed at once (a job whose queued check could not be shown).
    let other = enqueue(&queue, 2).await;
    assert_eq!(queue.begin_check(other).await.unwrap(), CheckSlot::Create);
    queue.check_created(other, None, "def", true).await.unwrap();
    assert_eq!(queue.check(other).await.unwrap(), CheckSlot::Closed);
}

async fn a_failed_creation_or_a_dead_creator_lets_another_create_it(db: &TestDb) {
    let queue = db.queue().await;
    let job = enqueue(&queue, 1).await;
    assert_eq!(queue.begin_check(job).await.unwrap(), CheckSlot::Create);
    queue.check_not_created(job).await.unwrap();
    assert_eq!(queue.begin_check(job).await.unwrap(), CheckSlot::Create);
    assert_eq!(queue.begin_check(job).await.unwrap(), CheckSlot::Busy);
    // Its creator died long ago: the claim is taken over.
    db.execute(&format!(
        "UPDATE jobs SET check_at = 1 WHERE id = {}",
        job.0
    ))
    .await;
    assert_eq!(queue.begin_check(job).await.unwrap(), CheckSlot::Create);
}

async fn unsettled_checks_are_those_of_ended_jobs_and_dead_workers(db: &TestDb) {
    let queue = db.queue().await;
    let lease = Duration::from_secs(60);
    let open = |id| {
        let queue = queue.clone();
        async move {
            assert_eq!(queue.begin_check(id).await.unwrap(), CheckSlot::Create);
            queue
                .check_created(id, Some(1), "abc", false)
                .await
                .unwrap();
        }
    };
    // Waiting for a worker: nothing to settle.
    let waiting = enqueue(&queue, 1).await;
    open(waiting).await;
    // Failed for good with its check open.
    let failed = enqueue(&queue, 2).await;
    open(failed).await;
    let claimed = queue.claim("w", lease).await.unwrap().expect("a job");
    assert_eq!(claimed.id, waiting, "oldest first");
    let claimed_failed = queue.claim("w", lease).await.unwrap().expect("a job");
    assert_eq!(claimed_failed.id, failed);
    queue
        .fail(failed, "w", "GitHub answered 404", RetryDecision::GiveUp)
        .await
        .unwrap();
    // Running under a live lease (`waiting`): its worker is alive.
    // A job whose check was completed: settled.
    let done = enqueue(&queue, 3).await;
    open(done).await;
    queue.close_check(done).await.unwrap();
    let claimed_done = queue.claim("w", lease).await.unwrap().expect("a job");
    assert_eq!(claimed_done.id, done);
    // A job whose worker died: its lease expired.
    let dead = enqueue(&queue, 4).await;
    open(dead).await;
    let claimed_dead = queue.claim("w2", lease).await.unwrap().expect("a job");
    assert_eq!(claimed_dead.id, dead);
    db.execute("UPDATE jobs SET lease_until = 1 WHERE lease_owner = 'w2'")
        .await;

    let unsettled = queue.unsettled_checks(10).await.unwrap();
    let ids: Vec<_> = unsettled.iter().map(|u| u.job.id).collect();
    assert_eq!(ids, [failed, dead], "{unsettled:#?}");
    assert_eq!(unsettled[1].job.state, JobState::Running);
    assert_eq!(unsettled[0].job.state, JobState::Failed);
    assert_eq!(
        unsettled[0].shown,
        Some(ShownCheck {
            id: Some(1),
            head: "abc".into()
        })
    );
    assert_eq!(
        unsettled[0].job.last_error.as_deref(),
        Some("GitHub answered 404")
    );
    assert_eq!(queue.unsettled_checks(1).await.unwrap().len(), 1, "bounded");
}

async fn a_database_of_the_previous_release_gets_the_check_columns(db: &TestDb) {
    let previous = if db.is_postgres() { 7 } else { 6 };
    db.migrate_to(previous).await;
    db.execute(
        "INSERT INTO jobs (forge, delivery_id, repo_full_name, installation_id, pr_number, \
           kind, payload, state, max_attempts, run_at, created_at, updated_at) VALUES \
           ('github', 'd-old', 'o/r', 5, 7, 'review', '{}', 'queued', 3, 1, 1, 1)",
    )
    .await;
    let queue = db.queue().await;
    let old = queue
        .jobs_for_pr(redline::queue::ForgeKind::GitHub, "o/r", 7)
        .await
        .unwrap();
    assert_eq!(old.len(), 1);
    assert_eq!(queue.check(old[0].id).await.unwrap(), CheckSlot::Absent);
    assert_eq!(
        queue.begin_check(old[0].id).await.unwrap(),
        CheckSlot::Create
    );
}
