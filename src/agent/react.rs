//! The ReAct loop: the model thinks and calls tools, the orchestrator runs them
//! and answers each call by its id, until the model hands in its result through
//! the run's finishing tool. Works with native tool calling and in text mode.

use std::sync::Mutex;
use std::time::Instant;

use futures::future::join_all;
use tokio_util::sync::CancellationToken;

use super::budget::{Budget, LimitKind, prompt_estimate};
use super::coverage::Coverage;
use super::events::{CompressionStats, EventKind, EventSink, Stats};
use super::finish::Finisher;
use super::text_mode::{self, TextStep};
use super::tool_mode::ModeState;
use super::{AgentConfig, AgentError};
use crate::context::{
    DEFAULT_MAX_OBSERVATION_TOKENS, FirstMessageIndex, Pruner, ReadTracker, compact,
    drop_oldest_turns, needs_summary, prune_threshold_tokens, summary_request,
};
use crate::errors::ModelReplyError;
use crate::llm::tokens::TokenCounter;
use crate::llm::{ChatModel, ChatRequest, ChatResponse, LlmError, Message, ToolCall, ToolSpec};
use crate::review::diff::ChangeSet;
use crate::tools::{Observation, ToolError, ToolRegistry, Workspace};

/// Everything a run shares with the other runs of a review.
pub(crate) struct RunContext<'a> {
    pub model: &'a dyn ChatModel,
    pub tools: &'a ToolRegistry,
    pub workspace: &'a Workspace,
    pub events: &'a EventSink,
    pub config: &'a AgentConfig,
    pub cancel: &'a CancellationToken,
    pub counter: &'a TokenCounter,
    pub mode: &'a ModeState,
    pub coverage: &'a Coverage,
    /// The change minus noise: what plans and coverage are about.
    pub reviewable: &'a ChangeSet,
    /// Totals of the compression stages, shared by all runs.
    pub compression: &'a Mutex<CompressionStats>,
    /// The change as stage 1 shaped it (message, file entries, sections).
    pub shaped: &'a crate::context::ShapedContext,
    /// The review's hard limits, shared by all runs.
    pub budget: &'a Budget,
    /// The run's transcript, when it keeps one.
    pub recorder: Option<&'a super::transcript::Recorder>,
}

/// One ReAct run over a history, ended by `finisher`.
pub(crate) struct ReactRun<'a, F: Finisher> {
    pub ctx: &'a RunContext<'a>,
    pub finisher: &'a F,
    /// Whether the repository tools are offered (a planner gets none).
    pub use_tools: bool,
    /// Model turns before the final turn.
    pub max_steps: u32,
}

/// What one reply amounted to.
enum Turn<T> {
    Done(T),
    Continue,
    Unreadable(String),
}

