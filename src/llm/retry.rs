//! Retrying model calls: exponential backoff with full jitter, or the wait the
//! server asked for; and telling a listener, at a fixed interval, that an
//! attempt is still waiting for its reply.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::{ChatModel, ChatRequest, ChatResponse, LlmError};

/// A server-requested wait up to this long is honoured in full, even past
/// [`RetryPolicy::max_delay`]: retrying earlier would only be refused again.
pub(crate) const MAX_HONOURED_SERVER_WAIT: Duration = Duration::from_secs(120);

/// How failed calls are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// Backoff ceiling of the first retry; it doubles with every retry.
    pub base_delay: Duration,
    /// Largest backoff ceiling.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1-based) after `error`.
    ///
    /// A server-requested wait is used as is when it is at most
    /// [`MAX_HONOURED_SERVER_WAIT`] (or `max_delay`, when larger), and capped there
    /// otherwise. Without one, the wait is drawn uniformly from zero to
    /// `min(max_delay, base_delay * 2^(retry-1))` ("full jitter"), which spreads
    /// the retries of many clients out instead of synchronising them.
    pub(crate) fn delay_for(&self, retry: u32, error: &LlmError) -> Duration {
        if let Some(wait) = error.retry_after() {
            return wait.min(self.max_delay.max(MAX_HONOURED_SERVER_WAIT));
        }
        let ceiling = self.backoff_ceiling(retry);
        ceiling.mul_f64(rand::random::<f64>())
    }

    fn backoff_ceiling(&self, retry: u32) -> Duration {
        crate::backoff::exponential(self.base_delay, retry.saturating_sub(1), self.max_delay)
    }
}

/// What the retry layer reports before waiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryInfo {
    /// The attempt that failed (1-based).
    pub attempt: u32,
    /// How long the layer waits before the next attempt.
    pub delay: Duration,
    /// The failure, as displayed (never contains the API key).
    pub reason: String,
}

/// Called before each wait, e.g. to emit an event.
pub type RetryHook = Arc<dyn Fn(RetryInfo) + Send + Sync>;

/// How often a waiting attempt is reported by default.
pub(crate) const WAIT_NOTICE_INTERVAL: Duration = Duration::from_secs(15);

/// What the retry layer reports while an attempt has not answered yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitInfo {
    /// The attempt that is waiting (1-based).
    pub attempt: u32,
    /// How long it has been waiting.
    pub elapsed: Duration,
}

/// Called every [`WAIT_NOTICE_INTERVAL`] while an attempt waits, e.g. to emit a progress line.
pub type WaitHook = Arc<dyn Fn(WaitInfo) + Send + Sync>;

/// A [`ChatModel`] that retries retryable failures of another one.
pub(crate) struct RetryingModel {
    inner: Arc<dyn ChatModel>,
    policy: RetryPolicy,
    on_retry: Option<RetryHook>,
    on_wait: Option<(WaitHook, Duration)>,
}

impl RetryingModel {
    /// Wraps `inner` with `policy`, calling `on_retry` before each wait.
    pub fn new(
        inner: Arc<dyn ChatModel>,
        policy: RetryPolicy,
        on_retry: Option<RetryHook>,
    ) -> Self {
        RetryingModel {
            inner,
            policy,
            on_retry,
            on_wait: None,
        }
    }

    /// Also calls `on_wait` every `every` while an attempt has not answered.
    pub(crate) fn with_wait_hook(mut self, on_wait: WaitHook, every: Duration) -> Self {
        self.on_wait = Some((on_wait, every));
        self
    }
}

