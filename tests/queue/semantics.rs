//! The queue's contract, one operation at a time (no worker pool).

use std::time::Duration;

use redline::queue::{
    Accepted, FailOutcome, ForgeKind, JobKind, JobState, QueueError, QueueOptions, RetryDecision,
    ReviewTrigger,
};

use super::support::{
    TestClock, TestDb, delivery, enqueue, requested_job, review_job, test_options,
};

const LONG: Duration = Duration::from_secs(60);
const TINY: Duration = Duration::from_millis(5);

/// Moves the queue's clock past [`TINY`], so a lease taken with it has expired.
fn let_tiny_lease_expire(clock: &TestClock) {
    clock.advance(Duration::from_millis(30));
}

crate::backend_tests!(
    claims_oldest_first,
    redelivery_is_deduplicated,
    a_delivery_without_a_job_is_only_recorded,
    job_fields_round_trip,
    live_lease_is_not_reclaimed,
    expired_lease_is_reclaimed_and_the_old_worker_is_fenced_off,
    new_job_supersedes_queued_and_cancels_running,
    a_requested_review_supersedes_and_stops_nothing,
    one_running_job_per_pr,
    expired_job_that_was_asked_to_stop_is_not_rerun,
    retries_with_backoff_then_fails,
    backoff_delays_the_retry,
    permanent_failure_is_not_retried,
    failure_of_a_superseded_run_cancels_it,
    counts_and_health,
);

async fn claims_oldest_first(db: &TestDb) {
    let queue = db.queue().await;
    let first = enqueue(&queue, 1).await;
    let second = enqueue(&queue, 2).await;
    let third = enqueue(&queue, 3).await;
    for expected in [first, second, third] {
        let job = queue.claim("w", LONG).await.unwrap().expect("a job");
        assert_eq!(job.id, expected);
        assert_eq!(job.state, JobState::Running);
        assert_eq!(job.attempts, 1);
        assert_eq!(job.lease_owner.as_deref(), Some("w"));
    }
    assert!(queue.claim("w", LONG).await.unwrap().is_none());
}

