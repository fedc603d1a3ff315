//! One connection's deadlines: a [`Tracker`] that knows which phase the connection is in,
//! the socket wrapper [`DeadlineIo`] that enforces that phase's deadline whenever the
//! connection waits on the peer, and the service wrapper [`TrackedService`] that marks
//! requests in flight.
//!
//! Phases and deadlines:
//! - `Head`: from accept, or from the first byte after an idle period, until the request
//!   head is complete (the service is called): the header timeout.
//! - `Busy`: while a request is being handled, no connection deadline (the handler bounds
//!   its own body reads; see `body.rs`).
//! - `Idle`: after a response, until the next request's first byte: the idle timeout,
//!   renewed while response bytes still go out to a slow reader.
//!
//! Invariant: whenever the connection waits on the peer outside `Busy`, a timer for the
//! current deadline is registered, so a silent peer is dropped no later than the deadline.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use axum::body::Body;
use axum::response::Response;
use hyper::body::Incoming;
use hyper::service::Service;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep, sleep_until};

use super::limits::ConnectionLimits;

#[derive(Debug, Clone, Copy)]
enum Phase {
    Head { deadline: Instant },
    Busy { in_flight: usize },
    Idle { deadline: Instant },
}

/// The phase of one connection, shared by its socket wrapper and its service wrapper.
#[derive(Debug)]
pub(crate) struct Tracker {
    limits: ConnectionLimits,
    phase: Mutex<Phase>,
    /// The connection task, when it waits on a read without a deadline (busy): woken when
    /// the request ends, so the idle deadline gets armed even if the peer stays silent.
    parked_reader: Mutex<Option<Waker>>,
}

impl Tracker {
    /// A just-accepted connection: its first request head is due within the header timeout.
    pub(crate) fn accepted(limits: ConnectionLimits) -> Arc<Tracker> {
        Arc::new(Tracker {
            limits,
            phase: Mutex::new(Phase::Head {
                deadline: Instant::now() + limits.header_timeout,
            }),
            parked_reader: Mutex::new(None),
        })
    }

    fn update(&self, change: impl FnOnce(Phase) -> Phase) {
        let mut phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        *phase = change(*phase);
    }

    fn deadline(&self) -> Option<Instant> {
        match *self.phase.lock().unwrap_or_else(|e| e.into_inner()) {
            Phase::Head { deadline } | Phase::Idle { deadline } => Some(deadline),
            Phase::Busy { .. } => None,
        }
    }

    fn request_started(&self) {
        self.update(|phase| match phase {
            Phase::Busy { in_flight } => Phase::Busy {
                in_flight: in_flight + 1,
            },
            _ => Phase::Busy { in_flight: 1 },
        });
    }

    fn request_finished(&self) {
        let idle_timeout = self.limits.idle_timeout;
        self.update(|phase| match phase {
            Phase::Busy { in_flight } if in_flight > 1 => Phase::Busy {
                in_flight: in_flight - 1,
            },
            _ => Phase::Idle {
                deadline: Instant::now() + idle_timeout,
            },
        });
        let parked = self
            .parked_reader
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(waker) = parked {
            waker.wake();
        }
    }

    fn park_reader(&self, waker: &Waker) {
        let mut parked = self.parked_reader.lock().unwrap_or_else(|e| e.into_inner());
        match parked.as_mut() {
            Some(current) if current.will_wake(waker) => {}
            _ => *parked = Some(waker.clone()),
        }
    }

    fn bytes_read(&self) {
        let header_timeout = self.limits.header_timeout;
        self.update(|phase| match phase {
            Phase::Idle { .. } => Phase::Head {
                deadline: Instant::now() + header_timeout,
            },
            other => other,
        });
    }

    fn bytes_written(&self) {
        let idle_timeout = self.limits.idle_timeout;
        self.update(|phase| match phase {
            Phase::Idle { .. } => Phase::Idle {
                deadline: Instant::now() + idle_timeout,
            },
            other => other,
        });
    }
}

/// A TCP stream that fails with `TimedOut` when it waits on the peer past the deadline of
/// the connection's phase.
pub(crate) struct DeadlineIo {
    stream: TcpStream,
    tracker: Arc<Tracker>,
    timer: Pin<Box<Sleep>>,
    armed_for: Option<Instant>,
}

impl DeadlineIo {
    pub(crate) fn new(stream: TcpStream, tracker: Arc<Tracker>) -> DeadlineIo {
        let now = Instant::now();
        DeadlineIo {
            stream,
            tracker,
            timer: Box::pin(sleep_until(now)),
            armed_for: None,
        }
    }

    /// Called when the socket is not ready: registers the phase's deadline, and fails once
    /// it has passed.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let Some(deadline) = self.tracker.deadline() else {
            self.tracker.park_reader(cx.waker());
            return Poll::Pending;
        };
        if self.armed_for != Some(deadline) {
            self.timer.as_mut().reset(deadline);
            self.armed_for = Some(deadline);
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(io::Error::new(
                io::ErrorKind::TimedOut,
                "the peer was silent past the connection's deadline",
            )),
            Poll::Pending => Poll::Pending,
        }
    }

    fn pending_or_timeout<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        self.poll_deadline(cx).map(Err)
    }
}

impl AsyncRead for DeadlineIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.tracker.bytes_read();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(err)) => Poll::Ready(Err(err)),
            Poll::Pending => this.pending_or_timeout(cx),
        }
    }
}

impl AsyncWrite for DeadlineIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_write(cx, buf) {
            Poll::Ready(Ok(written)) => {
                if written > 0 {
                    this.tracker.bytes_written();
                }
                Poll::Ready(Ok(written))
            }
            Poll::Ready(Err(err)) => Poll::Ready(Err(err)),
            Poll::Pending => this.pending_or_timeout(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_write_vectored(cx, bufs) {
            Poll::Ready(Ok(written)) => {
                if written > 0 {
                    this.tracker.bytes_written();
                }
                Poll::Ready(Ok(written))
            }
            Poll::Ready(Err(err)) => Poll::Ready(Err(err)),
            Poll::Pending => this.pending_or_timeout(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_flush(cx) {
            Poll::Pending => this.pending_or_timeout(cx),
            ready => ready,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_shutdown(cx) {
            Poll::Pending => this.pending_or_timeout(cx),
            ready => ready,
        }
    }
}

/// Marks the connection busy from the moment a request head is complete until its response
/// is ready (or the request is abandoned).
#[derive(Clone)]
pub(crate) struct TrackedService<S> {
    inner: S,
    tracker: Arc<Tracker>,
}

impl<S> TrackedService<S> {
    pub(crate) fn new(inner: S, tracker: Arc<Tracker>) -> TrackedService<S> {
        TrackedService { inner, tracker }
    }
}

/// Ends the busy phase when dropped, whether the response was produced or abandoned.
struct InFlight(Arc<Tracker>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.request_finished();
    }
}

type ResponseFuture<E> = Pin<Box<dyn Future<Output = Result<Response, E>> + Send>>;

impl<S> Service<hyper::Request<Incoming>> for TrackedService<S>
where
    S: Service<hyper::Request<Incoming>, Response = Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = ResponseFuture<S::Error>;

    fn call(&self, request: hyper::Request<Incoming>) -> Self::Future {
        self.tracker.request_started();
        let in_flight = InFlight(self.tracker.clone());
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await;
            drop(in_flight);
            response
        })
    }
}
