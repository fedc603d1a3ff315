//! The evaluation report: figures per (strategy, model) pair, the per-case matrix,
//! the comparison with a baseline report, and their text, Markdown and JSON forms.
//!
//! Invariants: the JSON form (`version: 1`) holds everything the other forms show and
//! is what `--baseline` reads back; figures are computed only by
//! [`super::score::summarize`]; a baseline compares pairs by (strategy, model) and
//! cases by id, so reports of different case sets can still be compared on what
//! they share.

use serde::{Deserialize, Serialize};

use super::EvalError;
use super::cases::Case;
use super::run::PairLabel;
use super::score::{PairSummary, ResultRow, summarize};

/// The version of the JSON report.
pub(crate) const REPORT_VERSION: u32 = 1;

/// A case as the report lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CaseInfo {
    /// The case id.
    pub id: String,
    /// Whether it is clean.
    pub clean: bool,
    /// Where it comes from.
    pub source: String,
    /// Added plus deleted lines of its change; `null` when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_lines: Option<usize>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Report {
    /// [`REPORT_VERSION`].
    pub version: u32,
    /// The cases, in run order.
    pub cases: Vec<CaseInfo>,
    /// Figures per pair, in the order asked.
    pub pairs: Vec<PairSummary>,
    /// One row per (case, pair).
    pub results: Vec<ResultRow>,
    /// The comparison with `--baseline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineDiff>,
    /// The judge's model (`--judge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_model: Option<String>,
}

/// How one figure moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FigureDelta {
    /// The figure's name (as in [`PairSummary`]).
    pub name: String,
    /// In the baseline.
    pub before: Option<f64>,
    /// Now.
    pub after: Option<f64>,
    /// `after - before` when both are known.
    pub change: Option<f64>,
}

/// How a pair's figures moved since the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PairDelta {
    /// The strategy label.
    pub strategy: String,
    /// The model.
    pub model: String,
    /// Every figure; empty when the baseline has no such pair.
    pub figures: Vec<FigureDelta>,
}

/// A case whose outcome under a pair changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CaseChange {
    /// The case id.
    pub case: String,
    /// The strategy label.
    pub strategy: String,
    /// The model.
    pub model: String,
}

/// The comparison of a report with an earlier one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BaselineDiff {
    /// The baseline file.
    pub path: String,
    /// Per pair of the current report.
    pub pairs: Vec<PairDelta>,
    /// Caught now, not in the baseline.
    pub newly_caught: Vec<CaseChange>,
    /// Caught in the baseline, not now.
    pub lost: Vec<CaseChange>,
}

/// Builds the report of a run.
pub(crate) fn build_report(cases: &[Case], pairs: &[PairLabel], results: Vec<ResultRow>) -> Report {
    let summaries = pairs
        .iter()
        .map(|pair| {
            let rows: Vec<&ResultRow> = results
                .iter()
                .filter(|r| r.strategy == pair.strategy && r.model == pair.model)
                .collect();
            summarize(&pair.strategy, &pair.model, &rows)
        })
        .collect();
    Report {
        version: REPORT_VERSION,
        cases: cases
            .iter()
            .map(|c| CaseInfo {
                id: c.id.clone(),
                clean: c.clean,
                source: c.source.clone(),
                changed_lines: None,
            })
            .collect(),
        pairs: summaries,
        results,
        baseline: None,
        judge_model: None,
    }
}

/// Reads a JSON report written earlier (for `--baseline`).
pub(crate) fn parse_report(text: &str, path: &str) -> Result<Report, EvalError> {
    let error = |message: String| EvalError::Baseline {
        path: path.to_string(),
        message,
    };
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| error(format!("not JSON: {e}")))?;
    match value.get("version").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(REPORT_VERSION) => {}
        Some(v) => return Err(error(format!("unsupported report version {v}"))),
        None => return Err(error("not a `redline eval` JSON report".into())),
    }
    serde_json::from_value(value).map_err(|e| error(format!("not a `redline eval` report: {e}")))
}

