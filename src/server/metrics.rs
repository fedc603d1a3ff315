//! Process metrics, rendered by hand in the Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::forge::ForgeKind;
use crate::queue::{JobObserver, JobOutcome, JobState};

/// Upper bounds (seconds) of the review duration histogram buckets.
const DURATION_BUCKETS: [f64; 10] = [0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0];

/// Webhook events that get their own label value; anything else is counted as `other`
/// (the header is sender-controlled, so labels must come from a fixed set).
const KNOWN_EVENTS: [&str; 11] = [
    "pull_request",
    "issue_comment",
    "installation",
    "installation_repositories",
    "ping",
    "pull_request_review",
    "pull_request_review_comment",
    "check_run",
    "check_suite",
    // GitLab's `X-Gitlab-Event` names.
    "Merge Request Hook",
    "Note Hook",
];

/// What the server did with a webhook delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum DeliveryOutcome {
    /// A review job was stored.
    Queued,
    /// Valid, but nothing to do.
    Ignored,
    /// The delivery id was seen before.
    Duplicate,
    /// An installation event was logged.
    Acknowledged,
    /// A `ping`.
    Pong,
    /// Missing or wrong signature.
    Unauthorized,
    /// Missing headers or malformed JSON.
    BadRequest,
    /// The body was larger than the limit.
    TooLarge,
    /// The body arrived too slowly or took too long.
    Timeout,
    /// The budget of unverified bytes had no room.
    Busy,
    /// The database failed.
    Error,
}

impl DeliveryOutcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryOutcome::Queued => "queued",
            DeliveryOutcome::Ignored => "ignored",
            DeliveryOutcome::Duplicate => "duplicate",
            DeliveryOutcome::Acknowledged => "acknowledged",
            DeliveryOutcome::Pong => "pong",
            DeliveryOutcome::Unauthorized => "unauthorized",
            DeliveryOutcome::BadRequest => "bad_request",
            DeliveryOutcome::TooLarge => "too_large",
            DeliveryOutcome::Timeout => "timeout",
            DeliveryOutcome::Busy => "busy",
            DeliveryOutcome::Error => "error",
        }
    }
}

impl JobObserver for Metrics {
    fn job_finished(&self, outcome: JobOutcome, duration: Duration) {
        self.record_job(outcome, duration);
    }
}

/// Counters and histograms of one process. Share it with `Arc`.
#[derive(Debug, Default)]
pub struct Metrics {
    deliveries: Mutex<BTreeMap<(&'static str, DeliveryOutcome), u64>>,
    jobs: Mutex<BTreeMap<JobOutcome, u64>>,
    durations: Histogram,
    /// Input and output tokens per forge (in [`ForgeKind::ALL`]'s order).
    tokens: [(AtomicU64, AtomicU64); ForgeKind::ALL.len()],
    /// USD per forge and repository (`owner/name`, GitLab's project path), for reviews
    /// whose model has a price.
    costs: Mutex<BTreeMap<(ForgeKind, String), f64>>,
}

/// Queue figures read at scrape time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueSnapshot {
    /// Jobs in state `queued`.
    pub depth: u64,
    /// Jobs per state.
    pub by_state: BTreeMap<JobState, u64>,
}

impl Metrics {
    /// Empty metrics.
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// Counts a webhook delivery. Unknown event names are counted as `other`.
    pub(crate) fn record_delivery(&self, event: &str, outcome: DeliveryOutcome) {
        let event = KNOWN_EVENTS
            .into_iter()
            .find(|known| *known == event)
            .unwrap_or("other");
        let mut deliveries = self.deliveries.lock().unwrap_or_else(|e| e.into_inner());
        *deliveries.entry((event, outcome)).or_default() += 1;
    }

    /// Counts a finished job run and records how long it took.
    pub(crate) fn record_job(&self, outcome: JobOutcome, duration: Duration) {
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        *jobs.entry(outcome).or_default() += 1;
        drop(jobs);
        self.durations.observe(duration);
    }

