//! The words of a [`ReviewStatus`]: a title, a Markdown summary (GitHub) and one plain
//! line (GitLab). Only Redline's own sentences, counts and settings; a failure's reason
//! is escaped for Markdown.

use super::{Conclusion, DESCRIPTION_MAX, ReviewStatus, SkipReason, Verdict};
use crate::review::finding::Severity;
use crate::review::report::FailOn;
use crate::text::escape_inline;
use crate::text::short_sha;

/// The longest reason (of a failure, a retry) a summary quotes, in characters.
const REASON_MAX: usize = 2000;

pub(super) fn title(status: &ReviewStatus) -> String {
    match status {
        ReviewStatus::Queued { .. } => "Queued".into(),
        ReviewStatus::Running { .. } => "Reviewing".into(),
        ReviewStatus::Done(verdict) => {
            let partial = if verdict.partial.is_some() {
                " (partial review)"
            } else {
                ""
            };
            format!("{}{partial}", capitalized(&counts(verdict)))
        }
        ReviewStatus::Skipped { reason, .. } => format!("Skipped: {}", skip_phrase(reason)),
        ReviewStatus::Failed {
            timed_out: true, ..
        } => "Review timed out".into(),
        ReviewStatus::Failed { .. } => "Review failed".into(),
        ReviewStatus::Cancelled { newer_head } => match newer_head {
            Some(head) => format!("Cancelled: replaced by {}", short_sha(head)),
            None => "Cancelled: replaced by a newer review".into(),
        },
    }
}

pub(super) fn summary(status: &ReviewStatus) -> String {
    match status {
        ReviewStatus::Queued { note } => {
            let mut text = "Redline reviews this commit when a worker is free.".to_string();
            if let Some(note) = note {
                let note = truncated(&one_paragraph(note), REASON_MAX);
                text.push_str(&format!("\n\n{}", escape_inline(&note)));
            }
            text
        }
        ReviewStatus::Running { strategy, limits } => format!(
            "Redline is reviewing this commit.\n\n- Strategy: `{strategy}`\n- Limits: {limits}"
        ),
        ReviewStatus::Done(verdict) => done_summary(verdict),
        ReviewStatus::Skipped { reason, carried } => {
            let mut text = skip_sentence(reason);
            if let Some(conclusion) = carried {
                text.push_str(&format!(
                    "\n\nThe earlier review of this commit concluded `{}`; that result stands.",
                    conclusion.as_str()
                ));
            }
            text
        }
        ReviewStatus::Failed { reason, .. } => format!(
            "Redline could not review this commit: {}",
            escape_inline(&truncated(&one_paragraph(reason), REASON_MAX))
        ),
        ReviewStatus::Cancelled { newer_head } => match newer_head {
            Some(head) => format!(
                "A newer commit, `{}`, replaced this one: its review is the one that counts.",
                short_sha(head)
            ),
            None => "A newer review of this change replaced this one.".into(),
        },
    }
}

pub(super) fn description(status: &ReviewStatus) -> String {
    let line = match status {
        ReviewStatus::Queued { .. } => "queued".to_string(),
        ReviewStatus::Running { strategy, .. } => format!("reviewing (strategy {strategy})"),
        ReviewStatus::Done(verdict) => {
            let threshold = match verdict.fail_on {
                FailOn::Never => String::new(),
                FailOn::At(severity) => format!("; fails at {severity} or above"),
            };
            let partial = verdict
                .partial
                .map(|kind| format!("; partial: {}", kind.reason()))
                .unwrap_or_default();
            format!("{}{threshold}{partial}", counts(verdict))
        }
        ReviewStatus::Skipped { reason, carried } => {
            let carried = carried
                .map(|c| format!("; the earlier review ({}) stands", c.as_str()))
                .unwrap_or_default();
            format!("skipped: {}{carried}", skip_phrase(reason))
        }
        ReviewStatus::Failed { reason, .. } => format!("failed: {}", one_paragraph(reason)),
        ReviewStatus::Cancelled { newer_head } => match newer_head {
            Some(head) => format!("canceled: replaced by {}", short_sha(head)),
            None => "canceled: replaced by a newer review".into(),
        },
    };
    truncated(&line, DESCRIPTION_MAX)
}

