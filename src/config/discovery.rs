//! Local model discovery: when `redline review` has no key and no endpoint, it looks
//! for an OpenAI-compatible server on this machine (Ollama, llama.cpp, LM Studio, vLLM
//! at their default ports) and uses the first that lists a model.
//!
//! Invariants:
//! - Discovery only runs when the user chose nothing: no API key in the environment,
//!   no `--base-url` / `REDLINE_BASE_URL` / `base_url` in the user's file, no
//!   `--provider` / `REDLINE_PROVIDER` / `provider`, and `REDLINE_NO_DISCOVERY` unset
//!   (or `0`). Otherwise the settings error is returned unchanged.
//! - Only `127.0.0.1` is probed, with `GET /v1/models` and no credentials, each probe
//!   bounded by [`PROBE_TIMEOUT`]; candidates are tried in their fixed order and the
//!   first that answers 200 with a model list wins (not the fastest).
//! - What was chosen is always said on stderr.
//!
//! The probes use blocking std sockets: they run once, before any other work of the
//! command, and this keeps the settings hook a plain function call.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::config::{self, ConfigError, FileConfig, ModelFlags, ModelSettings};

/// Longest a probe of one port may take (connect, request and answer).
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_millis(800);

/// Most bytes read from a probe's answer; a model list is far smaller.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Set (to anything but `0`) to turn discovery off.
pub(crate) const NO_DISCOVERY_VAR: &str = "REDLINE_NO_DISCOVERY";

/// Comma-separated ports of 127.0.0.1 to probe instead of [`DEFAULT_CANDIDATES`].
pub(crate) const PORTS_VAR: &str = "REDLINE_DISCOVERY_PORTS";

/// The servers looked for, in order: who listens there by default, and the port.
pub(crate) const DEFAULT_CANDIDATES: [(&str, u16); 4] = [
    ("Ollama", 11434),
    ("llama.cpp", 8080),
    ("LM Studio", 1234),
    ("vLLM", 8000),
];

/// A local server that answered, and the model to use on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// Whose default port it is (`Ollama's default port`, ...), or `port N` for other ports.
    pub server: String,
    /// The API root, `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    /// The configured model, else the first the server lists.
    pub model: String,
}

/// [`config::resolve_model`], falling back to a local model server as [`recover`] does;
/// when the endpoint is a local server, checks that it serves the model, chosen or
/// default ([`check_served`]), so a wrong name fails before the review starts.
pub(crate) fn resolve_or_discover(
    flags: &ModelFlags,
    file: &FileConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ModelSettings, ConfigError> {
    match config::resolve_model(flags, file, env) {
        Ok(settings) => {
            let chosen = flags.model.is_some() || file.model.is_some();
            check_served(&settings, chosen, PROBE_TIMEOUT)?;
            Ok(settings)
        }
        other => recover(other, flags, file, env),
    }
}

/// Model ids named at most in [`ConfigError::ModelNotServed`].
const MAX_LISTED_MODELS: usize = 20;

/// On a local OpenAI-compatible server (`http://localhost:…`), asks its `GET …/models`
/// whether it serves the model (`chosen` by the user, else the default): one that lists
/// models but not this one is an error naming the ones it has. A server that does not
/// answer with a list (or a remote endpoint, which is not asked) leaves the answer to the
/// model call.
fn check_served(
    settings: &ModelSettings,
    chosen: bool,
    timeout: Duration,
) -> Result<(), ConfigError> {
    if settings.provider != crate::llm::Provider::OpenAi {
        return Ok(());
    }
    let Ok(url) = url::Url::parse(&settings.base_url) else {
        return Ok(());
    };
    if url.scheme() != "http" || !config::is_local_url(&url) {
        return Ok(());
    }
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return Ok(());
    };
    let path = format!("{}/models", url.path().trim_end_matches('/'));
    let Some(listed) = list_models(host, port, &path, timeout) else {
        return Ok(());
    };
    if listed.is_empty() || listed.iter().any(|id| serves(id, &settings.model)) {
        return Ok(());
    }
    let mut served = listed
        .iter()
        .take(MAX_LISTED_MODELS)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if listed.len() > MAX_LISTED_MODELS {
        served.push_str(&format!(" and {} more", listed.len() - MAX_LISTED_MODELS));
    }
    Err(ConfigError::ModelNotServed {
        model: settings.model.clone(),
        chosen,
        base_url: crate::text::urls::masked(&settings.base_url),
        served,
    })
}

