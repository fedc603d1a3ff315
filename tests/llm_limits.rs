//! Model clients against misbehaving servers: raw TCP listeners that accept and
//! never answer, send headers and stall, stall mid-stream, or stream far past
//! `max_tokens`. Every wait here is bounded by the short timeouts configured.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redline::llm::{
    CallTimeouts, ChatModel, ChatRequest, ClientHooks, LlmError, Message, Provider,
    ProviderSettings, RetryHook, RetryInfo, RetryPolicy, Stall, StopReason, WaitHook, WaitInfo,
    build_client_reporting_every,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What a raw server does once it has read a request.
#[derive(Clone, Copy)]
enum Behaviour {
    /// Never writes a byte.
    Silent,
    /// Writes the headers of an event stream, then nothing.
    HeadersOnly,
    /// Writes the headers and the first events of a reply, then nothing.
    StallMidStream,
    /// Streams text events without end (up to [`ENDLESS_EVENTS`]).
    Endless,
    /// Streams one `data:` line without end (up to [`ENDLESS_LINE_BYTES`]).
    EndlessLine,
}

/// Bytes of the endless line at most: eight times the client's limit on one event, so
/// that after the client hangs up the rest cannot all fit in loopback socket buffers
/// (at twice the limit it sometimes did, and the server saw no failed write).
const ENDLESS_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Events the endless server sends at most, so that it stops by itself.
const ENDLESS_EVENTS: usize = 200_000;

/// The text of each event of the endless stream.
const ENDLESS_TEXT: &str = "and more words ";

/// A raw HTTP server on loopback; it stops when dropped.
struct RawServer {
    port: u16,
    wire: Provider,
    connections: Arc<AtomicUsize>,
    closed_early: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl RawServer {
    async fn start(wire: Provider, behaviour: Behaviour) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let closed_early = Arc::new(AtomicBool::new(false));
        let (count, closed) = (connections.clone(), closed_early.clone());
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let closed = closed.clone();
                tokio::spawn(async move {
                    if serve(socket, wire, behaviour).await.is_err() {
                        closed.store(true, Ordering::SeqCst);
                    }
                });
            }
        });
        RawServer {
            port,
            wire,
            connections,
            closed_early,
            task,
        }
    }

    fn settings(&self, timeouts: CallTimeouts, retries: u32) -> ProviderSettings {
        let mut settings = ProviderSettings::new(self.wire);
        settings.base_url = match self.wire {
            Provider::OpenAi => format!("http://127.0.0.1:{}/v1", self.port),
            Provider::Anthropic => format!("http://127.0.0.1:{}", self.port),
        };
        settings.timeouts = timeouts;
        settings.retry = RetryPolicy {
            max_retries: retries,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        };
        settings
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads one request (headers and a `content-length` body), then behaves; an
/// error means the client went away before the server was done.
async fn serve(mut socket: TcpStream, wire: Provider, behaviour: Behaviour) -> std::io::Result<()> {
    read_request(&mut socket).await?;
    let headers = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    match behaviour {
        Behaviour::Silent => {}
        Behaviour::HeadersOnly => socket.write_all(headers.as_bytes()).await?,
        Behaviour::StallMidStream => {
            socket.write_all(headers.as_bytes()).await?;
            socket.write_all(opening_events(wire).as_bytes()).await?;
            socket
                .write_all(text_event(wire, "Half an ").as_bytes())
                .await?;
        }
        Behaviour::Endless => {
            socket.write_all(headers.as_bytes()).await?;
            socket.write_all(opening_events(wire).as_bytes()).await?;
            let event = text_event(wire, ENDLESS_TEXT);
            for _ in 0..ENDLESS_EVENTS {
                socket.write_all(event.as_bytes()).await?;
            }
            return Ok(());
        }
        Behaviour::EndlessLine => {
            socket.write_all(headers.as_bytes()).await?;
            socket.write_all(b"data: ").await?;
            let piece = vec![b'x'; 64 * 1024];
            for _ in 0..ENDLESS_LINE_BYTES / piece.len() {
                socket.write_all(&piece).await?;
            }
            return Ok(());
        }
    }
    // Hold the connection open without a word; the client must give up.
    std::future::pending::<std::io::Result<()>>().await
}

async fn read_request(socket: &mut TcpStream) -> std::io::Result<()> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = socket.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        seen.extend_from_slice(&buf[..n]);
        let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if seen.len() >= end + 4 + length {
            return Ok(());
        }
    }
}

