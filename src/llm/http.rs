//! HTTP plumbing shared by the providers: sending one streamed request under a
//! deadline, and turning statuses, error bodies and transport failures into
//! [`LlmError`]s whose messages never carry the API key.
//!
//! Invariant: no phase of an attempt waits without a bound. Connecting is
//! bounded by `connect_timeout`, the wait from sending the request to the
//! first bytes of the stream (headers included) by `first_byte_timeout`, every
//! later gap by `stream_idle_timeout`, and the whole attempt by `timeout`.

use std::future::Future;
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use tokio::time::Instant;

use super::sse::SseStream;
use super::{CallTimeouts, LlmError, ProviderSettings, Secret, Stall};

/// Longest provider message kept in an error; error pages can be whole HTML documents.
const MAX_MESSAGE_CHARS: usize = 600;

/// One header a provider sends with every request.
pub(crate) struct HeaderSpec {
    /// Header name (lowercase).
    pub name: &'static str,
    /// Header value.
    pub value: String,
    /// Whether the value is a credential (hidden from any debug output).
    pub sensitive: bool,
}

/// Why an endpoint could not be set up; reported by its first call. Holds no key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EndpointSetupError {
    /// The HTTP client could not be built (the description is redacted).
    #[error("{0}")]
    Client(String),
    /// The API key cannot be an HTTP header value.
    #[error("the API key contains characters that cannot be sent in an HTTP header")]
    KeyNotHeaderSafe,
    /// A fixed header's value cannot be an HTTP header value.
    #[error("invalid value for header `{0}`")]
    InvalidHeader(&'static str),
}

/// A provider URL with its fixed headers, timeouts and the key to scrub from errors.
pub(crate) struct Endpoint {
    client: Result<reqwest::Client, EndpointSetupError>,
    url: String,
    headers: Result<HeaderMap, EndpointSetupError>,
    key: Option<Secret>,
    timeout: Duration,
    timeouts: CallTimeouts,
}

impl Endpoint {
    /// An endpoint at `url`; construction problems are reported by the first call.
    pub fn new(url: String, headers: Vec<HeaderSpec>, settings: &ProviderSettings) -> Self {
        let key = settings.api_key.clone().filter(|k| !k.is_empty());
        let client = reqwest::Client::builder()
            // The key (`x-api-key`, `api-key`, custom headers) goes to the endpoint's host only.
            .redirect(crate::redirect::same_origin())
            .connect_timeout(settings.timeouts.connect.min(settings.timeouts.request))
            .build()
            .map_err(|err| {
                EndpointSetupError::Client(describe_transport_error(&err, key.as_ref()))
            });
        Endpoint {
            client,
            url,
            headers: build_headers(headers),
            key,
            timeout: settings.timeouts.request,
            timeouts: settings.timeouts,
        }
    }

    /// The API key, for redaction.
    pub fn key(&self) -> Option<&Secret> {
        self.key.as_ref()
    }

    /// Runs one whole attempt (request and stream) under the per-attempt timeout.
    pub(crate) async fn with_deadline<T>(
        &self,
        attempt: impl Future<Output = Result<T, LlmError>>,
    ) -> Result<T, LlmError> {
        tokio::time::timeout(self.timeout, attempt)
            .await
            .unwrap_or(Err(LlmError::Timeout(self.timeout)))
    }

    /// POSTs `body` and returns the event stream of a successful response, or
    /// the mapped error of a failed one.
    pub(crate) async fn open_stream(
        &self,
        body: &impl Serialize,
        model: &str,
    ) -> Result<SseStream, LlmError> {
        let client = self
            .client
            .as_ref()
            .map_err(|e| LlmError::Connect(format!("could not set up the HTTP client: {e}")))?;
        let headers = self.headers.as_ref().map_err(|e| LlmError::BadRequest {
            status: 0,
            message: e.to_string(),
        })?;
        let first_byte_deadline = Instant::now() + self.timeouts.first_byte;
        let request = client.post(&self.url).headers(headers.clone()).json(body);
        let response = tokio::time::timeout_at(first_byte_deadline, request.send())
            .await
            .map_err(|_| self.stalled(Stall::FirstByte))?
            .map_err(|err| self.transport_error(&err))?;
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let response_headers = response.headers().clone();
            let text = self.read_error_body(response).await?;
            return Err(error_from_response(
                status,
                &response_headers,
                &text,
                model,
                self.key(),
            ));
        }
        if is_json(response.headers()) {
            let text = self.read_error_body(response).await?;
            return Err(LlmError::Malformed(format!(
                "expected a stream of server-sent events, got JSON: {}",
                clip(&redact(self.key(), &text))
            )));
        }
        Ok(SseStream::new(
            response,
            first_byte_deadline,
            self.timeouts,
            self.key.clone(),
        ))
    }

    /// The body of a response that is not a stream, read under the idle timeout
    /// (a server may send error headers and then stall).
    async fn read_error_body(&self, response: reqwest::Response) -> Result<String, LlmError> {
        tokio::time::timeout(self.timeouts.stream_idle, response.text())
            .await
            .map(Result::unwrap_or_default)
            .map_err(|_| self.stalled(Stall::StreamIdle))
    }

    fn stalled(&self, phase: Stall) -> LlmError {
        let after = match phase {
            Stall::Connect => self.timeouts.connect.min(self.timeout),
            Stall::FirstByte => self.timeouts.first_byte,
            Stall::StreamIdle => self.timeouts.stream_idle,
        };
        LlmError::Stalled { phase, after }
    }

    fn transport_error(&self, err: &reqwest::Error) -> LlmError {
        if err.is_connect() && err.is_timeout() {
            self.stalled(Stall::Connect)
        } else if err.is_timeout() {
            LlmError::Timeout(self.timeout)
        } else {
            LlmError::Connect(describe_transport_error(err, self.key()))
        }
    }
}

