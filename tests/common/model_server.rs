//! A scripted local model server speaking the real streaming wire formats of
//! OpenAI Chat Completions and Anthropic Messages.
//!
//! Tests give it the replies the "model" should make, in order ([`ModelServer::start`])
//! or computed from each request ([`ModelServer::start_with`]), point a client at
//! [`ModelServer::base_url`], and inspect what was sent with [`ModelServer::requests`].
//!
//! ```ignore
//! let server = ModelServer::start(Wire::OpenAi, vec![
//!     Reply::tool("call_1", "read_file", json!({"path": "src/lib.rs"})),
//!     Reply::text("Looks good."),
//! ]).await;
//! ```
//!
//! Streams look like the real ones: text in several chunks, tool-call arguments
//! in two or more fragments, OpenAI's finish chunk then usage chunk then
//! `data: [DONE]`, Anthropic's full `event:`/`data:` sequence with a `ping`.
//! Usage is deterministic: prompt tokens = request body bytes / 4, completion
//! tokens = characters of the reply (text, tool names, raw arguments) / 4.
//! When the script runs out, the server answers HTTP 500 with the body
//! [`SCRIPT_EXHAUSTED`]. `GET /v1/models` lists [`ModelServer::with_models`]'s ids, as
//! Ollama, llama.cpp and vLLM do; without them it answers 404, as a server without a
//! model list does (Redline then goes on with the model it was given). It is recorded
//! apart ([`ModelServer::model_list_requests`]), not numbered.
//!
//! Requests of Redline's verifier (their system prompt begins with
//! [`verifier::VERIFIER_PROMPT_START`])
//! are answered apart from the script: every finding the request lists is kept
//! (`F1: keep - ...`, one line per id), and they are recorded but not numbered, so that a
//! script written for the review itself still lines up. A test of verification calls
//! [`ModelServer::scripting_verifier`] to script the verifier like any other request.
//!
//! With [`ModelServer::with_prompt_cache`] the server counts prompt tokens with
//! the model's real tokenizer and simulates OpenAI's prompt cache (see
//! [`prompt_cache`]), reporting `usage.prompt_tokens_details.cached_tokens`.
//! [`ModelServer::served_usage`] is the server's own record of what it reported.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};

pub mod prompt_cache;
mod streams;
mod verifier;

use prompt_cache::PromptCache;
use streams::{StreamContext, anthropic_events, completion_tokens, openai_events};
use verifier::keep_every_finding;

/// The body of the 500 the server answers once the script is exhausted.
pub const SCRIPT_EXHAUSTED: &str = "scripted model server: script exhausted";

/// Which wire format the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI Chat Completions: `POST /v1/chat/completions`.
    OpenAi,
    /// Anthropic Messages: `POST /v1/messages`.
    Anthropic,
}

impl Wire {
    /// Both wires, for tests that run against each.
    pub const ALL: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];

    /// The client provider that speaks this wire.
    pub fn provider(self) -> redline::llm::Provider {
        match self {
            Wire::OpenAi => redline::llm::Provider::OpenAi,
            Wire::Anthropic => redline::llm::Provider::Anthropic,
        }
    }

    fn path(self) -> &'static str {
        match self {
            Wire::OpenAi => "/v1/chat/completions",
            Wire::Anthropic => "/v1/messages",
        }
    }
}

/// One tool call of a scripted reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedCall {
    /// The call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The raw arguments text, streamed as is; it may be malformed JSON.
    pub arguments: String,
}

/// What the server answers to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A final answer without tool calls.
    Text(String),
    /// One reply with (optional) text and one or more tool calls.
    Tools {
        /// Text before the calls (may be empty).
        text: String,
        /// The calls, in order.
        calls: Vec<ScriptedCall>,
    },
    /// A non-streamed HTTP error with the given status, extra headers and body.
    Error {
        /// HTTP status.
        status: u16,
        /// Extra response headers (e.g. `Retry-After`).
        headers: Vec<(String, String)>,
        /// Response body, sent as `application/json`.
        body: String,
    },
    /// Starts streaming the reply and stops midway, without the terminator
    /// (no finish reason / `[DONE]`, no `message_stop`).
    Cut(Box<Reply>),
    /// Waits before answering with the inner reply (for timeout tests).
    Delay(Duration, Box<Reply>),
    /// Never answers: the request is held until the client gives up or the server stops.
    Never,
    /// Streams the first half of the reply, pauses, then streams the rest
    /// (for idle-timeout tests).
    Stall(Duration, Box<Reply>),
}

