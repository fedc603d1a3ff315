//! How a run ends: the tool the model calls to hand in its result, and how that
//! result is read from the call or, leniently, from plain text.

use crate::errors::ModelReplyError;
use crate::llm::ToolSpec;
use crate::review::parse::{Submission, parse_submission, parse_text_reply, submit_review_schema};

use super::plan::{Plan, submit_plan_spec};
use super::reflection::{Evaluation, submit_evaluation_spec};

/// What ends a run and how its result is read.
pub(crate) trait Finisher: Send + Sync {
    /// What the run produces.
    type Output: Send;
    /// The finishing tool.
    fn spec(&self) -> ToolSpec;
    /// Reads the finishing tool's arguments; the error tells the model what to fix.
    fn parse_args(&self, args: &serde_json::Value) -> Result<Self::Output, ModelReplyError>;
    /// Reads a result from a reply without tool calls, if there is one.
    fn parse_text(&self, text: &str) -> Option<Self::Output>;

    /// Whether, in text mode, a reply in neither ReAct form is still read with
    /// [`Finisher::parse_text`] before it counts as unreadable (the verifier's plain
    /// `F1: keep - reason` lines).
    fn lenient_text(&self) -> bool {
        false
    }

    /// Reads the finishing tool's raw arguments.
    fn parse_call(&self, raw: &str) -> Result<Self::Output, ModelReplyError> {
        let name = self.spec().name;
        let args: serde_json::Value = serde_json::from_str(raw).map_err(|e| {
            ModelReplyError::respond(format!(
                "the arguments of `{name}` are not valid JSON ({e}); call it again with a JSON object"
            ))
        })?;
        self.parse_args(&args).map_err(|e| {
            e.within(|text| {
                format!("could not read `{name}`: {text}; call it again following its schema")
            })
        })
    }
}

/// Name of the tool the model calls to finish a review.
pub(crate) const SUBMIT_REVIEW: &str = "submit_review";

/// Ends a review run with `submit_review`.
pub(crate) struct ReviewFinisher {
    /// Whether the schema asks for a walkthrough of the change (`walkthrough = true`).
    pub(crate) walkthrough: bool,
}

impl ReviewFinisher {
    /// The finisher of a review run under `config`.
    pub(crate) fn of(config: &super::AgentConfig) -> Self {
        ReviewFinisher {
            walkthrough: config.walkthrough,
        }
    }
}

impl Finisher for ReviewFinisher {
    type Output = Submission;

    fn spec(&self) -> ToolSpec {
        let walkthrough = match self.walkthrough {
            true => ", a walkthrough of what the change does per area (group of files)",
            false => "",
        };
        ToolSpec {
            name: SUBMIT_REVIEW.into(),
            description: format!(
                "Finish the review: submit every finding, anchored on head line numbers of the diff{walkthrough}, and a short summary. Call it once, at the end."
            ),
            parameters: submit_review_schema(self.walkthrough),
        }
    }

    fn parse_args(&self, args: &serde_json::Value) -> Result<Submission, ModelReplyError> {
        parse_submission(args)
    }

    fn parse_text(&self, text: &str) -> Option<Submission> {
        parse_text_reply(text)
    }
}

/// Ends a planning run with `submit_plan`.
pub(crate) struct PlanFinisher;

impl Finisher for PlanFinisher {
    type Output = Plan;

    fn spec(&self) -> ToolSpec {
        submit_plan_spec()
    }

    fn parse_args(&self, args: &serde_json::Value) -> Result<Plan, ModelReplyError> {
        Plan::from_submission(args)
    }

    fn parse_text(&self, text: &str) -> Option<Plan> {
        json_object_in(text).and_then(|v| Plan::from_submission(&v).ok())
    }
}

/// Ends an evaluation run with `submit_evaluation`.
pub(crate) struct EvaluationFinisher;

impl Finisher for EvaluationFinisher {
    type Output = Evaluation;

    fn spec(&self) -> ToolSpec {
        submit_evaluation_spec()
    }

    fn parse_args(&self, args: &serde_json::Value) -> Result<Evaluation, ModelReplyError> {
        Evaluation::from_submission(args)
    }

    fn parse_text(&self, text: &str) -> Option<Evaluation> {
        json_object_in(text).and_then(|v| Evaluation::from_submission(&v).ok())
    }
}

/// The first JSON object in a text (fenced or bare).
fn json_object_in(text: &str) -> Option<serde_json::Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    serde_json::from_str(text.get(start..=end)?).ok()
}
