//! The Messages request body: the conversation as alternating turns, with
//! prompt-cache breakpoints.
//!
//! Invariants: at most [`super::MAX_CACHE_BREAKPOINTS`] items carry `cache_control`;
//! the fields shared by the calls of a review serialise first and in a fixed
//! order, and nothing in them changes from call to call (no timestamps, no
//! generated ids), so the same prefix gives the same bytes.

use serde::Serialize;

use crate::llm::{ChatRequest, Message};

/// Field order matters: the prefix shared by the calls of a review comes first
/// (see the module documentation).
#[derive(Serialize)]
pub(super) struct WireRequest<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<SystemBlock>,
    pub(super) messages: Vec<WireMessage<'a>>,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

/// A prompt-cache breakpoint: the prefix up to and including the marked item is cached.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(Serialize)]
struct SystemBlock {
    #[serde(rename = "type")]
    kind: &'static str,
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Role {
    User,
    Assistant,
}

#[derive(Serialize)]
pub(super) struct WireMessage<'a> {
    role: Role,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: serde_json::Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

impl Block<'_> {
    fn mark_cache_breakpoint(&mut self) {
        match self {
            Block::Text { cache_control, .. }
            | Block::ToolUse { cache_control, .. }
            | Block::ToolResult { cache_control, .. } => *cache_control = Some(EPHEMERAL),
        }
    }
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

impl<'a> WireRequest<'a> {
    /// The body for `request`, with its cache breakpoints marked.
    pub(super) fn from_request(request: &'a ChatRequest) -> Self {
        let system: Vec<&str> = request
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::System { content } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        let mut body = WireRequest {
            model: &request.model,
            tools: request
                .tools
                .iter()
                .map(|t| WireTool {
                    name: &t.name,
                    description: &t.description,
                    input_schema: &t.parameters,
                    cache_control: None,
                })
                .collect(),
            system: if system.is_empty() {
                Vec::new()
            } else {
                vec![SystemBlock {
                    kind: "text",
                    text: system.join("\n\n"),
                    cache_control: None,
                }]
            },
            messages: alternating_turns(&request.messages),
            max_tokens: request.max_tokens,
            stream: true,
            temperature: request.temperature,
        };
        body.mark_cache_breakpoints();
        body
    }

    /// Marks the end of the tools-and-system prefix (the system block, else the
    /// last tool) and the end of the first user turn, which holds the task and
    /// the change under review and stays the same for every call of a review.
    fn mark_cache_breakpoints(&mut self) {
        if let Some(system) = self.system.last_mut() {
            system.cache_control = Some(EPHEMERAL);
        } else if let Some(tool) = self.tools.last_mut() {
            tool.cache_control = Some(EPHEMERAL);
        }
        if let Some(block) = self
            .messages
            .iter_mut()
            .find(|m| m.role == Role::User)
            .and_then(|m| m.content.last_mut())
        {
            block.mark_cache_breakpoint();
        }
    }
}

/// The conversation as alternating turns: consecutive messages of the same
/// role (tool results, or tool results then a user note) merge into one turn.
/// System messages are left out; they travel in the top-level `system` field.
fn alternating_turns(messages: &[Message]) -> Vec<WireMessage<'_>> {
    let mut turns: Vec<WireMessage<'_>> = Vec::new();
    for message in messages {
        let Some((role, blocks)) = turn_blocks(message) else {
            continue;
        };
        if blocks.is_empty() {
            continue; // the API rejects empty turns and empty text blocks
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => turns.push(WireMessage {
                role,
                content: blocks,
            }),
        }
    }
    turns
}

fn text_block(text: &str) -> Option<Block<'_>> {
    (!text.is_empty()).then_some(Block::Text {
        text,
        cache_control: None,
    })
}

fn turn_blocks(message: &Message) -> Option<(Role, Vec<Block<'_>>)> {
    match message {
        Message::System { .. } => None,
        Message::User { content } => Some((Role::User, text_block(content).into_iter().collect())),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut blocks: Vec<Block<'_>> = text_block(content).into_iter().collect();
            blocks.extend(tool_calls.iter().map(|c| Block::ToolUse {
                id: &c.id,
                name: &c.name,
                input: arguments_object(&c.arguments),
                cache_control: None,
            }));
            Some((Role::Assistant, blocks))
        }
        Message::Tool {
            call_id,
            content,
            is_error,
            ..
        } => Some((
            Role::User,
            vec![Block::ToolResult {
                tool_use_id: call_id,
                content,
                is_error: *is_error,
                cache_control: None,
            }],
        )),
    }
}

/// The call's arguments as the JSON object the API requires for `input`.
///
/// When the model wrote arguments that are not a JSON object, `{}` is sent:
/// the API rejects any other `input`, which would make the whole history
/// unusable, and the call was already answered with an error result that tells
/// the model what was wrong with what it wrote.
fn arguments_object(raw: &str) -> serde_json::Value {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(value @ serde_json::Value::Object(_)) => value,
        _ => serde_json::Value::Object(serde_json::Map::new()),
    }
}
