//! Hostile connections against the real accept loop (`serve_with_limits`) on 127.0.0.1, with
//! short limits: silent, slow and short peers are disconnected within their deadline while
//! `/healthz` keeps answering; the connection cap and the unverified-bytes budget hold.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redline::llm::Secret;
use redline::server::signature::sign;
use redline::server::{AppState, ConnectionLimits, RequestLimits, serve_with_limits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, timeout_at};

use crate::queue::support::TestDb;

const SECRET: &str = "limits-test-secret";
/// Upper bound of every wait for the server to act (the limits below are about a second).
const BOUND: Duration = Duration::from_secs(10);

fn short_connection_limits() -> ConnectionLimits {
    ConnectionLimits {
        header_timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(1),
        max_connections: 64,
    }
}

fn short_request_limits() -> RequestLimits {
    RequestLimits {
        body_min_rate: 1000,
        body_rate_grace: Duration::from_millis(500),
        body_timeout: Duration::from_secs(3),
        ..RequestLimits::default()
    }
}

struct Running {
    address: String,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<std::io::Result<()>>>,
    _db: TestDb,
}

impl Running {
    async fn start(connections: ConnectionLimits, requests: RequestLimits) -> Running {
        let db = TestDb::sqlite();
        let state = AppState::new(db.queue().await, Secret::new(SECRET)).with_limits(requests);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(serve_with_limits(listener, state, connections, async {
            let _ = stopped.await;
        }));
        Running {
            address,
            stop: Some(stop),
            server: Some(server),
            _db: db,
        }
    }

    async fn connect(&self) -> TcpStream {
        TcpStream::connect(&self.address).await.unwrap()
    }

    /// Polls `/healthz` on fresh connections every 200 ms until the returned probe is stopped.
    fn probe_health(&self) -> HealthProbe {
        let url = format!("http://{}/healthz", self.address);
        let statuses = Arc::new(Mutex::new(Vec::new()));
        let log = statuses.clone();
        let task = tokio::spawn(async move {
            loop {
                let client = reqwest::Client::builder()
                    .no_proxy()
                    .timeout(Duration::from_secs(5))
                    .build()
                    .unwrap();
                let status = match client.get(&url).send().await {
                    Ok(response) => response.status().as_u16(),
                    Err(_) => 0,
                };
                log.lock().unwrap().push(status);
                sleep(Duration::from_millis(200)).await;
            }
        });
        HealthProbe { statuses, task }
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            tokio::time::timeout(BOUND, server)
                .await
                .expect("the server stops")
                .unwrap()
                .unwrap();
        }
    }
}

struct HealthProbe {
    statuses: Arc<Mutex<Vec<u16>>>,
    task: JoinHandle<()>,
}

impl HealthProbe {
    /// Stops probing and asserts that every probe was answered 200.
    fn assert_all_healthy(self) {
        self.task.abort();
        let statuses = self.statuses.lock().unwrap().clone();
        assert!(!statuses.is_empty(), "the probe ran");
        assert!(
            statuses.iter().all(|status| *status == 200),
            "/healthz answered {statuses:?}"
        );
    }
}

/// Reads until the server closes the connection (or resets it), up to [`BOUND`]. Returns
/// what was read, or `None` when the connection was still open at the bound.
async fn read_until_closed(stream: &mut TcpStream) -> Option<String> {
    let deadline = Instant::now() + BOUND;
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match timeout_at(deadline, stream.read(&mut buffer)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(String::from_utf8_lossy(&received).into()),
            Ok(Ok(read)) => received.extend_from_slice(&buffer[..read]),
        }
    }
}

/// The head of a signed webhook POST announcing `length` body bytes (signed for `body`).
fn webhook_head(body: &[u8], length: usize) -> String {
    format!(
        "POST /webhook HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\n\
         x-github-event: ping\r\nx-github-delivery: {}\r\nx-hub-signature-256: {}\r\n\
         content-length: {length}\r\n\r\n",
        rand::random::<u64>(),
        sign(&Secret::new(SECRET), body)
    )
}

#[tokio::test]
async fn a_silent_connection_is_closed_while_healthz_answers() {
    let server = Running::start(short_connection_limits(), short_request_limits()).await;
    let probe = server.probe_health();
    let mut silent = server.connect().await;
    assert!(
        read_until_closed(&mut silent).await.is_some(),
        "a connection that sends nothing is closed"
    );
    probe.assert_all_healthy();
    server.stop().await;
}