/// Whether the listed model `id` answers to `name`: the same, or the same up to Ollama's
/// default tag (`llama3` is `llama3:latest`, and the other way round).
fn serves(id: &str, name: &str) -> bool {
    let untagged = |text: &'_ str| text.strip_suffix(":latest").unwrap_or(text).to_string();
    id == name || untagged(id) == untagged(name)
}

/// The model ids `GET path` on `host:port` lists, trying each address the host resolves to.
fn list_models(host: &str, port: u16, path: &str, timeout: Duration) -> Option<Vec<String>> {
    use std::net::ToSocketAddrs;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (host, port)
        .to_socket_addrs()
        .ok()?
        .find_map(|addr| probe_at(addr, &format!("{host}:{port}"), path, timeout))
}

/// Falls back to a local server when `resolved` failed for want of a key and the user
/// chose no endpoint, provider or key; says on stderr which server and model it uses.
/// Any other outcome (success, other errors, discovery off, nothing found) is returned as is.
pub(crate) fn recover(
    resolved: Result<ModelSettings, ConfigError>,
    flags: &ModelFlags,
    file: &FileConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ModelSettings, ConfigError> {
    let error = match resolved {
        Err(error @ ConfigError::MissingApiKey { .. }) => error,
        other => return other,
    };
    if !allowed(flags, file, env) {
        return Err(error);
    }
    let configured = flags.model.clone().or_else(|| file.model.clone());
    let Some(found) = discover(&candidates(env), configured.as_deref(), PROBE_TIMEOUT) else {
        return Err(error);
    };
    let settings = config::resolve_model(
        &ModelFlags {
            provider: None,
            model: Some(found.model.clone()),
            base_url: Some(found.base_url.clone()),
        },
        file,
        env,
    )?;
    eprintln!(
        "note: no API key or base URL is set; using the local server at {} ({}) with model `{}` (set {NO_DISCOVERY_VAR}=1 to turn this off)",
        found.base_url, found.server, found.model
    );
    Ok(settings)
}

/// Whether the user left every choice of endpoint to discovery.
fn allowed(flags: &ModelFlags, file: &FileConfig, env: &dyn Fn(&str) -> Option<String>) -> bool {
    let set = |name: &str| env(name).is_some_and(|v| !v.trim().is_empty());
    let off = env(NO_DISCOVERY_VAR).is_some_and(|v| !v.trim().is_empty() && v.trim() != "0");
    !off && flags.base_url.is_none()
        && file.base_url.is_none()
        && flags.provider.is_none()
        && file.provider.is_none()
        && !["REDLINE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"]
            .iter()
            .any(|name| set(name))
}

/// The candidates: [`PORTS_VAR`]'s ports when set (unparsable entries are skipped),
/// else [`DEFAULT_CANDIDATES`].
pub(crate) fn candidates(env: &dyn Fn(&str) -> Option<String>) -> Vec<(String, u16)> {
    let named = |port: u16| {
        DEFAULT_CANDIDATES
            .iter()
            .find(|(_, p)| *p == port)
            .map(|(name, _)| format!("{name}'s default port"))
            .unwrap_or_else(|| format!("port {port}"))
    };
    match env(PORTS_VAR) {
        Some(list) if !list.trim().is_empty() => list
            .split(',')
            .filter_map(|p| p.trim().parse::<u16>().ok())
            .map(|port| (named(port), port))
            .collect(),
        _ => DEFAULT_CANDIDATES
            .iter()
            .map(|(name, port)| (format!("{name}'s default port"), *port))
            .collect(),
    }
}

/// The first candidate (in order) whose `GET /v1/models` answers 200 with a model list,
/// with the `configured` model or else the first model listed. A server that lists no
/// model is skipped unless a model is configured.
pub fn discover(
    candidates: &[(String, u16)],
    configured: Option<&str>,
    timeout: Duration,
) -> Option<Discovered> {
    candidates.iter().find_map(|(server, port)| {
        let listed = probe(*port, timeout)?;
        let model = configured
            .map(str::to_string)
            .or_else(|| listed.into_iter().next())?;
        Some(Discovered {
            server: server.clone(),
            base_url: format!("http://127.0.0.1:{port}/v1"),
            model,
        })
    })
}

/// The model ids a server on `127.0.0.1:port` lists, or `None` when it does not answer
/// 200 with an OpenAI-style list within `timeout`.
fn probe(port: u16, timeout: Duration) -> Option<Vec<String>> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    probe_at(addr, &format!("127.0.0.1:{port}"), "/v1/models", timeout)
}

