//! Limits that bound what an unauthenticated peer can make the server hold: connections,
//! time per connection phase, and bytes buffered before a delivery's signature is known.
//!
//! Invariants: every limit is finite (a zero duration or rate from a flag is rejected at
//! parse time rather than meaning "unlimited"); the body limit in effect
//! ([`RequestLimits::effective_max_body`]) never exceeds [`WEBHOOK_BODY_LIMIT`] nor the
//! unverified budget, so any body the server starts reading can be buffered.

use std::time::Duration;

use super::WEBHOOK_BODY_LIMIT;

/// Per-connection limits applied by the accept loop ([`crate::server::serve_with_limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// From accept (or from the first byte of a later request) to the end of the request
    /// head; a peer that is slower is disconnected.
    pub header_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request, or take to read a
    /// response, before it is closed.
    pub idle_timeout: Duration,
    /// Connections served at once; further peers wait in the listen backlog until one closes.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_timeout: Duration::from_secs(10),
            // Longer than the 60 s idle timeout of common load balancers, so that the
            // proxy, not the server, closes an idle keep-alive connection first.
            idle_timeout: Duration::from_secs(75),
            max_connections: 512,
        }
    }
}

/// Per-request limits applied by the webhook handler while it reads a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    /// Largest body accepted (at most [`WEBHOOK_BODY_LIMIT`]).
    pub max_body: usize,
    /// Slowest accepted body transfer in bytes per second, averaged from the start of the
    /// body; checked once [`RequestLimits::body_rate_grace`] has passed.
    pub body_min_rate: u64,
    /// Time a body may take before its rate is checked (TCP slow start, a first stall).
    pub body_rate_grace: Duration,
    /// Longest a body may take in total, however fast it trickles.
    pub body_timeout: Duration,
    /// Bytes all requests whose signature is not verified yet may buffer at once.
    pub max_unverified_bytes: usize,
    /// How long a request waits for room in that budget before it is answered 503.
    pub unverified_wait: Duration,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits {
            max_body: WEBHOOK_BODY_LIMIT,
            // GitHub gives up on a delivery after 10 s, so a 25 MB payload arrives at
            // megabytes per second; 64 KiB/s only refuses trickles.
            body_min_rate: 64 * 1024,
            body_rate_grace: Duration::from_secs(2),
            body_timeout: Duration::from_secs(60),
            // Two full-size payloads at once.
            max_unverified_bytes: 64 * 1024 * 1024,
            unverified_wait: Duration::from_secs(5),
        }
    }
}

impl RequestLimits {
    /// The largest body this configuration can read: the body limit, capped by the budget.
    pub(crate) fn effective_max_body(&self) -> usize {
        self.max_body
            .min(WEBHOOK_BODY_LIMIT)
            .min(self.max_unverified_bytes)
    }
}

/// File descriptors kept free for everything but client connections (database, git,
/// model and GitHub connections, files).
const RESERVED_DESCRIPTORS: u64 = 128;

/// A warning when the process's soft limit of open files (read from `limits_text`, the
/// contents of `/proc/self/limits`) leaves fewer than [`RESERVED_DESCRIPTORS`] beyond
/// `max_connections`: the cap would then not prevent "too many open files".
pub(crate) fn descriptor_warning(limits_text: &str, max_connections: usize) -> Option<String> {
    let soft: u64 = limits_text
        .lines()
        .find_map(|line| line.strip_prefix("Max open files"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let needed = u64::try_from(max_connections)
        .unwrap_or(u64::MAX)
        .saturating_add(RESERVED_DESCRIPTORS);
    (soft < needed).then(|| {
        format!(
            "the open-file limit ({soft}) leaves fewer than {RESERVED_DESCRIPTORS} descriptors \
             beyond --max-connections {max_connections}; raise it (ulimit -n) or lower \
             --max-connections"
        )
    })
}

/// Why a limit flag's value is refused (clap prints it after the flag's name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LimitFlagError {
    /// Not a number followed by a duration unit.
    #[error("`{0}` is not a duration (examples: 500ms, 10s, 5m, 2h, 7d)")]
    NotADuration(String),
    /// A duration of zero.
    #[error("`{0}`: the duration must be positive")]
    ZeroDuration(String),
    /// A duration past the longest accepted.
    #[error("`{0}` is longer than the longest duration accepted (366d)")]
    TooLongDuration(String),
    /// Not a number followed by a size unit.
    #[error("`{0}` is not a size (examples: 65536, 64KiB, 64MiB)")]
    NotASize(String),
    /// A size unit that is not one of the binary multiples.
    #[error("unknown size unit `{unit}` in `{text}` (use KiB, MiB or GiB)")]
    SizeUnit {
        /// The unit as written.
        unit: String,
        /// The whole value.
        text: String,
    },
    /// More bytes than the type holds.
    #[error("`{0}` is too large")]
    TooLarge(String),
    /// A size of zero.
    #[error("`{0}`: the size must be positive")]
    ZeroSize(String),
    /// A count of zero.
    #[error("the count must be positive")]
    ZeroCount,
    /// Not a whole number.
    #[error("`{0}` is not a count")]
    NotACount(String),
}

/// Parses a duration such as `500ms`, `10s`, `5m`, `2h` or `7d` (a bare number is seconds),
/// with the syntax of every other duration ([`crate::config::limits::parse_duration`]).
/// Zero is refused: every limit must be finite and positive.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, LimitFlagError> {
    use crate::config::limits::LimitValueError;
    crate::config::limits::parse_duration(text).map_err(|e| match e {
        LimitValueError::ZeroDuration(_) => LimitFlagError::ZeroDuration(text.trim().to_string()),
        LimitValueError::TooLongDuration(_) => {
            LimitFlagError::TooLongDuration(text.trim().to_string())
        }
        _ => LimitFlagError::NotADuration(text.trim().to_string()),
    })
}

