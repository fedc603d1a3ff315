//! Reflection: an actor reviews, an evaluator scores each finding, the
//! orchestrator drops what scored under the threshold, and a reflector revises,
//! for at most `max_rounds` evaluations or until the overall score reaches the target.

use serde::{Deserialize, Serialize};

use super::AgentError;
use super::events::{EventKind, Scores, Stats};
use super::finish::{EvaluationFinisher, ReviewFinisher};
use super::react::{ReactRun, RunContext};
use crate::errors::ModelReplyError;
use crate::llm::{Message, ToolSpec};
use crate::review::anchor::check_findings;
use crate::review::finding::Finding;
use crate::review::parse::Submission;

/// Name of the tool the evaluator calls.
pub(crate) const SUBMIT_EVALUATION: &str = "submit_evaluation";

/// Thresholds of the reflection loop (config table `[reflection]`).
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ReflectionConfig {
    /// Evaluation rounds at most.
    #[schemars(range(min = 1, max = 10))]
    pub max_rounds: u32,
    /// Findings whose mean score is under this are removed (0 to 10).
    #[schemars(range(min = 0, max = 10))]
    pub drop_below: f64,
    /// Stop once the overall score reaches this (0 to 10).
    #[schemars(range(min = 0, max = 10))]
    pub target: f64,
}

impl Default for ReflectionConfig {
    fn default() -> Self {
        ReflectionConfig {
            max_rounds: 3,
            drop_below: 5.0,
            target: 8.0,
        }
    }
}

/// The evaluator's verdict on one finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingScore {
    /// The finding's id (`F1`, `F2`, …).
    pub id: String,
    /// Is it real and accurate (0 to 10)?
    pub correctness: f64,
    /// Is it backed by the code (0 to 10)?
    pub evidence: f64,
    /// Can the author act on it (0 to 10)?
    pub actionability: f64,
    /// One line.
    pub reason: String,
}

impl FindingScore {
    /// The mean of the three axes.
    pub(crate) fn mean(&self) -> f64 {
        (self.correctness + self.evidence + self.actionability) / 3.0
    }
}

/// One evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// Per finding.
    pub per_finding: Vec<FindingScore>,
    /// Overall score of the review (0 to 10).
    pub overall: f64,
    /// Areas the review missed.
    pub missed_areas: Vec<String>,
}

impl Evaluation {
    /// Reads `submit_evaluation` arguments leniently (numbers may come as strings; scores are clamped to 0..=10).
    pub(crate) fn from_submission(args: &serde_json::Value) -> Result<Evaluation, ModelReplyError> {
        let number = |v: Option<&serde_json::Value>| -> Option<f64> {
            let v = v?;
            v.as_f64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                .map(|n| n.clamp(0.0, 10.0))
        };
        let overall = number(args.get("overall_score").or_else(|| args.get("overall")))
            .ok_or_else(|| {
                ModelReplyError::respond("`overall_score` must be a number from 0 to 10")
            })?;
        let mut per_finding = Vec::new();
        for item in args
            .get("findings")
            .and_then(|f| f.as_array())
            .into_iter()
            .flatten()
        {
            let Some(id) = item.get("id").and_then(|i| i.as_str()) else {
                continue;
            };
            let axis = |k: &str| number(item.get(k)).unwrap_or(0.0);
            per_finding.push(FindingScore {
                id: id.trim().to_ascii_uppercase(),
                correctness: axis("correctness"),
                evidence: axis("evidence"),
                actionability: axis("actionability"),
                reason: item
                    .get("reason")
                    .and_then(|r| r.as_str())
                    .unwrap_or_default()
                    .to_string(),
            });
        }
        let missed_areas = args
            .get("missed_areas")
            .and_then(|m| m.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Evaluation {
            per_finding,
            overall,
            missed_areas,
        })
    }
}

/// The `submit_evaluation` tool's spec.
pub(crate) fn submit_evaluation_spec() -> ToolSpec {
    let score = serde_json::json!({"type": "number", "minimum": 0, "maximum": 10});
    ToolSpec {
        name: SUBMIT_EVALUATION.into(),
        description: "Submit the evaluation: a score per finding id on correctness, evidence and actionability with a one-line reason, an overall score, and the areas the review missed.".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "findings": {"type": "array", "items": {"type": "object", "properties": {
                    "id": {"type": "string"}, "correctness": score, "evidence": score, "actionability": score,
                    "reason": {"type": "string"}}, "required": ["id", "correctness", "evidence", "actionability", "reason"]}},
                "overall_score": score,
                "missed_areas": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["findings", "overall_score"]
        }),
    }
}

