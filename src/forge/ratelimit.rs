//! Waiting out a forge's rate limits, and spacing out content-creating requests
//! as GitHub asks integrations to do (to stay clear of secondary rate limits).
//! Shared by the GitHub and GitLab clients: GitHub says `x-ratelimit-remaining` and
//! `x-ratelimit-reset`, GitLab `RateLimit-Remaining` and `RateLimit-Reset`; both may
//! say `Retry-After`. Both clients send through [`RateLimitPolicy::wait_out`], the one
//! loop that waits and retries.
//!
//! Invariant: one request waits at most `max_total_wait` in all and is retried at most
//! `max_retries` times; an answer that is not a rate limit is returned as it came.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use futures::future::BoxFuture;

/// How the client sleeps. Tests swap in one that records the waits and returns at once.
#[derive(Clone)]
pub struct Sleeper(Arc<dyn Fn(Duration) -> BoxFuture<'static, ()> + Send + Sync>);

impl Sleeper {
    /// Sleeps on the tokio timer.
    pub fn tokio() -> Self {
        Sleeper(Arc::new(|d| Box::pin(tokio::time::sleep(d))))
    }

    /// A custom sleep function.
    pub fn new(f: impl Fn(Duration) -> BoxFuture<'static, ()> + Send + Sync + 'static) -> Self {
        Sleeper(Arc::new(f))
    }

    /// Waits for `duration`.
    pub async fn sleep(&self, duration: Duration) {
        if !duration.is_zero() {
            (self.0)(duration).await;
        }
    }
}

impl fmt::Debug for Sleeper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sleeper")
    }
}

/// How a forge client reacts to rate limits and paces its writes.
#[derive(Debug, Clone)]
pub struct RateLimitPolicy {
    /// First wait of the exponential back-off used when GitHub says neither how
    /// long to wait nor when the limit resets (doubles on each retry).
    pub base_delay: Duration,
    /// Give up rather than wait longer than this in total for one request.
    pub max_total_wait: Duration,
    /// Give up after this many rate-limited answers to one request.
    pub max_retries: u32,
    /// Least time between two content-creating requests (POST, PATCH).
    pub min_write_interval: Duration,
    /// How waiting is done.
    pub sleeper: Sleeper,
}

impl Default for RateLimitPolicy {
    fn default() -> Self {
        RateLimitPolicy {
            base_delay: Duration::from_secs(60),
            max_total_wait: Duration::from_secs(15 * 60),
            max_retries: 5,
            min_write_interval: Duration::from_secs(1),
            sleeper: Sleeper::tokio(),
        }
    }
}

/// How long to wait before retrying an answer, or `None` when the answer is not
/// a rate limit (a 403 without rate-limit signs is a real refusal).
///
/// `retries_so_far` sets the exponential back-off; `now_unix` is the current time
/// in seconds since the epoch, to read `x-ratelimit-reset`.
pub(crate) fn rate_limit_wait(
    status: u16,
    headers: &HeaderMap,
    message: &str,
    retries_so_far: u32,
    base_delay: Duration,
    now_unix: i64,
) -> Option<Duration> {
    if status != 403 && status != 429 {
        return None;
    }
    if let Some(secs) = header_number::<u64>(headers, "retry-after") {
        return Some(Duration::from_secs(secs));
    }
    let remaining = header_number::<u64>(headers, "x-ratelimit-remaining")
        .or_else(|| header_number::<u64>(headers, "ratelimit-remaining"));
    let reset = header_number::<i64>(headers, "x-ratelimit-reset")
        .or_else(|| header_number::<i64>(headers, "ratelimit-reset"));
    if remaining == Some(0)
        && let Some(reset) = reset
    {
        let secs = reset.saturating_sub(now_unix).max(1);
        return Some(Duration::from_secs(secs.unsigned_abs()));
    }
    let says_rate_limit = message.to_ascii_lowercase().contains("rate limit");
    (status == 429 || says_rate_limit)
        .then(|| crate::backoff::exponential(base_delay, retries_so_far, Duration::MAX))
}

/// A forge's answer as the rate-limit loop reads it.
pub(crate) trait ForgeAnswer {
    /// The HTTP status.
    fn status(&self) -> u16;
    /// The response headers.
    fn headers(&self) -> &HeaderMap;
}

/// The request a rate-limit wait is logged for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestLabel<'a> {
    /// `GitHub` or `GitLab`.
    pub forge: &'static str,
    /// The HTTP method.
    pub method: &'a str,
    /// The API path.
    pub path: &'a str,
}

/// What became of a request sent through [`RateLimitPolicy::wait_out`].
pub(crate) enum Limited<A> {
    /// An answer that is not a rate limit (a success or any other status).
    Answered(A),
    /// Still rate limited when the policy's retries or total wait ran out.
    GaveUp {
        /// How long was waited in all.
        waited: Duration,
        /// The forge's last message (redacted by `message_of`).
        message: String,
    },
}

