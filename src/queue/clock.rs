//! The queue's "now": the time written into the database (received, run at, lease end,
//! updated) and compared with it (due jobs, expired leases, stale checks).
//!
//! Invariant: every timestamp the queue writes or compares comes from the [`Clock`] of its
//! [`super::QueueOptions`], so a test that sets that clock decides when a lease has run out or
//! a retry is due, without sleeping. Tokio's timers (a worker's poll interval and lease
//! heartbeat) run on Tokio's clock, which a test pauses and advances on its own.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::db::to_millis;

/// Where the queue reads the time: the system's wall clock, or a function a test supplies.
#[derive(Clone, Default)]
pub struct Clock(Source);

#[derive(Clone, Default)]
enum Source {
    #[default]
    System,
    Custom(Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>),
}

impl Clock {
    /// The system's wall clock (the default).
    pub fn system() -> Clock {
        Clock(Source::System)
    }

    /// A clock that reads the time from `now` (e.g. a test's settable time).
    pub fn from_fn(now: impl Fn() -> DateTime<Utc> + Send + Sync + 'static) -> Clock {
        Clock(Source::Custom(Arc::new(now)))
    }

    /// The current time by this clock.
    pub fn now(&self) -> DateTime<Utc> {
        match &self.0 {
            Source::System => Utc::now(),
            Source::Custom(now) => now(),
        }
    }

    /// The current time in milliseconds since the Unix epoch, as the database stores it.
    pub(super) fn now_millis(&self) -> i64 {
        to_millis(self.now())
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Source::System => "Clock::system",
            Source::Custom(_) => "Clock::from_fn",
        })
    }
}

/// Two clocks are equal when they are the system clock, or the same supplied function.
impl PartialEq for Clock {
    fn eq(&self, other: &Clock) -> bool {
        match (&self.0, &other.0) {
            (Source::System, Source::System) => true,
            (Source::Custom(a), Source::Custom(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Clock {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_supplied_clock_is_read_and_compared_by_identity() {
        let at = DateTime::from_timestamp_millis(1_700_000_000_123).expect("a valid time");
        let clock = Clock::from_fn(move || at);
        assert_eq!(clock.now_millis(), 1_700_000_000_123);
        assert_eq!(clock, clock.clone());
        assert_ne!(clock, Clock::from_fn(move || at));
        assert_eq!(Clock::system(), Clock::default());
        assert_ne!(Clock::system(), clock);
    }
}
