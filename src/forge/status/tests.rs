use super::*;
use crate::review::finding::{Category, Side};
use crate::review::stats::Stats;

fn finding(severity: Severity, title: &str) -> Finding {
    Finding {
        path: "src/calc.rs".into(),
        line: 6,
        start_line: 6,
        side: Side::Right,
        severity,
        category: Category::Bug,
        title: title.into(),
        body: "b may be 0.".into(),
        suggestion: None,
        rule: None,
        unverified: false,
    }
}

fn report(findings: Vec<Finding>, unanchored: Vec<Finding>) -> ReviewReport {
    ReviewReport {
        findings,
        unanchored,
        stats: Stats {
            cost_usd: Some(0.0123),
            prompt_tokens: 1200,
            completion_tokens: 80,
            ..Stats::default()
        },
        ..ReviewReport::default()
    }
}

fn at(severity: Severity) -> FailOn {
    FailOn::At(severity)
}

fn verdict(status: &ReviewStatus) -> &Verdict {
    match status {
        ReviewStatus::Done(verdict) => verdict,
        other => panic!("not a verdict: {other:?}"),
    }
}

#[test]
fn a_finding_at_or_above_fail_on_fails_the_check() {
    let found = report(
        vec![
            finding(Severity::Critical, "Division by zero"),
            finding(Severity::Minor, "Name"),
        ],
        Vec::new(),
    );
    let outcome = PublishOutcome::default();
    let failing = ReviewStatus::reviewed(&found, &outcome, at(Severity::Major), None);
    assert_eq!(failing.conclusion(), Some(Conclusion::Failure));
    assert_eq!(verdict(&failing).counts, [1, 0, 1, 0]);
    assert_eq!(failing.title(), "2 findings: 1 critical, 1 minor");
    let minor_only = report(vec![finding(Severity::Minor, "Name")], Vec::new());
    let passing = ReviewStatus::reviewed(&minor_only, &outcome, at(Severity::Major), None);
    assert_eq!(passing.conclusion(), Some(Conclusion::Success));
    let never = ReviewStatus::reviewed(&found, &outcome, FailOn::Never, None);
    assert_eq!(never.conclusion(), Some(Conclusion::Success));
    let nothing = ReviewStatus::reviewed(
        &report(Vec::new(), Vec::new()),
        &outcome,
        at(Severity::Nit),
        None,
    );
    assert_eq!(nothing.conclusion(), Some(Conclusion::Success));
    assert_eq!(nothing.title(), "No findings");
}

#[test]
fn dismissed_findings_do_not_count_and_unanchored_ones_do() {
    let found = report(
        vec![
            finding(Severity::Critical, "Division by zero"),
            finding(Severity::Nit, "Spacing"),
        ],
        vec![finding(Severity::Major, "Elsewhere")],
    );
    let outcome = PublishOutcome {
        dismissed_findings: vec![0],
        summary_findings: vec![1],
        ..PublishOutcome::default()
    };
    let status = ReviewStatus::reviewed(&found, &outcome, at(Severity::Critical), None);
    assert_eq!(status.conclusion(), Some(Conclusion::Success));
    assert_eq!(verdict(&status).counts, [0, 1, 0, 1]);
    let titles: Vec<&str> = status
        .annotations()
        .iter()
        .map(|f| f.title.as_str())
        .collect();
    assert_eq!(titles, ["Spacing", "Elsewhere"]);
    let major = ReviewStatus::reviewed(&found, &outcome, at(Severity::Major), None);
    assert_eq!(
        major.conclusion(),
        Some(Conclusion::Failure),
        "the unanchored major counts"
    );
}

#[test]
fn a_limit_reached_before_any_finding_fails_the_review() {
    let mut stopped = report(Vec::new(), Vec::new());
    stopped.stats.limit_reached = Some(LimitKind::Time);
    let outcome = PublishOutcome::default();
    let status = ReviewStatus::reviewed(&stopped, &outcome, FailOn::Never, None);
    assert_eq!(status.conclusion(), Some(Conclusion::TimedOut));
    assert!(
        status.summary().contains("time limit"),
        "{}",
        status.summary()
    );
    stopped.stats.limit_reached = Some(LimitKind::Cost);
    let status = ReviewStatus::reviewed(&stopped, &outcome, FailOn::Never, None);
    assert_eq!(status.conclusion(), Some(Conclusion::Failure));
    // A partial review that found something is a verdict, marked partial.
    let mut partial = report(vec![finding(Severity::Minor, "Name")], Vec::new());
    partial.stats.limit_reached = Some(LimitKind::Cost);
    let status = ReviewStatus::reviewed(&partial, &outcome, at(Severity::Major), None);
    assert_eq!(status.conclusion(), Some(Conclusion::Success));
    assert!(status.title().contains("partial"), "{}", status.title());
}

