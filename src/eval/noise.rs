//! What verification did to each review of an evaluation, and what a judge said of the
//! findings that match no expected bug: the noise figures beside recall and precision.
//!
//! Rules (fixed, documented in the book's Eval chapter): precision, recall and false
//! findings per clean case are computed on the findings as posted (after verification);
//! a dropped finding is a true positive when it overlaps an expected range; a bug is lost
//! to verification when some dropped finding overlaps one of its ranges and no posted
//! finding does; the verifier's tokens and cost are the review's `stats.verification`
//! (the review's own tokens are the rest); the actionable share is (posted findings on an
//! expected bug + those graded a defect or worth a look) / (posted findings on an expected
//! bug + graded findings), ungraded findings (a failed or unreadable grading) left out.

use serde::{Deserialize, Serialize};

use super::cases::Case;
use super::grade::{Grade, Grades};
use super::score::{ResultRow, distinct, overlaps};
use crate::review::finding::Finding;
use crate::review::stats::Stats;
use crate::review::verification::{DroppedFinding, MergedFinding};

/// What verification did to one review's findings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Screening {
    /// Whether the findings were verified.
    pub verified: bool,
    /// The findings as posted (anchored or not), in the review's order.
    pub posted: Vec<Finding>,
    /// The findings the verifier dropped, each with its reason.
    pub dropped: Vec<DroppedFinding>,
    /// The duplicates merged into another finding before verification.
    pub merged: Vec<MergedFinding>,
    /// Distinct dropped findings that overlap an expected range.
    pub dropped_true_positives: usize,
    /// Bugs only dropped findings overlapped: lost to verification.
    pub bugs_lost: usize,
    /// Posted findings without a verdict.
    pub unverified: usize,
    /// Prompt plus completion tokens of the review without the verifier's.
    pub review_tokens: u64,
    /// Prompt plus completion tokens of the verifier.
    pub verification_tokens: u64,
    /// The verifier's cost; `null` when unknown or when verification did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification_cost_usd: Option<f64>,
}

impl Screening {
    /// The screening of one review of `case`.
    pub(crate) fn of(
        case: &Case,
        posted: &[Finding],
        dropped: Vec<DroppedFinding>,
        merged: Vec<MergedFinding>,
        stats: &Stats,
    ) -> Self {
        let dropped_findings: Vec<Finding> = dropped.iter().map(|d| d.finding.clone()).collect();
        let dropped_true_positives = distinct(&dropped_findings)
            .into_iter()
            .filter(|f| case.expected.iter().any(|e| overlaps(f, e)))
            .count();
        let bugs_lost = case
            .bugs()
            .iter()
            .filter(|&&bug| {
                let ranges: Vec<_> = case.expected.iter().filter(|e| e.bug == bug).collect();
                let hit = |findings: &[Finding]| {
                    findings
                        .iter()
                        .any(|f| ranges.iter().any(|e| overlaps(f, e)))
                };
                hit(&dropped_findings) && !hit(posted)
            })
            .count();
        let total = stats.prompt_tokens + stats.completion_tokens;
        let verification = stats.verification.as_deref();
        let verification_tokens = verification.map_or(0, |v| v.tokens());
        Screening {
            verified: verification.is_some(),
            posted: posted.to_vec(),
            dropped,
            merged,
            dropped_true_positives,
            bugs_lost,
            unverified: posted.iter().filter(|f| f.unverified).count(),
            review_tokens: total.saturating_sub(verification_tokens),
            verification_tokens,
            verification_cost_usd: verification.and_then(|v| v.cost_usd),
        }
    }
}

/// The noise figures of one (strategy, model) pair over its finished reviews.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseFigures {
    /// Findings the verifier dropped.
    #[serde(default)]
    pub dropped: usize,
    /// Of which on an expected range.
    #[serde(default)]
    pub dropped_true_positives: usize,
    /// Bugs only dropped findings overlapped.
    #[serde(default)]
    pub bugs_lost_to_verification: usize,
    /// Duplicates merged before verification.
    #[serde(default)]
    pub merged: usize,
    /// Posted findings without a verdict.
    #[serde(default)]
    pub unverified: usize,
    /// Mean tokens of the review itself per finished review.
    #[serde(default)]
    pub review_tokens_per_case: Option<f64>,
    /// Mean tokens of the verifier per finished review.
    #[serde(default)]
    pub verification_tokens_per_case: Option<f64>,
    /// The verifier's tokens / the review's own; `null` without review tokens.
    #[serde(default)]
    pub verification_share: Option<f64>,
    /// Mean cost of the verifier per finished review; `null` when unknown or not verified.
    #[serde(default)]
    pub verification_cost_per_case: Option<f64>,
    /// Graded (judge) findings: a defect.
    #[serde(default)]
    pub graded_defect: Option<usize>,
    /// Graded findings: a concern worth a look.
    #[serde(default)]
    pub graded_worth_a_look: Option<usize>,
    /// Graded findings: not worth posting.
    #[serde(default)]
    pub graded_not_worth_posting: Option<usize>,
    /// See the module documentation; `null` without a judge.
    #[serde(default)]
    pub actionable_share: Option<f64>,
    /// Findings graded not worth posting on clean cases / graded clean cases.
    #[serde(default)]
    pub not_worth_posting_per_clean_case: Option<f64>,
}

