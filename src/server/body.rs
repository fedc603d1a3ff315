//! Reading a webhook body that is not authenticated yet: bounded in size, time and memory,
//! and hashed for the signature check while it streams in ([`BodyCheck`]; GitLab's body is
//! read within the same bounds, and its per-project token checked once the body names the
//! project).
//!
//! Invariants: bytes are kept (copied into the buffer, or held as the one piece that is the
//! whole announced body) only while a [`Reservation`] of the unverified budget covers them;
//! the reservation ends with this function (verified bodies are the caller's, refused ones
//! are dropped here). The read never waits longer than
//! the body deadline, and never longer than the minimum rate allows for the bytes so far.

use axum::body::{Body, Bytes};
use futures::StreamExt;
use tokio::time::{Instant, timeout_at};

use super::budget::{Reservation, UnverifiedBudget};
use super::limits::RequestLimits;
use super::signature::{SignatureCheck, SignatureError};

/// Growth step of a buffer whose size was not announced (chunked transfer).
const CHUNKED_STEP: usize = 256 * 1024;

/// The most a request reserves before its first body byte arrives, whatever length it
/// announces: a peer that announces 25 MB and sends nothing holds this much of the budget,
/// not 25 MB (the default connection cap times this stays within the default budget). The
/// rest is reserved as the bytes arrive, so holding the budget costs bandwidth.
const FIRST_RESERVATION: usize = 64 * 1024;

/// Why a body was not read to the end, or was refused after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BodyError {
    /// More than the limit was announced or sent.
    #[error("the body is larger than {limit} bytes")]
    TooLarge {
        /// The limit in effect.
        limit: usize,
    },
    /// The body arrived slower than the minimum rate.
    #[error("the body arrived slower than {rate} bytes per second")]
    TooSlow {
        /// The minimum rate.
        rate: u64,
    },
    /// The body took longer than the body deadline.
    #[error("the body took longer than the body timeout")]
    TimedOut,
    /// The unverified budget had no room in time.
    #[error("too many unverified request bytes are buffered; retry later")]
    Busy,
    /// The peer ended the body early or sent a malformed one.
    #[error("the body ended early or was malformed")]
    Incomplete,
    /// The body does not match its signature.
    #[error(transparent)]
    Signature(#[from] SignatureError),
}

/// What authenticates a body: fed every piece as it arrives, asked once at the end.
pub(crate) trait BodyCheck {
    /// Takes the next piece of the body.
    fn update(&mut self, piece: &[u8]);
    /// Whether the whole body is authentic.
    fn finish(self) -> Result<(), SignatureError>;
}

impl BodyCheck for SignatureCheck {
    fn update(&mut self, piece: &[u8]) {
        SignatureCheck::update(self, piece);
    }

    fn finish(self) -> Result<(), SignatureError> {
        SignatureCheck::finish(self)
    }
}

/// A body the caller authenticates once it has it (GitLab's `X-Gitlab-Token` is the token
/// of the project the body names): it comes within the limits and the budget, unchecked
/// here.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CheckedByCaller;

impl BodyCheck for CheckedByCaller {
    fn update(&mut self, _piece: &[u8]) {}

    fn finish(self) -> Result<(), SignatureError> {
        Ok(())
    }
}

/// Reads `body` (announced as `declared` bytes, if at all) and checks it against `check`.
/// Returns the body only when the check passes.
pub(crate) async fn read_verified<C: BodyCheck>(
    body: Body,
    declared: Option<u64>,
    limits: &RequestLimits,
    budget: &UnverifiedBudget,
    check: C,
) -> Result<Bytes, BodyError> {
    let limit = limits.effective_max_body();
    let declared = match declared.map(usize::try_from) {
        Some(Ok(len)) if len <= limit => Some(len),
        Some(_) => return Err(BodyError::TooLarge { limit }),
        None => None,
    };
    let initial = declared
        .unwrap_or(CHUNKED_STEP)
        .min(FIRST_RESERVATION)
        .min(limit);
    let reservation = budget.reserve(initial).await.ok_or(BodyError::Busy)?;
    let mut reader = Reader {
        buffer: Vec::new(),
        initial,
        whole: None,
        declared,
        reservation,
        check,
        limit,
    };
    let outcome = reader.read(body, limits).await;
    let Reader {
        buffer,
        whole,
        reservation,
        check,
        ..
    } = reader;
    let verified = outcome.and_then(|()| check.finish().map_err(BodyError::from));
    match verified {
        Ok(()) => Ok(whole.unwrap_or_else(|| Bytes::from(buffer))),
        Err(err) => {
            // The refused body goes before its reservation, so the budget never
            // under-counts what is held.
            drop((buffer, whole));
            drop(reservation);
            Err(err)
        }
    }
}

