//! The worker pool around a fake runner.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use redline::queue::{
    ForgeKind, Job, JobError, JobId, JobRunner, JobState, Queue, RunOutcome, ShutdownOutcome,
    WorkerConfig, WorkerPool,
};
use redline::server::Metrics;
use tokio_util::sync::CancellationToken;

use super::support::{TestDb, enqueue, eventually};

crate::backend_tests!(
    runs_jobs_and_counts_outcomes,
    a_newer_push_cancels_the_running_job,
    retryable_errors_are_retried,
    a_panicking_runner_does_not_kill_the_worker,
    graceful_shutdown_lets_running_jobs_finish,
    kill_and_restart_reruns_the_job_exactly_once,
    two_queues_compete_without_running_a_job_twice,
    concurrent_pushes_to_one_pr_never_run_together,
    claims_and_completions_through_the_committer_run_each_job_once,
    a_job_writing_while_its_heartbeat_is_due_completes,
);

/// Fast timers for tests.
fn config(workers: usize) -> WorkerConfig {
    WorkerConfig {
        workers,
        lease: Duration::from_millis(400),
        poll_interval: Duration::from_millis(5),
        heartbeat_interval: Duration::from_millis(10),
        shutdown_timeout: Duration::from_secs(10),
    }
}

/// What the fake runner does with a job.
#[derive(Clone, Copy)]
enum Script {
    /// Sleep a little and complete.
    Complete,
    /// Sleep this many milliseconds and complete.
    Sleep(u64),
    /// Wait for cancellation, then report it.
    WaitForCancel,
    /// Never return (until the task is aborted).
    Hang,
    /// Fail retryably on the first attempt, then complete.
    FailOnce,
    /// Panic on the first attempt, then complete.
    PanicOnce,
}

/// A runner that follows a [`Script`] and records what happened.
struct FakeRunner {
    script: Script,
    started: AtomicU32,
    completed: Mutex<HashMap<JobId, u32>>,
    running: Mutex<HashSet<JobId>>,
    running_prs: Mutex<HashSet<u64>>,
    overlap: AtomicBool,
    pr_overlap: AtomicBool,
}

impl FakeRunner {
    fn new(script: Script) -> Arc<FakeRunner> {
        Arc::new(FakeRunner {
            script,
            started: AtomicU32::new(0),
            completed: Mutex::new(HashMap::new()),
            running: Mutex::new(HashSet::new()),
            running_prs: Mutex::new(HashSet::new()),
            overlap: AtomicBool::new(false),
            pr_overlap: AtomicBool::new(false),
        })
    }

    fn completions(&self, id: JobId) -> u32 {
        self.completed
            .lock()
            .unwrap()
            .get(&id)
            .copied()
            .unwrap_or(0)
    }

    fn total_completions(&self) -> u32 {
        self.completed.lock().unwrap().values().sum()
    }

    async fn act(&self, job: &Job, cancel: CancellationToken) -> Result<RunOutcome, JobError> {
        tokio::time::sleep(Duration::from_millis(2)).await;
        match self.script {
            Script::Complete => Ok(RunOutcome::Completed),
            Script::Sleep(millis) => {
                tokio::time::sleep(Duration::from_millis(millis)).await;
                Ok(RunOutcome::Completed)
            }
            Script::WaitForCancel => {
                // No fallback timer: a cancellation that never comes fails the test's
                // bounded wait for the cancelled state instead.
                cancel.cancelled().await;
                Ok(RunOutcome::Cancelled)
            }
            Script::Hang => std::future::pending().await,
            Script::FailOnce if job.attempts == 1 => {
                Err(JobError::Retryable("temporary outage".into()))
            }
            Script::PanicOnce if job.attempts == 1 => panic!("runner bug"),
            Script::FailOnce | Script::PanicOnce => Ok(RunOutcome::Completed),
        }
    }
}

