//! Scoring: which findings land on the expected lines, and the figures of a
//! (strategy, model) pair over all its cases.
//!
//! Rules (fixed, documented in the book's Eval chapter): a finding overlaps an expected range when it
//! is in the same file, on the same side, and its lines meet the range widened by
//! [`OVERLAP_SLACK`] lines on each end; findings on the same file, side and lines count
//! once; a bug is caught when some finding overlaps some range of that bug (a case's
//! ranges without a bug id are one bug); a case is caught when some bug of it is; a
//! finding is a true positive when it overlaps some expected range (on a clean case none
//! does); precision = true positives / findings; recall = caught / bug cases (a catch
//! rate); bug recall (`expected_recall`) = bugs caught / bugs (`expected_caught` /
//! `expected_total`), per case and per pair; F1 the harmonic mean of precision and
//! recall; false findings per clean case = findings on clean cases / clean cases. Failed
//! reviews are counted apart and enter no ratio.

use serde::{Deserialize, Serialize};

use super::cases::{Case, ExpectedRange};
use super::grade::Grades;
use super::judge::JudgeTally;
use super::noise::{NoiseFigures, Screening, noise_figures};
use crate::review::finding::Finding;

/// How many lines an expected range is widened by on each end.
pub(crate) const OVERLAP_SLACK: u32 = 3;

/// How one review of one case did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CaseScore {
    /// Some finding overlaps some expected range.
    pub caught: bool,
    /// Distinct findings.
    pub findings: usize,
    /// Distinct findings that overlap an expected range.
    pub true_positives: usize,
    /// The case's bugs.
    pub expected_total: usize,
    /// Of which caught (some finding overlaps one of the bug's ranges).
    pub expected_caught: usize,
}

/// Whether `finding` meets `expected` (same file and side, range widened).
pub fn overlaps(finding: &Finding, expected: &ExpectedRange) -> bool {
    if finding.path != expected.path || finding.side != expected.side {
        return false;
    }
    let range = finding.range();
    let low = expected.start_line.saturating_sub(OVERLAP_SLACK);
    let high = expected.end_line.saturating_add(OVERLAP_SLACK);
    *range.start() <= high && *range.end() >= low
}

/// The findings with duplicates (same file, side and lines) dropped, first kept.
pub fn distinct(findings: &[Finding]) -> Vec<&Finding> {
    let mut seen = std::collections::HashSet::new();
    findings
        .iter()
        .filter(|f| {
            let range = f.range();
            seen.insert((f.path.as_str(), f.side, *range.start(), *range.end()))
        })
        .collect()
}

/// Scores the findings of one review of `case`.
pub fn score_case(case: &Case, findings: &[Finding]) -> CaseScore {
    let distinct = distinct(findings);
    let true_positives = distinct
        .iter()
        .filter(|f| case.expected.iter().any(|e| overlaps(f, e)))
        .count();
    let bugs = case.bugs();
    let expected_caught = bugs
        .iter()
        .filter(|&&bug| {
            case.expected
                .iter()
                .filter(|e| e.bug == bug)
                .any(|e| distinct.iter().any(|f| overlaps(f, e)))
        })
        .count();
    CaseScore {
        caught: !case.clean && expected_caught > 0,
        findings: distinct.len(),
        true_positives,
        expected_total: bugs.len(),
        expected_caught,
    }
}