/// The model ids `GET path` at `addr` lists (`Host: host`), or `None` when it does not
/// answer 200 with an OpenAI-style list within `timeout`.
fn probe_at(addr: SocketAddr, host: &str, path: &str, timeout: Duration) -> Option<Vec<String>> {
    let deadline = Instant::now() + timeout;
    let mut stream = TcpStream::connect_timeout(&addr, timeout).ok()?;
    // HTTP/1.0 with `Connection: close`: the answer is the rest of the stream, never chunked.
    let request = format!(
        "GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    );
    stream.set_write_timeout(Some(remaining(deadline)?)).ok()?;
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        stream.set_read_timeout(Some(remaining(deadline)?)).ok()?;
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                answer.extend_from_slice(&buffer[..n]);
                if answer.len() > MAX_ANSWER_BYTES {
                    return None;
                }
            }
            Err(_) => return None,
        }
    }
    parse_answer(&answer)
}

fn remaining(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

/// The model ids of an HTTP answer: status 200 and a JSON body with `data[].id`.
fn parse_answer(answer: &[u8]) -> Option<Vec<String>> {
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&answer[..split]).ok()?;
    let status = head.lines().next()?.split_whitespace().nth(1)?;
    if status != "200" {
        return None;
    }
    let body: Value = serde_json::from_slice(&answer[split + 4..]).ok()?;
    let ids = body
        .get("data")?
        .as_array()?
        .iter()
        .filter_map(|model| model.get("id")?.as_str())
        .map(printable)
        .filter(|id| !id.trim().is_empty())
        .collect();
    Some(ids)
}

/// Longest model id kept from a local server's answer, in characters.
const MAX_MODEL_ID_CHARS: usize = 200;