#[async_trait]
impl JobRunner for FakeRunner {
    async fn run(&self, job: &Job, cancel: CancellationToken) -> Result<RunOutcome, JobError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        if !self.running.lock().unwrap().insert(job.id) {
            self.overlap.store(true, Ordering::SeqCst);
        }
        if !self.running_prs.lock().unwrap().insert(job.pr_number) {
            self.pr_overlap.store(true, Ordering::SeqCst);
        }
        let result = self.act(job, cancel).await;
        self.running_prs.lock().unwrap().remove(&job.pr_number);
        self.running.lock().unwrap().remove(&job.id);
        if matches!(result, Ok(RunOutcome::Completed)) {
            *self.completed.lock().unwrap().entry(job.id).or_default() += 1;
        }
        result
    }
}

async fn state(queue: &Queue, id: JobId) -> JobState {
    queue.job(id).await.unwrap().expect("job").state
}

async fn wait_for_state(queue: &Queue, id: JobId, wanted: JobState) {
    eventually(&format!("job {id} {wanted}"), || async {
        state(queue, id).await == wanted
    })
    .await;
}

async fn runs_jobs_and_counts_outcomes(db: &TestDb) {
    let queue = db.queue().await;
    let runner = FakeRunner::new(Script::Complete);
    let metrics = Arc::new(Metrics::new());
    let pool = WorkerPool::start(queue.clone(), runner.clone(), config(2), metrics.clone());
    assert_eq!(pool.worker_ids().len(), 2);
    let mut ids = Vec::new();
    for pr in 1..=5 {
        ids.push(enqueue(&queue, pr).await);
    }
    for id in &ids {
        wait_for_state(&queue, *id, JobState::Succeeded).await;
        assert_eq!(runner.completions(*id), 1);
    }
    assert_eq!(pool.shutdown().await, ShutdownOutcome::Drained);
    let text = metrics.render(None);
    assert!(
        text.contains("redline_jobs_total{outcome=\"succeeded\"} 5"),
        "{text}"
    );
    assert!(
        text.contains("redline_review_duration_seconds_count 5"),
        "{text}"
    );
}

async fn a_newer_push_cancels_the_running_job(db: &TestDb) {
    let queue = db.queue().await;
    let runner = FakeRunner::new(Script::WaitForCancel);
    let pool = WorkerPool::start(
        queue.clone(),
        runner.clone(),
        config(2),
        Arc::new(Metrics::new()),
    );
    let first = enqueue(&queue, 1).await;
    wait_for_state(&queue, first, JobState::Running).await;
    let second = enqueue(&queue, 1).await;
    wait_for_state(&queue, first, JobState::Cancelled).await;
    assert_eq!(runner.completions(first), 0);
    // The second job now runs; its own cancellation comes from a third push.
    wait_for_state(&queue, second, JobState::Running).await;
    let third = enqueue(&queue, 1).await;
    wait_for_state(&queue, second, JobState::Cancelled).await;
    wait_for_state(&queue, third, JobState::Running).await;
    assert!(!runner.overlap.load(Ordering::SeqCst));
    // The third job waits for a cancellation that never comes: abort instead of draining.
    drop(pool);
}

async fn retryable_errors_are_retried(db: &TestDb) {
    let queue = db.queue().await;
    let runner = FakeRunner::new(Script::FailOnce);
    let pool = WorkerPool::start(
        queue.clone(),
        runner.clone(),
        config(1),
        Arc::new(Metrics::new()),
    );
    let id = enqueue(&queue, 1).await;
    wait_for_state(&queue, id, JobState::Succeeded).await;
    let job = queue.job(id).await.unwrap().unwrap();
    assert_eq!(job.attempts, 2);
    assert_eq!(job.last_error.as_deref(), Some("temporary outage"));
    assert_eq!(runner.completions(id), 1);
    pool.shutdown().await;
}

async fn a_panicking_runner_does_not_kill_the_worker(db: &TestDb) {
    let queue = db.queue().await;
    let runner = FakeRunner::new(Script::PanicOnce);
    let pool = WorkerPool::start(
        queue.clone(),
        runner.clone(),
        config(1),
        Arc::new(Metrics::new()),
    );
    let id = enqueue(&queue, 1).await;
    wait_for_state(&queue, id, JobState::Succeeded).await;
    assert_eq!(queue.job(id).await.unwrap().unwrap().attempts, 2);
    pool.shutdown().await;
}