/// The figures compared with a baseline, by name.
fn figures(s: &PairSummary) -> Vec<(&'static str, Option<f64>)> {
    vec![
        ("recall", s.recall),
        ("precision", s.precision),
        ("f1", s.f1),
        (
            "false_findings_per_clean_case",
            s.false_findings_per_clean_case,
        ),
        ("caught", Some(s.caught as f64)),
        ("bug_cases", Some(s.bug_cases as f64)),
        ("expected_recall", s.expected_recall),
        ("judged_recall", s.judged_recall),
        ("expected_caught", Some(s.expected_caught as f64)),
        ("expected_total", Some(s.expected_total as f64)),
        ("findings", Some(s.findings as f64)),
        ("failed", Some(s.failed as f64)),
        ("limited", Some(s.limited as f64)),
        ("tokens_per_case", s.tokens_per_case),
        ("cost_per_case", s.cost_per_case),
        ("seconds_per_case", s.seconds_per_case),
        ("dropped", Some(s.noise.dropped as f64)),
        (
            "dropped_true_positives",
            Some(s.noise.dropped_true_positives as f64),
        ),
        (
            "bugs_lost_to_verification",
            Some(s.noise.bugs_lost_to_verification as f64),
        ),
        ("merged", Some(s.noise.merged as f64)),
        ("unverified", Some(s.noise.unverified as f64)),
        ("review_tokens_per_case", s.noise.review_tokens_per_case),
        (
            "verification_tokens_per_case",
            s.noise.verification_tokens_per_case,
        ),
        ("verification_share", s.noise.verification_share),
        (
            "verification_cost_per_case",
            s.noise.verification_cost_per_case,
        ),
        ("actionable_share", s.noise.actionable_share),
        (
            "not_worth_posting_per_clean_case",
            s.noise.not_worth_posting_per_clean_case,
        ),
    ]
}