impl<F: Finisher> ReactRun<'_, F> {
    /// Runs until the result is in, the step limit (then final turns), or an error.
    pub async fn run(
        &self,
        mut history: Vec<Message>,
        stats: &mut Stats,
    ) -> Result<F::Output, AgentError> {
        let mut failures = 0;
        for _ in 0..self.max_steps {
            let reply = self.call_compressed(&mut history, true, stats).await?;
            history.push(reply.to_message());
            match self.handle_reply(&reply, &mut history, stats).await? {
                Turn::Done(output) => return Ok(output),
                Turn::Continue => failures = 0,
                Turn::Unreadable(excerpt) => {
                    failures += 1;
                    self.check_failures(failures, &excerpt)?;
                }
            }
        }
        self.final_turns(history, stats, failures).await
    }

    /// At the step limit: ask for the conclusion now, without tools.
    async fn final_turns(
        &self,
        mut history: Vec<Message>,
        stats: &mut Stats,
        mut failures: u32,
    ) -> Result<F::Output, AgentError> {
        loop {
            history.push(Message::user(self.ctx.config.prompts.final_turn.clone()));
            let reply = self.call_compressed(&mut history, false, stats).await?;
            history.push(reply.to_message());
            if let Some(output) = self.finishing_call(&reply, stats).and_then(Result::ok) {
                return Ok(output);
            }
            let text = match self.ctx.mode.is_text() {
                true => match text_mode::parse_text_step(&reply.content) {
                    TextStep::Final { answer, .. } => answer,
                    _ => reply.content.clone(),
                },
                false => reply.content.clone(),
            };
            if let Some(output) = self.finisher.parse_text(&text) {
                return Ok(output);
            }
            // Every call id must be answered before the next user message.
            for call in &reply.tool_calls {
                history.push(tool_message(
                    call,
                    "ERROR: no more tool calls are allowed; give your conclusion now.",
                    true,
                ));
            }
            failures += 1;
            self.check_failures(failures, &excerpt(&reply.content))?;
        }
    }

    /// A model call after stages 2 and 3 have shaped the history; a context-length
    /// error drops the oldest turns and tries once more.
    async fn call_compressed(
        &self,
        history: &mut Vec<Message>,
        with_tools: bool,
        stats: &mut Stats,
    ) -> Result<ChatResponse, AgentError> {
        self.prune(history);
        self.summarise_if_needed(history, stats).await?;
        match self.call_model(history, with_tools, stats).await {
            Err(AgentError::Model(LlmError::ContextLengthExceeded { message })) => {
                let before = self.ctx.counter.count_messages(history);
                let Some(shorter) = drop_oldest_turns(history) else {
                    return Err(AgentError::Model(LlmError::ContextLengthExceeded {
                        message,
                    }));
                };
                *history = shorter;
                self.record(3, before, self.ctx.counter.count_messages(history), |c| {
                    c.dropped_turns += 1
                });
                self.call_model(history, with_tools, stats).await
            }
            other => other,
        }
    }

    /// Stage 2: past the prune threshold, old seen results become stubs; oversized
    /// new ones are cut. The event names what was elided.
    fn prune(&self, history: &mut [Message]) {
        let config = self.ctx.config;
        let pruner =
            Pruner::new(config.keep_tool_results, DEFAULT_MAX_OBSERVATION_TOKENS).with_threshold(
                prune_threshold_tokens(config.limits, config.prune_threshold),
            );
        let pruned = pruner.prune(history, self.ctx.counter);
        if pruned.after_tokens < pruned.before_tokens {
            let saved = (pruned.before_tokens - pruned.after_tokens) as u64;
            self.record_removed(
                2,
                pruned.before_tokens,
                pruned.after_tokens,
                pruned.removed,
                |c| c.pruned_tokens += saved,
            );
        }
    }

    /// Stage 3: past the threshold, the model summarises its progress and the
    /// history becomes system + task + summary + the latest turns.
    async fn summarise_if_needed(
        &self,
        history: &mut Vec<Message>,
        stats: &mut Stats,
    ) -> Result<(), AgentError> {
        let before = self.ctx.counter.count_messages(history);
        if !needs_summary(
            before,
            self.ctx.config.limits,
            self.ctx.config.summary_threshold,
        ) {
            return Ok(());
        }
        let request = summary_request(history);
        let reply = self.call_model(&request, false, stats).await?;
        *history = compact(history, &reply.content, 4);
        self.record(3, before, self.ctx.counter.count_messages(history), |c| {
            c.summaries += 1
        });
        Ok(())
    }

    fn record(
        &self,
        stage: u8,
        before: usize,
        after: usize,
        update: impl FnOnce(&mut CompressionStats),
    ) {
        self.record_removed(stage, before, after, Vec::new(), update);
    }

    fn record_removed(
        &self,
        stage: u8,
        before: usize,
        after: usize,
        removed: Vec<String>,
        update: impl FnOnce(&mut CompressionStats),
    ) {
        if let Ok(mut totals) = self.ctx.compression.lock() {
            update(&mut totals);
        }
        self.ctx.events.emit(EventKind::Compression {
            stage,
            before_tokens: before as u64,
            after_tokens: after as u64,
            removed,
        });
    }

    fn check_failures(&self, failures: u32, excerpt: &str) -> Result<(), AgentError> {
        if failures >= self.ctx.config.parse_failure_limit {
            return Err(AgentError::Unparseable {
                attempts: failures,
                excerpt: excerpt.to_string(),
            });
        }
        Ok(())
    }

    fn offered_tools(&self) -> Vec<ToolSpec> {
        let mut specs = if self.use_tools {
            self.ctx.tools.specs()
        } else {
            Vec::new()
        };
        specs.push(self.finisher.spec());
        specs
    }

    /// One model call; in text mode the tools are described in the system prompt instead.
    async fn call_model(
        &self,
        history: &[Message],
        with_tools: bool,
        stats: &mut Stats,
    ) -> Result<ChatResponse, AgentError> {
        if self.ctx.cancel.is_cancelled() {
            return Err(AgentError::Cancelled);
        }
        let started = Instant::now();
        let reply = match self.request(history, with_tools).await {
            Err(AgentError::Model(LlmError::ToolsUnsupported { .. }))
                if self.ctx.mode.fall_back() =>
            {
                self.ctx.events.emit(EventKind::Error {
                    message: "the endpoint rejected native tool calling; continuing in text mode"
                        .into(),
                    fatal: false,
                });
                self.request(history, with_tools).await?
            }
            other => other?,
        };
        stats.steps += 1;
        stats.model_calls += 1;
        stats.prompt_tokens += reply.usage.prompt_tokens;
        stats.completion_tokens += reply.usage.completion_tokens;
        stats.cached_prompt_tokens += reply.usage.cached_prompt_tokens;
        stats.cache_write_tokens += reply.usage.cache_write_tokens;
        stats.cost_estimated |= reply.usage.estimated;
        self.ctx.events.emit(EventKind::ModelCall {
            step: stats.steps,
            prompt_tokens: reply.usage.prompt_tokens,
            completion_tokens: reply.usage.completion_tokens,
            cached_prompt_tokens: reply.usage.cached_prompt_tokens,
            latency_ms: started.elapsed().as_millis() as u64,
        });
        Ok(reply)
    }

    async fn request(
        &self,
        history: &[Message],
        with_tools: bool,
    ) -> Result<ChatResponse, AgentError> {
        let text_mode = self.ctx.mode.is_text();
        let mut messages = history.to_vec();
        let mut tools = Vec::new();
        if text_mode {
            if let Some(Message::System { content }) = messages.first_mut() {
                content.push_str("\n\n");
                content.push_str(&text_mode::tools_prompt(&self.offered_tools()));
            }
        } else if with_tools {
            tools = self.offered_tools();
        }
        let mut request = ChatRequest {
            model: self.ctx.config.model.clone(),
            messages,
            tools,
            max_tokens: self.ctx.config.max_reply_tokens,
            temperature: self.ctx.config.temperature,
        };
        // The limits are checked before the call: its prompt plus its output allowance
        // must fit what is left, and the allowance is lowered to it.
        let prompt = match self.ctx.budget.counts_tokens() {
            true => prompt_estimate(self.ctx.counter, &request),
            false => 0,
        };
        let reservation = tokio::select! {
            admitted = self.ctx.budget.admit(prompt, request.max_tokens) => match admitted {
                Ok(reservation) => reservation,
                Err(kind) => return Err(self.limit_reached(kind)),
            },
            _ = self.ctx.cancel.cancelled() => return Err(AgentError::Cancelled),
        };
        request.max_tokens = reservation.max_tokens;
        tokio::select! {
            reply = self.ctx.model.complete(&request) => {
                let reply = reply?;
                reservation.settle(&reply.usage);
                Ok(reply)
            }
            _ = self.ctx.cancel.cancelled() => Err(AgentError::Cancelled),
            // At the timeout the call in flight is dropped (its reservation with it).
            kind = self.ctx.budget.expired() => Err(self.limit_reached(kind)),
        }
    }

    /// Records that a limit stopped this run; the first run to see it emits the event.
    fn limit_reached(&self, kind: LimitKind) -> AgentError {
        self.ctx.budget.reach(kind);
        if let Some(kind) = self.ctx.budget.announce() {
            let (tokens, cost) = self.ctx.budget.spent();
            self.ctx.events.emit(EventKind::LimitReached {
                limit: kind.as_str().into(),
                tokens,
                cost_usd: self.ctx.config.price.map(|_| cost),
            });
        }
        AgentError::LimitReached(self.ctx.budget.reached().unwrap_or(kind))
    }

    async fn handle_reply(
        &self,
        reply: &ChatResponse,
        history: &mut Vec<Message>,
        stats: &mut Stats,
    ) -> Result<Turn<F::Output>, AgentError> {
        if self.ctx.mode.is_text() && reply.tool_calls.is_empty() {
            return self.handle_text_reply(reply, history, stats).await;
        }
        if reply.tool_calls.is_empty() {
            return Ok(match self.finisher.parse_text(&reply.content) {
                Some(output) => Turn::Done(output),
                None => {
                    history.push(Message::user(self.ctx.config.prompts.corrective.clone()));
                    Turn::Unreadable(excerpt(&reply.content))
                }
            });
        }
        let finish_error = match self.finishing_call(reply, stats) {
            Some(Ok(output)) => return Ok(Turn::Done(output)),
            Some(Err(message)) => Some(message),
            None => None,
        };
        let finish_name = self.finisher.spec().name;
        let calls: Vec<&ToolCall> = reply
            .tool_calls
            .iter()
            .filter(|c| c.name != finish_name)
            .collect();
        let observations = self.run_tools(&calls, history, stats).await?;
        for call in &reply.tool_calls {
            if call.name == finish_name {
                let message = finish_error
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                history.push(tool_message(call, &format!("ERROR: {message}"), true));
            } else if let Some((_, observation)) =
                observations.iter().find(|(id, _)| *id == call.id)
            {
                history.push(tool_message(
                    call,
                    &observation.content,
                    observation.is_error,
                ));
            }
        }
        Ok(if finish_error.is_some() {
            Turn::Unreadable(excerpt(&reply.content))
        } else {
            Turn::Continue
        })
    }

    /// Text mode: the reply is `Thought/Action/Action Input` or `Final Answer`.
    async fn handle_text_reply(
        &self,
        reply: &ChatResponse,
        history: &mut Vec<Message>,
        stats: &mut Stats,
    ) -> Result<Turn<F::Output>, AgentError> {
        match text_mode::parse_text_step(&reply.content) {
            TextStep::Action { tool, input, .. } => {
                let call = text_mode::to_tool_call(stats.steps, &tool, &input);
                if tool == self.finisher.spec().name {
                    let parsed = self.finishing_call_of(&call, stats);
                    return Ok(match parsed {
                        Ok(output) => Turn::Done(output),
                        Err(message) => {
                            history.push(Message::user(text_mode::observation(&format!(
                                "ERROR: {message}"
                            ))));
                            Turn::Unreadable(excerpt(&reply.content))
                        }
                    });
                }
                let observations = self.run_tools(&[&call], history, stats).await?;
                let content = observations
                    .first()
                    .map(|(_, o)| o.content.clone())
                    .unwrap_or_default();
                history.push(Message::user(text_mode::observation(&content)));
                Ok(Turn::Continue)
            }
            TextStep::Final { answer, .. } => Ok(match self.finisher.parse_text(&answer) {
                Some(output) => Turn::Done(output),
                None => {
                    let reason = "the Final Answer is not a JSON object of the expected form";
                    history.push(Message::user(text_mode::corrective_observation(reason)));
                    Turn::Unreadable(excerpt(&reply.content))
                }
            }),
            TextStep::Unparseable { reason } => {
                if self.finisher.lenient_text()
                    && let Some(output) = self.finisher.parse_text(&reply.content)
                {
                    return Ok(Turn::Done(output));
                }
                history.push(Message::user(text_mode::corrective_observation(&reason)));
                Ok(Turn::Unreadable(excerpt(&reply.content)))
            }
        }
    }

    /// Runs the calls concurrently (every repository tool is read-only) and emits their events.
    async fn run_tools(
        &self,
        calls: &[&ToolCall],
        history: &[Message],
        stats: &mut Stats,
    ) -> Result<Vec<(String, Observation)>, AgentError> {
        let step = stats.steps;
        for call in calls {
            stats.tool_calls += 1;
            self.ctx.events.emit(EventKind::ToolCall {
                step,
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
        }
        let reads = ReadTracker::default();
        let first = FirstMessageIndex::of(history);
        let results = join_all(calls.iter().map(|call| async {
            // What is still in view is not sent again: the model gets a pointer to it.
            let pointer = reads
                .pointer_for_call(call, history)
                .or_else(|| first.pointer_for_call(call));
            match pointer {
                Some(pointer) => Ok((
                    Observation {
                        content: pointer,
                        is_error: false,
                    },
                    0,
                )),
                None => self.run_tool(call).await,
            }
        }))
        .await;
        let mut observations = Vec::with_capacity(calls.len());
        for (call, result) in calls.iter().zip(results) {
            let (observation, latency_ms) = result?;
            if !observation.is_error {
                self.ctx
                    .coverage
                    .observe_tool(&call.name, &call.arguments, &observation.content);
            }
            self.ctx.events.emit(EventKind::ToolResult {
                step,
                id: call.id.clone(),
                name: call.name.clone(),
                ok: !observation.is_error,
                tokens: self.ctx.counter.count(&observation.content) as u64,
                latency_ms,
            });
            observations.push((call.id.clone(), observation));
        }
        Ok(observations)
    }

    async fn run_tool(&self, call: &ToolCall) -> Result<(Observation, u64), AgentError> {
        // A resumed or replayed run reuses what the transcript recorded.
        if let Some(recorded) = self.ctx.recorder.and_then(|r| r.recorded_tool_result(call)) {
            return Ok((recorded, 0));
        }
        let started = Instant::now();
        let observation = if self.use_tools {
            self.ctx
                .tools
                .dispatch(&call.name, &call.arguments, self.ctx.workspace)
                .await
        } else {
            Ok(Observation {
                content: format!(
                    "ERROR: no tools are available here except `{}`",
                    self.finisher.spec().name
                ),
                is_error: true,
            })
        };
        let observation = observation.map_err(|e| match e {
            ToolError::Fatal(message) | ToolError::Model(message) => AgentError::Tool(message),
        })?;
        if let Some(recorder) = self.ctx.recorder {
            recorder.tool_result(call, &observation);
        }
        Ok((observation, started.elapsed().as_millis() as u64))
    }

    /// The result in the reply's finishing-tool call: `None` without such a call.
    fn finishing_call(
        &self,
        reply: &ChatResponse,
        stats: &mut Stats,
    ) -> Option<Result<F::Output, ModelReplyError>> {
        let name = self.finisher.spec().name;
        let call = reply.tool_calls.iter().find(|c| c.name == name)?;
        Some(self.finishing_call_of(call, stats))
    }

    /// Reads a finishing call, counting it and emitting its events.
    fn finishing_call_of(
        &self,
        call: &ToolCall,
        stats: &mut Stats,
    ) -> Result<F::Output, ModelReplyError> {
        stats.tool_calls += 1;
        let step = stats.steps;
        self.ctx.events.emit(EventKind::ToolCall {
            step,
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        });
        let parsed = self.finisher.parse_call(&call.arguments);
        self.ctx.events.emit(EventKind::ToolResult {
            step,
            id: call.id.clone(),
            name: call.name.clone(),
            ok: parsed.is_ok(),
            tokens: 0,
            latency_ms: 0,
        });
        parsed
    }
}

fn tool_message(call: &ToolCall, content: &str, is_error: bool) -> Message {
    Message::Tool {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: content.to_string(),
        is_error,
    }
}

fn excerpt(text: &str) -> String {
    text.chars().take(160).collect()
}