    /// Adds model tokens spent by a review or an answer on `forge` (the pipelines call this).
    pub fn add_model_tokens(&self, forge: ForgeKind, input: u64, output: u64) {
        let (input_tokens, output_tokens) = &self.tokens[forge as usize];
        input_tokens.fetch_add(input, Ordering::Relaxed);
        output_tokens.fetch_add(output, Ordering::Relaxed);
    }

    /// Adds the cost of a review of `repository` on `forge` (`owner/name`, GitLab's
    /// project path; the pipelines call this when the model's price is known).
    pub(crate) fn add_review_cost(&self, forge: ForgeKind, repository: &str, usd: f64) {
        let mut costs = self.costs.lock().unwrap_or_else(|e| e.into_inner());
        *costs.entry((forge, repository.to_string())).or_default() += usd;
    }

    /// The metrics in the Prometheus text exposition format (version 0.0.4).
    /// Queue gauges are left out when `queue` is `None` (database unreachable).
    pub fn render(&self, queue: Option<&QueueSnapshot>) -> String {
        let mut out = String::new();
        self.render_deliveries(&mut out);
        if let Some(queue) = queue {
            render_queue(&mut out, queue);
        }
        self.render_jobs(&mut out);
        self.durations
            .render(&mut out, "redline_review_duration_seconds");
        header(
            &mut out,
            "redline_model_tokens_total",
            "counter",
            "Model tokens spent by reviews.",
        );
        for (forge, (input, output)) in ForgeKind::ALL.iter().zip(&self.tokens) {
            for (kind, counter) in [("input", input), ("output", output)] {
                let value = counter.load(Ordering::Relaxed);
                let _ = writeln!(
                    out,
                    "redline_model_tokens_total{{forge=\"{forge}\",kind=\"{kind}\"}} {value}"
                );
            }
        }
        self.render_costs(&mut out);
        out
    }

    fn render_costs(&self, out: &mut String) {
        header(
            out,
            "redline_review_cost_usd_total",
            "counter",
            "Model cost of reviews in USD at the price table, by forge and repository.",
        );
        let costs = self.costs.lock().unwrap_or_else(|e| e.into_inner());
        for ((forge, repository), usd) in costs.iter() {
            let _ = writeln!(
                out,
                "redline_review_cost_usd_total{{forge=\"{forge}\",repository=\"{}\"}} {usd}",
                escape_label(repository)
            );
        }
    }

    fn render_deliveries(&self, out: &mut String) {
        header(
            out,
            "redline_webhook_deliveries_total",
            "counter",
            "Webhook deliveries by event and outcome.",
        );
        let deliveries = self.deliveries.lock().unwrap_or_else(|e| e.into_inner());
        for ((event, outcome), count) in deliveries.iter() {
            let _ = writeln!(
                out,
                "redline_webhook_deliveries_total{{event=\"{}\",outcome=\"{}\"}} {count}",
                escape_label(event),
                outcome.as_str()
            );
        }
    }

    fn render_jobs(&self, out: &mut String) {
        header(out, "redline_jobs_total", "counter", "Job runs by outcome.");
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        for (outcome, count) in jobs.iter() {
            let _ = writeln!(
                out,
                "redline_jobs_total{{outcome=\"{}\"}} {count}",
                outcome.as_str()
            );
        }
    }
}

