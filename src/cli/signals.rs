//! SIGINT and SIGTERM during a review: caught so the run can end its event log with a
//! cancelled record and exit with the conventional code (128 + signal number).

/// A termination signal that arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Ctrl-C.
    Interrupt,
    /// `kill`, a CI runner's cancellation.
    Terminate,
}

impl Stop {
    /// The signal's name, as in `kill -l`.
    pub fn name(self) -> &'static str {
        match self {
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
        }
    }

    /// The exit code a shell reports for a process ended by this signal.
    pub(crate) fn exit_code(self) -> i32 {
        match self {
            Stop::Interrupt => super::EXIT_SIGINT,
            Stop::Terminate => super::EXIT_SIGTERM,
        }
    }
}

/// Handlers for both signals; from [`StopSignals::install`] on, the signals no longer
/// end the process by themselves.
#[derive(Debug)]
pub(crate) struct StopSignals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    /// Installs the handlers. A handler that cannot be installed leaves that signal's
    /// default behaviour (the process ends at once).
    pub fn install() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            StopSignals {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        {
            StopSignals {}
        }
    }

    /// Waits for the next signal.
    pub async fn recv(&mut self) -> Stop {
        #[cfg(unix)]
        {
            async fn next(signal: &mut Option<tokio::signal::unix::Signal>) {
                match signal {
                    Some(signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
            tokio::select! {
                _ = next(&mut self.interrupt) => Stop::Interrupt,
                _ = next(&mut self.terminate) => Stop::Terminate,
            }
        }
        #[cfg(not(unix))]
        {
            match tokio::signal::ctrl_c().await {
                Ok(()) => Stop::Interrupt,
                Err(_) => std::future::pending().await,
            }
        }
    }
}