/// `2 findings: 1 critical, 1 minor`, or `no findings`.
fn counts(verdict: &Verdict) -> String {
    let total = verdict.total();
    if total == 0 {
        return "no findings".into();
    }
    let parts: Vec<String> = Severity::ALL
        .iter()
        .zip(verdict.counts)
        .filter(|(_, n)| *n > 0)
        .map(|(severity, n)| format!("{n} {severity}"))
        .collect();
    let noun = if total == 1 { "finding" } else { "findings" };
    format!("{total} {noun}: {}", parts.join(", "))
}

fn done_summary(verdict: &Verdict) -> String {
    let mut lines = Vec::new();
    let rule = match (verdict.fail_on, verdict.conclusion) {
        (FailOn::Never, _) => "Findings do not fail this check (`fail_on = \"never\"`).".into(),
        (FailOn::At(severity), Conclusion::Failure) => format!(
            "**Failing**: a finding at or above `{severity}` stands (`fail_on = \"{severity}\"`)."
        ),
        (FailOn::At(severity), _) => {
            format!("No finding at or above `{severity}` (`fail_on = \"{severity}\"`).")
        }
    };
    lines.push(format!("{}. {rule}", capitalized(&counts(verdict))));
    if let Some(link) = &verdict.link {
        lines.push(format!("[The review on the change]({link})"));
    }
    let cost = &verdict.cost;
    let money = match (cost.cost_usd, cost.estimated) {
        (Some(usd), false) => format!("${usd:.4}"),
        (Some(usd), true) => format!("~${usd:.4} (estimated usage)"),
        (None, _) => "cost unknown".into(),
    };
    lines.push(format!(
        "Cost: {money} · {} prompt + {} completion tokens",
        cost.prompt_tokens, cost.completion_tokens
    ));
    if let Some(kind) = verdict.partial {
        lines.push(format!(
            "The review stopped early ({}): it is partial.",
            kind.reason()
        ));
    }
    if !verdict.unanchored.is_empty() {
        lines.push(format!(
            "{} finding(s) could not be placed on the diff: they are this check's annotations \
             and are listed in the summary comment.",
            verdict.unanchored.len()
        ));
    }
    lines.join("\n\n")
}

fn skip_phrase(reason: &SkipReason) -> String {
    match reason {
        SkipReason::Draft => "draft".into(),
        SkipReason::AlreadyReviewed => "already reviewed".into(),
        SkipReason::NothingIncluded => "no included file changed".into(),
        SkipReason::NotTheHead { head } => format!("{} is the head now", short_sha(head)),
        SkipReason::ResultNotShown => "result not recorded".into(),
    }
}

fn skip_sentence(reason: &SkipReason) -> String {
    match reason {
        SkipReason::Draft => "A draft is not reviewed: Redline reviews it once it is marked ready \
            for review."
            .into(),
        SkipReason::AlreadyReviewed => "Redline reviewed this commit already.".into(),
        SkipReason::NothingIncluded => {
            "No changed file is one the `include` setting selects: nothing to review.".into()
        }
        SkipReason::NotTheHead { head } => format!(
            "This commit is no longer the head of the change (`{}` is): its own check shows its review.",
            short_sha(head)
        ),
        SkipReason::ResultNotShown => "Redline reviewed this commit but stopped before it showed \
            the result here: the review on the change has it."
            .into(),
    }
}

/// The text on one line: runs of whitespace (newlines included) become one space.
fn one_paragraph(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// At most `max` characters, ending in `…` when cut.
fn truncated(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}
