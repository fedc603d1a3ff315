//! The supersede rule, written once for both backends: what storing a group of deliveries
//! does, worked out as if its members had been stored one after the other. Each backend runs
//! the statements ([`super::intake_sqlite`], [`super::intake_postgres`]); this module decides
//! what they write and what each member is told.
//!
//! The rule:
//! - A delivery whose (forge, id) is stored already, or comes earlier in the group, is a
//!   duplicate: nothing of it is stored.
//! - A pull request is its (forge, repository, number): jobs of different forges never touch
//!   each other.
//! - A job that replaces earlier ones (a `review`; a `requested` review replaces nothing, see
//!   [`super::types::JobKind::replaces_earlier`]) supersedes the queued jobs of its pull
//!   request and asks its running job to stop. For the stored jobs the group does this once
//!   (the first such job of the pull request reports them); a new job followed in the group by
//!   a replacing job of its pull request is stored superseded, and that job reports it.
//!
//! Invariants the backends keep: the stored live jobs are read and replaced in the transaction
//! that inserts the group, after every other intake of the same pull requests committed or
//! before it started (SQLite: one writer; PostgreSQL: per-PR advisory locks taken in one
//! global order before the live jobs are read); new jobs are inserted in group order, so
//! their ids follow it.

use std::collections::{HashMap, HashSet};

use super::error::QueueError;
use super::intake_db::{Entry, StoredJob};
use super::types::{Accepted, JobId, JobState};
use crate::forge::ForgeKind;

/// A pull (merge) request: forge, repository and number.
pub(super) type Pr<'a> = (ForgeKind, &'a str, i64);

/// Per pull request, the stored jobs a group replaced: (superseded, asked to stop).
pub(super) type Replaced<'a> = HashMap<Pr<'a>, (u64, u64)>;

/// New job ids by their delivery's forge and id.
pub(super) type JobIds = HashMap<(ForgeKind, String), i64>;

/// For each entry, whether it is the first of its (forge, delivery id) in the group: only
/// those are offered to the database.
pub(super) fn first_in_group(entries: &[Entry]) -> Vec<bool> {
    let mut seen: HashSet<(ForgeKind, &str)> = HashSet::with_capacity(entries.len());
    entries
        .iter()
        .map(|entry| seen.insert((entry.delivery.forge, entry.delivery.delivery_id.as_str())))
        .collect()
}

/// What a group writes once it is known which of its deliveries are new.
pub(super) struct GroupPlan<'a> {
    entries: &'a [Entry],
    /// Per entry: its delivery was stored now (new, first in the group).
    fresh: Vec<bool>,
    /// The new jobs in group order: entry index and the state it is stored in.
    jobs: Vec<(usize, JobState)>,
    /// Pull requests whose stored live jobs the group replaces.
    replacing: Vec<Pr<'a>>,
}

impl<'a> GroupPlan<'a> {
    /// `fresh`: per entry, whether its delivery was stored now.
    pub(super) fn new(entries: &'a [Entry], fresh: Vec<bool>) -> GroupPlan<'a> {
        let new_jobs: Vec<usize> = (0..entries.len())
            .filter(|&index| fresh[index] && entries[index].job.is_some())
            .collect();
        // The last replacing job of each PR: every new job of the PR before it is superseded
        // within the group.
        let mut last_of_pr: HashMap<Pr<'a>, usize> = HashMap::new();
        let mut replacing = Vec::new();
        for &index in &new_jobs {
            if let Some(pr) = replacing_pr(&entries[index])
                && last_of_pr.insert(pr, index).is_none()
            {
                replacing.push(pr);
            }
        }
        let jobs = new_jobs
            .into_iter()
            .map(|index| {
                let last = entries[index]
                    .job
                    .as_ref()
                    .and_then(|job| last_of_pr.get(&pr_of(job)));
                let state = match last {
                    Some(&last) if index < last => JobState::Superseded,
                    _ => JobState::Queued,
                };
                (index, state)
            })
            .collect();
        GroupPlan {
            entries,
            fresh,
            jobs,
            replacing,
        }
    }

    /// The new jobs to insert, in group order, each with its delivery and the state it is
    /// stored in (superseded: a later job of the group replaced it).
    pub(super) fn jobs(&self) -> impl Iterator<Item = (&'a Entry, &'a StoredJob, JobState)> + '_ {
        self.jobs.iter().filter_map(|&(index, state)| {
            let entry = &self.entries[index];
            entry.job.as_ref().map(|job| (entry, job, state))
        })
    }

    /// Whether the group queues any job.
    pub(super) fn has_jobs(&self) -> bool {
        !self.jobs.is_empty()
    }

    /// The pull requests whose stored queued jobs are superseded and running job asked to
    /// stop, in the order of their first replacing job.
    pub(super) fn replacing(&self) -> &[Pr<'a>] {
        &self.replacing
    }