#[test]
fn a_skipped_review_is_neutral_unless_an_earlier_conclusion_stands() {
    let skipped = |carried| ReviewStatus::Skipped {
        reason: SkipReason::AlreadyReviewed,
        carried,
    };
    assert_eq!(skipped(None).conclusion(), Some(Conclusion::Neutral));
    let failing = skipped(Some(Conclusion::Failure));
    assert_eq!(failing.conclusion(), Some(Conclusion::Failure));
    assert!(
        failing.summary().contains("`failure`"),
        "{}",
        failing.summary()
    );
    assert!(Conclusion::TimedOut.is_decisive());
    assert!(!Conclusion::Neutral.is_decisive() && !Conclusion::Cancelled.is_decisive());
    for pending in [
        ReviewStatus::Queued { note: None },
        ReviewStatus::Running {
            strategy: "auto".into(),
            limits: "none".into(),
        },
    ] {
        assert_eq!(pending.conclusion(), None);
    }
}

#[test]
fn the_summary_links_the_review_and_states_cost_and_tokens() {
    let found = report(
        vec![finding(Severity::Major, "Division by zero")],
        Vec::new(),
    );
    let link = "https://github.example/o/r/pull/7#pullrequestreview-1";
    let status = ReviewStatus::reviewed(
        &found,
        &PublishOutcome::default(),
        at(Severity::Major),
        Some(link.into()),
    );
    let summary = status.summary();
    assert!(summary.contains(&format!("]({link})")), "{summary}");
    assert!(summary.contains("$0.0123"), "{summary}");
    assert!(
        summary.contains("1200 prompt + 80 completion tokens"),
        "{summary}"
    );
    assert!(summary.contains("**Failing**"), "{summary}");
    assert_eq!(
        status.description(),
        "1 finding: 1 major; fails at major or above"
    );
}

#[test]
fn a_failure_s_reason_is_one_escaped_paragraph_and_descriptions_are_bounded() {
    let reason =
        "model call failed:\n\n@alice look ![pixel](https://evil.example/t.png) <img src=x>"
            .to_string();
    let failed = ReviewStatus::Failed {
        reason: format!("{reason} {}", "x".repeat(400)),
        timed_out: false,
    };
    let summary = failed.summary();
    assert!(
        !summary.contains("@alice") && !summary.contains("![pixel]"),
        "{summary}"
    );
    assert!(
        !summary.contains("<img") && !summary.contains('\n'),
        "{summary}"
    );
    assert_eq!(failed.conclusion(), Some(Conclusion::Failure));
    let description = failed.description();
    assert_eq!(
        description.chars().count(),
        DESCRIPTION_MAX,
        "{description}"
    );
    assert!(description.starts_with("failed: model call failed: @alice"));
}

#[test]
fn a_cancelled_review_names_the_newer_commit() {
    let cancelled = ReviewStatus::Cancelled {
        newer_head: Some("0123456789abcdef".into()),
    };
    assert_eq!(cancelled.conclusion(), Some(Conclusion::Cancelled));
    assert!(
        cancelled.title().contains("0123456"),
        "{}",
        cancelled.title()
    );
    assert!(cancelled.summary().contains("`0123456`"));
    assert_eq!(cancelled.description(), "canceled: replaced by 0123456");
}

#[test]
fn limits_read_as_text() {
    use crate::agent::budget::ReviewLimits;
    let limits = ReviewLimits {
        max_cost_usd: Some(0.5),
        max_tokens: Some(200_000),
        timeout: Some(std::time::Duration::from_secs(600)),
    };
    assert_eq!(
        limits_text(&limits),
        "cost ≤ $0.50 · tokens ≤ 200000 · time ≤ 600s"
    );
    assert_eq!(limits_text(&ReviewLimits::default()), "none");
}
