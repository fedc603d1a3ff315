//! The model a run talks to: its provider, name, endpoint and key (flags and the
//! environment over the files over the defaults), and how long a call may stay silent.
//!
//! Invariant: the API key is read from the environment only, never from a file.

use std::net::IpAddr;

use super::{ConfigError, FileConfig, limits};
use crate::llm::{CallTimeouts, Provider, Secret};

/// Model settings from flags (clap has already applied the `REDLINE_*` variables to them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelFlags {
    /// `--provider` / `REDLINE_PROVIDER`.
    pub provider: Option<String>,
    /// `--model` / `REDLINE_MODEL`.
    pub model: Option<String>,
    /// `--base-url` / `REDLINE_BASE_URL`.
    pub base_url: Option<String>,
}

/// The model to talk to, fully resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSettings {
    /// Which wire protocol.
    pub provider: Provider,
    /// Model name.
    pub model: String,
    /// API root.
    pub base_url: String,
    /// API key, when one is needed.
    pub api_key: Option<Secret>,
    /// How long each phase of a model call may stay silent.
    pub timeouts: CallTimeouts,
}

/// Default model per provider.
pub(crate) fn default_model(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenAi => "gpt-4.1-mini",
        Provider::Anthropic => "claude-sonnet-4-5",
    }
}

/// Resolves the model settings: flags (and env, through clap) > file > defaults;
/// the key from `REDLINE_API_KEY`, else the provider's own variable.
pub fn resolve_model(
    flags: &ModelFlags,
    file: &FileConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ModelSettings, ConfigError> {
    let mut settings = resolve_model_choice(flags, file)?;
    let provider_var = provider_key_var(settings.provider);
    settings.api_key = api_key_var(settings.provider, env)
        .and_then(env)
        .map(Secret::new);
    let local = url::Url::parse(&settings.base_url).is_ok_and(|url| is_local_url(&url));
    if settings.api_key.is_none() && !local {
        let hint = match settings.provider {
            Provider::OpenAi => {
                ", or point --base-url / REDLINE_BASE_URL at a local OpenAI-compatible server such as Ollama (http://localhost:11434/v1), vLLM or llama.cpp"
            }
            Provider::Anthropic => " to an Anthropic API key",
        };
        return Err(ConfigError::MissingApiKey {
            provider: settings.provider.to_string(),
            provider_var: provider_var.into(),
            hint: hint.into(),
        });
    }
    Ok(settings)
}

/// The provider's own API key variable.
pub(crate) fn provider_key_var(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenAi => "OPENAI_API_KEY",
        Provider::Anthropic => "ANTHROPIC_API_KEY",
    }
}

/// The variable the API key is read from: `REDLINE_API_KEY` when it is set, else the
/// provider's own, when that is set (not blank); `None` when neither is.
pub(crate) fn api_key_var(
    provider: Provider,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<&'static str> {
    // `REDLINE_API_KEY` set (even blank) shadows the provider's variable, as it always has.
    let chosen = match env("REDLINE_API_KEY") {
        Some(_) => "REDLINE_API_KEY",
        None => provider_key_var(provider),
    };
    env(chosen).filter(|k| !k.trim().is_empty()).map(|_| chosen)
}

/// The provider, model, endpoint and timeouts the flags and file choose, checked, without
/// a key: what a command that calls no model (`redline context`) needs to know.
pub(crate) fn resolve_model_choice(
    flags: &ModelFlags,
    file: &FileConfig,
) -> Result<ModelSettings, ConfigError> {
    let provider_name = flags
        .provider
        .clone()
        .or_else(|| file.provider.clone())
        .unwrap_or_else(|| "openai".into());
    let provider: Provider = provider_name
        .parse()
        .map_err(|e: String| ConfigError::BadValue {
            key: "provider".into(),
            message: e,
        })?;
    let model = flags
        .model
        .clone()
        .or_else(|| file.model.clone())
        .unwrap_or_else(|| default_model(provider).into());
    let base_url = flags
        .base_url
        .clone()
        .or_else(|| file.base_url.clone())
        .unwrap_or_else(|| provider.default_base_url().to_string());
    let parsed = url::Url::parse(&base_url).map_err(|e| ConfigError::BadValue {
        key: "base_url".into(),
        message: format!(
            "`{}` is not a URL: {e}",
            crate::text::urls::masked(&base_url)
        ),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ConfigError::BadValue {
            key: "base_url".into(),
            message: "only http and https URLs".into(),
        });
    }
    Ok(ModelSettings {
        provider,
        model,
        base_url: base_url.trim_end_matches('/').to_string(),
        api_key: None,
        timeouts: resolve_timeouts(file)?,
    })
}

/// The model call timeouts: the file's `connect_timeout`, `first_byte_timeout`,
/// `stream_idle_timeout` and `request_timeout`, else the defaults.
pub(crate) fn resolve_timeouts(file: &FileConfig) -> Result<CallTimeouts, ConfigError> {
    let defaults = CallTimeouts::default();
    let pick = |key: &str, value: &Option<String>, default| match value {
        Some(text) => parse_timeout(key, text),
        None => Ok(default),
    };
    Ok(CallTimeouts {
        connect: pick("connect_timeout", &file.connect_timeout, defaults.connect)?,
        first_byte: pick(
            "first_byte_timeout",
            &file.first_byte_timeout,
            defaults.first_byte,
        )?,
        stream_idle: pick(
            "stream_idle_timeout",
            &file.stream_idle_timeout,
            defaults.stream_idle,
        )?,
        request: pick("request_timeout", &file.request_timeout, defaults.request)?,
    })
}

/// Longest timeout accepted; a longer one is surely a typo.
const MAX_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

/// Parses a timeout such as `"30s"`, `"500ms"`, `"2m"` or `"45"` (seconds), with the
/// one duration syntax ([`limits::parse_duration`]), between 1 ms and one hour.
pub(crate) fn parse_timeout(key: &str, text: &str) -> Result<std::time::Duration, ConfigError> {
    let bad = |message: String| ConfigError::BadValue {
        key: key.to_string(),
        message,
    };
    let duration = limits::parse_duration(text).map_err(|e| bad(e.to_string()))?;
    if duration > MAX_TIMEOUT {
        return Err(bad(format!("`{text}` is not between 1ms and 1h")));
    }
    Ok(duration)
}

/// Whether a URL points at this machine or a private network, where local model
/// servers (Ollama, vLLM, llama.cpp) run without keys.
pub(crate) fn is_local_url(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => {
            d == "localhost" || d.ends_with(".localhost") || d.ends_with(".local")
        }
        Some(url::Host::Ipv4(ip)) => is_local_ip(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => is_local_ip(IpAddr::V6(ip)),
        None => false,
    }
}

fn is_local_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback() || v4.is_private() || v4.is_unspecified() || v4.is_link_local()
        }
        IpAddr::V6(v6) => v6.is_loopback() || v6.is_unspecified(),
    }
}