fn render_queue(out: &mut String, queue: &QueueSnapshot) {
    header(
        out,
        "redline_queue_depth",
        "gauge",
        "Jobs waiting to be claimed.",
    );
    let _ = writeln!(out, "redline_queue_depth {}", queue.depth);
    header(out, "redline_jobs", "gauge", "Jobs in the queue by state.");
    for (state, count) in &queue.by_state {
        let _ = writeln!(out, "redline_jobs{{state=\"{}\"}} {count}", state.as_str());
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Escapes a label value as the text format requires.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A fixed-bucket histogram of durations.
#[derive(Debug, Default)]
struct Histogram {
    buckets: [AtomicU64; DURATION_BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    fn observe(&self, duration: Duration) {
        let seconds = duration.as_secs_f64();
        if let Some(index) = DURATION_BUCKETS.iter().position(|le| seconds <= *le) {
            self.buckets[index].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str) {
        header(out, name, "histogram", "Time spent running a job.");
        let mut cumulative = 0;
        for (le, bucket) in DURATION_BUCKETS.iter().zip(&self.buckets) {
            cumulative += bucket.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{le}\"}} {cumulative}");
        }
        let count = self.count.load(Ordering::Relaxed);
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "{name}_sum {sum}");
        let _ = writeln!(out, "{name}_count {count}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_events_share_one_label() {
        let metrics = Metrics::new();
        metrics.record_delivery("x\"injected", DeliveryOutcome::Ignored);
        metrics.record_delivery("pull_request", DeliveryOutcome::Queued);
        let text = metrics.render(None);
        assert!(
            text.contains(
                "redline_webhook_deliveries_total{event=\"other\",outcome=\"ignored\"} 1"
            )
        );
        assert!(text.contains(
            "redline_webhook_deliveries_total{event=\"pull_request\",outcome=\"queued\"} 1"
        ));
        assert!(!text.contains("injected"));
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let metrics = Metrics::new();
        metrics.record_job(JobOutcome::Succeeded, Duration::from_millis(200));
        metrics.record_job(JobOutcome::Failed, Duration::from_secs(20));
        metrics.record_job(JobOutcome::Succeeded, Duration::from_secs(4000));
        let text = metrics.render(None);
        assert!(text.contains("redline_review_duration_seconds_bucket{le=\"0.5\"} 1"));
        assert!(text.contains("redline_review_duration_seconds_bucket{le=\"30\"} 2"));
        assert!(text.contains("redline_review_duration_seconds_bucket{le=\"600\"} 2"));
        assert!(text.contains("redline_review_duration_seconds_bucket{le=\"+Inf\"} 3"));
        assert!(text.contains("redline_review_duration_seconds_count 3"));
        assert!(text.contains("redline_jobs_total{outcome=\"succeeded\"} 2"));
    }

    #[test]
    fn tokens_and_queue_gauges_render() {
        let metrics = Metrics::new();
        metrics.add_model_tokens(ForgeKind::GitHub, 100, 7);
        metrics.add_model_tokens(ForgeKind::GitHub, 1, 1);
        metrics.add_model_tokens(ForgeKind::GitLab, 5, 2);
        let snapshot = QueueSnapshot {
            depth: 4,
            by_state: [(JobState::Queued, 4), (JobState::Running, 1)].into(),
        };
        let text = metrics.render(Some(&snapshot));
        assert!(text.contains("redline_model_tokens_total{forge=\"github\",kind=\"input\"} 101"));
        assert!(text.contains("redline_model_tokens_total{forge=\"github\",kind=\"output\"} 8"));
        assert!(text.contains("redline_model_tokens_total{forge=\"gitlab\",kind=\"input\"} 5"));
        assert!(text.contains("redline_model_tokens_total{forge=\"gitlab\",kind=\"output\"} 2"));
        assert!(text.contains("redline_queue_depth 4"));
        assert!(text.contains("redline_jobs{state=\"running\"} 1"));
    }

    #[test]
    fn cost_is_counted_per_forge_and_repository() {
        let metrics = Metrics::new();
        metrics.add_review_cost(ForgeKind::GitHub, "acme/api", 0.25);
        metrics.add_review_cost(ForgeKind::GitHub, "acme/api", 0.5);
        metrics.add_review_cost(ForgeKind::GitHub, "acme/web", 0.125);
        metrics.add_review_cost(ForgeKind::GitLab, "acme/api", 2.0);
        let text = metrics.render(None);
        assert!(text.contains("# TYPE redline_review_cost_usd_total counter"));
        let github = "redline_review_cost_usd_total{forge=\"github\",repository=";
        assert!(text.contains(&format!("{github}\"acme/api\"}} 0.75")));
        assert!(text.contains(&format!("{github}\"acme/web\"}} 0.125")));
        assert!(
            text.contains(
                "redline_review_cost_usd_total{forge=\"gitlab\",repository=\"acme/api\"} 2"
            )
        );
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