fn opening_events(wire: Provider) -> String {
    match wire {
        Provider::OpenAi => String::new(),
        Provider::Anthropic => concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        )
        .to_string(),
    }
}

fn text_event(wire: Provider, text: &str) -> String {
    match wire {
        Provider::OpenAi => format!(
            "data: {}\n\n",
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]})
        ),
        Provider::Anthropic => format!(
            "event: content_block_delta\ndata: {}\n\n",
            serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})
        ),
    }
}

const WIRES: [Provider; 2] = [Provider::OpenAi, Provider::Anthropic];

fn request(max_tokens: u32) -> ChatRequest {
    ChatRequest {
        model: "gpt-4o".into(),
        messages: vec![Message::system("You review code."), Message::user("hi")],
        tools: vec![],
        max_tokens,
        temperature: None,
    }
}

fn short(first_byte_ms: u64, idle_ms: u64) -> CallTimeouts {
    CallTimeouts {
        connect: Duration::from_secs(5),
        first_byte: Duration::from_millis(first_byte_ms),
        stream_idle: Duration::from_millis(idle_ms),
        request: Duration::from_secs(20),
    }
}

type Seen<T> = Arc<Mutex<Vec<T>>>;

fn client(settings: ProviderSettings) -> (Arc<dyn ChatModel>, Seen<RetryInfo>, Seen<WaitInfo>) {
    let retries: Seen<RetryInfo> = Arc::default();
    let waits: Seen<WaitInfo> = Arc::default();
    let (r, w) = (retries.clone(), waits.clone());
    let on_retry: RetryHook = Arc::new(move |info| r.lock().unwrap().push(info));
    let on_wait: WaitHook = Arc::new(move |info| w.lock().unwrap().push(info));
    let hooks = ClientHooks {
        on_retry: Some(on_retry),
        on_wait: Some(on_wait),
    };
    let model = build_client_reporting_every(settings, hooks, Duration::from_millis(40));
    (model, retries, waits)
}

/// Runs one call under a generous outer bound, so a broken timeout fails the test instead of hanging it.
async fn bounded_call(
    model: &Arc<dyn ChatModel>,
    max_tokens: u32,
) -> Result<redline::llm::ChatResponse, LlmError> {
    tokio::time::timeout(
        Duration::from_secs(15),
        model.complete(&request(max_tokens)),
    )
    .await
    .expect("the call ends within 15 s")
}

#[tokio::test]
async fn a_server_that_never_answers_fails_at_the_first_byte_timeout_and_is_retried() {
    for wire in WIRES {
        let server = RawServer::start(wire, Behaviour::Silent).await;
        let (model, retries, waits) = client(server.settings(short(300, 5_000), 1));
        let err = bounded_call(&model, 100).await.unwrap_err();
        assert_eq!(
            err,
            LlmError::Stalled {
                phase: Stall::FirstByte,
                after: Duration::from_millis(300)
            },
            "{wire:?}"
        );
        assert!(err.to_string().contains("first_byte_timeout"), "{err}");
        assert!(err.is_retryable());
        assert_eq!(retries.lock().unwrap().len(), 1, "{wire:?}");
        assert_eq!(server.connections.load(Ordering::SeqCst), 2, "{wire:?}");
        let waits = waits.lock().unwrap();
        assert!(!waits.is_empty(), "{wire:?}: no waiting notice");
        assert!(
            waits.iter().all(|w| (1..=2).contains(&w.attempt)),
            "{wire:?}: {waits:?}"
        );
    }
}

#[tokio::test]
async fn headers_without_a_body_fail_at_the_first_byte_timeout() {
    for wire in WIRES {
        let server = RawServer::start(wire, Behaviour::HeadersOnly).await;
        // The idle timeout is longer than the first-byte one: the first wait must use the latter.
        let (model, retries, _) = client(server.settings(short(300, 20_000), 1));
        let err = bounded_call(&model, 100).await.unwrap_err();
        assert!(
            matches!(
                err,
                LlmError::Stalled {
                    phase: Stall::FirstByte,
                    ..
                }
            ),
            "{wire:?}: {err:?}"
        );
        assert_eq!(retries.lock().unwrap().len(), 1, "{wire:?}");
        assert_eq!(server.connections.load(Ordering::SeqCst), 2, "{wire:?}");
    }
}