fn build_headers(specs: Vec<HeaderSpec>) -> Result<HeaderMap, EndpointSetupError> {
    let mut headers = HeaderMap::new();
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    for spec in specs {
        let name = HeaderName::from_static(spec.name);
        let mut value = HeaderValue::from_str(spec.value.trim()).map_err(|_| {
            if spec.sensitive {
                EndpointSetupError::KeyNotHeaderSafe
            } else {
                EndpointSetupError::InvalidHeader(spec.name)
            }
        })?;
        value.set_sensitive(spec.sensitive);
        headers.insert(name, value);
    }
    Ok(headers)
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

/// A transport error with its causes, redacted. A failed connection says where to and
/// why in a few words (`127.0.0.1:9: tcp connect error: Connection refused`), without
/// the request's URL and the layers' wrappers (`client error (Connect)`) in between.
pub(crate) fn describe_transport_error(err: &reqwest::Error, key: Option<&Secret>) -> String {
    let mut causes = Vec::new();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        causes.push(cause.to_string());
        source = cause.source();
    }
    let text = match err.url().filter(|_| err.is_connect()) {
        Some(url) => {
            let place = match (url.host_str(), url.port_or_known_default()) {
                (Some(host), Some(port)) => format!("{host}:{port}"),
                _ => url.origin().ascii_serialization(),
            };
            let causes: Vec<String> = causes
                .into_iter()
                .filter(|cause| !cause.starts_with("client error ("))
                .collect();
            format!("cannot connect to {place}: {}", causes.join(": "))
        }
        None => std::iter::once(err.to_string())
            .chain(causes)
            .collect::<Vec<_>>()
            .join(": "),
    };
    // reqwest names the request's URL; a password or `?key=` in the endpoint stays hidden.
    redact(key, &crate::text::urls::mask_all(&text))
}

/// `text` with the key scrubbed out, when there is a key.
pub(crate) fn redact(key: Option<&Secret>, text: &str) -> String {
    match key {
        Some(key) => key.redact(text),
        None => text.to_string(),
    }
}

fn clip(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// The parts of a provider's JSON error that classification looks at.
///
/// Shapes understood: OpenAI and llama.cpp `{"error":{"message","type","code"}}`
/// (code a string or a number), Anthropic `{"type":"error","error":{"type","message"}}`,
/// Ollama `{"error":"text"}`, vLLM `{"object":"error","message","type","code"}`
/// and FastAPI-style `{"detail": ...}`.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ErrorDetail {
    /// Human-readable message.
    pub message: Option<String>,
    /// Machine code (`context_length_exceeded`, `model_not_found`, `400`...).
    pub code: Option<String>,
    /// Error type (`invalid_request_error`, `overloaded_error`...).
    pub kind: Option<String>,
}

impl ErrorDetail {
    /// Extracts the detail from an error body; empty when the body is not JSON.
    pub fn parse(body: &str) -> ErrorDetail {
        match serde_json::from_str::<serde_json::Value>(body) {
            Ok(value) => ErrorDetail::from_json(&value),
            Err(_) => ErrorDetail::default(),
        }
    }

    /// Extracts the detail from an already parsed error value.
    pub fn from_json(value: &serde_json::Value) -> ErrorDetail {
        match value.get("error") {
            Some(serde_json::Value::String(message)) => ErrorDetail {
                message: Some(message.clone()),
                ..ErrorDetail::default()
            },
            Some(inner @ serde_json::Value::Object(_)) => ErrorDetail::from_fields(inner),
            _ if value.get("message").is_some() => ErrorDetail::from_fields(value),
            _ => ErrorDetail {
                message: value.get("detail").map(json_text),
                ..ErrorDetail::default()
            },
        }
    }

