//! The settings of one review as the engine takes them: the model, the strategy and its
//! tuning, the prompts, the limits, the intent and the verification.

use super::DEFAULT_MAX_STEPS;
use super::budget::ReviewLimits;
use super::reflection::ReflectionConfig;
use super::strategy::{AutoThresholds, Strategy, StrategyChoice};
use super::tool_mode::ToolMode;
use super::verify::VerifyConfig;
use crate::llm::pricing::{Price, builtin_price};
use crate::llm::tokens::{ModelLimits, TokenCounter};
use crate::prompts::Prompts;

/// How a review runs.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Model name, as the provider knows it.
    pub model: String,
    /// Model turns of one ReAct run before its final turn without tools.
    pub max_steps: u32,
    /// Cap on one reply's tokens.
    pub max_reply_tokens: u32,
    /// Sampling temperature, if set.
    pub temperature: Option<f32>,
    /// Extra instructions from the repository's config.
    pub instructions: Option<String>,
    /// The prompts.
    pub prompts: Prompts,
    /// Consecutive unreadable replies that end a run.
    pub parse_failure_limit: u32,
    /// Token budget of one plan-and-execute task's first message (`None`: the stage-1 budget).
    pub task_budget: Option<usize>,
    /// Which strategy.
    pub strategy: StrategyChoice,
    /// Thresholds of `auto`.
    pub auto: AutoThresholds,
    /// Reflection loop settings.
    pub reflection: ReflectionConfig,
    /// Plan-and-execute tasks run at once.
    pub parallel: usize,
    /// Native or text tool calling.
    pub tool_mode: ToolMode,
    /// The model's window and output reserve.
    pub limits: ModelLimits,
    /// Extra globs of changed files to leave out of the first message (listed, not shown).
    pub exclude: Vec<String>,
    /// The first message's context after each change (two lines; other rules are
    /// for measurement only, `REDLINE_BENCH_CONTEXT_AFTER`).
    pub context_after: crate::context::AfterContext,
    /// Tool results kept whole in the history (stage 2).
    pub keep_tool_results: usize,
    /// Share of the window past which seen tool results are elided (stage 2).
    pub prune_threshold: f32,
    /// Share of the window at which the history is summarised (stage 3).
    pub summary_threshold: f32,
    /// Hard limits of the review (cost, tokens, wall time).
    pub review_limits: ReviewLimits,
    /// The model's price, when known (the built-in table by default).
    pub price: Option<Price>,
    /// Whether `submit_review` asks for a walkthrough of the change (`walkthrough`).
    pub walkthrough: bool,
    /// The project guidelines' section of the system prompt, also shown to the planner
    /// (set by [`crate::guidelines::append_section`]).
    pub guidelines: Option<String>,
    /// What the author says the change does, rendered within `intent_budget` (set by
    /// [`AgentConfig::set_intent`]); empty for none. Only ever part of a user message.
    pub intent: String,
    /// Tokens the intent section may take (`intent_budget`).
    pub intent_budget: usize,
    /// Whether the findings are verified before they are reported, and by which model.
    pub verification: VerifyConfig,
}

impl AgentConfig {
    /// Defaults for a model.
    pub fn new(model: impl Into<String>) -> Self {
        let model = model.into();
        AgentConfig {
            limits: ModelLimits::for_model(&model),
            review_limits: ReviewLimits::default(),
            price: builtin_price(&model),
            exclude: Vec::new(),
            context_after: crate::context::AfterContext::default(),
            keep_tool_results: crate::context::Pruner::default().keep_recent,
            prune_threshold: crate::context::DEFAULT_PRUNE_THRESHOLD,
            summary_threshold: crate::context::DEFAULT_SUMMARY_THRESHOLD,
            model,
            max_steps: DEFAULT_MAX_STEPS,
            max_reply_tokens: 4096,
            temperature: None,
            instructions: None,
            prompts: Prompts::default(),
            parse_failure_limit: 2,
            task_budget: None,
            strategy: StrategyChoice::Fixed(Strategy::React),
            auto: AutoThresholds::default(),
            reflection: ReflectionConfig::default(),
            parallel: 4,
            tool_mode: ToolMode::Auto,
            walkthrough: true,
            guidelines: None,
            intent: String::new(),
            intent_budget: crate::intent::DEFAULT_INTENT_BUDGET,
            verification: VerifyConfig::default(),
        }
    }

    /// Every setting that shapes the review, for a transcript's settings digest: the
    /// intent is left out (it is recorded on its own, and a resumed run uses the recorded one).
    pub(crate) fn settings_description(&self) -> String {
        let mut settings = self.clone();
        settings.intent.clear();
        format!("{settings:?}")
    }

    /// Renders `intent` within `intent_budget` for this model's tokenizer.
    pub fn set_intent(&mut self, intent: &crate::intent::Intent) {
        self.intent = intent.render(self.intent_budget, &TokenCounter::for_model(&self.model));
    }
}
