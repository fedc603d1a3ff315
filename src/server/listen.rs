//! The accept loop: HTTP/1.1 connections served with hyper, each under the deadlines of
//! [`super::connection`], at most [`ConnectionLimits::max_connections`] at once.
//!
//! Invariants: a connection slot is taken before `accept`, so past the cap peers wait in the
//! kernel's listen backlog instead of using file descriptors; a slot is given back when its
//! connection ends. On shutdown the listener closes first, then every connection finishes
//! its in-flight request and closes (idle ones at once).

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tracing::{debug, error};

use super::connection::{DeadlineIo, TrackedService, Tracker};
use super::limits::ConnectionLimits;

/// Largest request head (request line and headers) read from a peer.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Pause after an accept error that is not about one connection (e.g. out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(500);

/// Serves `router` on `listener` until `shutdown` resolves.
pub(crate) async fn run<F>(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: F,
) -> io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(
        limits.max_connections.clamp(1, Semaphore::MAX_PERMITS),
    ));
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        // The connection's own deadlines replace hyper's header timer (see connection.rs).
        .header_read_timeout(None)
        .keep_alive(true)
        .max_header_size(MAX_HEAD_BYTES);
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            biased;
            () = &mut shutdown => break,
            slot = slots.clone().acquire_owned() => slot,
        };
        let Ok(slot) = slot else { break };
        let (stream, peer) = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) if is_connection_error(&err) => continue,
                Err(err) => {
                    error!(error = %err, "accept error; pausing before the next accept");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let tracker = Tracker::accepted(limits);
        let io = TokioIo::new(DeadlineIo::new(stream, tracker.clone()));
        let service = TrackedService::new(TowerToHyperService::new(router.clone()), tracker);
        let connection = graceful.watch(http.serve_connection(io, service));
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                debug!(%peer, error = %err, "connection closed with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Errors about one incoming connection (the next accept may succeed at once).
fn is_connection_error(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}