/// Compares `current` with `baseline` (read from `path`).
pub(crate) fn compare(baseline: &Report, current: &Report, path: &str) -> BaselineDiff {
    let pairs = current
        .pairs
        .iter()
        .map(|now| {
            let before = baseline
                .pairs
                .iter()
                .find(|b| b.strategy == now.strategy && b.model == now.model);
            let figures = before.map_or_else(Vec::new, |before| {
                figures(before)
                    .into_iter()
                    .zip(figures(now))
                    .map(|((name, before), (_, after))| FigureDelta {
                        name: name.to_string(),
                        before,
                        after,
                        change: before.zip(after).map(|(b, a)| a - b),
                    })
                    .collect()
            });
            PairDelta {
                strategy: now.strategy.clone(),
                model: now.model.clone(),
                figures,
            }
        })
        .collect();
    let (mut newly_caught, mut lost) = (Vec::new(), Vec::new());
    // A review that failed now has lost nothing: it is listed with the failures, so an
    // outage of the model server does not read as every catch lost. (A case that failed
    // in the baseline and is caught now is newly caught.)
    for now in current.results.iter().filter(|r| !r.clean && !r.failed()) {
        let Some(before) = baseline
            .results
            .iter()
            .find(|b| b.case == now.case && b.strategy == now.strategy && b.model == now.model)
        else {
            continue;
        };
        let change = CaseChange {
            case: now.case.clone(),
            strategy: now.strategy.clone(),
            model: now.model.clone(),
        };
        match (before.caught == Some(true), now.caught == Some(true)) {
            (false, true) => newly_caught.push(change),
            (true, false) => lost.push(change),
            _ => {}
        }
    }
    BaselineDiff {
        path: path.to_string(),
        pairs,
        newly_caught,
        lost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::render::{ReportFormat, render_report};

    fn case(id: &str, clean: bool) -> Case {
        let expected = if clean {
            serde_json::json!([])
        } else {
            serde_json::json!([{"path": "a.rs", "start_line": 1, "end_line": 1}])
        };
        serde_json::from_value(serde_json::json!({
            "id": id, "repo": ".", "base": "a", "head": "b", "clean": clean,
            "expected": expected
        }))
        .unwrap()
    }

    fn row(case: &str, caught: Option<bool>, findings: usize) -> ResultRow {
        ResultRow {
            screening: Default::default(),
            grades: None,
            case: case.into(),
            strategy: "react".into(),
            model: "m".into(),
            clean: case.starts_with("clean"),
            caught,
            findings,
            true_positives: usize::from(caught == Some(true)),
            expected_total: usize::from(!case.starts_with("clean")),
            expected_caught: usize::from(caught == Some(true)),
            expected_recall: None,
            tokens: 10,
            cost_usd: None,
            seconds: 1.0,
            limit_reached: None,
            error: caught.is_none().then(|| "model failed".to_string()),
            events: None,
            judge: None,
        }
    }

    fn report(rows: Vec<ResultRow>) -> Report {
        let cases = [
            case("fix-a", false),
            case("fix-b", false),
            case("clean-c", true),
        ];
        let pairs = [PairLabel {
            strategy: "react".into(),
            model: "m".into(),
        }];
        build_report(&cases, &pairs, rows)
    }

    #[test]
    fn a_baseline_names_the_cases_newly_caught_and_lost() {
        let before = report(vec![
            row("fix-a", Some(true), 1),
            row("fix-b", Some(false), 0),
            row("clean-c", Some(false), 2),
        ]);
        let now = report(vec![
            row("fix-a", Some(false), 1),
            row("fix-b", Some(true), 1),
            row("clean-c", Some(false), 0),
        ]);
        let text = render_report(&before, ReportFormat::Json);
        let parsed = parse_report(&text, "b.json").unwrap();
        assert_eq!(parsed, before);
        let diff = compare(&parsed, &now, "b.json");
        let names = |changes: &[CaseChange]| -> Vec<String> {
            changes.iter().map(|c| c.case.clone()).collect()
        };
        assert_eq!(names(&diff.newly_caught), ["fix-b"]);
        assert_eq!(names(&diff.lost), ["fix-a"]);
        let fp = diff.pairs[0]
            .figures
            .iter()
            .find(|f| f.name == "false_findings_per_clean_case")
            .unwrap();
        assert_eq!(
            (fp.before, fp.after, fp.change),
            (Some(2.0), Some(0.0), Some(-2.0))
        );
    }

    #[test]
    fn a_review_failing_now_is_not_a_lost_catch() {
        let before = report(vec![
            row("fix-a", Some(true), 1),
            row("fix-b", None, 0),
            row("clean-c", Some(false), 0),
        ]);
        let now = report(vec![
            row("fix-a", None, 0),
            row("fix-b", Some(true), 1),
            row("clean-c", Some(false), 0),
        ]);
        let diff = compare(&before, &now, "b.json");
        assert!(diff.lost.is_empty(), "{:?}", diff.lost);
        let newly: Vec<&str> = diff.newly_caught.iter().map(|c| c.case.as_str()).collect();
        assert_eq!(newly, ["fix-b"]);
    }

    #[test]
    fn text_and_markdown_show_the_pair_table_the_matrix_and_failures() {
        let mut current = report(vec![
            row("fix-a", Some(true), 1),
            row("fix-b", None, 0),
            row("clean-c", Some(false), 2),
        ]);
        current.baseline = Some(compare(&current.clone(), &current, "old.json"));
        let text = render_report(&current, ReportFormat::Text);
        assert!(
            text.contains("redline eval: 3 cases (2 bug, 1 clean)"),
            "{text}"
        );
        assert!(
            text.contains("react     m      1/1     100.0%  1/1   100.0%      33.3%"),
            "{text}"
        );
        assert!(text.contains("fix-b    bug    FAILED"), "{text}");
        assert!(text.contains("- fix-b (react/m): model failed"), "{text}");
        assert!(text.contains("Compared with old.json"), "{text}");
        let markdown = render_report(&current, ReportFormat::Markdown);
        assert!(
            markdown.contains("| fix-a | bug | caught 1/1 bug, 1 finding, 10 tok |"),
            "{markdown}"
        );
        assert!(markdown.contains("### Cases"), "{markdown}");
        assert!(
            parse_report("{\"version\":2}", "x")
                .unwrap_err()
                .to_string()
                .contains("version 2")
        );
        assert!(!text.contains("Verification and noise"), "{text}");
    }

    #[test]
    fn verification_has_its_own_table_and_every_figure_in_the_comparison() {
        use crate::eval::noise::Screening;
        let dropped = crate::review::verification::DroppedFinding {
            finding: serde_json::from_value(serde_json::json!({"path": "a.rs", "line": 9,
                "start_line": 9, "side": "RIGHT", "severity": "major", "category": "bug",
                "title": "t", "body": "b"}))
            .unwrap(),
            reason: "no caller passes 0".into(),
        };
        let verified = |case: &str, caught| ResultRow {
            screening: Screening {
                verified: true,
                dropped: vec![dropped.clone()],
                review_tokens: 8,
                verification_tokens: 2,
                ..Screening::default()
            },
            ..row(case, caught, 1)
        };
        let now = report(vec![
            verified("fix-a", Some(true)),
            verified("fix-b", Some(false)),
            row("clean-c", Some(false), 0),
        ]);
        let text = render_report(&now, ReportFormat::Text);
        assert!(text.contains("Verification and noise"), "{text}");
        assert!(text.contains("verify share"), "{text}");
        assert!(text.contains("1 finding, 1 dropped, 10 tok"), "{text}");
        let before = report(vec![
            row("fix-a", Some(true), 1),
            row("fix-b", Some(false), 1),
            row("clean-c", Some(false), 0),
        ]);
        let diff = compare(&before, &now, "b.json");
        let figure = |name: &str| {
            diff.pairs[0]
                .figures
                .iter()
                .find(|f| f.name == name)
                .cloned()
        };
        assert_eq!(figure("dropped").and_then(|f| f.change), Some(2.0));
        assert_eq!(
            figure("verification_share").and_then(|f| f.after),
            Some(4.0 / 16.0)
        );
        for name in [
            "dropped_true_positives",
            "bugs_lost_to_verification",
            "merged",
            "review_tokens_per_case",
            "verification_cost_per_case",
            "actionable_share",
            "not_worth_posting_per_clean_case",
        ] {
            assert!(figure(name).is_some(), "{name}");
        }
    }
}
