//! Running every case under every (strategy, model) pair, a bounded number at once.
//!
//! Invariants: each (case, pair) is reviewed exactly once; at most `parallel` reviews
//! run at the same time; a review that fails becomes a row with its error and the
//! other reviews go on; rows come back in case order, then pair order, whatever
//! order the reviews finished in.

use std::time::{Duration, Instant};

use futures::StreamExt;

use super::cases::Case;
use super::grade::Grades;
use super::judge::JudgeTally;
use super::noise::Screening;
use super::score::{ResultRow, score_case};
use crate::review::finding::Finding;
use crate::review::stats::Stats;
use crate::review::verification::{DroppedFinding, MergedFinding};

/// A (strategy, model) pair as the report names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PairLabel {
    /// The strategy label.
    pub strategy: String,
    /// The model.
    pub model: String,
}

/// What one review reported.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reviewed {
    /// Every finding posted (anchored or not).
    pub findings: Vec<Finding>,
    /// The findings verification dropped, with its reasons.
    pub dropped: Vec<DroppedFinding>,
    /// The duplicates merged before verification.
    pub merged: Vec<MergedFinding>,
    /// The run's counters.
    pub stats: Stats,
}

/// Why a case's review left nothing to score.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum CaseError {
    /// The run named a pair of configurations that does not exist.
    #[error("no pair {0}")]
    NoPair(usize),
    /// The review failed: its error and causes as text ([`crate::errors::chain`]), kept as
    /// text since a run is cloned into the report.
    #[error("{0}")]
    Review(String),
}

/// What one review left: what it reported, or why it failed.
#[derive(Debug, Clone)]
pub(crate) struct CaseRun {
    /// What the review reported, or the error.
    pub result: Result<Reviewed, CaseError>,
    /// The review's events file, when one was written.
    pub events: Option<String>,
    /// What the judge said of the findings near the bugs (`--judge`), when it was asked.
    pub judged: Option<JudgeTally>,
    /// The judge's grades of the findings that match no expected bug (`--judge`).
    pub graded: Option<Grades>,
}

/// Reviews one case under one pair (the engine of `redline review`, in the binary).
#[async_trait::async_trait]
pub(crate) trait CaseReviewer: Send + Sync {
    /// Reviews `case` under pair number `pair`.
    async fn review(&self, case: &Case, pair: usize) -> CaseRun;
}

/// How far the run is, after each finished review.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Reviews finished.
    pub done: usize,
    /// Reviews in all.
    pub total: usize,
    /// Since the run started.
    pub elapsed: Duration,
    /// The review that just finished: case, pair and outcome.
    pub last: String,
}

impl Progress {
    /// Time left at the pace so far; `None` before the first review is done.
    pub(crate) fn eta(&self) -> Option<Duration> {
        (self.done > 0).then(|| {
            self.elapsed
                .mul_f64((self.total - self.done) as f64 / self.done as f64)
        })
    }

    /// One line for stderr: `[3/12] <last> · elapsed 0:42 · left ~2:10`.
    pub fn line(&self) -> String {
        let left = self.eta().map_or_else(|| "?".to_string(), clock);
        format!(
            "[{}/{}] {} · elapsed {} · left ~{}",
            self.done,
            self.total,
            self.last,
            clock(self.elapsed),
            left
        )
    }
}