    /// Each member's outcome, in group order, from the inserted jobs' ids and what the
    /// replacement of stored jobs touched.
    pub(super) fn outcomes(
        &self,
        ids: &JobIds,
        replaced: &Replaced<'a>,
    ) -> Result<Vec<Accepted>, QueueError> {
        let mut group = GroupReplacements::default();
        let mut outcomes = Vec::with_capacity(self.entries.len());
        for (entry, &fresh) in self.entries.iter().zip(&self.fresh) {
            let outcome = match (fresh, &entry.job) {
                (false, _) => Accepted::Duplicate,
                (true, None) => Accepted::Recorded,
                (true, Some(job)) => {
                    let key = (entry.delivery.forge, entry.delivery.delivery_id.clone());
                    let job_id = ids
                        .get(&key)
                        .copied()
                        .ok_or(QueueError::Database(sqlx::Error::RowNotFound))?;
                    let (superseded, cancel_requested) =
                        group.queue(pr_of(job), job.replaces, replaced);
                    Accepted::Queued {
                        job_id: JobId(job_id),
                        superseded,
                        cancel_requested,
                    }
                }
            };
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }
}

/// Counts a stored job that the replacement touched (returned by the database as its forge,
/// repository, number and new state) for the listed pull request it belongs to.
pub(super) fn count_replaced<'a>(
    replaced: &mut Replaced<'a>,
    listed: &[Pr<'a>],
    touched: (Option<ForgeKind>, &str, i64),
    state: JobState,
) {
    let (forge, repo, number) = touched;
    let Some(pr) = listed
        .iter()
        .copied()
        .find(|pr| Some(pr.0) == forge && (pr.1, pr.2) == (repo, number))
    else {
        return;
    };
    let counts = replaced.entry(pr).or_default();
    match state {
        JobState::Superseded => counts.0 += 1,
        _ => counts.1 += 1,
    }
}

/// What each new job of a group replaced, as if the group's jobs were queued one by one.
#[derive(Default)]
struct GroupReplacements<'a> {
    /// PRs whose stored jobs a job of the group already replaced.
    stored_taken: HashSet<Pr<'a>>,
    /// New jobs of each PR queued since its last replacing job (or the group's start).
    waiting: HashMap<Pr<'a>, u64>,
}

impl<'a> GroupReplacements<'a> {
    /// Queues a job of `pr`; returns how many jobs it superseded and how many it asked to
    /// stop. The first replacing job of a PR takes the stored jobs (`replaced`); each takes
    /// the group's jobs of its PR queued before it since the previous replacing one.
    fn queue(&mut self, pr: Pr<'a>, replaces: bool, replaced: &Replaced<'a>) -> (u64, u64) {
        let waiting = self.waiting.entry(pr).or_default();
        if !replaces {
            *waiting += 1;
            return (0, 0);
        }
        let (stored_queued, running) = replaced.get(&pr).copied().unwrap_or((0, 0));
        let stored = if self.stored_taken.insert(pr) {
            stored_queued
        } else {
            0
        };
        let superseded = stored + *waiting;
        *waiting = 1;
        (superseded, running)
    }
}

fn pr_of(job: &StoredJob) -> Pr<'_> {
    (job.forge, job.repo_full_name.as_str(), job.pr_number)
}

/// The PR of an entry's job when queueing it replaces the PR's earlier jobs.
fn replacing_pr(entry: &Entry) -> Option<Pr<'_>> {
    entry.job.as_ref().filter(|job| job.replaces).map(pr_of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::types::{JobKind, NewDelivery, NewJob, QueueOptions};

    fn entry(forge: ForgeKind, id: &str, job: Option<JobKind>) -> Entry {
        let delivery = NewDelivery {
            forge,
            delivery_id: id.to_string(),
            event: "pull_request".to_string(),
            action: None,
            received_at: chrono::Utc::now(),
        };
        let job = job.map(|kind| NewJob {
            forge,
            repo_full_name: "o/r".to_string(),
            installation_id: None,
            pr_number: 1,
            head_sha: None,
            kind,
            payload: serde_json::Value::Null,
        });
        Entry::new(delivery, job, &QueueOptions::default()).expect("a valid entry")
    }

    #[test]
    fn a_group_plays_out_as_its_members_one_after_the_other() {
        let review = || Some(JobKind::Review { strategy: None });
        let requested = Some(JobKind::Requested { strategy: None });
        let (github, gitlab) = (ForgeKind::GitHub, ForgeKind::GitLab);
        let entries = [
            entry(github, "d1", review()),
            entry(github, "d2", requested),
            entry(github, "d3", review()),
            entry(github, "d1", review()),
            entry(gitlab, "d1", review()),
            entry(github, "d4", None),
        ];
        let fresh = first_in_group(&entries);
        assert_eq!(fresh, [true, true, true, false, true, true]);

        let plan = GroupPlan::new(&entries, fresh);
        let states: Vec<(&str, ForgeKind, JobState)> = plan
            .jobs()
            .map(|(entry, job, state)| (entry.delivery.delivery_id.as_str(), job.forge, state))
            .collect();
        assert_eq!(
            states,
            [
                ("d1", github, JobState::Superseded),
                ("d2", github, JobState::Superseded),
                ("d3", github, JobState::Queued),
                ("d1", gitlab, JobState::Queued),
            ]
        );
        assert_eq!(plan.replacing(), [(github, "o/r", 1), (gitlab, "o/r", 1)]);

        let ids: JobIds = [
            ((github, "d1".to_string()), 10),
            ((github, "d2".to_string()), 11),
            ((github, "d3".to_string()), 12),
            ((gitlab, "d1".to_string()), 13),
        ]
        .into();
        // Two queued jobs and a running one stored for GitHub's `o/r#1`, none for GitLab's.
        let replaced: Replaced<'_> = [((github, "o/r", 1), (2, 1))].into();
        let queued = |id, superseded, cancel_requested| Accepted::Queued {
            job_id: JobId(id),
            superseded,
            cancel_requested,
        };
        assert_eq!(
            plan.outcomes(&ids, &replaced).expect("outcomes"),
            [
                queued(10, 2, 1),
                queued(11, 0, 0),
                queued(12, 2, 1),
                Accepted::Duplicate,
                queued(13, 0, 0),
                Accepted::Recorded,
            ]
        );
    }
}