#[tokio::test]
async fn a_kept_alive_connection_is_closed_when_idle() {
    let server = Running::start(short_connection_limits(), short_request_limits()).await;
    let mut stream = server.connect().await;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    let mut buffer = [0u8; 1024];
    let read = stream.read(&mut buffer).await.unwrap();
    assert!(String::from_utf8_lossy(&buffer[..read]).starts_with("HTTP/1.1 200"));
    assert!(
        read_until_closed(&mut stream).await.is_some(),
        "an idle kept-alive connection is closed"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_slow_header_is_cut_off_while_healthz_answers() {
    let server = Running::start(short_connection_limits(), short_request_limits()).await;
    let probe = server.probe_health();
    let (mut reader, mut writer) = server.connect().await.into_split();
    // Ten bytes a second: the head (73 bytes) would take 7 s, past the 1 s header timeout,
    // and would be answered within the bound if the server let it.
    let trickle = tokio::spawn(async move {
        for byte in
            b"GET /healthz HTTP/1.1\r\nhost: test\r\nx-filler: abcdefghijklmnopqrstuvwxyz\r\n"
        {
            if writer.write_all(&[*byte]).await.is_err() {
                return;
            }
            sleep(Duration::from_millis(100)).await;
        }
    });
    let deadline = Instant::now() + BOUND;
    let mut buffer = [0u8; 1024];
    let closed = matches!(
        timeout_at(deadline, reader.read(&mut buffer)).await,
        Ok(Ok(0)) | Ok(Err(_))
    );
    trickle.abort();
    assert!(closed, "a head sent at ten bytes a second is cut off");
    probe.assert_all_healthy();
    server.stop().await;
}

#[tokio::test]
async fn slow_and_short_bodies_are_cut_off_while_healthz_answers() {
    let server = Running::start(short_connection_limits(), short_request_limits()).await;
    let probe = server.probe_health();
    let body = vec![b' '; 1000];

    // A body at ten bytes a second, far below the 1000 B/s minimum.
    let (mut reader, mut writer) = server.connect().await.into_split();
    let head = webhook_head(&body, body.len());
    let trickle = tokio::spawn(async move {
        writer.write_all(head.as_bytes()).await.unwrap();
        for _ in 0..body.len() {
            if writer.write_all(b" ").await.is_err() {
                return;
            }
            sleep(Duration::from_millis(100)).await;
        }
    });
    let mut answer = Vec::new();
    let closed = tokio::time::timeout(BOUND, reader.read_to_end(&mut answer)).await;
    trickle.abort();
    assert!(closed.is_ok(), "a slow body is cut off");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");

    // A body that stops short of its Content-Length and waits.
    let mut short = server.connect().await;
    let body = vec![b' '; 1000];
    short
        .write_all(webhook_head(&body, body.len()).as_bytes())
        .await
        .unwrap();
    short.write_all(&body[..10]).await.unwrap();
    let answer = read_until_closed(&mut short)
        .await
        .expect("a short body is cut off");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");

    probe.assert_all_healthy();
    server.stop().await;
}

#[tokio::test]
async fn past_the_connection_cap_peers_wait_until_a_connection_closes() {
    let limits = ConnectionLimits {
        // Long enough that the held connections stay open during the test.
        header_timeout: Duration::from_secs(60),
        idle_timeout: Duration::from_secs(60),
        max_connections: 2,
    };
    let server = Running::start(limits, short_request_limits()).await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let url = format!("http://{}/healthz", server.address);
    let first = server.connect().await;
    let _second = server.connect().await;
    let refused = client
        .get(&url)
        .timeout(Duration::from_millis(700))
        .send()
        .await;
    assert!(
        refused.is_err(),
        "a third connection is not served while two are held: {refused:?}"
    );
    drop(first);
    let answered = client.get(&url).timeout(BOUND).send().await.unwrap();
    assert_eq!(answered.status(), reqwest::StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn without_room_for_unverified_bytes_a_delivery_gets_503_and_room_returns() {
    let requests = RequestLimits {
        max_unverified_bytes: 64 * 1024,
        unverified_wait: Duration::from_millis(200),
        body_min_rate: 1000,
        body_rate_grace: Duration::from_secs(5),
        body_timeout: Duration::from_secs(30),
        ..RequestLimits::default()
    };
    let server = Running::start(short_connection_limits(), requests).await;
    // Holds 60 KB of the 64 KB budget: announced, sent in part.
    let mut held_body = br#"{"zen":"Design for failure.","hook_id":2}"#.to_vec();
    held_body.resize(60_000, b' ');
    let mut holder = server.connect().await;
    holder
        .write_all(webhook_head(&held_body, held_body.len()).as_bytes())
        .await
        .unwrap();
    holder.write_all(&held_body[..1000]).await.unwrap();
    sleep(Duration::from_millis(300)).await;

    let body = br#"{"zen":"Keep it logically awesome.","hook_id":1}"#.to_vec();
    let mut refused = server.connect().await;
    refused
        .write_all(webhook_head(&body, 10_000).as_bytes())
        .await
        .unwrap();
    let answer = read_until_closed(&mut refused)
        .await
        .expect("refused and closed");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after: 5"),
        "{answer}"
    );

    // The holder finishes; its reservation goes back and a delivery fits again.
    holder.write_all(&held_body[1000..]).await.unwrap();
    let answer = read_until_response(&mut holder).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let mut accepted = server.connect().await;
    accepted
        .write_all(webhook_head(&body, body.len()).as_bytes())
        .await
        .unwrap();
    accepted.write_all(&body).await.unwrap();
    let answer = read_until_response(&mut accepted).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("pong"), "{answer}");
    server.stop().await;
}

/// Reads until a whole response head and some body have arrived (bounded).
async fn read_until_response(stream: &mut TcpStream) -> String {
    let deadline = Instant::now() + BOUND;
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&received).contains("}") {
        match timeout_at(deadline, stream.read(&mut buffer)).await {
            Ok(Ok(read)) if read > 0 => received.extend_from_slice(&buffer[..read]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&received).into()
}
