//! Hard limits of one review (cost, tokens, wall time), shared by every run of
//! the review (parallel plan tasks included) and enforced before each model call.
//!
//! Invariants:
//! - a call is made only after [`Budget::admit`] reserved its prompt (counted
//!   conservatively) plus its whole output allowance; the call's `max_tokens` is
//!   lowered to what is left, so used + reserved never passes a limit;
//! - a reservation is settled with the call's reported usage, or released when
//!   the call fails or is dropped (cancel-safe);
//! - once a limit is reached it stays reached: every later `admit` fails with
//!   the same [`LimitKind`], so every task stops at its next model call;
//! - the time limit also ends calls in flight ([`Budget::expired`]);
//! - an interrupt (SIGINT or SIGTERM in `redline review`) acts as a limit reached at once:
//!   calls in flight end and no call is admitted, so the parts that finished are kept and
//!   the run ends as at any other limit;
//! - a review may hold back a share of each set limit for a later phase
//!   ([`Budget::reserve_share`]): until [`Budget::open_reserve`] the limits are that much
//!   lower (the time limit comes that much earlier); opening the reserve lifts them to
//!   the full limits and, when the lowered limit was what stopped the review, admits calls
//!   again within the rest (an interrupt stays reached). Calls are priced at the price of
//!   the phase that makes them.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::llm::pricing::Price;
use crate::llm::tokens::TokenCounter;
use crate::llm::{ChatRequest, Usage};

/// The smallest output allowance worth a call: below it a limit counts as reached.
pub(crate) const MIN_REPLY_TOKENS: u32 = 512;

pub(crate) use crate::review::stats::LimitKind;

/// The limits a user set for one review; `None` is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReviewLimits {
    /// USD over all calls, at the price table.
    pub max_cost_usd: Option<f64>,
    /// Prompt + completion tokens over all calls.
    pub max_tokens: Option<u64>,
    /// Wall time of the review.
    pub timeout: Option<Duration>,
}

/// Spent and reserved amounts, under the budget's lock.
#[derive(Debug, Default)]
struct Ledger {
    used_tokens: u64,
    used_cost: f64,
    reserved_tokens: u64,
    reserved_cost: f64,
    in_flight: u32,
    reached: Option<LimitKind>,
    announced: bool,
    /// Share (0 to 1) of each set limit the current phase may use.
    share: f64,
    /// The price of the current phase's calls.
    price: Option<Price>,
}

/// The shared budget of one review.
#[derive(Debug)]
pub(crate) struct Budget {
    limits: ReviewLimits,
    started: std::sync::OnceLock<Instant>,
    ledger: Mutex<Ledger>,
    settled: Notify,
    interrupt: CancellationToken,
}

/// A call's reservation: settle it with the reply's usage; dropping it releases it.
#[derive(Debug)]
pub(crate) struct Reservation<'a> {
    budget: &'a Budget,
    tokens: u64,
    cost: f64,
    /// The output allowance granted (the request's `max_tokens`).
    pub max_tokens: u32,
    open: bool,
}

/// What `admit` decided under the lock.
enum Verdict<'a> {
    Granted(Reservation<'a>),
    Wait,
    Stop(LimitKind),
}

impl Budget {
    /// A budget with `limits`; `price` prices the calls (required for a cost limit).
    pub fn new(limits: ReviewLimits, price: Option<Price>) -> Self {
        Budget {
            limits,
            started: std::sync::OnceLock::new(),
            ledger: Mutex::new(Ledger {
                share: 1.0,
                price,
                ..Ledger::default()
            }),
            settled: Notify::new(),
            interrupt: CancellationToken::new(),
        }
    }

    /// Stops the review as at a limit ([`LimitKind::Interrupted`]) when `interrupt` fires.
    pub(crate) fn with_interrupt(mut self, interrupt: CancellationToken) -> Self {
        self.interrupt = interrupt;
        self
    }

    /// Holds back `share` (0 to 1) of each set limit until [`Budget::open_reserve`].
    pub(crate) fn reserve_share(self, share: f64) -> Self {
        self.lock().share = (1.0 - share).clamp(0.0, 1.0);
        self
    }

