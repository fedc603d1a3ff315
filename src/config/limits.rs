//! Hard limits of a review (`max_cost`, `max_tokens`, `timeout`) and model prices
//! (`[pricing."MODEL"]`), from flags (clap applies `REDLINE_MAX_*` / `REDLINE_TIMEOUT`)
//! over `.redline.toml`, and the ceilings `redline serve` puts on a repository's limits.
//!
//! Invariants: every limit that resolves is positive and finite; every price is
//! finite and not negative; a bad value is an error naming its flag or key.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{ConfigError, FileConfig};
use crate::agent::AgentConfig;
use crate::agent::budget::ReviewLimits;
use crate::llm::pricing::{Price, PriceTable};

/// The limit flags of a command (values as typed; clap has applied the environment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitFlags {
    /// `--max-cost` / `REDLINE_MAX_COST`.
    pub max_cost: Option<String>,
    /// `--max-tokens` / `REDLINE_MAX_TOKENS`.
    pub max_tokens: Option<String>,
    /// `--timeout` / `REDLINE_TIMEOUT`.
    pub timeout: Option<String>,
}

/// What `redline serve` allows a repository at most; `None` is no ceiling.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LimitCeilings {
    /// `--max-cost-ceiling`: USD per review.
    pub max_cost_usd: Option<f64>,
    /// `--timeout-ceiling`: wall time per review.
    pub timeout: Option<Duration>,
    /// `--max-tokens-ceiling`: prompt + completion tokens per review.
    pub max_tokens: Option<u64>,
}

/// The cost ceiling of `redline serve` per review when `--max-cost-ceiling` is not
/// given and the model has a built-in price, in USD.
pub const DEFAULT_COST_CEILING_USD: f64 = 2.0;

/// The token ceiling of `redline serve` per review when `--max-tokens-ceiling` is not
/// given and the model has no built-in price (so no cost ceiling can be kept).
pub const DEFAULT_TOKEN_CEILING: u64 = 2_000_000;

impl LimitCeilings {
    /// These ceilings with `serve`'s defaults where none was given: a cost ceiling
    /// for a model with a price (`priced`), else a token ceiling. A review of the
    /// App is paid by its operator and shaped by a pull request's author, so it is
    /// never unbounded by default.
    pub(crate) fn with_defaults(self, priced: bool) -> Self {
        LimitCeilings {
            max_cost_usd: self
                .max_cost_usd
                .or(priced.then_some(DEFAULT_COST_CEILING_USD)),
            max_tokens: self
                .max_tokens
                .or((!priced).then_some(DEFAULT_TOKEN_CEILING)),
            timeout: self.timeout,
        }
    }
}

/// The review's limits: flags (and env) over the file; none by default.
pub(crate) fn resolve_limits(
    flags: &LimitFlags,
    file: &FileConfig,
) -> Result<ReviewLimits, ConfigError> {
    let max_cost_usd = match (&flags.max_cost, &file.max_cost) {
        (Some(text), _) => Some(parse_cost(text).map_err(bad("--max-cost (REDLINE_MAX_COST)"))?),
        (None, Some(value)) => Some(cost_value(value).map_err(bad("max_cost"))?),
        (None, None) => None,
    };
    let max_tokens = match (&flags.max_tokens, &file.max_tokens) {
        (Some(text), _) => {
            Some(parse_tokens(text).map_err(bad("--max-tokens (REDLINE_MAX_TOKENS)"))?)
        }
        (None, Some(value)) => Some(tokens_value(value).map_err(bad("max_tokens"))?),
        (None, None) => None,
    };
    let timeout = match (&flags.timeout, &file.timeout) {
        (Some(text), _) => Some(parse_duration(text).map_err(bad("--timeout (REDLINE_TIMEOUT)"))?),
        (None, Some(value)) => Some(duration_value(value).map_err(bad("timeout"))?),
        (None, None) => None,
    };
    Ok(ReviewLimits {
        max_cost_usd,
        max_tokens,
        timeout,
    })
}

/// The limits a repository asked for, bounded by the server's ceilings: the smaller
/// wins, and with no repository value the ceiling applies.
pub(crate) fn apply_ceilings(requested: ReviewLimits, ceilings: &LimitCeilings) -> ReviewLimits {
    fn smaller<T: PartialOrd + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b < a { b } else { a }),
            (a, b) => a.or(b),
        }
    }
    ReviewLimits {
        max_cost_usd: smaller(requested.max_cost_usd, ceilings.max_cost_usd),
        max_tokens: smaller(requested.max_tokens, ceilings.max_tokens),
        timeout: smaller(requested.timeout, ceilings.timeout),
    }
}