async fn redelivery_is_deduplicated(db: &TestDb) {
    let queue = db.queue().await;
    let delivery = delivery();
    let first = queue
        .accept_delivery(delivery.clone(), Some(review_job(1)))
        .await
        .unwrap();
    assert!(matches!(first, Accepted::Queued { .. }));
    let again = queue
        .accept_delivery(delivery, Some(review_job(1)))
        .await
        .unwrap();
    assert_eq!(again, Accepted::Duplicate);
    assert_eq!(
        queue
            .jobs_for_pr(ForgeKind::GitHub, "owner/repo", 1)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(queue.delivery_count().await.unwrap(), 1);
}

async fn a_delivery_without_a_job_is_only_recorded(db: &TestDb) {
    let queue = db.queue().await;
    let delivery = delivery();
    assert_eq!(
        queue.accept_delivery(delivery.clone(), None).await.unwrap(),
        Accepted::Recorded
    );
    assert_eq!(
        queue.accept_delivery(delivery, None).await.unwrap(),
        Accepted::Duplicate
    );
    assert_eq!(queue.depth().await.unwrap(), 0);
    assert_eq!(queue.delivery_count().await.unwrap(), 1);
}

async fn job_fields_round_trip(db: &TestDb) {
    let queue = db.queue().await;
    let mut job = review_job(7);
    job.head_sha = None;
    job.kind = JobKind::Review {
        strategy: Some("deep".into()),
    };
    job.payload = serde_json::to_value(ReviewTrigger::Command {
        commenter: "alice".into(),
        author_association: "MEMBER".into(),
        comment_id: 99,
        force: false,
    })
    .unwrap();
    let delivery = delivery();
    let Accepted::Queued { job_id, .. } = queue
        .accept_delivery(delivery.clone(), Some(job.clone()))
        .await
        .unwrap()
    else {
        panic!("not queued");
    };
    let stored = queue.job(job_id).await.unwrap().expect("stored");
    assert_eq!(
        stored.delivery_id.as_deref(),
        Some(delivery.delivery_id.as_str())
    );
    assert_eq!(stored.repo_full_name, job.repo_full_name);
    assert_eq!(stored.installation_id, job.installation_id);
    assert_eq!(stored.pr_number, 7);
    assert_eq!(stored.head_sha, None);
    assert_eq!(stored.kind, job.kind);
    assert_eq!(stored.payload, job.payload);
    assert!(matches!(
        stored.trigger().unwrap(),
        ReviewTrigger::Command { comment_id: 99, .. }
    ));
    assert_eq!(stored.state, JobState::Queued);
    assert_eq!((stored.attempts, stored.max_attempts), (0, 3));
    assert!(!stored.cancel_requested);
}

async fn live_lease_is_not_reclaimed(db: &TestDb) {
    let queue = db.queue().await;
    enqueue(&queue, 1).await;
    assert!(queue.claim("a", LONG).await.unwrap().is_some());
    assert!(queue.claim("b", LONG).await.unwrap().is_none());
}

async fn expired_lease_is_reclaimed_and_the_old_worker_is_fenced_off(db: &TestDb) {
    let clock = TestClock::new();
    let queue = db.queue_with(clock.options()).await;
    let id = enqueue(&queue, 1).await;
    let first = queue.claim("old", TINY).await.unwrap().expect("claimed");
    assert!(
        queue.claim("new", LONG).await.unwrap().is_none(),
        "the lease holds until the clock passes it"
    );
    let_tiny_lease_expire(&clock);
    let second = queue.claim("new", LONG).await.unwrap().expect("re-claimed");
    assert_eq!((first.id, second.id), (id, id));
    assert_eq!(second.attempts, 2);
    assert_eq!(second.lease_owner.as_deref(), Some("new"));

    for result in [
        queue.complete(id, "old").await,
        queue.cancelled(id, "old").await,
        queue.heartbeat(id, "old", LONG).await.map(|_| ()),
        queue
            .fail(id, "old", "stale", RetryDecision::Retry)
            .await
            .map(|_| ()),
    ] {
        assert!(
            matches!(result, Err(QueueError::LeaseLost(job)) if job == id),
            "{result:?}"
        );
    }
    assert_eq!(
        queue.job(id).await.unwrap().unwrap().lease_owner.as_deref(),
        Some("new")
    );
    assert!(!queue.heartbeat(id, "new", LONG).await.unwrap());
    queue.complete(id, "new").await.unwrap();
    let done = queue.job(id).await.unwrap().unwrap();
    assert_eq!(done.state, JobState::Succeeded);
    assert!(done.finished_at.is_some());
    assert!(matches!(
        queue.complete(id, "new").await,
        Err(QueueError::LeaseLost(_))
    ));
}

async fn new_job_supersedes_queued_and_cancels_running(db: &TestDb) {
    let queue = db.queue().await;
    let running = enqueue(&queue, 1).await;
    let other_pr = enqueue(&queue, 2).await;
    assert_eq!(queue.claim("w", LONG).await.unwrap().unwrap().id, running);
    assert!(!queue.is_cancelled(running).await.unwrap());

    let Accepted::Queued {
        job_id: queued,
        superseded,
        cancel_requested,
    } = queue
        .accept_delivery(delivery(), Some(review_job(1)))
        .await
        .unwrap()
    else {
        panic!("not queued");
    };
    assert_eq!((superseded, cancel_requested), (0, 1));
    assert!(queue.is_cancelled(running).await.unwrap());
    assert!(queue.heartbeat(running, "w", LONG).await.unwrap());

    let Accepted::Queued {
        job_id: newest,
        superseded,
        cancel_requested,
    } = queue
        .accept_delivery(delivery(), Some(review_job(1)))
        .await
        .unwrap()
    else {
        panic!("not queued");
    };
    assert_eq!((superseded, cancel_requested), (1, 1));
    assert_eq!(
        queue.job(queued).await.unwrap().unwrap().state,
        JobState::Superseded
    );
    assert_eq!(
        queue.job(other_pr).await.unwrap().unwrap().state,
        JobState::Queued
    );

    queue.cancelled(running, "w").await.unwrap();
    assert_eq!(
        queue.job(running).await.unwrap().unwrap().state,
        JobState::Cancelled
    );
    let mut claimed = Vec::new();
    while let Some(job) = queue.claim("w", LONG).await.unwrap() {
        claimed.push(job.id);
    }
    claimed.sort();
    assert_eq!(claimed, vec![other_pr, newest]);
}

/// A `/redline review` comment can come from anyone: its job waits its turn and leaves the
/// pull request's running and queued reviews alone; a push still replaces it.
async fn a_requested_review_supersedes_and_stops_nothing(db: &TestDb) {
    let queue = db.queue().await;
    let running = enqueue(&queue, 1).await;
    assert_eq!(queue.claim("w", LONG).await.unwrap().unwrap().id, running);
    let accepted = queue
        .accept_delivery(delivery(), Some(requested_job(1)))
        .await
        .unwrap();
    let Accepted::Queued {
        job_id: requested,
        superseded: 0,
        cancel_requested: 0,
    } = accepted
    else {
        panic!("a requested review replaced something: {accepted:?}");
    };
    assert!(!queue.is_cancelled(running).await.unwrap());
    let job = queue.job(requested).await.unwrap().unwrap();
    assert_eq!(job.kind, JobKind::Requested { strategy: None });
    assert_eq!(job.state, JobState::Queued);

    let accepted = queue
        .accept_delivery(delivery(), Some(review_job(1)))
        .await
        .unwrap();
    assert!(
        matches!(
            accepted,
            Accepted::Queued {
                superseded: 1,
                cancel_requested: 1,
                ..
            }
        ),
        "{accepted:?}"
    );
    assert!(queue.is_cancelled(running).await.unwrap());
    assert_eq!(
        queue.job(requested).await.unwrap().unwrap().state,
        JobState::Superseded
    );
}

async fn one_running_job_per_pr(db: &TestDb) {
    let queue = db.queue().await;
    let running = enqueue(&queue, 1).await;
    assert_eq!(queue.claim("a", LONG).await.unwrap().unwrap().id, running);
    let same_pr = enqueue(&queue, 1).await;
    let other_pr = enqueue(&queue, 2).await;
    assert_eq!(queue.claim("b", LONG).await.unwrap().unwrap().id, other_pr);
    assert!(
        queue.claim("b", LONG).await.unwrap().is_none(),
        "PR 1 is busy"
    );
    queue.cancelled(running, "a").await.unwrap();
    assert_eq!(queue.claim("b", LONG).await.unwrap().unwrap().id, same_pr);
}

async fn expired_job_that_was_asked_to_stop_is_not_rerun(db: &TestDb) {
    let clock = TestClock::new();
    let queue = db.queue_with(clock.options()).await;
    let stale = enqueue(&queue, 1).await;
    queue.claim("dead", TINY).await.unwrap().expect("claimed");
    let newer = enqueue(&queue, 1).await;
    let_tiny_lease_expire(&clock);
    assert_eq!(queue.claim("w", LONG).await.unwrap().unwrap().id, newer);
    assert_eq!(
        queue.job(stale).await.unwrap().unwrap().state,
        JobState::Cancelled
    );
}

async fn retries_with_backoff_then_fails(db: &TestDb) {
    let clock = TestClock::new();
    let queue = db.queue_with(clock.options()).await;
    let id = enqueue(&queue, 1).await;
    for attempt in 1..=3u32 {
        // Past the longest backoff (`retry_cap`), so the retry is due.
        clock.advance(test_options().retry_cap);
        let job = queue.claim("w", LONG).await.unwrap().expect("due");
        assert_eq!((job.id, job.attempts), (id, attempt));
        let outcome = queue
            .fail(id, "w", &format!("boom {attempt}"), RetryDecision::Retry)
            .await
            .unwrap();
        if attempt < 3 {
            assert!(
                matches!(outcome, FailOutcome::Retrying { .. }),
                "{outcome:?}"
            );
            let job = queue.job(id).await.unwrap().unwrap();
            assert_eq!(job.state, JobState::Queued);
            assert_eq!(
                job.last_error.as_deref(),
                Some(format!("boom {attempt}").as_str())
            );
        } else {
            assert_eq!(outcome, FailOutcome::Failed);
        }
    }
    let job = queue.job(id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.last_error.as_deref(), Some("boom 3"));
    assert!(queue.claim("w", LONG).await.unwrap().is_none());
}

async fn backoff_delays_the_retry(db: &TestDb) {
    let clock = TestClock::new();
    let queue = db
        .queue_with(QueueOptions {
            retry_base: Duration::from_secs(3600),
            retry_cap: Duration::from_secs(7200),
            ..clock.options()
        })
        .await;
    let id = enqueue(&queue, 1).await;
    let claimed = queue.claim("w", LONG).await.unwrap().unwrap();
    let FailOutcome::Retrying { run_at } = queue
        .fail(id, "w", "rate limited", RetryDecision::Retry)
        .await
        .unwrap()
    else {
        panic!("not retried");
    };
    assert!(run_at > claimed.run_at + chrono::Duration::minutes(59));
    assert_eq!(queue.job(id).await.unwrap().unwrap().run_at, run_at);
    assert!(
        queue.claim("w", LONG).await.unwrap().is_none(),
        "not due yet"
    );
    assert_eq!(queue.depth().await.unwrap(), 1);
    clock.advance(Duration::from_secs(3600));
    let retried = queue
        .claim("w", LONG)
        .await
        .unwrap()
        .expect("due an hour later");
    assert_eq!((retried.id, retried.attempts), (id, 2));
}

async fn permanent_failure_is_not_retried(db: &TestDb) {
    let queue = db.queue().await;
    let id = enqueue(&queue, 1).await;
    queue.claim("w", LONG).await.unwrap().unwrap();
    let outcome = queue
        .fail(id, "w", "pull request is gone", RetryDecision::GiveUp)
        .await
        .unwrap();
    assert_eq!(outcome, FailOutcome::Failed);
    let job = queue.job(id).await.unwrap().unwrap();
    assert_eq!((job.state, job.attempts), (JobState::Failed, 1));
    assert_eq!(job.last_error.as_deref(), Some("pull request is gone"));
}

async fn failure_of_a_superseded_run_cancels_it(db: &TestDb) {
    let queue = db.queue().await;
    let id = enqueue(&queue, 1).await;
    queue.claim("w", LONG).await.unwrap().unwrap();
    enqueue(&queue, 1).await;
    let outcome = queue
        .fail(id, "w", "network", RetryDecision::Retry)
        .await
        .unwrap();
    assert_eq!(outcome, FailOutcome::Cancelled);
    assert_eq!(
        queue.job(id).await.unwrap().unwrap().state,
        JobState::Cancelled
    );
}

async fn counts_and_health(db: &TestDb) {
    let queue = db.queue().await;
    queue.ping().await.unwrap();
    let running = enqueue(&queue, 1).await;
    enqueue(&queue, 2).await;
    enqueue(&queue, 3).await;
    queue.claim("w", LONG).await.unwrap().unwrap();
    queue.complete(running, "w").await.unwrap();
    queue.claim("w", LONG).await.unwrap().unwrap();
    assert_eq!(queue.depth().await.unwrap(), 1);
    let counts = queue.counts_by_state().await.unwrap();
    assert_eq!(counts.len(), JobState::ALL.len());
    assert_eq!(counts[&JobState::Queued], 1);
    assert_eq!(counts[&JobState::Running], 1);
    assert_eq!(counts[&JobState::Succeeded], 1);
    assert_eq!(counts[&JobState::Failed], 0);
    assert!(matches!(
        queue.job(redline::queue::JobId(999_999)).await,
        Ok(None)
    ));
    assert!(matches!(
        queue.is_cancelled(redline::queue::JobId(999_999)).await,
        Err(QueueError::NotFound(_))
    ));
}

#[tokio::test]
async fn an_in_memory_sqlite_queue_keeps_its_data() {
    let queue = redline::queue::Queue::connect_with("sqlite::memory:", test_options())
        .await
        .unwrap();
    let id = enqueue(&queue, 1).await;
    let (a, b) = tokio::join!(queue.job(id), queue.depth());
    assert!(a.unwrap().is_some());
    assert_eq!(b.unwrap(), 1);
    assert_eq!(queue.claim("w", LONG).await.unwrap().unwrap().id, id);
}

#[tokio::test]
async fn unsupported_urls_are_refused_without_echoing_them() {
    let err = redline::queue::Queue::connect("mysql://root:hunter2@localhost/db")
        .await
        .unwrap_err();
    assert!(matches!(err, QueueError::InvalidUrl { .. }), "{err}");
    assert!(!err.to_string().contains("hunter2"));
}

#[tokio::test]
async fn prune_drops_old_deliveries_and_finished_jobs() {
    let db = TestDb::sqlite();
    let queue = db.queue().await;
    let done = enqueue(&queue, 1).await;
    let waiting = enqueue(&queue, 2).await;
    queue.claim("w", LONG).await.unwrap().unwrap();
    queue.complete(done, "w").await.unwrap();
    let later = chrono::Utc::now() + chrono::Duration::minutes(1);
    assert_eq!(queue.prune(later).await.unwrap(), 3);
    assert_eq!(queue.delivery_count().await.unwrap(), 0);
    assert!(queue.job(done).await.unwrap().is_none());
    assert!(
        queue.job(waiting).await.unwrap().is_some(),
        "live jobs are kept"
    );
}
