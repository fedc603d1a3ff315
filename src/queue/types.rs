//! The values that go into and come out of the queue.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::clock::Clock;
use crate::forge::ForgeKind;

/// The database id of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct JobId(pub i64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting for a worker (possibly until a retry time).
    Queued,
    /// Leased by a worker.
    Running,
    /// Finished; the runner reported success.
    Succeeded,
    /// Finished; out of attempts or failed permanently.
    Failed,
    /// Stopped at a safe point because a newer job for the same PR arrived.
    Cancelled,
    /// Replaced by a newer job for the same PR before it started.
    Superseded,
}

impl JobState {
    /// Every state, in a stable order.
    pub const ALL: [JobState; 6] = [
        JobState::Queued,
        JobState::Running,
        JobState::Succeeded,
        JobState::Failed,
        JobState::Cancelled,
        JobState::Superseded,
    ];

    /// The name stored in the database and used as a metrics label.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
            JobState::Superseded => "superseded",
        }
    }

    /// Whether the job will never run again.
    pub fn is_terminal(self) -> bool {
        !matches!(self, JobState::Queued | JobState::Running)
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for JobState {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JobState::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| format!("unknown job state {s:?}"))
    }
}

/// What a job asks the worker to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum JobKind {
    /// Review the pull request (a push, an opened or reopened pull request): the job replaces
    /// the pull request's queued jobs and asks its running one to stop.
    Review {
        /// Strategy override.
        strategy: Option<String>,
    },
    /// Review the pull request because a `/redline review` comment asked for it. Anyone who
    /// can comment can send one; the worker checks the commenter may ask for a review, so
    /// until then the job replaces nothing and stops nothing (it waits its turn).
    Requested {
        /// Strategy override from `/redline review --strategy NAME`.
        strategy: Option<String>,
    },
}

impl JobKind {
    /// The name stored in the `kind` column.
    pub fn name(&self) -> &'static str {
        match self {
            JobKind::Review { .. } => "review",
            JobKind::Requested { .. } => "requested",
        }
    }

    /// The strategy override, if any.
    pub fn strategy(&self) -> Option<&str> {
        match self {
            JobKind::Review { strategy } | JobKind::Requested { strategy } => strategy.as_deref(),
        }
    }

    /// Whether queueing the job supersedes the pull request's queued jobs and asks its
    /// running job to stop (the intake's rule, for both backends: `queue::supersede`).
    pub fn replaces_earlier(&self) -> bool {
        matches!(self, JobKind::Review { .. })
    }
}

/// Why a review was requested; the server stores it as the job's `payload`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "trigger")]
pub enum ReviewTrigger {
    /// A `pull_request` event (opened, reopened, synchronize, ready_for_review).
    PullRequest {
        /// The event's action.
        action: String,
        /// Login of the account that caused the event.
        sender: Option<String>,
        /// Base branch name.
        base_ref: String,
        /// Head branch name.
        head_ref: String,
    },
    /// A `/redline review` comment. The worker must check that the commenter may request it.
    Command {
        /// The commenter's login.
        commenter: String,
        /// GitHub's `author_association` of the commenter (OWNER, MEMBER, COLLABORATOR, ...).
        author_association: String,
        /// Id of the comment, for replies and reactions.
        comment_id: u64,
        /// `--force`: review even a head already reviewed (absent in jobs stored before it).
        #[serde(default)]
        force: bool,
    },
    /// A "Re-run" of Redline's check (GitHub `check_run` or `check_suite` `rerequested`)
    /// of the commit the job names. The worker checks that the requester may ask for a
    /// review, as for a command.
    Rerun {
        /// Who asked for the re-run.
        requested_by: String,
    },
}

impl ReviewTrigger {
    /// Who asked for the review, when someone did (a command, a re-run): their access is
    /// checked before the review runs.
    pub fn into_requester(self) -> Option<String> {
        match self {
            ReviewTrigger::Command { commenter, .. } => Some(commenter),
            ReviewTrigger::Rerun { requested_by } => Some(requested_by),
            ReviewTrigger::PullRequest { .. } => None,
        }
    }
}

