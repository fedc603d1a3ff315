//! The budget of bytes that requests with a not-yet-verified signature may buffer at once.
//!
//! Invariants: a request holds a [`Reservation`] covering its buffer's capacity before it
//! reads body bytes into it, and gives it back when the signature is verified or the request
//! ends (drop). The sum of reservations never exceeds the budget. The semaphore is fair, so a
//! large waiting reservation is not starved by a stream of small ones; a request that cannot
//! reserve within the wait is refused rather than queued indefinitely. Only a request that
//! holds nothing waits: growing a reservation takes room that is free at once or fails, so
//! requests never hold part of the budget while waiting for more (which let bodies of
//! unannounced length block each other until their deadlines).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::timeout;

/// Bytes that unverified request bodies may hold at once, shared by all requests.
#[derive(Debug, Clone)]
pub(crate) struct UnverifiedBudget {
    bytes: Arc<Semaphore>,
    total: usize,
    wait: Duration,
}

/// Bytes of the budget held by one request; returned when dropped.
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: UnverifiedBudget,
    permit: Option<OwnedSemaphorePermit>,
    bytes: usize,
}

impl UnverifiedBudget {
    /// A budget of `total` bytes; a reservation waits at most `wait` for room.
    pub(crate) fn new(total: usize, wait: Duration) -> UnverifiedBudget {
        let total = total.min(Semaphore::MAX_PERMITS);
        UnverifiedBudget {
            bytes: Arc::new(Semaphore::new(total)),
            total,
            wait,
        }
    }

    /// The bytes currently free.
    #[cfg(test)]
    pub(crate) fn available(&self) -> usize {
        self.bytes.available_permits()
    }

    /// Reserves `bytes`, waiting up to the configured time; `None` when there is no room
    /// by then or `bytes` exceeds the whole budget.
    pub(crate) async fn reserve(&self, bytes: usize) -> Option<Reservation> {
        let permit = self.acquire(bytes).await?;
        Some(Reservation {
            budget: self.clone(),
            permit,
            bytes,
        })
    }

    async fn acquire(&self, bytes: usize) -> Option<Option<OwnedSemaphorePermit>> {
        if bytes == 0 {
            return Some(None);
        }
        if bytes > self.total {
            return None;
        }
        let count = u32::try_from(bytes).ok()?;
        match timeout(self.wait, self.bytes.clone().acquire_many_owned(count)).await {
            Ok(Ok(permit)) => Some(Some(permit)),
            // Timed out, or the semaphore was closed (never done here).
            _ => None,
        }
    }
}

impl Reservation {
    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Reserves `more` bytes on top of those held, from what is free now; `false` when there
    /// is not enough (the caller refuses the request and gives back what it holds).
    pub(crate) fn grow(&mut self, more: usize) -> bool {
        if more == 0 {
            return true;
        }
        if self.bytes.saturating_add(more) > self.budget.total {
            return false;
        }
        let Ok(count) = u32::try_from(more) else {
            return false;
        };
        let Ok(extra) = self.budget.bytes.clone().try_acquire_many_owned(count) else {
            return false;
        };
        match &mut self.permit {
            Some(permit) => permit.merge(extra),
            None => self.permit = Some(extra),
        }
        self.bytes += more;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reservations_are_bounded_and_returned_on_drop() {
        let budget = UnverifiedBudget::new(100, Duration::from_millis(20));
        let first = budget.reserve(60).await.expect("room");
        assert_eq!(budget.available(), 40);
        assert!(budget.reserve(50).await.is_none(), "over the budget");
        assert!(
            budget.reserve(101).await.is_none(),
            "larger than the budget"
        );
        let mut second = budget.reserve(40).await.expect("room");
        assert!(!second.grow(1), "no room to grow");
        drop(first);
        assert!(second.grow(60));
        assert_eq!((second.bytes(), budget.available()), (100, 0));
        drop(second);
        assert_eq!(budget.available(), 100);
    }

    #[tokio::test]
    async fn a_waiting_reservation_gets_room_when_another_ends() {
        let budget = UnverifiedBudget::new(100, Duration::from_secs(10));
        let held = budget.reserve(100).await.expect("room");
        let waiter = {
            let budget = budget.clone();
            tokio::spawn(async move { budget.reserve(30).await.map(|r| r.bytes()) })
        };
        tokio::task::yield_now().await;
        drop(held);
        assert_eq!(waiter.await.unwrap(), Some(30));
    }
}