/// One review of one case under one (strategy, model) pair, as reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    /// The case id.
    pub case: String,
    /// The strategy label of the pair.
    pub strategy: String,
    /// The model of the pair.
    pub model: String,
    /// Whether the case is clean.
    pub clean: bool,
    /// Caught (bug case), `false` on a clean case; `null` when the review failed.
    pub caught: Option<bool>,
    /// Distinct findings.
    pub findings: usize,
    /// Distinct findings on the expected lines.
    pub true_positives: usize,
    /// The case's bugs (0 on a clean case).
    #[serde(default)]
    pub expected_total: usize,
    /// Of which caught; 0 when the review failed.
    #[serde(default)]
    pub expected_caught: usize,
    /// Caught / total bugs; `null` on a clean case or when the review failed.
    #[serde(default)]
    pub expected_recall: Option<f64>,
    /// Prompt + completion tokens.
    pub tokens: u64,
    /// Cost in USD; `null` when the model's price is unknown.
    pub cost_usd: Option<f64>,
    /// Wall time of the review.
    pub seconds: f64,
    /// The limit (`cost`, `tokens`, `time`) that cut the review short: it is scored
    /// on what it reported, as `redline review` would have delivered it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_reached: Option<String>,
    /// Why the review failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The review's events file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<String>,
    /// What the judge said (`--judge`): bugs judged caught, its calls, tokens and cost
    /// (never in `tokens` or `cost_usd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeTally>,
    /// What verification did: the findings posted, dropped (with reasons) and merged, and
    /// the tokens split between the review and its verifier.
    #[serde(default)]
    pub screening: Screening,
    /// The judge's grades of the posted findings that match no expected bug (`--judge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grades: Option<Grades>,
}

impl ResultRow {
    /// Whether the review failed.
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }
}

/// The figures of one (strategy, model) pair over its reviews.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairSummary {
    /// The strategy label.
    pub strategy: String,
    /// The model.
    pub model: String,
    /// Reviews that finished.
    pub reviews: usize,
    /// Reviews that failed (in no ratio).
    pub failed: usize,
    /// Finished reviews cut short by a limit (scored on what they reported).
    #[serde(default)]
    pub limited: usize,
    /// Finished reviews of bug cases.
    pub bug_cases: usize,
    /// Of which caught.
    pub caught: usize,
    /// Bugs of the finished reviews of bug cases.
    #[serde(default)]
    pub expected_total: usize,
    /// Of which caught.
    #[serde(default)]
    pub expected_caught: usize,
    /// Bugs caught / bugs; `null` without bugs.
    #[serde(default)]
    pub expected_recall: Option<f64>,
    /// Finished reviews of clean cases.
    pub clean_cases: usize,
    /// Distinct findings over all finished reviews.
    pub findings: usize,
    /// Of which on expected lines.
    pub true_positives: usize,
    /// Findings on clean cases.
    pub clean_findings: usize,
    /// True positives / findings; `null` without findings.
    pub precision: Option<f64>,
    /// Caught / bug cases (catch rate); `null` without bug cases.
    pub recall: Option<f64>,
    /// Harmonic mean of precision and recall; `null` when either is.
    pub f1: Option<f64>,
    /// Findings on clean cases / clean cases; `null` without clean cases.
    pub false_findings_per_clean_case: Option<f64>,
    /// Tokens over all finished reviews.
    pub tokens: u64,
    /// Cost over all finished reviews; `null` when some review's price is unknown.
    pub cost_usd: Option<f64>,
    /// Mean tokens per finished review.
    pub tokens_per_case: Option<f64>,
    /// Mean cost per finished review.
    pub cost_per_case: Option<f64>,
    /// Mean seconds per finished review.
    pub seconds_per_case: Option<f64>,
    /// Bugs the judge said a near finding describes; `null` without a judge.
    #[serde(default)]
    pub judged_caught: Option<usize>,
    /// Judged caught / bugs of the judged reviews; `null` without a judge.
    #[serde(default)]
    pub judged_recall: Option<f64>,
    /// The judge's calls, tokens and cost (not in `tokens` or `cost_usd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeTally>,
    /// What verification dropped and merged, its share of the tokens, and the graded noise.
    #[serde(flatten)]
    pub noise: NoiseFigures,
}

fn ratio(numerator: f64, denominator: usize) -> Option<f64> {
    (denominator > 0).then(|| numerator / denominator as f64)
}