/// A webhook delivery as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDelivery {
    /// The forge that sent it: delivery ids are unique per forge.
    pub forge: ForgeKind,
    /// GitHub's `X-GitHub-Delivery`, GitLab's `X-Gitlab-Event-UUID` (with `forge`, the
    /// dedupe key).
    pub delivery_id: String,
    /// `X-GitHub-Event`, `X-Gitlab-Event`.
    pub event: String,
    /// The payload's `action`, when it has one.
    pub action: Option<String>,
    /// When the server received it.
    pub received_at: DateTime<Utc>,
}

/// A job to enqueue.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    /// The forge of the pull (merge) request: jobs of different forges never supersede,
    /// stop or block each other, whatever their repository names and numbers.
    pub forge: ForgeKind,
    /// `owner/name` (GitLab: the project's full path).
    pub repo_full_name: String,
    /// The GitHub App installation that can act on the repository (GitLab has none).
    pub installation_id: Option<u64>,
    /// Pull request (merge request) number.
    pub pr_number: u64,
    /// Head commit, when the event names it (comment events do not).
    pub head_sha: Option<String>,
    /// What to do.
    pub kind: JobKind,
    /// Extra data for the runner (the server stores a [`ReviewTrigger`]).
    pub payload: serde_json::Value,
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Database id.
    pub id: JobId,
    /// The delivery that created it, if any (an id of `forge`'s).
    pub delivery_id: Option<String>,
    /// The forge of the pull (merge) request.
    pub forge: ForgeKind,
    /// `owner/name`.
    pub repo_full_name: String,
    /// GitHub App installation id (GitLab has none).
    pub installation_id: Option<u64>,
    /// Pull request number.
    pub pr_number: u64,
    /// Head commit, when known.
    pub head_sha: Option<String>,
    /// What to do.
    pub kind: JobKind,
    /// Extra data for the runner.
    pub payload: serde_json::Value,
    /// Current state.
    pub state: JobState,
    /// How many times it was leased (the current lease included).
    pub attempts: u32,
    /// Leases allowed before it fails for good.
    pub max_attempts: u32,
    /// Not runnable before this time (retry backoff).
    pub run_at: DateTime<Utc>,
    /// The worker holding the lease.
    pub lease_owner: Option<String>,
    /// When the lease runs out unless renewed.
    pub lease_until: Option<DateTime<Utc>>,
    /// A newer job for the same PR asked this one to stop.
    pub cancel_requested: bool,
    /// Reason of the last failure.
    pub last_error: Option<String>,
    /// When it was enqueued.
    pub created_at: DateTime<Utc>,
    /// When it reached a terminal state.
    pub finished_at: Option<DateTime<Utc>>,
}

impl Job {
    /// The payload read as a [`ReviewTrigger`] (what the server stores).
    pub fn trigger(&self) -> Result<ReviewTrigger, serde_json::Error> {
        serde_json::from_value(self.payload.clone())
    }
}

/// What [`crate::queue::Queue::accept_delivery`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// The delivery id was seen before; nothing was stored or queued.
    Duplicate,
    /// The delivery was recorded; no job was given.
    Recorded,
    /// The delivery was recorded and a job queued.
    Queued {
        /// The new job.
        job_id: JobId,
        /// Queued jobs of the same PR that this one replaced.
        superseded: u64,
        /// Running jobs of the same PR that were asked to stop.
        cancel_requested: u64,
    },
}