impl Reply {
    /// A final text answer.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Text(text.into())
    }

    /// A reply with one tool call whose arguments are `args` serialised.
    pub fn tool(id: impl Into<String>, name: impl Into<String>, args: Value) -> Reply {
        Reply::raw_tool(id, name, &args.to_string())
    }

    /// A reply with several tool calls `(id, name, args)`.
    pub fn tools(calls: Vec<(&str, &str, Value)>) -> Reply {
        Reply::Tools {
            text: String::new(),
            calls: calls
                .into_iter()
                .map(|(id, name, args)| ScriptedCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    arguments: args.to_string(),
                })
                .collect(),
        }
    }

    /// A reply with one tool call whose arguments text is sent verbatim (may be malformed).
    pub fn raw_tool(id: impl Into<String>, name: impl Into<String>, raw_args: &str) -> Reply {
        Reply::Tools {
            text: String::new(),
            calls: vec![ScriptedCall {
                id: id.into(),
                name: name.into(),
                arguments: raw_args.to_string(),
            }],
        }
    }

    /// An HTTP error with a raw body and no extra headers.
    pub fn error(status: u16, body: impl Into<String>) -> Reply {
        Reply::Error {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// An HTTP error in the wire's own JSON error shape. `code` becomes OpenAI's
    /// `error.code` or Anthropic's `error.type` (e.g. `model_not_found`, `not_found_error`).
    pub fn api_error(wire: Wire, status: u16, code: &str, message: &str) -> Reply {
        let body = match wire {
            Wire::OpenAi => json!({
                "error": {"message": message, "type": "invalid_request_error", "param": null, "code": code}
            }),
            Wire::Anthropic => {
                json!({"type": "error", "error": {"type": code, "message": message}})
            }
        };
        Reply::error(status, body.to_string())
    }

    /// This reply with text before its tool calls (a `Text` reply gets its text replaced).
    pub fn with_text(self, text: impl Into<String>) -> Reply {
        match self {
            Reply::Tools { calls, .. } => Reply::Tools {
                text: text.into(),
                calls,
            },
            Reply::Text(_) => Reply::Text(text.into()),
            other => other,
        }
    }

    /// This error reply with one more response header (other replies are unchanged).
    pub fn with_header(self, name: &str, value: &str) -> Reply {
        match self {
            Reply::Error {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.to_string(), value.to_string()));
                Reply::Error {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }

    /// This reply, cut off midway.
    pub fn cut(self) -> Reply {
        Reply::Cut(Box::new(self))
    }

    /// This reply, streamed with a pause of `pause` in the middle.
    pub fn stalled(self, pause: Duration) -> Reply {
        Reply::Stall(pause, Box::new(self))
    }

    /// This reply, sent after `delay`.
    pub fn delayed(self, delay: Duration) -> Reply {
        Reply::Delay(delay, Box::new(self))
    }
}

/// Where the model list is asked for.
const MODEL_LIST_PATH: &str = "/v1/models";

/// One request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The headers, names lowercase, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The JSON body (`Value::String` holding the raw text when it was not JSON).
    pub body: Value,
    /// Length of the raw body in bytes (the basis of the reported prompt tokens).
    pub body_len: usize,
}

impl RecordedRequest {
    /// The text of message `index` of an OpenAI-wire request (empty when absent).
    pub fn message_text(&self, index: usize) -> String {
        self.body["messages"][index]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The system message (OpenAI wire).
    pub fn system_text(&self) -> String {
        self.message_text(0)
    }

    /// The tool results the request carries, by call id (OpenAI wire).
    pub fn tool_results(&self) -> std::collections::BTreeMap<String, String> {
        self.body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "tool")
            .map(|m| {
                let id = m["tool_call_id"].as_str().unwrap_or_default().to_string();
                (id, m["content"].as_str().unwrap_or_default().to_string())
            })
            .collect()
    }

    /// The first value of a header (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The token usage the server reported for one answered request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServedUsage {
    /// The request's position in [`ModelServer::requests`].
    pub request: usize,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Of which served from the simulated prompt cache (0 without it).
    pub cached_tokens: u64,
    /// Completion tokens (of a streamed reply; 0 for errors).
    pub completion_tokens: u64,
}

type Responder = dyn Fn(&RecordedRequest, usize) -> Reply + Send + Sync;

struct ServerState {
    wire: Wire,
    responder: Box<Responder>,
    requests: Mutex<Vec<RecordedRequest>>,
    answered: AtomicUsize,
    report_usage: AtomicBool,
    prompt_cache: Mutex<Option<PromptCache>>,
    served: Mutex<Vec<ServedUsage>>,
    models: Mutex<Option<Vec<String>>>,
    script_verifier: AtomicBool,
}

/// A running scripted model server; it stops when dropped.
pub struct ModelServer {
    addr: SocketAddr,
    wire: Wire,
    state: Arc<ServerState>,
    task: tokio::task::JoinHandle<()>,
}

impl ModelServer {
    /// A server answering the replies of `script` in order, then [`SCRIPT_EXHAUSTED`].
    pub async fn start(wire: Wire, script: Vec<Reply>) -> ModelServer {
        ModelServer::start_with(wire, move |_, index| {
            script
                .get(index)
                .cloned()
                .unwrap_or_else(|| Reply::error(500, SCRIPT_EXHAUSTED))
        })
        .await
    }

    /// A server computing each reply from the request and its 0-based number
    /// (requests to unknown paths are answered 404 and not numbered).
    pub async fn start_with(
        wire: Wire,
        responder: impl Fn(&RecordedRequest, usize) -> Reply + Send + Sync + 'static,
    ) -> ModelServer {
        let state = Arc::new(ServerState {
            wire,
            responder: Box::new(responder),
            requests: Mutex::new(Vec::new()),
            answered: AtomicUsize::new(0),
            report_usage: AtomicBool::new(true),
            prompt_cache: Mutex::new(None),
            served: Mutex::new(Vec::new()),
            models: Mutex::new(None),
            script_verifier: AtomicBool::new(false),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the model server");
        let addr = listener.local_addr().expect("model server address");
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        ModelServer {
            addr,
            wire,
            state,
            task,
        }
    }

    /// Stops reporting token usage (OpenAI: no usage chunk; Anthropic: no usage
    /// fields), so that clients must count locally.
    pub fn without_usage(self) -> ModelServer {
        self.state.report_usage.store(false, Ordering::SeqCst);
        self
    }

    /// Counts prompt tokens with the model's tokenizer and simulates OpenAI's
    /// prompt cache: each reply reports the cached prefix (see [`prompt_cache`])
    /// in `usage.prompt_tokens_details.cached_tokens` (OpenAI wire).
    pub fn with_prompt_cache(self) -> ModelServer {
        *self.state.prompt_cache.lock().expect("prompt cache lock") = Some(PromptCache::default());
        self
    }

    /// The usage reported for each answered request, in the order answered.
    pub fn served_usage(&self) -> Vec<ServedUsage> {
        self.state.served.lock().expect("served lock").clone()
    }

    /// The model ids `GET /v1/models` lists, in order.
    pub fn with_models(self, models: &[&str]) -> ModelServer {
        *self.state.models.lock().expect("models lock") =
            Some(models.iter().map(|m| m.to_string()).collect());
        self
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The base URL a client is configured with: `http://127.0.0.1:PORT/v1`
    /// for OpenAI, `http://127.0.0.1:PORT` for Anthropic.
    pub fn base_url(&self) -> String {
        match self.wire {
            Wire::OpenAi => format!("http://{}/v1", self.addr),
            Wire::Anthropic => format!("http://{}", self.addr),
        }
    }

    /// The wire this server speaks.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// Every model call received so far, in order (the model list's requests aside).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        let requests = self.state.requests.lock().expect("requests lock");
        requests
            .iter()
            .filter(|r| r.path != MODEL_LIST_PATH)
            .cloned()
            .collect()
    }

    /// The `GET /v1/models` requests received so far (discovery probes, model checks).
    pub fn model_list_requests(&self) -> Vec<RecordedRequest> {
        let requests = self.state.requests.lock().expect("requests lock");
        requests
            .iter()
            .filter(|r| r.path == MODEL_LIST_PATH)
            .cloned()
            .collect()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(
    State(state): State<Arc<ServerState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let recorded = RecordedRequest {
        path: uri.path().to_string(),
        headers: headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned())),
        body_len: body.len(),
    };
    let position = {
        let mut requests = state.requests.lock().expect("requests lock");
        requests.push(recorded.clone());
        requests.len() - 1
    };
    if method == Method::GET && recorded.path == MODEL_LIST_PATH {
        let Some(models) = state.models.lock().expect("models lock").clone() else {
            return Response::builder()
                .status(StatusCode::NOT_FOUND)
                .body(Body::from("404 page not found"))
                .expect("404 response");
        };
        let data: Vec<Value> = models
            .iter()
            .map(|id| json!({"id": id, "object": "model", "owned_by": "scripted"}))
            .collect();
        return Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/json")
            .body(Body::from(
                json!({"object": "list", "data": data}).to_string(),
            ))
            .expect("models response");
    }
    if method != Method::POST || recorded.path != state.wire.path() {
        let message = format!(
            "scripted model server: no route for {method} {}",
            recorded.path
        );
        return error_response(
            404,
            &[],
            &json!({"error": {"message": message}}).to_string(),
        );
    }
    let (prompt_tokens, cached_tokens) = prompt_usage(&state, &recorded);
    let apart = recorded.is_verifier() && !state.script_verifier.load(Ordering::SeqCst);
    let index = match apart {
        true => position,
        false => state.answered.fetch_add(1, Ordering::SeqCst),
    };
    let reply = match apart {
        true => keep_every_finding(&recorded),
        false => (state.responder)(&recorded, index),
    };
    let context = StreamContext {
        model: recorded.body["model"]
            .as_str()
            .unwrap_or("scripted-model")
            .to_string(),
        prompt_tokens,
        cached_tokens,
        report_usage: state.report_usage.load(Ordering::SeqCst),
        index,
    };
    state.served.lock().expect("served lock").push(ServedUsage {
        request: position,
        prompt_tokens,
        cached_tokens: cached_tokens.unwrap_or(0),
        completion_tokens: reply_completion_tokens(&reply),
    });
    respond(reply, state.wire, &context).await
}

/// Prompt tokens, and the cached ones when the prompt cache is simulated.
fn prompt_usage(state: &ServerState, recorded: &RecordedRequest) -> (u64, Option<u64>) {
    let mut cache = state.prompt_cache.lock().expect("prompt cache lock");
    match cache.as_mut() {
        Some(cache) => {
            let prompt = prompt_cache::prompt_tokens(&recorded.body);
            let total = prompt.len() as u64;
            (total, Some(cache.admit(prompt) as u64))
        }
        None => ((recorded.body_len / 4) as u64, None),
    }
}

fn reply_completion_tokens(reply: &Reply) -> u64 {
    match reply {
        Reply::Text(text) => completion_tokens(text, &[]),
        Reply::Tools { text, calls } => completion_tokens(text, calls),
        Reply::Cut(inner) | Reply::Delay(_, inner) | Reply::Stall(_, inner) => {
            reply_completion_tokens(inner)
        }
        Reply::Error { .. } | Reply::Never => 0,
    }
}

/// How much of a reply's stream is sent, and how.
#[derive(Clone, Copy)]
enum Shape {
    Whole,
    Cut,
    Stalled(Duration),
}

async fn respond(mut reply: Reply, wire: Wire, context: &StreamContext) -> Response {
    let mut shape = Shape::Whole;
    loop {
        reply = match reply {
            Reply::Delay(delay, inner) => {
                tokio::time::sleep(delay).await;
                *inner
            }
            Reply::Never => std::future::pending().await,
            Reply::Cut(inner) => {
                shape = Shape::Cut;
                *inner
            }
            Reply::Stall(pause, inner) => {
                shape = Shape::Stalled(pause);
                *inner
            }
            Reply::Error {
                status,
                headers,
                body,
            } => return error_response(status, &headers, &body),
            Reply::Text(text) => return stream_response(wire, &text, &[], context, shape),
            Reply::Tools { text, calls } => {
                return stream_response(wire, &text, &calls, context, shape);
            }
        }
    }
}

fn error_response(status: u16, headers: &[(String, String)], body: &str) -> Response {
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "application/json");
    for (name, value) in headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder
        .body(Body::from(body.to_string()))
        .expect("error response")
}

fn stream_response(
    wire: Wire,
    text: &str,
    calls: &[ScriptedCall],
    context: &StreamContext,
    shape: Shape,
) -> Response {
    let events = match wire {
        Wire::OpenAi => openai_events(text, calls, context),
        Wire::Anthropic => anthropic_events(text, calls, context),
    };
    let (first, rest) = events.halves();
    let (rest, pause) = match shape {
        Shape::Whole => (rest, Duration::ZERO),
        Shape::Cut => (Vec::new(), Duration::ZERO),
        Shape::Stalled(pause) => (rest, pause),
    };
    let first = futures::stream::iter(first.into_iter().map(Bytes::from));
    let rest = futures::stream::once(async move {
        tokio::time::sleep(pause).await;
        futures::stream::iter(rest.into_iter().map(Bytes::from))
    })
    .flatten();
    let chunks = first.chain(rest).map(Ok::<_, Infallible>);
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(chunks))
        .expect("stream response")
}