    fn from_fields(value: &serde_json::Value) -> ErrorDetail {
        ErrorDetail {
            message: value.get("message").map(json_text),
            code: value.get("code").filter(|c| !c.is_null()).map(json_text),
            kind: value.get("type").filter(|t| !t.is_null()).map(json_text),
        }
    }

    fn searchable_text(&self) -> String {
        [&self.message, &self.code, &self.kind]
            .into_iter()
            .flatten()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    }
}

fn json_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The error for a non-success HTTP response.
pub(crate) fn error_from_response(
    status: u16,
    headers: &HeaderMap,
    body: &str,
    model: &str,
    key: Option<&Secret>,
) -> LlmError {
    let detail = ErrorDetail::parse(body);
    let message = match &detail.message {
        Some(message) => message.clone(),
        None if body.trim().is_empty() => format!("HTTP {status} with an empty body"),
        None => body.to_string(),
    };
    error_of_status(
        status,
        &detail,
        clip(&redact(key, &message)),
        retry_after(headers),
        model,
    )
}

/// The error for an error the server reported inside an otherwise successful stream.
pub(crate) fn error_from_stream(
    status: u16,
    detail: &ErrorDetail,
    model: &str,
    key: Option<&Secret>,
) -> LlmError {
    let message = detail
        .message
        .clone()
        .unwrap_or_else(|| "error reported in the response stream".to_string());
    error_of_status(status, detail, clip(&redact(key, &message)), None, model)
}

fn error_of_status(
    status: u16,
    detail: &ErrorDetail,
    message: String,
    retry_after: Option<Duration>,
    model: &str,
) -> LlmError {
    let text = detail.searchable_text() + " " + &message.to_lowercase();
    match status {
        401 | 403 => LlmError::Auth { status, message },
        429 => LlmError::RateLimited { retry_after },
        // llama.cpp answers "tools param requires --jinja flag" with a 500.
        400 | 404 | 422 | 500 if says_tools_unsupported(&text) => {
            LlmError::ToolsUnsupported { message }
        }
        500.. => LlmError::Server {
            status,
            message,
            retry_after,
        },
        413 => LlmError::ContextLengthExceeded { message },
        _ if says_context_too_long(&text) => LlmError::ContextLengthExceeded { message },
        _ if status == 404 || says_model_unknown(&text) => LlmError::ModelNotFound {
            model: model.to_string(),
            message,
        },
        _ => LlmError::BadRequest { status, message },
    }
}

fn says_context_too_long(text: &str) -> bool {
    [
        "context_length_exceeded",
        "maximum context length",
        "prompt is too long",
        "exceed_context_size",
        "exceeds the available context size",
        "context window",
        "context length",
    ]
    .iter()
    .any(|marker| text.contains(marker))
}

/// Heuristic over the wordings of Ollama ("does not support tools"), llama.cpp
/// ("tools param requires --jinja flag", "Unsupported param: tool_choice"), vLLM ("auto" tool choice requires
/// --enable-auto-tool-choice), OpenRouter ("No endpoints found that support tool
/// use") and strict OpenAI-compatible proxies rejecting an unknown `tools` field.
fn says_tools_unsupported(text: &str) -> bool {
    let about_tools = ["tool", "function call", "function_call", "functions"]
        .iter()
        .any(|m| text.contains(m));
    let refused = [
        "not support",
        "unsupported",
        "doesn't support",
        "no endpoints found that support",
        "--jinja",
        "cannot use tools",
        "--enable-auto-tool-choice",
        "not enabled",
        "not permitted",
        "unrecognized",
    ]
    .iter()
    .any(|m| text.contains(m));
    about_tools && refused
}

fn says_model_unknown(text: &str) -> bool {
    text.contains("model_not_found")
        || text.contains("not a valid model")
        || text.contains("unknown model")
        || text.contains("no such model")
        || text.contains("invalid model")
        || (text.contains("model")
            && (text.contains("not found") || text.contains("does not exist")))
}

/// The wait a response asked for: `retry-after-ms`, else `Retry-After` in
/// seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = header("retry-after-ms").and_then(parse_seconds) {
        return Some(ms / 1000);
    }
    let value = header("retry-after")?;
    parse_seconds(value).or_else(|| {
        let date = chrono::DateTime::parse_from_rfc2822(value.trim()).ok()?;
        let wait = date.with_timezone(&chrono::Utc) - chrono::Utc::now();
        Some(wait.to_std().unwrap_or(Duration::ZERO))
    })
}

