//! What the worker pool logs when a job fails: the queue's decision, not the runner's wish.

use crate::common::wait_until_async;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use redline::queue::{
    Job, JobError, JobRunner, JobState, QueueOptions, RunOutcome, WorkerConfig, WorkerPool,
};
use redline::server::Metrics;
use tokio_util::sync::CancellationToken;

use crate::queue::support::{TestDb, enqueue, test_options};

/// Fails every run with an error that retrying could fix.
struct AlwaysRetryable;

#[async_trait]
impl JobRunner for AlwaysRetryable {
    async fn run(&self, _job: &Job, _cancel: CancellationToken) -> Result<RunOutcome, JobError> {
        Err(JobError::Retryable(
            "the model server is unavailable".into(),
        ))
    }
}

/// A log sink the test can read.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_retryable_error_on_the_last_attempt_is_logged_as_a_final_failure() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    // The test runtime is single-threaded, so the workers log on this thread.
    let _guard = tracing::subscriber::set_default(subscriber);

    let db = TestDb::sqlite();
    let queue = db
        .queue_with(QueueOptions {
            max_attempts: 2,
            ..test_options()
        })
        .await;
    let id = enqueue(&queue, 7).await;
    let pool = WorkerPool::start(
        queue.clone(),
        Arc::new(AlwaysRetryable),
        WorkerConfig {
            workers: 1,
            poll_interval: Duration::from_millis(5),
            ..WorkerConfig::default()
        },
        Arc::new(Metrics::new()),
    );
    wait_until_async(|| async { queue.job(id).await.unwrap().unwrap().state == JobState::Failed })
        .await;
    pool.shutdown().await;
    assert_eq!(
        queue.job(id).await.unwrap().unwrap().state,
        JobState::Failed
    );

    let log = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("job failed")).collect();
    assert_eq!(lines.len(), 2, "one line per attempt: {log}");
    assert!(lines[0].contains("will retry"), "{log}");
    assert!(
        lines[1].contains("job failed for good; giving up") && lines[1].contains("ERROR"),
        "{log}"
    );
    assert!(!log.contains("decision=Retry"), "{log}");
}