async fn graceful_shutdown_lets_running_jobs_finish(db: &TestDb) {
    let queue = db.queue().await;
    let runner = FakeRunner::new(Script::WaitForCancel);
    let mut config = config(1);
    config.shutdown_timeout = Duration::from_millis(100);
    let pool = WorkerPool::start(
        queue.clone(),
        runner.clone(),
        config,
        Arc::new(Metrics::new()),
    );
    let id = enqueue(&queue, 1).await;
    wait_for_state(&queue, id, JobState::Running).await;
    // The runner waits for a cancellation that shutdown must not send.
    let outcome = pool.shutdown().await;
    assert_eq!(outcome, ShutdownOutcome::TimedOut { abandoned: 1 });
    assert_eq!(state(&queue, id).await, JobState::Running);

    let runner = FakeRunner::new(Script::Sleep(200));
    let pool = WorkerPool::start(
        queue.clone(),
        runner.clone(),
        self::config(1),
        Arc::new(Metrics::new()),
    );
    let id = enqueue(&queue, 2).await;
    // Usually caught mid-run (the run takes 200 ms); a slow machine may see it finished.
    eventually("second job claimed", || async {
        state(&queue, id).await != JobState::Queued
    })
    .await;
    assert_eq!(pool.shutdown().await, ShutdownOutcome::Drained);
    assert_eq!(state(&queue, id).await, JobState::Succeeded);
    assert_eq!(runner.completions(id), 1);
}

async fn kill_and_restart_reruns_the_job_exactly_once(db: &TestDb) {
    let queue = db.queue().await;
    let doomed = FakeRunner::new(Script::Hang);
    let pool = WorkerPool::start(
        queue.clone(),
        doomed.clone(),
        config(1),
        Arc::new(Metrics::new()),
    );
    let id = enqueue(&queue, 1).await;
    eventually("the job starts", || async {
        doomed.started.load(Ordering::SeqCst) == 1
    })
    .await;
    // Crash: the workers are aborted mid-job and the connections closed.
    drop(pool);
    queue.close().await;
    drop(queue);

    let queue = db.queue().await;
    assert_eq!(state(&queue, id).await, JobState::Running);
    let survivor = FakeRunner::new(Script::Complete);
    let pool = WorkerPool::start(
        queue.clone(),
        survivor.clone(),
        config(2),
        Arc::new(Metrics::new()),
    );
    wait_for_state(&queue, id, JobState::Succeeded).await;
    assert_eq!(pool.shutdown().await, ShutdownOutcome::Drained);
    assert_eq!(doomed.total_completions() + survivor.total_completions(), 1);
    assert_eq!(survivor.started.load(Ordering::SeqCst), 1);
    assert_eq!(queue.job(id).await.unwrap().unwrap().attempts, 2);
}

async fn two_queues_compete_without_running_a_job_twice(db: &TestDb) {
    let (left, right) = (db.queue().await, db.queue().await);
    let runner = FakeRunner::new(Script::Complete);
    let pools = [
        WorkerPool::start(
            left.clone(),
            runner.clone(),
            config(3),
            Arc::new(Metrics::new()),
        ),
        WorkerPool::start(
            right.clone(),
            runner.clone(),
            config(3),
            Arc::new(Metrics::new()),
        ),
    ];
    let mut ids = Vec::new();
    for pr in 1..=30 {
        let queue = if pr % 2 == 0 { &left } else { &right };
        ids.push(enqueue(queue, pr).await);
    }
    for id in &ids {
        wait_for_state(&left, *id, JobState::Succeeded).await;
    }
    for pool in pools {
        assert_eq!(pool.shutdown().await, ShutdownOutcome::Drained);
    }
    assert!(
        !runner.overlap.load(Ordering::SeqCst),
        "a job ran twice at once"
    );
    for id in &ids {
        assert_eq!(runner.completions(*id), 1, "job {id}");
    }
    assert_eq!(runner.started.load(Ordering::SeqCst), 30);
}