fn parse_seconds(value: &str) -> Option<Duration> {
    let number: f64 = value.trim().parse().ok()?;
    Duration::try_from_secs_f64(number).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(status: u16, body: &str) -> LlmError {
        error_from_response(status, &HeaderMap::new(), body, "m", None)
    }

    #[test]
    fn reads_every_error_shape() {
        let openai = r#"{"error":{"message":"bad","type":"invalid_request_error","code":"x"}}"#;
        assert_eq!(ErrorDetail::parse(openai).code.as_deref(), Some("x"));
        let llama = r#"{"error":{"code":400,"message":"m","type":"t"}}"#;
        assert_eq!(ErrorDetail::parse(llama).code.as_deref(), Some("400"));
        assert_eq!(
            ErrorDetail::parse(r#"{"error":"plain"}"#)
                .message
                .as_deref(),
            Some("plain")
        );
        let vllm = r#"{"object":"error","message":"v","type":"BadRequestError","code":400}"#;
        assert_eq!(ErrorDetail::parse(vllm).message.as_deref(), Some("v"));
        assert_eq!(ErrorDetail::parse("<html>"), ErrorDetail::default());
    }

    type Case = (u16, &'static str, fn(&LlmError) -> bool);

    #[test]
    fn classifies_provider_wordings() {
        let cases: &[Case] = &[
            (401, r#"{"error":"nope"}"#, |e| {
                matches!(e, LlmError::Auth { .. })
            }),
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens, including functions","code":"context_length_exceeded"}}"#,
                |e| matches!(e, LlmError::ContextLengthExceeded { .. }),
            ),
            (
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
                |e| matches!(e, LlmError::ContextLengthExceeded { .. }),
            ),
            (
                400,
                r#"{"error":"registry.ollama.ai/library/gemma:2b does not support tools"}"#,
                |e| matches!(e, LlmError::ToolsUnsupported { .. }),
            ),
            (
                500,
                r#"{"error":{"code":500,"message":"tools param requires --jinja flag"}}"#,
                |e| matches!(e, LlmError::ToolsUnsupported { .. }),
            ),
            (
                500,
                r#"{"error":{"code":500,"message":"out of memory"}}"#,
                |e| matches!(e, LlmError::Server { status: 500, .. }),
            ),
            (
                400,
                r#"{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","code":400}"#,
                |e| matches!(e, LlmError::ToolsUnsupported { .. }),
            ),
            (
                404,
                r#"{"error":{"message":"No endpoints found that support tool use.","code":404}}"#,
                |e| matches!(e, LlmError::ToolsUnsupported { .. }),
            ),
            (
                404,
                r#"{"error":"model \"llama9\" not found, try pulling it first"}"#,
                |e| matches!(e, LlmError::ModelNotFound { .. }),
            ),
            (
                400,
                r#"{"error":{"message":"gpt-9 is not a valid model ID","code":400}}"#,
                |e| matches!(e, LlmError::ModelNotFound { .. }),
            ),
            (422, r#"{"detail":"bad field"}"#, |e| {
                matches!(e, LlmError::BadRequest { status: 422, .. })
            }),
            (
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                |e| matches!(e, LlmError::Server { status: 529, .. }),
            ),
        ];
        for (status, body, check) in cases {
            let err = map(*status, body);
            assert!(check(&err), "{status} {body} -> {err:?}");
        }
    }

    #[test]
    fn keeps_a_clipped_body_when_it_is_not_json() {
        let err = map(502, &"x".repeat(5000));
        let LlmError::Server { message, .. } = err else {
            panic!("expected a server error");
        };
        assert!(message.chars().count() <= MAX_MESSAGE_CHARS + 1);
        assert!(
            matches!(map(503, ""), LlmError::Server { message, .. } if message.contains("empty body"))
        );
    }

    #[test]
    fn parses_retry_after_forms() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(1500)));

        let mut dated = HeaderMap::new();
        let later = chrono::Utc::now() + chrono::Duration::seconds(30);
        let value = later.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
        dated.insert("retry-after", HeaderValue::from_str(&value).unwrap());
        let wait = retry_after(&dated).unwrap();
        assert!(wait > Duration::from_secs(20) && wait <= Duration::from_secs(30));

        let mut past = HeaderMap::new();
        past.insert(
            "retry-after",
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT"),
        );
        assert_eq!(retry_after(&past), Some(Duration::ZERO));
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn redacts_the_key_from_messages() {
        let key = Secret::new("sk-test-abcdefghijklmnop");
        let body =
            r#"{"error":{"message":"Incorrect API key provided: sk-test-abcdefghijklmnop"}}"#;
        let err = error_from_response(401, &HeaderMap::new(), body, "m", Some(&key));
        assert!(!format!("{err} {err:?}").contains("abcdefghijklmnop"));
    }
}
