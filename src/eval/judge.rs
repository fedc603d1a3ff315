//! The judge (`--judge`): whether a finding near an expected range describes that bug,
//! asked of a model, one small call per (bug, near finding).
//!
//! Rules: "near" is the proximity rule of [`super::score::overlaps`]; a bug is judged
//! caught when the judge answers yes for some near finding (findings are asked in
//! order, and the asking stops at the first yes); an answer that is not a clear yes
//! (no, unreadable, a failed call) is a no, and failed or unreadable answers are
//! counted. The judge's tokens and cost are its own: they are never added to the
//! reviewed pair's.
//!
//! Invariant: the judge sees the bug's description, the finding and its place, nothing
//! of the repository; the reviewer never sees the description (the judge runs after
//! the review).

use serde::{Deserialize, Serialize};

use super::cases::{Case, ExpectedRange};
use super::score::{distinct, overlaps};
use crate::llm::pricing::Price;
use crate::llm::{ChatModel, ChatRequest, Message};
use crate::review::finding::Finding;

/// The reply budget of one judgement: a tiny JSON object.
const JUDGE_MAX_TOKENS: u32 = 200;

const SYSTEM: &str = "You grade code review findings against a known bug. Reply with only a JSON object: {\"match\": true} when the finding describes the known bug (the same defect, even in other words), {\"match\": false} when it is about something else, even nearby.";

/// What the judge said of one review.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct JudgeTally {
    /// Bugs judged caught.
    pub caught: usize,
    /// Calls made.
    pub calls: usize,
    /// Calls that failed or whose answer was unreadable (counted as no).
    pub failures: usize,
    /// Prompt plus completion tokens of the calls.
    pub tokens: u64,
    /// Cost of the calls; `None` when the judge's price is unknown.
    pub cost_usd: Option<f64>,
}

/// The judge: a model, its name and its price.
pub(crate) struct Judge<'a> {
    /// The client.
    pub model: &'a dyn ChatModel,
    /// The model name.
    pub name: &'a str,
    /// Its price, when known.
    pub price: Option<Price>,
}

/// The request asking whether `finding` describes the bug of `range`.
pub(crate) fn judge_request(model: &str, range: &ExpectedRange, finding: &Finding) -> ChatRequest {
    let place = |path: &str, start: u32, end: u32| {
        if start == end {
            format!("{path}:{start}")
        } else {
            format!("{path}:{start}-{end}")
        }
    };
    let span = finding.range();
    let user = format!(
        "Known bug at {}: {}\n\nFinding at {}:\nTitle: {}\n{}\n\nDoes the finding describe the known bug? Reply {{\"match\": true}} or {{\"match\": false}}.",
        place(&range.path, range.start_line, range.end_line),
        range.description,
        place(&finding.path, *span.start(), *span.end()),
        finding.title,
        finding.body
    );
    ChatRequest {
        model: model.to_string(),
        messages: vec![
            Message::System {
                content: SYSTEM.to_string(),
            },
            Message::User { content: user },
        ],
        tools: Vec::new(),
        max_tokens: JUDGE_MAX_TOKENS,
        temperature: Some(0.0),
    }
}

/// The judge's answer: `Some(true)` for a match, `Some(false)` for none, `None` when
/// the reply says neither clearly.
pub(crate) fn parse_answer(text: &str) -> Option<bool> {
    let object = text
        .find('{')
        .zip(text.rfind('}'))
        .and_then(|(start, end)| text.get(start..=end))
        .and_then(|json| serde_json::from_str::<serde_json::Value>(json).ok());
    if let Some(value) = object {
        return value.get("match").and_then(serde_json::Value::as_bool);
    }
    match text
        .trim()
        .trim_end_matches('.')
        .to_ascii_lowercase()
        .as_str()
    {
        "yes" | "true" => Some(true),
        "no" | "false" => Some(false),
        _ => None,
    }
}

impl Judge<'_> {
    /// Asks about every bug of `case` the findings come near, stopping per bug at the
    /// first yes.
    pub(crate) async fn judge_case(&self, case: &Case, findings: &[Finding]) -> JudgeTally {
        let findings = distinct(findings);
        let mut tally = JudgeTally {
            cost_usd: self.price.map(|_| 0.0),
            ..JudgeTally::default()
        };
        for bug in case.bugs() {
            let ranges: Vec<&ExpectedRange> =
                case.expected.iter().filter(|e| e.bug == bug).collect();
            'findings: for finding in &findings {
                let Some(range) = ranges.iter().find(|r| overlaps(finding, r)) else {
                    continue;
                };
                if self.ask(range, finding, &mut tally).await {
                    tally.caught += 1;
                    break 'findings;
                }
            }
        }
        tally
    }

    async fn ask(&self, range: &ExpectedRange, finding: &Finding, tally: &mut JudgeTally) -> bool {
        tally.calls += 1;
        let request = judge_request(self.name, range, finding);
        match self.model.complete(&request).await {
            Ok(response) => {
                let usage = response.usage;
                tally.tokens += usage.prompt_tokens + usage.completion_tokens;
                tally.cost_usd = tally
                    .cost_usd
                    .zip(self.price)
                    .map(|(sum, price)| sum + price.cost(&usage));
                let answer = parse_answer(&response.content);
                tally.failures += usize::from(answer.is_none());
                answer == Some(true)
            }
            Err(_) => {
                tally.failures += 1;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_from_json_or_a_plain_word() {
        assert_eq!(parse_answer("{\"match\": true}"), Some(true));
        assert_eq!(parse_answer("Sure: {\"match\": false} done"), Some(false));
        assert_eq!(parse_answer("yes"), Some(true));
        assert_eq!(parse_answer("No."), Some(false));
        assert_eq!(parse_answer("maybe"), None);
        assert_eq!(parse_answer("{\"verdict\": true}"), None);
    }
}
