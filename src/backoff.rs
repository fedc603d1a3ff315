//! The one exponential backoff formula: `base * 2^exponent`, capped. Model-call retries
//! (with jitter on top, [`crate::llm::RetryPolicy`]), the queue's job retries
//! ([`crate::queue::QueueOptions`]) and the forges' rate-limit waits
//! ([`crate::forge::RateLimitPolicy`]) all grow their waits with it.
//!
//! Invariant: never panics and never overflows; any exponent, base and cap give a
//! wait of at most `cap`.

use std::time::Duration;

/// `base * 2^exponent`, at most `cap` (saturating: a huge exponent gives `cap`).
pub(crate) fn exponential(base: Duration, exponent: u32, cap: Duration) -> Duration {
    base.saturating_mul(2u32.saturating_pow(exponent)).min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn doubles_from_the_base() {
        assert_eq!(exponential(SECOND, 0, Duration::MAX), SECOND);
        assert_eq!(exponential(SECOND, 3, Duration::MAX), SECOND * 8);
    }

    #[test]
    fn stops_at_the_cap() {
        let cap = SECOND * 35;
        assert_eq!(exponential(SECOND * 10, 1, cap), SECOND * 20);
        assert_eq!(exponential(SECOND * 10, 2, cap), cap);
    }

    #[test]
    fn huge_exponents_saturate_at_the_cap() {
        let cap = SECOND * 60;
        assert_eq!(exponential(SECOND, u32::MAX, cap), cap);
        assert_eq!(exponential(Duration::MAX, 40, cap), cap);
    }
}
