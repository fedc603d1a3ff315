//! The counters of one review, as in the JSON output's `stats`: what every
//! renderer, publisher and the orchestrator share. They are plain data, kept
//! here, below the agent that fills them in, so that rendering and publishing
//! never depend on the agent.

use serde::{Deserialize, Serialize};

/// Counters of one review, as in the JSON output's `stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// `react`, `plan_execute` or `reflection`.
    pub strategy: String,
    /// Agent steps taken (model turns).
    pub steps: u32,
    /// Model calls made.
    pub model_calls: u32,
    /// Tool calls the model made, `submit_review` included.
    pub tool_calls: u32,
    /// Prompt tokens over all calls.
    pub prompt_tokens: u64,
    /// Completion tokens over all calls.
    pub completion_tokens: u64,
    /// Of the prompt tokens, those the provider read from its prompt cache.
    #[serde(default)]
    pub cached_prompt_tokens: u64,
    /// Of the prompt tokens, those written to the provider's prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Cost in USD at the price table; `null` when the model's price is unknown.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Whether some call's usage was counted locally (the provider reported none).
    #[serde(default)]
    pub cost_estimated: bool,
    /// The limit that stopped the review early: `cost`, `tokens` or `time`; `null` otherwise.
    #[serde(default)]
    pub limit_reached: Option<LimitKind>,
    /// Wall time of the run.
    pub duration_ms: u64,
    /// Share (0 to 1) of the reviewable changed lines the model was shown.
    #[serde(default)]
    pub coverage: f64,
    /// Reflection scores, when the reflection strategy ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scores: Option<Scores>,
    /// Plan-and-execute tasks, when that strategy ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskStat>,
    /// What the context stages saved.
    #[serde(default)]
    pub compression: CompressionStats,
    /// The verification of the findings, when it ran: its own calls, tokens and cost (also
    /// in the totals above) and its verdicts. Missing when verification was off or there
    /// was nothing to verify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Box<VerificationStats>>,
}

/// Counters of the verification stage (a part of the review's totals).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerificationStats {
    /// The model that verified.
    pub model: String,
    /// Findings sent to the verifier (after duplicates were merged).
    pub findings: usize,
    /// Verifier conversations (at most 20 findings each).
    pub batches: u32,
    /// Findings kept by a verdict.
    pub kept: usize,
    /// Findings dropped by a verdict.
    pub dropped: usize,
    /// Findings kept without a readable verdict (`"unverified": true`).
    pub unverified: usize,
    /// Duplicates merged before verification.
    pub merged: usize,
    /// Model calls of the verifier.
    pub model_calls: u32,
    /// Tool calls of the verifier (the verdict tool included).
    pub tool_calls: u32,
    /// Prompt tokens of the verifier's calls.
    pub prompt_tokens: u64,
    /// Completion tokens of the verifier's calls.
    pub completion_tokens: u64,
    /// Of the prompt tokens, those read from the provider's prompt cache.
    #[serde(default)]
    pub cached_prompt_tokens: u64,
    /// Cost of the verifier's calls at its model's price; `null` when unknown.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Wall time of the verification.
    pub duration_ms: u64,
    /// Why verification ended before every finding had a verdict, when it did (a limit,
    /// a failed call, unreadable answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

impl VerificationStats {
    /// Prompt plus completion tokens of the verifier.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// Totals of the context compression stages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompressionStats {
    /// Stage 1: tokens of the naive first prompt (full files and full diff).
    pub naive_tokens: u64,
    /// Stage 1: tokens of the shaped first message.
    pub shaped_tokens: u64,
    /// Stage 2: tokens removed from histories by pruning, over all calls.
    pub pruned_tokens: u64,
    /// Stage 3: summaries written.
    pub summaries: u32,
    /// Stage 3: times the oldest turns were dropped after a context-length error.
    pub dropped_turns: u32,
}

impl Stats {
    /// Adds another run's counters to these.
    pub(crate) fn absorb(&mut self, other: &Stats) {
        self.steps += other.steps;
        self.model_calls += other.model_calls;
        self.tool_calls += other.tool_calls;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_prompt_tokens += other.cached_prompt_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.cost_estimated |= other.cost_estimated;
    }

    /// Adds the verification stage's calls to these totals, and keeps its counters apart.
    pub(crate) fn add_verification(&mut self, verification: &VerificationStats) {
        self.steps += verification.model_calls;
        self.model_calls += verification.model_calls;
        self.tool_calls += verification.tool_calls;
        self.prompt_tokens += verification.prompt_tokens;
        self.completion_tokens += verification.completion_tokens;
        self.cached_prompt_tokens += verification.cached_prompt_tokens;
        self.cost_usd = match (self.cost_usd, verification.cost_usd) {
            (Some(review), Some(verifier)) => Some(review + verifier),
            _ => None,
        };
        self.verification = Some(Box::new(verification.clone()));
    }

    /// The token totals as one usage, to price them (cost is linear in the counts).
    pub fn usage(&self) -> crate::llm::Usage {
        crate::llm::Usage {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            cached_prompt_tokens: self.cached_prompt_tokens,
            cache_write_tokens: self.cache_write_tokens,
            estimated: self.cost_estimated,
        }
    }
}

/// Evaluator scores of a reflection run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    /// Evaluation rounds run.
    pub rounds: u32,
    /// The evaluator's overall score per round (0 to 10).
    pub overall: Vec<f64>,
    /// Findings removed for scoring under the threshold.
    pub dropped: u32,
}

/// How one plan-and-execute task went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStat {
    /// Task id.
    pub id: String,
    /// Task title.
    pub title: String,
    /// `ok`, `failed`, or `limit_reached` (stopped before it finished: a limit of the review was reached).
    pub outcome: String,
    /// Findings it produced (before merging).
    pub findings: usize,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Which limit stopped a review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// `max_cost` (USD at the price table).
    Cost,
    /// `max_tokens` (prompt + completion over all calls).
    Tokens,
    /// `timeout` (wall time).
    Time,
    /// Not a limit the user set: the review was told to stop (SIGINT or SIGTERM during
    /// `redline review`) and ended as at a limit, keeping what had finished.
    Interrupted,
}

impl LimitKind {
    /// The name in `stats.limit_reached` and events: `cost`, `tokens`, `time` or
    /// `interrupted`.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitKind::Cost => "cost",
            LimitKind::Tokens => "tokens",
            LimitKind::Time => "time",
            LimitKind::Interrupted => "interrupted",
        }
    }
}

impl LimitKind {
    /// What happened, as a phrase: `the cost limit was reached`, `the review was interrupted`.
    pub fn reason(self) -> String {
        match self {
            LimitKind::Interrupted => "the review was interrupted".to_string(),
            kind => format!("the {kind} limit was reached"),
        }
    }
}

impl std::fmt::Display for LimitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