/// A model id a local server named, as Redline prints and uses it: without control
/// characters (terminal escapes, line breaks that would fake output) or invisible
/// direction and width marks, and bounded.
fn printable(id: &str) -> String {
    id.chars()
        .filter(|c| {
            !c.is_control()
                && !matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
        })
        .take(MAX_MODEL_ID_CHARS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// Ollama lists `llama3:latest` and answers to `llama3`: both names are served.
    #[test]
    fn a_name_without_ollama_s_default_tag_is_served() {
        assert!(serves("llama3:latest", "llama3"));
        assert!(serves("llama3", "llama3:latest"));
        assert!(serves("qwen2.5-coder:7b", "qwen2.5-coder:7b"));
        assert!(!serves("qwen2.5-coder:7b", "qwen2.5-coder"));
        assert!(!serves("llama3:latest", "llama3.1"));
    }

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        }
    }

    /// A one-shot server on a free port answering every connection with `answer`.
    fn serve(answer: &'static str) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut request = [0u8; 1024];
                let _ = stream.read(&mut request);
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        port
    }

    fn closed_port() -> u16 {
        TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    const LIST: &str = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"object\":\"list\",\"data\":[{\"id\":\"qwen2.5-coder:7b\"},{\"id\":\"llama3\"}]}";

    #[test]
    fn answers_are_read_as_model_lists() {
        assert_eq!(
            parse_answer(LIST.as_bytes()),
            Some(vec!["qwen2.5-coder:7b".to_string(), "llama3".to_string()])
        );
        assert_eq!(parse_answer(b"HTTP/1.1 404 Not Found\r\n\r\n{}"), None);
        assert_eq!(parse_answer(b"HTTP/1.1 200 OK\r\n\r\n<html>"), None);
        assert_eq!(parse_answer(b"garbage"), None);
    }

    #[test]
    fn model_ids_lose_control_characters() {
        let answer = "HTTP/1.1 200 OK\r\n\r\n{\"data\":[{\"id\":\"llama\\u001b[31m\\nnote: key sent to evil\\u202e\"},{\"id\":\"\\u001b\\u0007\"}]}";
        assert_eq!(
            parse_answer(answer.as_bytes()),
            Some(vec!["llama[31mnote: key sent to evil".to_string()])
        );
        assert_eq!(printable(&"x".repeat(1_000)).len(), MAX_MODEL_ID_CHARS);
    }

    #[test]
    fn the_first_answering_candidate_in_order_wins() {
        let silent = serve("HTTP/1.1 404 Not Found\r\n\r\n");
        let good = serve(LIST);
        let other = serve(LIST);
        let candidates = vec![
            ("A".to_string(), closed_port()),
            ("B".to_string(), silent),
            ("C".to_string(), good),
            ("D".to_string(), other),
        ];
        let found = discover(&candidates, None, PROBE_TIMEOUT).unwrap();
        assert_eq!(found.server, "C");
        assert_eq!(found.base_url, format!("http://127.0.0.1:{good}/v1"));
        assert_eq!(found.model, "qwen2.5-coder:7b");
        let found = discover(&candidates, Some("mine"), PROBE_TIMEOUT).unwrap();
        assert_eq!(found.model, "mine");
        assert_eq!(discover(&candidates[..2], None, PROBE_TIMEOUT), None);
    }

    #[test]
    fn a_server_listing_no_model_needs_a_configured_one() {
        let empty = serve("HTTP/1.1 200 OK\r\n\r\n{\"object\":\"list\",\"data\":[]}");
        let candidates = vec![("E".to_string(), empty)];
        assert_eq!(discover(&candidates, None, PROBE_TIMEOUT), None);
        assert_eq!(
            discover(&candidates, Some("m"), PROBE_TIMEOUT).map(|f| f.model),
            Some("m".to_string())
        );
    }

    #[test]
    fn a_server_that_never_answers_is_given_up_within_the_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // Accepted by the kernel's backlog, never answered.
        let candidates = vec![("S".to_string(), port)];
        assert_eq!(
            discover(&candidates, None, Duration::from_millis(200)),
            None
        );
        drop(listener);
    }

    #[test]
    fn any_explicit_choice_turns_discovery_off() {
        let none = ModelFlags::default();
        let file = FileConfig::default();
        assert!(allowed(&none, &file, &env_of(&[])));
        assert!(allowed(&none, &file, &env_of(&[(NO_DISCOVERY_VAR, "0")])));
        assert!(!allowed(&none, &file, &env_of(&[(NO_DISCOVERY_VAR, "1")])));
        for key in ["REDLINE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"] {
            let env = move |k: &str| (k == key).then(|| "k".to_string());
            assert!(!allowed(&none, &file, &env), "{key}");
        }
        let provider = ModelFlags {
            provider: Some("openai".into()),
            ..ModelFlags::default()
        };
        assert!(!allowed(&provider, &file, &env_of(&[])));
        let base_url = ModelFlags {
            base_url: Some("https://example.com/v1".into()),
            ..ModelFlags::default()
        };
        assert!(!allowed(&base_url, &file, &env_of(&[])));
        let user_file = FileConfig {
            base_url: Some("https://example.com/v1".into()),
            ..FileConfig::default()
        };
        assert!(!allowed(&none, &user_file, &env_of(&[])));
    }

    #[test]
    fn ports_can_be_given_and_keep_their_names() {
        let defaults = candidates(&env_of(&[]));
        assert_eq!(defaults[0], ("Ollama's default port".to_string(), 11434));
        assert_eq!(defaults.len(), 4);
        let given = candidates(&env_of(&[(PORTS_VAR, "8080, x, 5555")]));
        assert_eq!(
            given,
            vec![
                ("llama.cpp's default port".to_string(), 8080),
                ("port 5555".to_string(), 5555)
            ]
        );
    }

    #[test]
    fn other_outcomes_pass_through_unchanged() {
        let bad = Err(ConfigError::BadValue {
            key: "provider".into(),
            message: "x".into(),
        });
        let out = recover(
            bad,
            &ModelFlags::default(),
            &FileConfig::default(),
            &env_of(&[]),
        );
        assert!(matches!(out, Err(ConfigError::BadValue { .. })));
    }
}