/// Runs reflection from the actor's first review; returns the final submission.
pub(crate) async fn run(
    ctx: &RunContext<'_>,
    config: &ReflectionConfig,
    task: &str,
    stats: &mut Stats,
) -> Result<Submission, AgentError> {
    let system = ctx.config.prompts.system.clone();
    let actor = ReactRun {
        ctx,
        finisher: &ReviewFinisher::of(ctx.config),
        use_tools: true,
        max_steps: ctx.config.max_steps,
    };
    let mut current = actor
        .run(
            vec![Message::system(system.clone()), Message::user(task)],
            stats,
        )
        .await?;
    // Findings that cannot be anchored are not scored, but they are kept: the
    // orchestrator reports them as notes, like every strategy does.
    let mut unanchored = Vec::new();
    current.findings = anchored(current.findings, ctx, &mut unanchored);
    let mut scores = Scores::default();
    for round in 1..=config.max_rounds.max(1) {
        // A limit reached after the actor finished keeps the actor's (or the last
        // revision's) checked findings: they are a finished review.
        let evaluation = match evaluate(ctx, task, &current.findings, stats).await {
            Err(AgentError::LimitReached(_)) => break,
            other => other?,
        };
        scores.rounds = round;
        scores.overall.push(evaluation.overall);
        ctx.events.emit(EventKind::Evaluation {
            round,
            score: evaluation.overall,
            per_finding: evaluation.per_finding.clone(),
        });
        let (kept, dropped) = split_by_score(
            std::mem::take(&mut current.findings),
            &evaluation,
            config.drop_below,
        );
        scores.dropped += dropped.len() as u32;
        current.findings = kept.iter().map(|(_, f)| f.clone()).collect();
        if evaluation.overall >= config.target || round == config.max_rounds.max(1) {
            break;
        }
        let reflector = ReactRun {
            ctx,
            finisher: &ReviewFinisher::of(ctx.config),
            use_tools: true,
            max_steps: ctx.config.max_steps,
        };
        let brief = reflector_brief(task, &kept, &evaluation);
        let revised = match reflector
            .run(
                vec![Message::system(system.clone()), Message::user(brief)],
                stats,
            )
            .await
        {
            Err(AgentError::LimitReached(_)) => break,
            other => other?,
        };
        current = revision(current, revised, ctx, &mut unanchored);
    }
    stats.scores = Some(scores);
    current.findings.extend(unanchored);
    Ok(current)
}

/// The reflector's revision of `current`: its anchored findings; the summary and the
/// walkthrough of the earlier round where the revision gives none.
fn revision(
    current: Submission,
    revised: Submission,
    ctx: &RunContext<'_>,
    unanchored: &mut Vec<Finding>,
) -> Submission {
    let or_earlier = |new: String, old: String| if new.is_empty() { old } else { new };
    Submission {
        findings: anchored(revised.findings, ctx, unanchored),
        summary: or_earlier(revised.summary, current.summary),
        rejected: [current.rejected, revised.rejected].concat(),
        walkthrough: if revised.walkthrough.is_empty() {
            current.walkthrough
        } else {
            revised.walkthrough
        },
    }
}

/// The findings that anchor on the diff; the others go to `unanchored` (once each).
fn anchored(
    findings: Vec<Finding>,
    ctx: &RunContext<'_>,
    unanchored: &mut Vec<Finding>,
) -> Vec<Finding> {
    let checked = check_findings(findings, &ctx.workspace.changes);
    for note in checked.notes {
        if !unanchored.contains(&note.finding) {
            unanchored.push(note.finding);
        }
    }
    checked.findings
}

async fn evaluate(
    ctx: &RunContext<'_>,
    task: &str,
    findings: &[Finding],
    stats: &mut Stats,
) -> Result<Evaluation, AgentError> {
    let evaluator = ReactRun {
        ctx,
        finisher: &EvaluationFinisher,
        use_tools: true,
        max_steps: ctx.config.max_steps,
    };
    let history = vec![
        Message::system(crate::prompts::EVALUATOR.to_string()),
        Message::user(evaluation_message(task, findings)),
    ];
    evaluator.run(history, stats).await
}