/// The limits of a review by `redline serve`: the repository's config bounded by the
/// server's ceilings. `price` must be the built-in table's: a repository's `[pricing]`
/// is not used there, so it cannot lower the price its ceiling is kept at.
pub(crate) fn repository_limits(
    file: &FileConfig,
    ceilings: &LimitCeilings,
    price: Option<Price>,
    model: &str,
) -> Result<ReviewLimits, ConfigError> {
    let limits = apply_ceilings(resolve_limits(&LimitFlags::default(), file)?, ceilings);
    check_priced(&limits, price, model)?;
    Ok(limits)
}

/// A cost limit can only be kept at a known price: an error naming the fix otherwise.
pub(crate) fn check_priced(
    limits: &ReviewLimits,
    price: Option<Price>,
    model: &str,
) -> Result<(), ConfigError> {
    if limits.max_cost_usd.is_some() && price.is_none() {
        return Err(ConfigError::BadValue {
            key: "max_cost".into(),
            message: format!(
                "the price of model `{model}` is unknown; add [pricing.\"{model}\"] with `input` and `output` (USD per million tokens) to the config"
            ),
        });
    }
    Ok(())
}

/// Sets an agent's price (built-in table with the file's overrides) and its limits
/// (flags over the file), rejecting a cost limit without a price. Used by `review` and `action`.
pub(crate) fn apply_to_agent(
    agent: &mut AgentConfig,
    flags: &LimitFlags,
    file: &FileConfig,
) -> Result<(), ConfigError> {
    let table = price_table(file)?;
    agent.price = table.lookup(&agent.model);
    agent.review_limits = resolve_limits(flags, file)?;
    check_priced(&agent.review_limits, agent.price, &agent.model)?;
    let verification = &mut agent.verification;
    verification.price = match &verification.model {
        Some(model) => table.lookup(model),
        None => agent.price,
    };
    match (&verification.model, verification.enabled) {
        (Some(model), true) => check_priced(&agent.review_limits, verification.price, model),
        _ => Ok(()),
    }
}

/// The price table: the built-in one with the file's `[pricing."MODEL"]` entries.
/// `input` and `output` are required; `cached_input` and `cache_write` default to `input`.
pub(crate) fn price_table(file: &FileConfig) -> Result<PriceTable, ConfigError> {
    let mut overrides = BTreeMap::new();
    for (model, entry) in &file.pricing {
        let key = |field: &str| format!("pricing.\"{model}\".{field}");
        if let Some(unknown) = entry
            .keys()
            .find(|k| !["input", "cached_input", "cache_write", "output"].contains(&k.as_str()))
        {
            return Err(ConfigError::BadValue {
                key: key(unknown),
                message: "unknown key (expected input, cached_input, cache_write, output)".into(),
            });
        }
        let field = |name: &str| -> Result<Option<f64>, ConfigError> {
            entry
                .get(name)
                .map(|v| price_value(v).map_err(bad(&key(name))))
                .transpose()
        };
        let required = |name: &str| -> Result<f64, ConfigError> {
            field(name)?.ok_or_else(|| ConfigError::BadValue {
                key: key(name),
                message: "missing (USD per million tokens)".into(),
            })
        };
        let input = required("input")?;
        let output = required("output")?;
        let price = Price {
            input,
            cached_input: field("cached_input")?.unwrap_or(input),
            cache_write: field("cache_write")?.unwrap_or(input),
            output,
        };
        overrides.insert(model.clone(), price);
    }
    Ok(PriceTable::with_overrides(overrides))
}

fn bad(key: &str) -> impl Fn(LimitValueError) -> ConfigError + '_ {
    move |error| ConfigError::BadValue {
        key: key.to_string(),
        message: error.to_string(),
    }
}

/// Why a limit or price value is refused; the message names the value, the caller its key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum LimitValueError {
    /// A cost that is not a number.
    #[error("`{0}` is not a number of USD")]
    NotUsd(String),
    /// A cost that is zero, negative or not finite.
    #[error("{0} must be a positive number")]
    NotPositive(f64),
    /// A config value of the wrong TOML type.
    #[error("expected {expected}, found {found}")]
    WrongType {
        /// What the key takes.
        expected: &'static str,
        /// The TOML type found.
        found: &'static str,
    },
    /// A price that is negative or not finite.
    #[error("{0} must be a number of USD per million tokens, 0 or more")]
    BadPrice(f64),
    /// A token count of zero or less.
    #[error("{0} must be a positive number of tokens")]
    TokensNotPositive(i64),
    /// A token count that is not a whole number.
    #[error("`{0}` is not a positive whole number of tokens")]
    NotTokens(String),
    /// A duration that does not parse.
    #[error("`{0}` is not a duration (e.g. 90s, 10m, 1h30m)")]
    NotDuration(String),
    /// A duration of zero.
    #[error("`{0}` must be longer than 0")]
    ZeroDuration(String),
    /// A duration past [`MAX_DURATION`].
    #[error("`{0}` is longer than the longest duration accepted (366d)")]
    TooLongDuration(String),
    /// A number of seconds of zero or less.
    #[error("{0} must be a positive number of seconds")]
    SecondsNotPositive(i64),
}

