//! How long a model call may wait in each phase (connection, first byte, a silent stream)
//! before it fails as [`LlmError::Stalled`] and is retried, with the defaults and the
//! messages that name the setting to change.

use std::time::Duration;

#[cfg(doc)]
use super::LlmError;

/// Default time one attempt (request plus whole stream) may take: a long review reply
/// from a hosted model takes a minute or two; slow local models may need more
/// (`request_timeout`).
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// Default time to set up a connection (TCP and TLS). A handshake takes
/// milliseconds; 10 s leaves room for slow DNS and congested links while a
/// dead or black-holed host fails fast.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Default time from sending the request to the first bytes of the reply
/// stream. Hosted APIs answer within seconds; prompt processing of a long
/// review context on a local server, or a reasoning model thinking before its
/// first token, can take tens of seconds. 90 s covers those while a server
/// that accepts and never answers costs at most 90 s an attempt.
const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(90);

/// Default longest silence between two chunks of a stream once it has started.
/// Streaming servers send tokens (or Anthropic's `ping`s) every few hundred
/// milliseconds; 60 s tolerates a loaded local server pausing between batches.
const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a call was when it went silent too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stall {
    /// Setting up the connection.
    Connect,
    /// Waiting for the response headers or the first bytes of the stream.
    FirstByte,
    /// Waiting for more of a stream that had started.
    StreamIdle,
}

impl Stall {
    /// The configuration key of the timeout for this phase.
    pub(crate) fn config_key(self) -> &'static str {
        match self {
            Stall::Connect => "connect_timeout",
            Stall::FirstByte => "first_byte_timeout",
            Stall::StreamIdle => "stream_idle_timeout",
        }
    }

    /// The error message for a wait of `after` that ran out in this phase; it
    /// names the setting that changes the wait.
    pub(crate) fn describe(self, after: Duration) -> String {
        let secs = after.as_secs_f64();
        let key = self.config_key();
        match self {
            Stall::Connect => {
                format!("could not connect to the model API within {secs}s (`{key}`)")
            }
            Stall::FirstByte => {
                format!("the model API accepted the request but sent nothing for {secs}s (`{key}`)")
            }
            Stall::StreamIdle => {
                format!("the model's response stream went silent for {secs}s (`{key}`)")
            }
        }
    }
}

/// How long a call may wait in each phase before it fails with
/// [`LlmError::Stalled`] (and is retried).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallTimeouts {
    /// Connection setup (TCP and TLS).
    pub connect: Duration,
    /// From sending the request to the first bytes of the reply stream (headers included).
    pub first_byte: Duration,
    /// Longest gap between two chunks of a started stream.
    pub stream_idle: Duration,
    /// Longest time one attempt may take, request and whole stream.
    pub request: Duration,
}

impl Default for CallTimeouts {
    fn default() -> Self {
        CallTimeouts {
            connect: DEFAULT_CONNECT_TIMEOUT,
            first_byte: DEFAULT_FIRST_BYTE_TIMEOUT,
            stream_idle: DEFAULT_IDLE_TIMEOUT,
            request: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}