/// `m:ss`, or `h:mm:ss` past an hour.
pub(crate) fn clock(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// Reviews every case under every pair, `parallel` at once, calling `on_progress`
/// after each; returns one row per (case, pair).
pub(crate) async fn run_all(
    cases: &[Case],
    pairs: &[PairLabel],
    reviewer: &dyn CaseReviewer,
    parallel: usize,
    on_progress: &mut (dyn FnMut(&Progress) + Send),
) -> Vec<ResultRow> {
    let started = Instant::now();
    let jobs: Vec<(usize, usize)> = (0..cases.len())
        .flat_map(|c| (0..pairs.len()).map(move |p| (c, p)))
        .collect();
    let total = jobs.len();
    let mut reviews = futures::stream::iter(jobs)
        .map(|(c, p)| async move {
            let start = Instant::now();
            let run = reviewer.review(&cases[c], p).await;
            let row = row_of(&cases[c], &pairs[p], run, start.elapsed());
            (c, p, row)
        })
        .buffer_unordered(parallel.max(1));
    let mut rows = Vec::with_capacity(total);
    while let Some((c, p, row)) = reviews.next().await {
        on_progress(&Progress {
            done: rows.len() + 1,
            total,
            elapsed: started.elapsed(),
            last: format!(
                "{} {}/{}: {}",
                row.case,
                row.strategy,
                row.model,
                outcome(&row)
            ),
        });
        rows.push((c, p, row));
    }
    rows.sort_by_key(|(c, p, _)| (*c, *p));
    rows.into_iter().map(|(_, _, row)| row).collect()
}

fn outcome(row: &ResultRow) -> String {
    let verdict = verdict(row);
    match &row.limit_reached {
        Some(limit) => format!("{verdict} ({limit} limit reached)"),
        None => verdict,
    }
}

fn verdict(row: &ResultRow) -> String {
    match (&row.error, row.caught, row.clean) {
        (Some(error), _, _) => format!("failed ({error})"),
        (None, _, true) => format!("clean, {}", count(row.findings, "finding")),
        (None, Some(true), false) => {
            format!("caught {}, {}", bugs(row), count(row.findings, "finding"))
        }
        (None, _, false) => format!("missed {}, {}", bugs(row), count(row.findings, "finding")),
    }
}

/// `1/2 bugs`: the bugs caught of the case's.
pub(crate) fn bugs(row: &ResultRow) -> String {
    let noun = if row.expected_total == 1 {
        "bug"
    } else {
        "bugs"
    };
    format!("{}/{} {noun}", row.expected_caught, row.expected_total)
}

/// `1 finding`, `2 findings`.
pub(crate) fn count(n: usize, noun: &str) -> String {
    crate::text::count(n, noun, &format!("{noun}s"))
}

/// The scored row of one review.
pub(crate) fn row_of(case: &Case, pair: &PairLabel, run: CaseRun, took: Duration) -> ResultRow {
    let mut row = ResultRow {
        case: case.id.clone(),
        strategy: pair.strategy.clone(),
        model: pair.model.clone(),
        clean: case.clean,
        caught: None,
        findings: 0,
        true_positives: 0,
        expected_total: case.bugs().len(),
        expected_caught: 0,
        expected_recall: None,
        tokens: 0,
        cost_usd: None,
        seconds: took.as_secs_f64(),
        limit_reached: None,
        error: None,
        events: run.events,
        judge: None,
        screening: Screening::default(),
        grades: None,
    };
    match run.result {
        Ok(Reviewed {
            findings,
            dropped,
            merged,
            stats,
        }) => {
            let score = score_case(case, &findings);
            row.caught = Some(score.caught);
            row.findings = score.findings;
            row.true_positives = score.true_positives;
            row.expected_total = score.expected_total;
            row.expected_caught = score.expected_caught;
            row.expected_recall = (score.expected_total > 0)
                .then(|| score.expected_caught as f64 / score.expected_total as f64);
            row.tokens = stats.prompt_tokens + stats.completion_tokens;
            row.cost_usd = stats.cost_usd;
            row.limit_reached = stats.limit_reached.map(|l| l.as_str().to_string());
            row.judge = run.judged;
            row.grades = run.graded;
            row.screening = Screening::of(case, &findings, dropped, merged, &stats);
        }
        Err(error) => row.error = Some(error.to_string()),
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_estimates_the_time_left_at_the_pace_so_far() {
        let progress = Progress {
            done: 3,
            total: 12,
            elapsed: Duration::from_secs(42),
            last: "fix-abc react/m: caught, 1 finding".into(),
        };
        assert_eq!(progress.eta(), Some(Duration::from_secs(126)));
        assert_eq!(
            progress.line(),
            "[3/12] fix-abc react/m: caught, 1 finding · elapsed 0:42 · left ~2:06"
        );
        assert_eq!(clock(Duration::from_secs(3725)), "1:02:05");
        let first = Progress {
            done: 0,
            ..progress
        };
        assert_eq!(first.eta(), None);
    }
}
