//! Waiting for something another task or process does: the one polling loop of the tests.
//!
//! Invariant: a wait ends as soon as its condition holds, or after [`DEADLINE`], which is
//! generous for a loaded machine since it is paid only when a test is about to fail; the
//! poll interval is short, so a condition that holds is seen within [`POLL`]. No wait asserts:
//! it returns whether the condition held, and the test's own assertions come after.

use std::future::Future;
use std::time::Duration;

use tokio::time::{Instant, sleep};

/// Longest wait before giving up.
pub const DEADLINE: Duration = Duration::from_secs(60);
/// Pause between two looks at the condition.
pub const POLL: Duration = Duration::from_millis(20);

/// Polls `done` until it holds or [`DEADLINE`] passes; whether it held.
pub async fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    wait_until_async(|| std::future::ready(done())).await
}

/// [`wait_until`] for a condition that must itself wait (a request, a query).
pub async fn wait_until_async<F, Fut>(mut done: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + DEADLINE;
    loop {
        if done().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        sleep(POLL).await;
    }
}

/// [`wait_until`] for a test without a Tokio runtime: the same deadline and interval, on the
/// thread.
pub fn wait_until_blocking(mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        if done() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
}