    /// Lifts the limits to their full values for the calls that follow, priced at
    /// `price`. A limit reached only because of the reserve is no longer reached (it was
    /// announced: it is not announced again); an interrupt stays.
    pub(crate) fn open_reserve(&self, price: Option<Price>) {
        {
            let mut ledger = self.lock();
            let held_back = ledger.share < 1.0;
            ledger.share = 1.0;
            ledger.price = price;
            if held_back && ledger.reached != Some(LimitKind::Interrupted) {
                ledger.reached = None;
            }
        }
        self.settled.notify_waiters();
    }

    /// Starts the clock of the time limit (idempotent: the first start counts).
    pub fn start(&self) {
        self.started.get_or_init(Instant::now);
    }

    /// When the current phase's time is up: the start plus its share of the timeout.
    fn deadline(&self) -> Option<Instant> {
        let timeout = self.limits.timeout?;
        let started = self.started.get()?;
        Some(*started + timeout.mul_f64(self.lock().share))
    }

    /// The limit reached so far, if any.
    pub fn reached(&self) -> Option<LimitKind> {
        self.lock().reached
    }

    /// Records that `kind` was reached (the first limit reached is the one kept).
    pub fn reach(&self, kind: LimitKind) {
        self.lock().reached.get_or_insert(kind);
        self.settled.notify_waiters();
    }

    /// The limit reached, the first time it is asked for after it was reached
    /// (so that one run, not every run, announces it).
    pub(crate) fn announce(&self) -> Option<LimitKind> {
        let mut ledger = self.lock();
        match (ledger.reached, ledger.announced) {
            (Some(kind), false) => {
                ledger.announced = true;
                Some(kind)
            }
            _ => None,
        }
    }

    /// Whether a token or cost limit needs each prompt counted.
    pub(crate) fn counts_tokens(&self) -> bool {
        self.limits.max_tokens.is_some()
            || (self.limits.max_cost_usd.is_some() && self.lock().price.is_some())
    }

