//! The durable review queue and the worker pool that drains it.
//!
//! The server records each webhook delivery and, for review requests, enqueues a [`NewJob`]
//! in the same transaction ([`Queue::accept_delivery`]); concurrent deliveries share one
//! transaction (group commit), and each is answered only once that transaction committed.
//! Workers ([`WorkerPool`]) claim jobs with a lease, renew it while a [`JobRunner`] runs the
//! job, and settle the job when the run ends; on SQLite, claims and completions are committed
//! in the intake's groups too. A worker that dies leaves its lease to expire; the job is then claimed again
//! (at-least-once). Backends: SQLite (`sqlite://PATH`) and PostgreSQL (`postgres://...`).
//!
//! Deliveries and jobs carry their forge ([`ForgeKind`]): a delivery id is unique per forge,
//! and the per-pull-request rules (supersede, stop request, one running job) apply to the jobs
//! of one forge's pull request, so GitHub and GitLab jobs with the same repository name and
//! number never touch each other.
//!
//! Each job also records its check beside the change (a GitHub check run, a GitLab commit
//! status: [`Queue::begin_check`]), so that it is made once and completed once whichever
//! process gets there, and the checks left open are found ([`Queue::unsettled_checks`]).

mod checkpoint;
mod checks;
mod clock;
mod db;
mod error;
mod intake;
mod intake_db;
mod intake_postgres;
mod intake_sqlite;
mod lease;
mod store;
mod supersede;
mod threads;
mod types;
mod worker;

pub use crate::forge::ForgeKind;
pub use checks::{CheckSlot, STALE_CREATION, ShownCheck, UnsettledCheck};
pub use clock::Clock;
pub use error::QueueError;
pub use store::Queue;
pub use types::{
    Accepted, FailOutcome, IntakeStats, Job, JobId, JobKind, JobState, NewDelivery, NewJob,
    QueueOptions, RetryDecision, ReviewTrigger,
};
pub use worker::{
    JobCause, JobError, JobRunner, RunOutcome, ShutdownOutcome, WorkerConfig, WorkerPool,
};
pub(crate) use worker::{JobObserver, JobOutcome};