/// The figures of the rows of one pair.
pub fn summarize(strategy: &str, model: &str, rows: &[&ResultRow]) -> PairSummary {
    let done: Vec<&&ResultRow> = rows.iter().filter(|r| !r.failed()).collect();
    let bug: Vec<_> = done.iter().filter(|r| !r.clean).collect();
    let clean: Vec<_> = done.iter().filter(|r| r.clean).collect();
    let caught = bug.iter().filter(|r| r.caught == Some(true)).count();
    let expected_total: usize = bug.iter().map(|r| r.expected_total).sum();
    let expected_caught: usize = bug.iter().map(|r| r.expected_caught).sum();
    let findings: usize = done.iter().map(|r| r.findings).sum();
    let true_positives: usize = done.iter().map(|r| r.true_positives).sum();
    let clean_findings: usize = clean.iter().map(|r| r.findings).sum();
    let precision = ratio(true_positives as f64, findings);
    let recall = ratio(caught as f64, bug.len());
    let f1 = match (precision, recall) {
        (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    };
    let tokens: u64 = done.iter().map(|r| r.tokens).sum();
    let cost_usd = done
        .iter()
        .map(|r| r.cost_usd)
        .sum::<Option<f64>>()
        .filter(|_| !done.is_empty());
    let seconds: f64 = done.iter().map(|r| r.seconds).sum();
    let (judged_caught, judged_recall, judge) = judged(&bug);
    PairSummary {
        strategy: strategy.to_string(),
        model: model.to_string(),
        reviews: done.len(),
        failed: rows.len() - done.len(),
        limited: done.iter().filter(|r| r.limit_reached.is_some()).count(),
        bug_cases: bug.len(),
        caught,
        expected_total,
        expected_caught,
        expected_recall: ratio(expected_caught as f64, expected_total),
        clean_cases: clean.len(),
        findings,
        true_positives,
        clean_findings,
        precision,
        recall,
        f1,
        false_findings_per_clean_case: ratio(clean_findings as f64, clean.len()),
        tokens,
        cost_usd,
        tokens_per_case: ratio(tokens as f64, done.len()),
        cost_per_case: cost_usd.and_then(|c| ratio(c, done.len())),
        seconds_per_case: ratio(seconds, done.len()),
        judged_caught,
        judged_recall,
        judge,
        noise: noise_figures(&done.iter().map(|r| **r).collect::<Vec<_>>()),
    }
}

/// The judge's figures over the bug reviews it judged: bugs judged caught, judged
/// recall, and its calls, tokens and cost summed; all `None` when none was judged.
fn judged(bug: &[&&&ResultRow]) -> (Option<usize>, Option<f64>, Option<JudgeTally>) {
    let rows: Vec<(&ResultRow, JudgeTally)> = bug
        .iter()
        .filter_map(|r| r.judge.map(|j| (***r, j)))
        .collect();
    if rows.is_empty() {
        return (None, None, None);
    }
    let total: usize = rows.iter().map(|(r, _)| r.expected_total).sum();
    let sum = rows.iter().fold(
        JudgeTally {
            cost_usd: Some(0.0),
            ..JudgeTally::default()
        },
        |sum, (_, j)| JudgeTally {
            caught: sum.caught + j.caught,
            calls: sum.calls + j.calls,
            failures: sum.failures + j.failures,
            tokens: sum.tokens + j.tokens,
            cost_usd: sum.cost_usd.zip(j.cost_usd).map(|(a, b)| a + b),
        },
    );
    (Some(sum.caught), ratio(sum.caught as f64, total), Some(sum))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::cases::CASES_VERSION;
    use crate::review::finding::Side;

    fn finding(path: &str, start: u32, end: u32) -> Finding {
        Finding::on_lines(path, start, end)
    }

    fn bug_case(start: u32, end: u32) -> Case {
        Case {
            version: CASES_VERSION,
            id: "c".into(),
            repo: ".".into(),
            base: "a".into(),
            head: "b".into(),
            expected: vec![ExpectedRange {
                path: "src/a.rs".into(),
                start_line: start,
                end_line: end,
                side: Side::Right,
                description: String::new(),
                bug: String::new(),
            }],
            clean: false,
            source: String::new(),
            title: None,
            body: None,
        }
    }

    #[test]
    fn overlap_is_widened_by_three_lines_in_the_same_file_and_side() {
        let expected = &bug_case(10, 12).expected[0];
        assert!(overlaps(&finding("src/a.rs", 7, 7), expected));
        assert!(overlaps(&finding("src/a.rs", 15, 20), expected));
        assert!(overlaps(&finding("src/a.rs", 1, 30), expected));
        assert!(!overlaps(&finding("src/a.rs", 6, 6), expected));
        assert!(!overlaps(&finding("src/a.rs", 16, 16), expected));
        assert!(!overlaps(&finding("src/b.rs", 11, 11), expected));
        let mut left = finding("src/a.rs", 11, 11);
        left.side = Side::Left;
        assert!(!overlaps(&left, expected));
        // Near the top of the file the widening stops at line 0.
        assert!(overlaps(
            &finding("src/a.rs", 1, 1),
            &bug_case(2, 2).expected[0]
        ));
    }

    #[test]
    fn duplicates_count_once_and_precision_counts_every_distinct_finding() {
        let case = bug_case(10, 10);
        let findings = vec![
            finding("src/a.rs", 10, 10),
            finding("src/a.rs", 10, 10),
            finding("src/a.rs", 40, 41),
        ];
        let score = score_case(&case, &findings);
        assert_eq!(
            score,
            CaseScore {
                caught: true,
                findings: 2,
                true_positives: 1,
                expected_total: 1,
                expected_caught: 1,
            }
        );
        let mut clean = bug_case(1, 1);
        clean.expected.clear();
        clean.clean = true;
        let score = score_case(&clean, &[finding("src/a.rs", 1, 1)]);
        assert!(!score.caught);
        assert_eq!((score.findings, score.true_positives), (1, 0));
    }

    fn ranges(spans: &[(&str, u32, u32)]) -> Vec<ExpectedRange> {
        spans
            .iter()
            .map(|&(bug, start, end)| ExpectedRange {
                bug: bug.into(),
                ..bug_case(start, end).expected[0].clone()
            })
            .collect()
    }

    #[test]
    fn a_bug_is_caught_once_whichever_of_its_ranges_is_hit() {
        // One bug in two ranges, both hit: one bug caught of one.
        let mut case = bug_case(1, 1);
        case.expected = ranges(&[("b1", 10, 10), ("b1", 40, 40)]);
        let both = [finding("src/a.rs", 10, 10), finding("src/a.rs", 40, 40)];
        let score = score_case(&case, &both);
        assert_eq!((score.expected_total, score.expected_caught), (1, 1));
        assert_eq!(score.true_positives, 2);
        // Two bugs, one hit: half the bugs.
        case.expected = ranges(&[("b1", 10, 10), ("b2", 40, 40)]);
        let score = score_case(&case, &both[..1]);
        assert!(score.caught);
        assert_eq!((score.expected_total, score.expected_caught), (2, 1));
        // Unnamed ranges are one bug.
        case.expected = ranges(&[("", 10, 10), ("", 40, 40)]);
        let score = score_case(&case, &both[1..]);
        assert_eq!((score.expected_total, score.expected_caught), (1, 1));
        let score = score_case(&case, &[finding("src/a.rs", 70, 70)]);
        assert!(!score.caught);
        assert_eq!((score.expected_total, score.expected_caught), (1, 0));
    }

    fn row(clean: bool, caught: bool, findings: usize, tp: usize) -> ResultRow {
        ResultRow {
            case: "c".into(),
            strategy: "react".into(),
            model: "m".into(),
            clean,
            caught: Some(caught),
            findings,
            true_positives: tp,
            expected_total: if clean { 0 } else { 2 },
            expected_caught: usize::from(caught),
            expected_recall: None,
            tokens: 100,
            cost_usd: Some(0.5),
            seconds: 2.0,
            limit_reached: None,
            error: None,
            events: None,
            judge: None,
            screening: Screening::default(),
            grades: None,
        }
    }

    #[test]
    fn a_pair_summary_has_the_hand_computed_figures() {
        let failed = ResultRow {
            error: Some("boom".into()),
            caught: None,
            ..row(false, false, 0, 0)
        };
        let rows = [
            row(false, true, 2, 1),
            row(false, false, 1, 0),
            row(false, true, 1, 1),
            row(true, false, 3, 0),
            failed,
        ];
        let refs: Vec<&ResultRow> = rows.iter().collect();
        let s = summarize("react", "m", &refs);
        assert_eq!((s.reviews, s.failed, s.bug_cases, s.caught), (4, 1, 3, 2));
        // Bugs: 2 per bug case; the two caught cases caught 1 and 1 of theirs.
        assert_eq!((s.expected_total, s.expected_caught), (6, 2));
        assert_eq!(s.expected_recall, Some(2.0 / 6.0));
        assert_eq!((s.findings, s.true_positives, s.clean_findings), (7, 2, 3));
        assert_eq!(s.precision, Some(2.0 / 7.0));
        assert_eq!(s.recall, Some(2.0 / 3.0));
        let (p, r) = (2.0 / 7.0, 2.0 / 3.0);
        assert_eq!(s.f1, Some(2.0 * p * r / (p + r)));
        assert_eq!(s.false_findings_per_clean_case, Some(3.0));
        assert_eq!((s.tokens, s.cost_usd), (400, Some(2.0)));
        assert_eq!(s.seconds_per_case, Some(2.0));
        let unknown = ResultRow {
            cost_usd: None,
            ..row(false, true, 1, 1)
        };
        let s = summarize("react", "m", &[&rows[0], &unknown]);
        assert_eq!((s.cost_usd, s.cost_per_case), (None, None));
        let none = summarize("react", "m", &[]);
        assert_eq!(none.expected_recall, None);
        assert_eq!((none.precision, none.recall, none.f1), (None, None, None));
        assert_eq!(
            (none.judged_caught, none.judged_recall, none.judge),
            (None, None, None)
        );
    }

    #[test]
    fn judged_figures_sum_the_judged_reviews_and_stay_apart_from_the_pairs_cost() {
        let tally = |caught: usize, cost: Option<f64>| JudgeTally {
            caught,
            calls: 2,
            failures: 1,
            tokens: 30,
            cost_usd: cost,
        };
        let judged = |caught, cost| ResultRow {
            judge: Some(tally(caught, cost)),
            ..row(false, true, 1, 1)
        };
        // Proximity caught one bug of two in each case; the judge agreed once.
        let rows = [
            judged(1, Some(0.25)),
            judged(0, Some(0.5)),
            row(true, false, 0, 0),
        ];
        let refs: Vec<&ResultRow> = rows.iter().collect();
        let s = summarize("react", "m", &refs);
        assert_eq!((s.expected_caught, s.expected_total), (2, 4));
        assert_eq!((s.judged_caught, s.judged_recall), (Some(1), Some(0.25)));
        let judge = s.judge.unwrap();
        assert_eq!((judge.calls, judge.failures, judge.tokens), (4, 2, 60));
        assert_eq!(judge.cost_usd, Some(0.75));
        // The pair's own tokens and cost are the reviews' only.
        assert_eq!((s.tokens, s.cost_usd), (300, Some(1.5)));
        let unpriced = [judged(1, None), judged(1, Some(0.5))];
        let s = summarize("react", "m", &unpriced.iter().collect::<Vec<_>>());
        assert_eq!(s.judge.unwrap().cost_usd, None);
    }
}