impl NoiseFigures {
    /// The verification and grading figures as table cells, in the order both reports
    /// (text and HTML) print them; `missing` stands for a figure that is not known.
    pub(crate) fn verification_cells(&self, graded: bool, missing: &str) -> Vec<String> {
        let number = |value: Option<f64>, decimals: usize| {
            value.map_or_else(|| missing.to_string(), |v| format!("{v:.decimals$}"))
        };
        let percent = |value: Option<f64>| {
            value.map_or_else(|| missing.to_string(), |v| format!("{:.1}%", v * 100.0))
        };
        let count = |c: Option<usize>| c.map_or_else(|| missing.to_string(), |c| c.to_string());
        let mut cells = vec![
            self.dropped.to_string(),
            self.dropped_true_positives.to_string(),
            self.bugs_lost_to_verification.to_string(),
            self.merged.to_string(),
            self.unverified.to_string(),
            number(self.review_tokens_per_case, 0),
            number(self.verification_tokens_per_case, 0),
            percent(self.verification_share),
            self.verification_cost_per_case
                .map_or_else(|| "?".into(), |v| format!("${v:.4}")),
        ];
        if graded {
            cells.extend([
                count(self.graded_defect),
                count(self.graded_worth_a_look),
                count(self.graded_not_worth_posting),
                percent(self.actionable_share),
                number(self.not_worth_posting_per_clean_case, 2),
            ]);
        }
        cells
    }
}

fn ratio(numerator: f64, denominator: f64) -> Option<f64> {
    (denominator > 0.0).then(|| numerator / denominator)
}

/// The noise figures of `done`, the finished reviews of one pair.
pub(crate) fn noise_figures(done: &[&ResultRow]) -> NoiseFigures {
    let sum = |f: fn(&Screening) -> usize| done.iter().map(|r| f(&r.screening)).sum::<usize>();
    let review_tokens: u64 = done.iter().map(|r| r.screening.review_tokens).sum();
    let verification_tokens: u64 = done.iter().map(|r| r.screening.verification_tokens).sum();
    let verified: Vec<&&ResultRow> = done.iter().filter(|r| r.screening.verified).collect();
    let verification_cost = verified
        .iter()
        .map(|r| r.screening.verification_cost_usd)
        .sum::<Option<f64>>()
        .filter(|_| !verified.is_empty());
    let count = done.len() as f64;
    let mut figures = NoiseFigures {
        dropped: sum(|s| s.dropped.len()),
        dropped_true_positives: sum(|s| s.dropped_true_positives),
        bugs_lost_to_verification: sum(|s| s.bugs_lost),
        merged: sum(|s| s.merged.len()),
        unverified: sum(|s| s.unverified),
        review_tokens_per_case: ratio(review_tokens as f64, count),
        verification_tokens_per_case: ratio(verification_tokens as f64, count),
        verification_share: ratio(verification_tokens as f64, review_tokens as f64),
        verification_cost_per_case: verification_cost.and_then(|c| ratio(c, count)),
        ..NoiseFigures::default()
    };
    grade_figures(done, &mut figures);
    figures
}