    /// Reserves a call whose prompt counts `prompt_tokens` and which wants up to
    /// `wanted` reply tokens. The grant's `max_tokens` is `wanted` lowered to what
    /// the limits leave; when not even [`MIN_REPLY_TOKENS`] fit and no other call
    /// is in flight (whose settlement could free room), the limit is reached.
    pub async fn admit(
        &self,
        prompt_tokens: u64,
        wanted: u32,
    ) -> Result<Reservation<'_>, LimitKind> {
        loop {
            let settled = self.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            match self.try_reserve(prompt_tokens, wanted) {
                Verdict::Granted(reservation) => return Ok(reservation),
                Verdict::Stop(kind) => {
                    self.reach(kind);
                    return Err(self.reached().unwrap_or(kind));
                }
                Verdict::Wait => {
                    tokio::select! {
                        _ = settled => {}
                        kind = self.expired() => {
                            self.reach(kind);
                            return Err(self.reached().unwrap_or(kind));
                        }
                    }
                }
            }
        }
    }

    /// Decides and reserves under one lock, so that two calls never share the same room.
    fn try_reserve(&self, prompt_tokens: u64, wanted: u32) -> Verdict<'_> {
        let deadline = self.deadline();
        let mut ledger = self.lock();
        if let Some(kind) = ledger.reached {
            return Verdict::Stop(kind);
        }
        if self.interrupt.is_cancelled() {
            return Verdict::Stop(LimitKind::Interrupted);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Verdict::Stop(LimitKind::Time);
        }
        let (room, binding) = self.room(&ledger, prompt_tokens, wanted);
        let fits = room >= u64::from(MIN_REPLY_TOKENS.min(wanted));
        match (fits, binding, ledger.in_flight) {
            // `room` never exceeds `wanted`; without a binding limit it is `wanted`.
            (true, _, _) | (false, None, _) => {
                let max_tokens = u32::try_from(room).unwrap_or(wanted);
                Verdict::Granted(self.reserve(&mut ledger, prompt_tokens, max_tokens))
            }
            (false, Some(kind), 0) => Verdict::Stop(kind),
            (false, Some(_), _) => Verdict::Wait,
        }
    }

    /// The output allowance the limits leave after a prompt (at most `wanted`), and
    /// the limit that lowered it, if one did.
    fn room(&self, ledger: &Ledger, prompt_tokens: u64, wanted: u32) -> (u64, Option<LimitKind>) {
        let mut room = u64::from(wanted);
        let mut binding = None;
        if let Some(max) = self.limits.max_tokens {
            let max = (max as f64 * ledger.share).floor() as u64;
            let left = max.saturating_sub(ledger.used_tokens + ledger.reserved_tokens);
            let by_tokens = left.saturating_sub(prompt_tokens);
            if by_tokens < room {
                room = by_tokens;
                binding = Some(LimitKind::Tokens);
            }
        }
        if let (Some(max), Some(price)) = (self.limits.max_cost_usd, ledger.price) {
            let left = max * ledger.share - ledger.used_cost - ledger.reserved_cost;
            let after_prompt = left - prompt_tokens as f64 * price.worst_prompt_token();
            let by_cost = if after_prompt <= 0.0 {
                0
            } else if price.output_token() <= 0.0 {
                u64::MAX
            } else {
                (after_prompt / price.output_token()).floor() as u64
            };
            if by_cost < room {
                room = by_cost;
                binding = Some(LimitKind::Cost);
            }
        }
        (room, binding)
    }

    fn reserve(&self, ledger: &mut Ledger, prompt_tokens: u64, max_tokens: u32) -> Reservation<'_> {
        let tokens = prompt_tokens + u64::from(max_tokens);
        let cost = ledger.price.map_or(0.0, |p| {
            prompt_tokens as f64 * p.worst_prompt_token() + f64::from(max_tokens) * p.output_token()
        });
        ledger.reserved_tokens += tokens;
        ledger.reserved_cost += cost;
        ledger.in_flight += 1;
        Reservation {
            budget: self,
            tokens,
            cost,
            max_tokens,
            open: true,
        }
    }

    /// Completes when the time limit passes or the review is interrupted, with which of
    /// the two it was; never without either.
    pub async fn expired(&self) -> LimitKind {
        let deadline = async {
            match self.deadline() {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = deadline => LimitKind::Time,
            _ = self.interrupt.cancelled() => LimitKind::Interrupted,
        }
    }

    /// Tokens and cost spent by settled calls.
    pub(crate) fn spent(&self) -> (u64, f64) {
        let ledger = self.lock();
        (ledger.used_tokens, ledger.used_cost)
    }

    fn close(&self, tokens: u64, cost: f64, usage: Option<&Usage>) {
        {
            let mut ledger = self.lock();
            ledger.reserved_tokens = ledger.reserved_tokens.saturating_sub(tokens);
            ledger.reserved_cost = (ledger.reserved_cost - cost).max(0.0);
            ledger.in_flight = ledger.in_flight.saturating_sub(1);
            if let Some(usage) = usage {
                ledger.used_tokens += usage.prompt_tokens + usage.completion_tokens;
                ledger.used_cost += ledger.price.map_or(0.0, |p| p.cost(usage));
            }
        }
        self.settled.notify_waiters();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Reservation<'_> {
    /// Replaces the reservation by the call's reported usage.
    pub(crate) fn settle(mut self, usage: &Usage) {
        self.open = false;
        self.budget.close(self.tokens, self.cost, Some(usage));
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.open {
            self.budget.close(self.tokens, self.cost, None);
        }
    }
}

/// A conservative count of a request's prompt tokens: the local tokenizer's count
/// of the messages and tool specs, but at least one token per 3 bytes of their JSON
/// (the provider's own count includes framing the local count cannot see), plus a margin.
pub(crate) fn prompt_estimate(counter: &TokenCounter, request: &ChatRequest) -> u64 {
    const FRAMING_MARGIN: u64 = 64;
    let messages = serde_json::to_string(&request.messages).unwrap_or_default();
    let tools = serde_json::to_string(&request.tools).unwrap_or_default();
    let counted = counter.count_messages(&request.messages) + counter.count(&tools);
    let by_bytes = (messages.len() + tools.len()).div_ceil(3);
    counted.max(by_bytes) as u64 + FRAMING_MARGIN
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(prompt: u64, completion: u64) -> Usage {
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            ..Usage::default()
        }
    }

    fn tokens(max: u64) -> Budget {
        Budget::new(
            ReviewLimits {
                max_tokens: Some(max),
                ..ReviewLimits::default()
            },
            None,
        )
    }

    #[tokio::test]
    async fn the_allowance_is_lowered_to_what_is_left_then_the_limit_is_reached() {
        let budget = tokens(5_000);
        let first = budget.admit(1_000, 4_096).await.unwrap();
        assert_eq!(first.max_tokens, 4_000);
        first.settle(&usage(1_000, 100));
        // 3,900 left: a prompt of 3,000 leaves 900 for the reply.
        let second = budget.admit(3_000, 4_096).await.unwrap();
        assert_eq!(second.max_tokens, 900);
        second.settle(&usage(3_000, 900));
        assert_eq!(budget.admit(1, 4_096).await.unwrap_err(), LimitKind::Tokens);
        assert_eq!(budget.reached(), Some(LimitKind::Tokens));
        assert!(budget.spent().0 <= 5_000);
    }

    #[tokio::test]
    async fn a_dropped_reservation_frees_its_room() {
        let budget = tokens(2_000);
        let held = budget.admit(1_000, 1_000).await.unwrap();
        drop(held);
        let again = budget.admit(1_000, 1_000).await.unwrap();
        assert_eq!(again.max_tokens, 1_000);
    }

    #[tokio::test]
    async fn a_call_waits_for_one_in_flight_then_fits_or_stops() {
        let budget = std::sync::Arc::new(tokens(3_000));
        let held = budget.admit(1_000, 1_500).await.unwrap();
        let waiter = {
            let budget = budget.clone();
            tokio::spawn(async move { budget.admit(1_000, 1_500).await.map(|r| r.max_tokens) })
        };
        tokio::task::yield_now().await;
        held.settle(&usage(1_000, 50));
        // 1,950 left after settlement: 950 for the waiting call's reply.
        assert_eq!(waiter.await.unwrap(), Ok(950));
    }

    #[tokio::test]
    async fn a_waiting_call_stops_when_the_one_in_flight_used_the_rest() {
        let budget = std::sync::Arc::new(tokens(3_000));
        let held = budget.admit(1_000, 1_500).await.unwrap();
        let waiter = {
            let budget = budget.clone();
            tokio::spawn(async move { budget.admit(1_000, 1_500).await.map(|r| r.max_tokens) })
        };
        tokio::task::yield_now().await;
        held.settle(&usage(1_000, 1_500));
        assert_eq!(waiter.await.unwrap(), Err(LimitKind::Tokens));
        assert_eq!(budget.announce(), Some(LimitKind::Tokens));
        assert_eq!(budget.announce(), None, "announced once");
    }

    #[tokio::test]
    async fn cost_limits_the_output_at_the_price_table() {
        let price = Price {
            input: 1.0,
            cached_input: 0.1,
            cache_write: 2.0,
            output: 10.0,
        };
        let budget = Budget::new(
            ReviewLimits {
                max_cost_usd: Some(0.01),
                ..ReviewLimits::default()
            },
            Some(price),
        );
        // The prompt is priced at the worst prompt rate (cache write, $2/M): 1,000 → $0.002;
        // $0.008 left buys 800 output tokens at $10/M.
        let grant = budget.admit(1_000, 4_096).await.unwrap();
        assert_eq!(grant.max_tokens, 800);
        grant.settle(&usage(1_000, 800));
        // Spent: $0.001 + $0.008 = $0.009; the next call's prompt alone leaves < 512 tokens.
        assert_eq!(
            budget.admit(1_000, 4_096).await.unwrap_err(),
            LimitKind::Cost
        );
        assert!(budget.spent().1 <= 0.01);
    }

    #[tokio::test]
    async fn the_time_limit_stops_admission() {
        let budget = Budget::new(
            ReviewLimits {
                timeout: Some(Duration::from_millis(1)),
                ..ReviewLimits::default()
            },
            None,
        );
        budget.start();
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(budget.admit(10, 100).await.unwrap_err(), LimitKind::Time);
    }

    #[tokio::test]
    async fn an_interrupt_ends_calls_in_flight_and_stops_admission() {
        let interrupt = CancellationToken::new();
        let budget = Budget::new(ReviewLimits::default(), None).with_interrupt(interrupt.clone());
        budget.start();
        let in_flight = budget
            .admit(10, 100)
            .await
            .expect("granted before the interrupt");
        interrupt.cancel();
        assert_eq!(budget.expired().await, LimitKind::Interrupted);
        drop(in_flight);
        assert_eq!(
            budget.admit(10, 100).await.unwrap_err(),
            LimitKind::Interrupted
        );
    }

    #[tokio::test]
    async fn a_reserved_share_is_held_back_until_it_is_opened() {
        let budget = tokens(10_000).reserve_share(0.2);
        // 8,000 for the review: a prompt of 5,000 leaves 3,000 for the reply.
        let first = budget.admit(5_000, 8_000).await.unwrap();
        assert_eq!(first.max_tokens, 3_000);
        first.settle(&usage(5_000, 2_800));
        assert_eq!(
            budget.admit(1_000, 4_096).await.unwrap_err(),
            LimitKind::Tokens
        );
        assert_eq!(budget.announce(), Some(LimitKind::Tokens));
        // The reserve opens: 2,200 left of the full 10,000.
        budget.open_reserve(None);
        assert_eq!(budget.reached(), None);
        let late = budget.admit(1_000, 4_096).await.unwrap();
        assert_eq!(late.max_tokens, 1_200);
        late.settle(&usage(1_000, 1_200));
        assert_eq!(budget.admit(1, 4_096).await.unwrap_err(), LimitKind::Tokens);
        assert_eq!(budget.announce(), None, "a limit is announced once");
        assert!(budget.spent().0 <= 10_000);
    }

    #[tokio::test]
    async fn the_reserve_comes_before_the_deadline_and_an_interrupt_stays() {
        let interrupt = CancellationToken::new();
        let budget = Budget::new(
            ReviewLimits {
                timeout: Some(Duration::from_secs(3600)),
                ..ReviewLimits::default()
            },
            None,
        )
        .with_interrupt(interrupt.clone())
        .reserve_share(0.25);
        budget.start();
        let started = *budget.started.get().unwrap();
        assert_eq!(budget.deadline(), Some(started + Duration::from_secs(2700)));
        budget.open_reserve(None);
        assert_eq!(budget.deadline(), Some(started + Duration::from_secs(3600)));
        interrupt.cancel();
        assert_eq!(
            budget.admit(10, 100).await.unwrap_err(),
            LimitKind::Interrupted
        );
        budget.open_reserve(None);
        assert_eq!(
            budget.admit(10, 100).await.unwrap_err(),
            LimitKind::Interrupted
        );
    }

    #[tokio::test]
    async fn calls_after_the_reserve_opens_are_priced_at_its_price() {
        let dear = Price {
            input: 10.0,
            cached_input: 10.0,
            cache_write: 10.0,
            output: 10.0,
        };
        let cheap = Price {
            input: 1.0,
            cached_input: 1.0,
            cache_write: 1.0,
            output: 1.0,
        };
        let budget = Budget::new(
            ReviewLimits {
                max_cost_usd: Some(1.0),
                ..ReviewLimits::default()
            },
            Some(dear),
        )
        .reserve_share(0.2);
        budget
            .admit(1_000, 100)
            .await
            .unwrap()
            .settle(&usage(1_000, 100));
        budget.open_reserve(Some(cheap));
        budget
            .admit(1_000, 100)
            .await
            .unwrap()
            .settle(&usage(1_000, 100));
        let (_, cost) = budget.spent();
        assert!((cost - (0.011 + 0.0011)).abs() < 1e-9, "{cost}");
    }

    #[tokio::test]
    async fn without_limits_every_call_is_granted_in_full() {
        let budget = Budget::new(ReviewLimits::default(), None);
        budget.start();
        assert_eq!(
            budget.admit(1_000_000, 8_192).await.unwrap().max_tokens,
            8_192
        );
    }
}