/// Counters of the delivery intake ([`crate::queue::Queue::intake_stats`]), since the queue
/// was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntakeStats {
    /// Deliveries answered (stored, duplicate or failed).
    pub deliveries: u64,
    /// Workers' claims and completions answered through the committer (on PostgreSQL, those
    /// of a group of fewer than two deliveries commit each on its own, outside `commits`).
    pub worker_members: u64,
    /// Groups the committer tried to store, one transaction each.
    pub groups: u64,
    /// Transactions committed: one per group stored whole, plus one per member of a failed
    /// group stored alone.
    pub commits: u64,
    /// Groups whose transaction failed, whose members were then stored one at a time.
    pub groups_retried: u64,
    /// Most members (deliveries, claims, completions) stored in one transaction.
    pub largest_group: u64,
    /// Members handed over and waiting for the next group.
    pub waiting: u64,
    /// Members in the group being stored now.
    pub committing: u64,
}

/// Whether a failed job may run again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    /// Transient failure: retry with backoff while attempts remain.
    Retry,
    /// Permanent failure: fail now.
    GiveUp,
}

/// What [`crate::queue::Queue::fail`] did with the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOutcome {
    /// Queued again, runnable at `run_at`.
    Retrying {
        /// Earliest time of the next attempt.
        run_at: DateTime<Utc>,
    },
    /// Failed for good.
    Failed,
    /// A newer job for the PR exists; this one is cancelled instead of retried.
    Cancelled,
}

/// Tunables of a [`crate::queue::Queue`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueOptions {
    /// Leases a job may take before it fails for good (default 3).
    pub max_attempts: u32,
    /// Delay before the first retry; doubled for each further attempt (default 10 s).
    pub retry_base: Duration,
    /// Longest retry delay (default 10 min).
    pub retry_cap: Duration,
    /// Connections in the pool (default 8).
    pub max_connections: u32,
    /// SQLite only: how long a writer waits for the database lock (default 5 s).
    pub sqlite_busy_timeout: Duration,
    /// Where the queue reads the time (default: the system's clock; tests set their own).
    pub clock: Clock,
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions {
            max_attempts: 3,
            retry_base: Duration::from_secs(10),
            retry_cap: Duration::from_secs(600),
            max_connections: 8,
            sqlite_busy_timeout: Duration::from_secs(5),
            clock: Clock::system(),
        }
    }
}

impl QueueOptions {
    /// The delay before the attempt that follows `attempts_so_far` leases.
    pub(crate) fn backoff(&self, attempts_so_far: u32) -> Duration {
        crate::backoff::exponential(
            self.retry_base,
            attempts_so_far.saturating_sub(1),
            self.retry_cap,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let options = QueueOptions {
            retry_base: Duration::from_secs(10),
            retry_cap: Duration::from_secs(35),
            ..QueueOptions::default()
        };
        assert_eq!(options.backoff(1), Duration::from_secs(10));
        assert_eq!(options.backoff(2), Duration::from_secs(20));
        assert_eq!(options.backoff(3), Duration::from_secs(35));
        assert_eq!(options.backoff(60), Duration::from_secs(35));
    }

    #[test]
    fn states_round_trip_through_their_names() {
        for state in JobState::ALL {
            assert_eq!(state.as_str().parse::<JobState>(), Ok(state));
        }
        assert!("bogus".parse::<JobState>().is_err());
    }

    #[test]
    fn triggers_round_trip_through_json() {
        let trigger = ReviewTrigger::Command {
            commenter: "octocat".into(),
            author_association: "MEMBER".into(),
            comment_id: 7,
            force: true,
        };
        let value = serde_json::to_value(&trigger).unwrap_or_default();
        assert_eq!(value["trigger"], "command");
        assert_eq!(
            serde_json::from_value::<ReviewTrigger>(value).ok(),
            Some(trigger)
        );
        // A job stored before `--force` existed is not forced.
        let stored = serde_json::json!({"trigger": "command", "commenter": "a", "author_association": "", "comment_id": 1});
        assert!(matches!(
            serde_json::from_value::<ReviewTrigger>(stored),
            Ok(ReviewTrigger::Command { force: false, .. })
        ));
    }
}