/// Runs `call`, calling `hook` every `every` until it completes.
async fn with_wait_notices<T>(
    call: impl Future<Output = T>,
    attempt: u32,
    hook: &WaitHook,
    every: Duration,
) -> T {
    let started = Instant::now();
    // A zero period would make the interval panic; notices that often are useless anyway.
    let every = every.max(Duration::from_millis(1));
    let mut ticks = tokio::time::interval_at(started + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(call);
    loop {
        tokio::select! {
            output = &mut call => return output,
            _ = ticks.tick() => hook(WaitInfo {
                attempt,
                elapsed: started.elapsed(),
            }),
        }
    }
}

#[async_trait]
impl ChatModel for RetryingModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut attempt = 1;
        loop {
            let call = self.inner.complete(request);
            let outcome = match &self.on_wait {
                Some((hook, every)) => with_wait_notices(call, attempt, hook, *every).await,
                None => call.await,
            };
            let error = match outcome {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            if !error.is_retryable() || attempt > self.policy.max_retries {
                return Err(error);
            }
            let delay = self.policy.delay_for(attempt, &error);
            tracing::debug!(attempt, ?delay, %error, "retrying model call");
            if let Some(hook) = &self.on_retry {
                hook(RetryInfo {
                    attempt,
                    delay,
                    reason: error.to_string(),
                });
            }
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{StopReason, Usage};
    use std::sync::Mutex;

    struct Scripted(Mutex<Vec<Result<ChatResponse, LlmError>>>);

    #[async_trait]
    impl ChatModel for Scripted {
        async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            let mut script = self.0.lock().unwrap();
            script.remove(0)
        }
    }

    fn ok() -> Result<ChatResponse, LlmError> {
        Ok(ChatResponse {
            content: "done".into(),
            tool_calls: vec![],
            usage: Usage::default(),
            stop: StopReason::EndTurn,
        })
    }

    fn request() -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![],
            tools: vec![],
            max_tokens: 1,
            temperature: None,
        }
    }

    fn fast() -> RetryPolicy {
        RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(4),
        }
    }

    fn recording_hook() -> (RetryHook, Arc<Mutex<Vec<RetryInfo>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        (Arc::new(move |info| sink.lock().unwrap().push(info)), seen)
    }

    #[tokio::test]
    async fn retries_retryable_errors_then_succeeds() {
        let inner = Scripted(Mutex::new(vec![
            Err(LlmError::StreamCut("x".into())),
            Err(LlmError::Connect("y".into())),
            ok(),
        ]));
        let (hook, seen) = recording_hook();
        let model = RetryingModel::new(Arc::new(inner), fast(), Some(hook));
        assert!(model.complete(&request()).await.is_ok());
        let seen = seen.lock().unwrap();
        assert_eq!(seen.iter().map(|i| i.attempt).collect::<Vec<_>>(), [1, 2]);
        assert!(seen[0].reason.contains("cut off"));
    }

    #[tokio::test]
    async fn gives_up_after_max_retries_and_on_permanent_errors() {
        let cut = || Err(LlmError::StreamCut("x".into()));
        let inner = Scripted(Mutex::new(vec![cut(), cut(), cut(), ok()]));
        let model = RetryingModel::new(Arc::new(inner), fast(), None);
        assert!(matches!(
            model.complete(&request()).await,
            Err(LlmError::StreamCut(_))
        ));

        let denied = Err(LlmError::Auth {
            status: 401,
            message: "no".into(),
        });
        let inner = Scripted(Mutex::new(vec![denied, ok()]));
        let model = RetryingModel::new(Arc::new(inner), fast(), None);
        assert!(matches!(
            model.complete(&request()).await,
            Err(LlmError::Auth { .. })
        ));
    }

    #[test]
    fn backoff_stays_under_its_ceiling() {
        let policy = RetryPolicy::default();
        let error = LlmError::Timeout(Duration::from_secs(1));
        for retry in 1..40 {
            let ceiling = policy.backoff_ceiling(retry);
            assert!(ceiling <= policy.max_delay);
            assert!(policy.delay_for(retry, &error) <= ceiling);
        }
        assert_eq!(policy.backoff_ceiling(1), Duration::from_secs(1));
        assert_eq!(policy.backoff_ceiling(3), Duration::from_secs(4));
    }

    #[test]
    fn server_waits_are_honoured_up_to_the_cap() {
        let policy = fast();
        let asked = |secs| LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(secs)),
        };
        assert_eq!(policy.delay_for(1, &asked(30)), Duration::from_secs(30));
        assert_eq!(policy.delay_for(1, &asked(3600)), MAX_HONOURED_SERVER_WAIT);
    }
}