#[tokio::test]
async fn a_stream_that_stalls_midway_fails_at_the_idle_timeout() {
    for wire in WIRES {
        let server = RawServer::start(wire, Behaviour::StallMidStream).await;
        // The first-byte timeout is longer than the idle one: once bytes came, the idle one applies.
        let (model, retries, _) = client(server.settings(short(20_000, 300), 2));
        let err = bounded_call(&model, 100).await.unwrap_err();
        assert_eq!(
            err,
            LlmError::Stalled {
                phase: Stall::StreamIdle,
                after: Duration::from_millis(300)
            },
            "{wire:?}"
        );
        assert!(err.to_string().contains("stream_idle_timeout"), "{err}");
        assert_eq!(retries.lock().unwrap().len(), 2, "{wire:?}");
        assert_eq!(server.connections.load(Ordering::SeqCst), 3, "{wire:?}");
    }
}

#[tokio::test]
async fn a_full_accept_queue_fails_at_the_connect_timeout() {
    // A listener that never accepts and whose queue is full drops new SYNs, so connecting hangs.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = socket.local_addr().unwrap();
    let listener = socket.listen(0).unwrap();
    let mut fillers = Vec::new();
    for _ in 0..4 {
        if let Ok(Ok(stream)) =
            tokio::time::timeout(Duration::from_millis(200), TcpStream::connect(addr)).await
        {
            fillers.push(stream);
        }
    }
    let mut settings = ProviderSettings::new(Provider::OpenAi);
    settings.base_url = format!("http://{addr}/v1");
    settings.timeouts.connect = Duration::from_millis(300);
    settings.retry = RetryPolicy {
        max_retries: 1,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    };
    let (model, retries, _) = client(settings);
    let err = bounded_call(&model, 100).await.unwrap_err();
    assert_eq!(
        err,
        LlmError::Stalled {
            phase: Stall::Connect,
            after: Duration::from_millis(300)
        }
    );
    assert!(err.to_string().contains("connect_timeout"), "{err}");
    assert_eq!(retries.lock().unwrap().len(), 1);
    drop((listener, fillers));
}

#[tokio::test]
async fn a_stream_past_max_tokens_is_cut_by_the_client() {
    let max_tokens = 50;
    let per_event = redline::llm::tokens::Encoding::O200kBase.count(ENDLESS_TEXT) as u64;
    for wire in WIRES {
        let server = RawServer::start(wire, Behaviour::Endless).await;
        let (model, retries, _) = client(server.settings(short(5_000, 5_000), 0));
        let response = bounded_call(&model, max_tokens).await.unwrap();
        assert_eq!(response.stop, StopReason::MaxTokens, "{wire:?}");
        assert!(response.content.starts_with(ENDLESS_TEXT), "{wire:?}");
        let usage = response.usage;
        assert!(
            usage.completion_tokens > u64::from(max_tokens),
            "{wire:?}: {usage:?}"
        );
        assert!(
            usage.completion_tokens <= u64::from(max_tokens) + per_event,
            "{wire:?}: {usage:?}"
        );
        assert!(usage.estimated, "{wire:?}");
        assert!(usage.prompt_tokens > 0, "{wire:?}");
        assert!(
            response.content.len() <= ENDLESS_TEXT.len() * (max_tokens as usize + 1),
            "{wire:?}: {} bytes kept",
            response.content.len()
        );
        assert!(retries.lock().unwrap().is_empty());
        // The client hung up: the server's writes fail long before its stream ends.
        crate::common::wait_until(|| server.closed_early.load(Ordering::SeqCst)).await;
        assert!(
            server.closed_early.load(Ordering::SeqCst),
            "{wire:?}: the client kept the stream open"
        );
    }
}

#[tokio::test]
async fn an_endless_event_fails_instead_of_filling_memory() {
    for wire in WIRES {
        let server = RawServer::start(wire, Behaviour::EndlessLine).await;
        let (model, retries, _) = client(server.settings(short(5_000, 5_000), 2));
        let err = bounded_call(&model, 100).await.unwrap_err();
        // The event cap ended the call (the client did not buffer the 64 MiB line),
        // and a malformed stream is not worth another attempt. Whether the server
        // then sees a failed write depends on the kernel's socket buffers, so it is
        // not asserted here.
        assert!(
            matches!(&err, LlmError::Malformed(m) if m.contains("larger than")),
            "{wire:?}: {err:?}"
        );
        assert!(retries.lock().unwrap().is_empty(), "{wire:?}: not retried");
    }
}