impl RateLimitPolicy {
    /// Sends with `send_once` until the answer is not a rate limit, waiting as the
    /// forge asks (or backing off exponentially) in between; gives up past the policy's
    /// bounds. `message_of` reads (and redacts) the forge's message of a 403 or 429, which
    /// tells a secondary rate limit from a refusal.
    pub(crate) async fn wait_out<A, E, Fut>(
        &self,
        request: RequestLabel<'_>,
        mut send_once: impl FnMut() -> Fut,
        message_of: impl Fn(&A) -> String,
    ) -> Result<Limited<A>, E>
    where
        A: ForgeAnswer,
        Fut: Future<Output = Result<A, E>>,
    {
        let mut waited = Duration::ZERO;
        let mut retries = 0;
        loop {
            let answer = send_once().await?;
            let status = answer.status();
            let message = match status {
                403 | 429 => message_of(&answer),
                _ => String::new(),
            };
            let now = chrono::Utc::now().timestamp();
            let wait = rate_limit_wait(
                status,
                answer.headers(),
                &message,
                retries,
                self.base_delay,
                now,
            );
            let Some(wait) = wait else {
                return Ok(Limited::Answered(answer));
            };
            if retries >= self.max_retries || waited + wait > self.max_total_wait {
                return Ok(Limited::GaveUp { waited, message });
            }
            tracing::warn!(
                method = request.method,
                path = request.path,
                status,
                wait_ms = wait.as_millis() as u64,
                "{} rate limit; waiting before retrying",
                request.forge
            );
            self.sleeper.sleep(wait).await;
            waited += wait;
            retries += 1;
        }
    }
}

fn header_number<T: std::str::FromStr>(headers: &HeaderMap, name: &str) -> Option<T> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

/// Serialises content-creating requests and keeps them `interval` apart.
#[derive(Debug, Default)]
pub(crate) struct WriteGate {
    last_write: tokio::sync::Mutex<Option<Instant>>,
}

impl WriteGate {
    /// Runs `write` once the previous write is at least `interval` old; no other
    /// write through this gate runs meanwhile.
    pub(crate) async fn pass<T>(
        &self,
        interval: Duration,
        sleeper: &Sleeper,
        write: impl Future<Output = T>,
    ) -> T {
        let mut last = self.last_write.lock().await;
        if let Some(previous) = *last {
            let elapsed = previous.elapsed();
            if elapsed < interval {
                sleeper.sleep(interval - elapsed).await;
            }
        }
        let result = write.await;
        *last = Some(Instant::now());
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const MIN: Duration = Duration::from_secs(60);

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_wins() {
        let h = headers(&[("retry-after", "7"), ("x-ratelimit-remaining", "0")]);
        assert_eq!(
            rate_limit_wait(403, &h, "", 0, MIN, 0),
            Some(Duration::from_secs(7))
        );
    }

    #[test]
    fn reset_time_when_nothing_remains() {
        let h = headers(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1030"),
        ]);
        assert_eq!(
            rate_limit_wait(403, &h, "", 0, MIN, 1000),
            Some(Duration::from_secs(30))
        );
        // A reset already past still waits a moment rather than hammering.
        assert_eq!(
            rate_limit_wait(429, &h, "", 0, MIN, 2000),
            Some(Duration::from_secs(1))
        );
    }

    #[test]
    fn gitlab_reset_header_when_nothing_remains() {
        let h = headers(&[("ratelimit-remaining", "0"), ("ratelimit-reset", "1012")]);
        assert_eq!(
            rate_limit_wait(429, &h, "", 0, MIN, 1000),
            Some(Duration::from_secs(12))
        );
    }

    #[test]
    fn exponential_backoff_without_headers() {
        let h = HeaderMap::new();
        assert_eq!(rate_limit_wait(429, &h, "", 0, MIN, 0), Some(MIN));
        assert_eq!(rate_limit_wait(429, &h, "", 2, MIN, 0), Some(MIN * 4));
        assert_eq!(
            rate_limit_wait(
                403,
                &h,
                "You have exceeded a secondary rate limit",
                1,
                MIN,
                0
            ),
            Some(MIN * 2)
        );
    }

    #[test]
    fn plain_refusals_and_other_statuses_are_not_rate_limits() {
        let h = HeaderMap::new();
        assert_eq!(
            rate_limit_wait(403, &h, "Resource not accessible by integration", 0, MIN, 0),
            None
        );
        assert_eq!(
            rate_limit_wait(422, &headers(&[("retry-after", "1")]), "", 0, MIN, 0),
            None
        );
    }

    #[tokio::test]
    async fn gate_spaces_writes() {
        let waits = Arc::new(std::sync::Mutex::new(Vec::new()));
        let recorded = waits.clone();
        let sleeper = Sleeper::new(move |d| {
            recorded.lock().unwrap().push(d);
            Box::pin(async {})
        });
        let gate = WriteGate::default();
        let interval = Duration::from_secs(3600);
        assert_eq!(gate.pass(interval, &sleeper, async { 1 }).await, 1);
        assert_eq!(gate.pass(interval, &sleeper, async { 2 }).await, 2);
        let waits = waits.lock().unwrap();
        assert_eq!(waits.len(), 1, "only the second write waits");
        assert!(waits[0] > Duration::from_secs(3500));
    }
}