/// The evaluator's user message. Its own job comes first: the reviewer's task opens with
/// "Review this change", and an evaluator reading that first took the review for its own
/// work (seen with a capable model through the relay).
fn evaluation_message(task: &str, findings: &[Finding]) -> String {
    format!(
        "Evaluate the findings another reviewer reported on this change, as your instructions \
         say: check each against the code and score it. The reviewer's task (the change, its \
         intent and its diff) and the findings follow; do not review the change yourself.\n\n\
         # The reviewer's task\n\n{task}\n\n# The findings to evaluate\n\n{}",
        list_findings(findings)
    )
}

/// Stable ids: `F1`… in the order of the checked findings.
fn finding_id(index: usize) -> String {
    format!("F{}", index + 1)
}

fn list_findings(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return "(the review reported no findings)".into();
    }
    findings
        .iter()
        .enumerate()
        .map(|(i, f)| {
            format!(
                "[{}] {} ({}, {}) {}\n{}\n",
                finding_id(i),
                f.location(),
                f.severity,
                f.category.as_str(),
                f.title,
                f.body
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Keeps findings the evaluator scored at or above the threshold, and those it did not score.
fn split_by_score(
    findings: Vec<Finding>,
    evaluation: &Evaluation,
    drop_below: f64,
) -> (Vec<(String, Finding)>, Vec<String>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for (i, finding) in findings.into_iter().enumerate() {
        let id = finding_id(i);
        match evaluation.per_finding.iter().find(|s| s.id == id) {
            Some(score) if score.mean() < drop_below => dropped.push(id),
            _ => kept.push((id, finding)),
        }
    }
    (kept, dropped)
}

fn reflector_brief(task: &str, kept: &[(String, Finding)], evaluation: &Evaluation) -> String {
    let mut brief = format!(
        "{}\n\n{task}\n\nFindings that survived the evaluation:\n",
        crate::prompts::REFLECTOR
    );
    if kept.is_empty() {
        brief.push_str("(none)\n");
    }
    for (id, f) in kept {
        let verdict = evaluation.per_finding.iter().find(|s| &s.id == id);
        brief.push_str(&format!(
            "\n[{id}] {} ({}, {}) {}\n{}\n",
            f.location(),
            f.severity,
            f.category.as_str(),
            f.title,
            f.body
        ));
        if let Some(s) = verdict {
            brief.push_str(&format!(
                "evaluator: correctness {:.0}, evidence {:.0}, actionability {:.0}: {}\n",
                s.correctness, s.evidence, s.actionability, s.reason
            ));
        }
    }
    if !evaluation.missed_areas.is_empty() {
        brief.push_str("\nAreas the evaluator says were missed:\n");
        for area in &evaluation.missed_areas {
            brief.push_str(&format!("- {area}\n"));
        }
    }
    brief
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_evaluator_is_told_its_task_before_the_reviewers() {
        let message = evaluation_message("Review this change.\n\nDIFF", &[]);
        assert!(message.starts_with("Evaluate the findings"), "{message}");
        let own = message.find("# The reviewer's task\n\nReview this change.\n\nDIFF");
        let findings =
            message.find("# The findings to evaluate\n\n(the review reported no findings)");
        assert!(
            own.is_some() && findings.is_some() && own < findings,
            "{message}"
        );
    }

    #[test]
    fn evaluation_reads_leniently_and_clamps() {
        let args = serde_json::json!({"overall_score": "7.5", "findings": [
            {"id": "f1", "correctness": 12, "evidence": "4", "actionability": 5, "reason": "ok"}
        ], "missed_areas": ["error paths"]});
        let e = Evaluation::from_submission(&args).unwrap();
        assert_eq!(e.overall, 7.5);
        assert_eq!(e.per_finding[0].id, "F1");
        assert_eq!(e.per_finding[0].correctness, 10.0);
        assert!((e.per_finding[0].mean() - 19.0 / 3.0).abs() < 1e-9);
        assert!(Evaluation::from_submission(&serde_json::json!({"findings": []})).is_err());
    }
}
