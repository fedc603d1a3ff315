//! Bounded background answering of comments (GitHub review comments, GitLab notes).
//!
//! Invariant: at most [`CONCURRENT_ANSWERS`] answers run at once and at most
//! [`MAX_WAITING`] wait for a turn; a comment beyond that is refused at once (the caller
//! logs it), so a storm of deliveries cannot queue unbounded work.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Semaphore;

/// Answers computed at once.
const CONCURRENT_ANSWERS: usize = 2;
/// Comments waiting for an answer at most; more are dropped.
pub(crate) const MAX_WAITING: usize = 64;

/// The answers running and waiting, shared by one hook's deliveries.
#[derive(Clone)]
pub(crate) struct AnswerPool {
    permits: Arc<Semaphore>,
    waiting: Arc<AtomicUsize>,
}

impl AnswerPool {
    /// An empty pool.
    pub(crate) fn new() -> Self {
        AnswerPool {
            permits: Arc::new(Semaphore::new(CONCURRENT_ANSWERS)),
            waiting: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Runs `answer` in the background when its turn comes; `false`, and nothing runs,
    /// when [`MAX_WAITING`] answers already wait.
    pub(crate) fn spawn<F>(&self, answer: F) -> bool
    where
        F: Future<Output = ()> + Send + 'static,
    {
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= MAX_WAITING {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        let (permits, waiting) = (self.permits.clone(), self.waiting.clone());
        tokio::spawn(async move {
            let permit = permits.acquire_owned().await;
            waiting.fetch_sub(1, Ordering::SeqCst);
            if permit.is_ok() {
                answer.await;
            }
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn beyond_the_running_and_the_waiting_a_comment_is_refused() {
        let pool = AnswerPool::new();
        let (release, gate) = tokio::sync::watch::channel(false);
        let started = Arc::new(AtomicUsize::new(0));
        let blocked = |started: Arc<AtomicUsize>, mut gate: tokio::sync::watch::Receiver<bool>| async move {
            started.fetch_add(1, Ordering::SeqCst);
            let _ = gate.wait_for(|open| *open).await;
        };
        let total = CONCURRENT_ANSWERS + MAX_WAITING;
        for _ in 0..CONCURRENT_ANSWERS {
            assert!(pool.spawn(blocked(started.clone(), gate.clone())));
        }
        // Let the first answers take their permits, so the rest are counted as waiting.
        while started.load(Ordering::SeqCst) < CONCURRENT_ANSWERS {
            tokio::task::yield_now().await;
        }
        for _ in CONCURRENT_ANSWERS..total {
            assert!(pool.spawn(blocked(started.clone(), gate.clone())));
        }
        assert!(!pool.spawn(blocked(started.clone(), gate.clone())));
        // Every spawned task gets its turns on this one-thread runtime; only the first
        // answers may have started.
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert_eq!(started.load(Ordering::SeqCst), CONCURRENT_ANSWERS);
        release.send(true).unwrap();
        while started.load(Ordering::SeqCst) < total {
            tokio::task::yield_now().await;
        }
        assert_eq!(started.load(Ordering::SeqCst), total);
    }
}