/// The graded figures: counts, the actionable share, noise per clean case.
fn grade_figures(done: &[&ResultRow], figures: &mut NoiseFigures) {
    let graded: Vec<(&ResultRow, &Grades)> = done
        .iter()
        .filter_map(|r| r.grades.as_ref().map(|g| (*r, g)))
        .collect();
    if graded.is_empty() {
        return;
    }
    let count = |grade: Grade| -> usize { graded.iter().map(|(_, g)| g.count(grade)).sum() };
    let (defect, worth, noise) = (
        count(Grade::Defect),
        count(Grade::WorthALook),
        count(Grade::NotWorthPosting),
    );
    let on_bugs: usize = graded.iter().map(|(r, _)| r.true_positives).sum();
    let clean: Vec<&(&ResultRow, &Grades)> = graded.iter().filter(|(r, _)| r.clean).collect();
    let clean_noise: usize = clean
        .iter()
        .map(|(_, g)| g.count(Grade::NotWorthPosting))
        .sum();
    figures.graded_defect = Some(defect);
    figures.graded_worth_a_look = Some(worth);
    figures.graded_not_worth_posting = Some(noise);
    figures.actionable_share = ratio(
        (on_bugs + defect + worth) as f64,
        (on_bugs + defect + worth + noise) as f64,
    );
    figures.not_worth_posting_per_clean_case = ratio(clean_noise as f64, clean.len() as f64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::cases::{CASES_VERSION, ExpectedRange};
    use crate::eval::grade::GradedFinding;
    use crate::review::finding::{Category, Severity, Side};
    use crate::review::stats::VerificationStats;

    fn finding(line: u32) -> Finding {
        Finding {
            path: "src/a.rs".into(),
            line,
            start_line: line,
            side: Side::Right,
            severity: Severity::Major,
            category: Category::Bug,
            title: format!("t{line}"),
            body: "b".into(),
            suggestion: None,
            rule: None,
            unverified: false,
        }
    }

    fn case() -> Case {
        let range = |bug: &str, line: u32| ExpectedRange {
            path: "src/a.rs".into(),
            start_line: line,
            end_line: line,
            side: Side::Right,
            description: String::new(),
            bug: bug.into(),
        };
        Case {
            version: CASES_VERSION,
            id: "c".into(),
            repo: ".".into(),
            base: "a".into(),
            head: "b".into(),
            expected: vec![range("b1", 10), range("b2", 40)],
            clean: false,
            source: String::new(),
            title: None,
            body: None,
        }
    }

    fn dropped(line: u32) -> DroppedFinding {
        DroppedFinding {
            finding: finding(line),
            reason: "r".into(),
        }
    }

    #[test]
    fn dropped_true_positives_and_lost_bugs_are_told_apart() {
        let stats = Stats {
            prompt_tokens: 900,
            completion_tokens: 100,
            verification: Some(Box::new(VerificationStats {
                prompt_tokens: 180,
                completion_tokens: 20,
                cost_usd: Some(0.01),
                ..VerificationStats::default()
            })),
            ..Stats::default()
        };
        // Bug b1: posted and dropped (a dropped true positive, not lost); bug b2: only
        // dropped (lost); a dropped finding far from both is neither.
        let mut posted = vec![finding(10)];
        posted[0].unverified = true;
        let screening = Screening::of(
            &case(),
            &posted,
            vec![dropped(11), dropped(40), dropped(90)],
            Vec::new(),
            &stats,
        );
        assert_eq!(screening.dropped_true_positives, 2);
        assert_eq!(screening.bugs_lost, 1);
        assert_eq!(screening.unverified, 1);
        assert_eq!(
            (screening.review_tokens, screening.verification_tokens),
            (800, 200)
        );
        assert_eq!(screening.verification_cost_usd, Some(0.01));
        assert!(screening.verified);
        let unverified = Screening::of(&case(), &posted, Vec::new(), Vec::new(), &Stats::default());
        assert!(!unverified.verified);
    }

    fn graded(grades: &[Grade]) -> Grades {
        Grades {
            findings: grades
                .iter()
                .map(|g| GradedFinding {
                    path: "src/a.rs".into(),
                    line: 1,
                    title: "t".into(),
                    grade: Some(*g),
                    reason: "r".into(),
                })
                .collect(),
            ..Grades::default()
        }
    }

    fn row(clean: bool, true_positives: usize, grades: Option<Grades>) -> ResultRow {
        ResultRow {
            case: "c".into(),
            strategy: "react".into(),
            model: "m".into(),
            clean,
            caught: Some(true_positives > 0),
            findings: true_positives + grades.as_ref().map_or(0, |g| g.findings.len()),
            true_positives,
            expected_total: usize::from(!clean),
            expected_caught: usize::from(true_positives > 0),
            expected_recall: None,
            tokens: 1000,
            cost_usd: None,
            seconds: 1.0,
            limit_reached: None,
            error: None,
            events: None,
            judge: None,
            screening: Screening {
                verified: true,
                review_tokens: 800,
                verification_tokens: 200,
                verification_cost_usd: Some(0.02),
                ..Screening::default()
            },
            grades,
        }
    }

    #[test]
    fn the_actionable_share_counts_bugs_defects_and_concerns() {
        use Grade::*;
        let rows = [
            row(false, 1, Some(graded(&[Defect, NotWorthPosting]))),
            row(
                true,
                0,
                Some(graded(&[WorthALook, NotWorthPosting, NotWorthPosting])),
            ),
            row(true, 0, Some(graded(&[]))),
        ];
        let refs: Vec<&ResultRow> = rows.iter().collect();
        let figures = noise_figures(&refs);
        assert_eq!(
            (
                figures.graded_defect,
                figures.graded_worth_a_look,
                figures.graded_not_worth_posting
            ),
            (Some(1), Some(1), Some(3))
        );
        // (1 on a bug + 1 defect + 1 concern) / (that + 3 not worth posting).
        assert_eq!(figures.actionable_share, Some(3.0 / 6.0));
        assert_eq!(figures.not_worth_posting_per_clean_case, Some(1.0));
        assert_eq!(figures.verification_share, Some(0.25));
        assert_eq!(figures.verification_tokens_per_case, Some(200.0));
        assert_eq!(figures.verification_cost_per_case, Some(0.02));
        let ungraded = noise_figures(&[&row(false, 1, None)]);
        assert_eq!(ungraded.actionable_share, None);
        assert_eq!(ungraded.graded_defect, None);
    }
}