/// Parses a byte count such as `65536`, `64KiB`, `64MiB`, `1GiB` (also `K`/`KB`, `M`/`MB`,
/// `G`/`GB`, all binary multiples). Zero is refused.
pub(crate) fn parse_bytes(text: &str) -> Result<u64, LimitFlagError> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: u64 = number
        .parse()
        .map_err(|_| LimitFlagError::NotASize(text.to_string()))?;
    let multiple: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => {
            return Err(LimitFlagError::SizeUnit {
                unit: other.to_string(),
                text: text.to_string(),
            });
        }
    };
    let bytes = value
        .checked_mul(multiple)
        .ok_or_else(|| LimitFlagError::TooLarge(text.to_string()))?;
    if bytes == 0 {
        return Err(LimitFlagError::ZeroSize(text.to_string()));
    }
    Ok(bytes)
}

/// Parses a transfer rate: a size per second, such as `64KiB/s` (the `/s` is optional).
pub(crate) fn parse_rate(text: &str) -> Result<u64, LimitFlagError> {
    let trimmed = text.trim();
    parse_bytes(trimmed.strip_suffix("/s").unwrap_or(trimmed))
}

/// Parses a byte count that must fit in memory (`usize`).
pub(crate) fn parse_size(text: &str) -> Result<usize, LimitFlagError> {
    let bytes = parse_bytes(text)?;
    usize::try_from(bytes).map_err(|_| LimitFlagError::TooLarge(text.to_string()))
}

/// Parses a positive count.
pub(crate) fn parse_count(text: &str) -> Result<usize, LimitFlagError> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err(LimitFlagError::ZeroCount),
        Ok(count) => Ok(count),
        Err(_) => Err(LimitFlagError::NotACount(text.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_and_refuse_zero_and_garbage() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        for bad in ["0s", "", "s", "10x", "-1s", "1.5s", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_and_rates_take_binary_units() {
        assert_eq!(parse_bytes("65536"), Ok(65_536));
        assert_eq!(parse_bytes("64KiB"), Ok(65_536));
        assert_eq!(parse_bytes("64k"), Ok(65_536));
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("1GB"), Ok(1 << 30));
        assert_eq!(parse_rate("64KiB/s"), Ok(65_536));
        assert_eq!(parse_rate("100"), Ok(100));
        for bad in ["0", "0KiB", "", "KiB", "10 parsecs", "1.5MiB"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_count("3"), Ok(3));
        assert!(parse_count("0").is_err() && parse_count("x").is_err());
    }

    #[test]
    fn a_low_open_file_limit_is_reported() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1024                 524288               files\n";
        let warning = descriptor_warning(limits, 1000).expect("1024 < 1000 + 128");
        assert!(warning.contains("1024") && warning.contains("--max-connections 1000"));
        assert_eq!(descriptor_warning(limits, 512), None);
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(descriptor_warning(unlimited, 100_000), None);
        assert_eq!(descriptor_warning("", 100_000), None);
    }

    #[test]
    fn the_body_limit_never_exceeds_the_unverified_budget() {
        let limits = RequestLimits {
            max_unverified_bytes: 1024,
            ..RequestLimits::default()
        };
        assert_eq!(limits.effective_max_body(), 1024);
        assert_eq!(
            RequestLimits::default().effective_max_body(),
            WEBHOOK_BODY_LIMIT
        );
    }
}