/// A USD amount: a positive, finite number.
pub(crate) fn parse_cost(text: &str) -> Result<f64, LimitValueError> {
    let trimmed = text.trim().trim_start_matches('$');
    let value: f64 = trimmed
        .parse()
        .map_err(|_| LimitValueError::NotUsd(text.to_string()))?;
    positive_finite(value)
}

fn positive_finite(value: f64) -> Result<f64, LimitValueError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(LimitValueError::NotPositive(value))
    }
}

fn cost_value(value: &toml::Value) -> Result<f64, LimitValueError> {
    match value {
        toml::Value::Float(f) => positive_finite(*f),
        toml::Value::Integer(i) => positive_finite(*i as f64),
        other => Err(LimitValueError::WrongType {
            expected: "a number of USD",
            found: other.type_str(),
        }),
    }
}

fn price_value(value: &toml::Value) -> Result<f64, LimitValueError> {
    let number = match value {
        toml::Value::Float(f) => *f,
        toml::Value::Integer(i) => *i as f64,
        other => {
            return Err(LimitValueError::WrongType {
                expected: "a number",
                found: other.type_str(),
            });
        }
    };
    if number.is_finite() && number >= 0.0 {
        Ok(number)
    } else {
        Err(LimitValueError::BadPrice(number))
    }
}

/// A token count: a positive integer.
pub(crate) fn parse_tokens(text: &str) -> Result<u64, LimitValueError> {
    match text.trim().replace('_', "").parse::<u64>() {
        Ok(0) => Err(LimitValueError::TokensNotPositive(0)),
        Ok(n) => Ok(n),
        Err(_) => Err(LimitValueError::NotTokens(text.to_string())),
    }
}

fn tokens_value(value: &toml::Value) -> Result<u64, LimitValueError> {
    match value {
        toml::Value::Integer(i) if *i > 0 => Ok(*i as u64),
        toml::Value::Integer(i) => Err(LimitValueError::TokensNotPositive(*i)),
        other => Err(LimitValueError::WrongType {
            expected: "a whole number",
            found: other.type_str(),
        }),
    }
}

/// The longest duration any flag or key takes: a longer one is surely a typo, and
/// would overflow the clocks it is added to.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(366 * 86_400);

/// A duration: `90s`, `10m`, `1h`, `1h30m`, `500ms`, `7d`, or a bare number of seconds;
/// more than 0 and at most [`MAX_DURATION`]. The one duration syntax of every flag and config key.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, LimitValueError> {
    let malformed = || LimitValueError::NotDuration(text.to_string());
    let trimmed = text.trim();
    if let Ok(seconds) = trimmed.parse::<u64>() {
        return nonzero(Duration::from_secs(seconds), text);
    }
    let mut total = Duration::ZERO;
    let mut rest = trimmed;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(malformed());
        }
        let number: u64 = rest[..digits].parse().map_err(|_| malformed())?;
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let part = match &rest[..unit] {
            "ms" => Duration::from_millis(number),
            "s" => Duration::from_secs(number),
            "m" => Duration::from_secs(number.saturating_mul(60)),
            "h" => Duration::from_secs(number.saturating_mul(3600)),
            "d" => Duration::from_secs(number.saturating_mul(86_400)),
            _ => return Err(malformed()),
        };
        total = total.saturating_add(part);
        rest = &rest[unit..];
    }
    nonzero(total, text)
}

fn nonzero(duration: Duration, text: &str) -> Result<Duration, LimitValueError> {
    if duration.is_zero() {
        Err(LimitValueError::ZeroDuration(text.to_string()))
    } else if duration > MAX_DURATION {
        Err(LimitValueError::TooLongDuration(text.to_string()))
    } else {
        Ok(duration)
    }
}

fn duration_value(value: &toml::Value) -> Result<Duration, LimitValueError> {
    match value {
        toml::Value::String(s) => parse_duration(s),
        toml::Value::Integer(i) if *i > 0 => {
            nonzero(Duration::from_secs(*i as u64), &i.to_string())
        }
        toml::Value::Integer(i) => Err(LimitValueError::SecondsNotPositive(*i)),
        other => Err(LimitValueError::WrongType {
            expected: "a duration such as \"10m\"",
            found: other.type_str(),
        }),
    }
}

#[cfg(test)]
#[path = "limits_tests.rs"]
mod tests;