struct Reader<C> {
    buffer: Vec<u8>,
    /// The buffer's first capacity (the reservation's first size), allocated when the first
    /// byte is copied.
    initial: usize,
    /// The body when it came as one piece of the announced length: kept as it is rather than
    /// copied (the usual case once the connection's read buffer has grown).
    whole: Option<Bytes>,
    declared: Option<usize>,
    reservation: Reservation,
    check: C,
    limit: usize,
}

impl<C: BodyCheck> Reader<C> {
    async fn read(&mut self, body: Body, limits: &RequestLimits) -> Result<(), BodyError> {
        let started = Instant::now();
        let hard_deadline = started + limits.body_timeout;
        let mut stream = body.into_data_stream();
        loop {
            let rate_deadline = rate_deadline(started, self.received(), limits);
            let deadline = rate_deadline.min(hard_deadline);
            let next = match timeout_at(deadline, stream.next()).await {
                Ok(next) => next,
                Err(_) if rate_deadline < hard_deadline => {
                    return Err(BodyError::TooSlow {
                        rate: limits.body_min_rate,
                    });
                }
                Err(_) => return Err(BodyError::TimedOut),
            };
            match next {
                None => return Ok(()),
                Some(Err(_)) => return Err(BodyError::Incomplete),
                Some(Ok(piece)) => self.take(piece).await?,
            }
        }
    }

    /// Bytes received so far.
    fn received(&self) -> usize {
        self.buffer.len() + self.whole.as_ref().map_or(0, Bytes::len)
    }

    /// Keeps `piece`: as the whole body when it is all of the announced body, otherwise
    /// appended to the buffer.
    async fn take(&mut self, piece: Bytes) -> Result<(), BodyError> {
        let first = self.buffer.is_empty() && self.whole.is_none();
        if first && Some(piece.len()) == self.declared && piece.len() <= self.limit {
            self.cover(piece.len())?;
            self.check.update(&piece);
            self.whole = Some(piece);
            return Ok(());
        }
        if let Some(whole) = self.whole.take() {
            // More than announced (hashed already); the length check decides.
            self.append(&whole).await?;
        }
        self.append(&piece).await?;
        self.check.update(&piece);
        Ok(())
    }

    /// Appends `piece` to the buffer, growing it (and its reservation) first when needed.
    async fn append(&mut self, piece: &[u8]) -> Result<(), BodyError> {
        if self.buffer.capacity() == 0 {
            self.buffer.reserve_exact(self.initial);
        }
        let needed = self.buffer.len().saturating_add(piece.len());
        if needed > self.limit {
            return Err(BodyError::TooLarge { limit: self.limit });
        }
        if needed > self.buffer.capacity() {
            // Grow by doubling up to the announced length (at most twice what arrived, so
            // holding room costs a peer sending half of it), or in steps when no length was
            // announced; the room is reserved before it is allocated.
            let step = match self.declared {
                Some(declared) => self.buffer.capacity().saturating_mul(2).min(declared),
                None => self.buffer.capacity().saturating_add(CHUNKED_STEP),
            };
            let capacity = needed.max(step).min(self.limit);
            self.cover(capacity)?;
            self.buffer
                .reserve_exact(capacity.saturating_sub(self.buffer.len()));
        }
        self.buffer.extend_from_slice(piece);
        Ok(())
    }

    /// Makes the reservation cover `bytes`, from room free now ([`Reservation::grow`]).
    fn cover(&mut self, bytes: usize) -> Result<(), BodyError> {
        let more = bytes.saturating_sub(self.reservation.bytes());
        if self.reservation.grow(more) {
            Ok(())
        } else {
            Err(BodyError::Busy)
        }
    }
}

/// When the next bytes must have arrived: after the grace time, the body must keep an
/// average of at least the minimum rate from its start.
fn rate_deadline(started: Instant, received: usize, limits: &RequestLimits) -> Instant {
    let rate = limits.body_min_rate.max(1);
    let earned_millis = u64::try_from(received)
        .unwrap_or(u64::MAX)
        .saturating_mul(1000)
        / rate;
    started + limits.body_rate_grace + std::time::Duration::from_millis(earned_millis)
}

#[cfg(test)]
mod tests;