async fn concurrent_pushes_to_one_pr_never_run_together(db: &TestDb) {
    let (left, right) = (db.queue().await, db.queue().await);
    let runner = FakeRunner::new(Script::Sleep(20));
    let pools = [
        WorkerPool::start(
            left.clone(),
            runner.clone(),
            config(3),
            Arc::new(Metrics::new()),
        ),
        WorkerPool::start(
            right.clone(),
            runner.clone(),
            config(3),
            Arc::new(Metrics::new()),
        ),
    ];
    let mut pushes = tokio::task::JoinSet::new();
    for push in 0..24u64 {
        let queue = if push % 2 == 0 {
            left.clone()
        } else {
            right.clone()
        };
        pushes.spawn(async move { enqueue(&queue, push % 3 + 1).await });
    }
    while let Some(pushed) = pushes.join_next().await {
        pushed.unwrap();
    }
    eventually("all pushes settled", || async {
        let counts = left.counts_by_state().await.unwrap();
        counts[&JobState::Queued] + counts[&JobState::Running] == 0
    })
    .await;
    for pool in pools {
        pool.shutdown().await;
    }
    assert!(
        !runner.pr_overlap.load(Ordering::SeqCst),
        "two jobs of one PR ran at once"
    );
    for pr in 1..=3 {
        let jobs = left
            .jobs_for_pr(ForgeKind::GitHub, "owner/repo", pr)
            .await
            .unwrap();
        let newest = jobs.last().expect("jobs");
        assert_eq!(newest.state, JobState::Succeeded, "newest job of PR {pr}");
    }
}

/// On PostgreSQL too: there claims and completions join the groups of two deliveries or more,
/// and the others commit on their own.
async fn claims_and_completions_through_the_committer_run_each_job_once(db: &TestDb) {
    let queue = db.queue().await;
    let runner = FakeRunner::new(Script::Complete);
    let pool = WorkerPool::start(
        queue.clone(),
        runner.clone(),
        config(4),
        Arc::new(Metrics::new()),
    );
    // Deliveries arrive while the workers claim and complete: they share transactions.
    let deliveries: Vec<_> = (1..=60)
        .map(|pr| {
            let queue = queue.clone();
            tokio::spawn(async move { enqueue(&queue, pr).await })
        })
        .collect();
    let mut ids = Vec::new();
    for delivery in deliveries {
        ids.push(delivery.await.unwrap());
    }
    for id in &ids {
        wait_for_state(&queue, *id, JobState::Succeeded).await;
    }
    assert_eq!(pool.shutdown().await, ShutdownOutcome::Drained);
    for id in &ids {
        assert_eq!(runner.completions(*id), 1, "job {id}");
    }
    assert_eq!(runner.total_completions(), 60);
    assert!(!runner.overlap.load(Ordering::SeqCst));
    let stats = queue.intake_stats();
    assert!(
        stats.worker_members >= 120,
        "every claim and completion went through the committer: {stats:?}"
    );
}

/// A runner that writes to the queue again and again (as a review updating its check run
/// does), so that its heartbeat falls due while it is mid-write.
struct WritingRunner {
    queue: Queue,
    writes: u32,
}

#[async_trait]
impl JobRunner for WritingRunner {
    async fn run(&self, job: &Job, _cancel: CancellationToken) -> Result<RunOutcome, JobError> {
        for _ in 0..self.writes {
            self.queue
                .begin_check(job.id)
                .await
                .map_err(|err| JobError::Retryable(Box::new(err)))?;
        }
        Ok(RunOutcome::Completed)
    }
}

/// On SQLite a write holds the process's write turn across an await; a heartbeat awaited
/// on its own while the job was suspended mid-write waited for that turn forever (and so
/// did every other writer). The job finishes, and a second job is still claimed after it.
async fn a_job_writing_while_its_heartbeat_is_due_completes(db: &TestDb) {
    let queue = db.queue().await;
    let runner = Arc::new(WritingRunner {
        queue: queue.clone(),
        writes: 300,
    });
    let config = WorkerConfig {
        heartbeat_interval: Duration::from_millis(1),
        ..config(1)
    };
    let pool = WorkerPool::start(queue.clone(), runner, config, Arc::new(Metrics::new()));
    let first = enqueue(&queue, 1).await;
    wait_for_state(&queue, first, JobState::Succeeded).await;
    let second = enqueue(&queue, 2).await;
    wait_for_state(&queue, second, JobState::Succeeded).await;
    assert_eq!(pool.shutdown().await, ShutdownOutcome::Drained);
}
