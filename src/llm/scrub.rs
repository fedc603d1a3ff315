//! Replies with the API key scrubbed out.
//!
//! Invariant: no reply text or tool call that leaves the client holds the key (whole, or
//! eight characters in a row of its random part; see [`Secret::redact_reply`]). A server can
//! echo the key back, and a model can repeat what its server put in its context; everything
//! downstream (findings, summaries, events, output files, transcripts, GitHub reviews) is
//! built from replies, so scrubbing them here covers every path at once. Errors are scrubbed
//! where they are made ([`super::http`]).

use std::sync::Arc;

use async_trait::async_trait;

use super::{ChatModel, ChatRequest, ChatResponse, LlmError, Secret};

/// A client whose replies never carry `key`.
pub(crate) struct ScrubbingModel {
    inner: Arc<dyn ChatModel>,
    key: Secret,
}

impl ScrubbingModel {
    /// Wraps `inner`, scrubbing `key` from its replies.
    pub(crate) fn new(inner: Arc<dyn ChatModel>, key: Secret) -> Self {
        ScrubbingModel { inner, key }
    }
}

#[async_trait]
impl ChatModel for ScrubbingModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut reply = self.inner.complete(request).await?;
        reply.content = self.key.redact_reply(&reply.content);
        for call in &mut reply.tool_calls {
            // The marker has no character JSON escapes, so arguments stay valid JSON.
            call.arguments = self.key.redact_reply(&call.arguments);
            call.name = self.key.redact_reply(&call.name);
            call.id = self.key.redact_reply(&call.id);
        }
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{StopReason, ToolCall, Usage};

    const KEY: &str = "sk-test-0123456789abcdef";

    struct Echo;

    #[async_trait]
    impl ChatModel for Echo {
        async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            Ok(ChatResponse {
                content: format!("your key is {KEY}"),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "submit_review".into(),
                    arguments: format!(
                        r#"{{"summary":"key {KEY}","findings":[{{"body":"masked sk-test-01***cdef"}}]}}"#
                    ),
                }],
                usage: Usage::default(),
                stop: StopReason::ToolUse,
            })
        }
    }

    #[tokio::test]
    async fn an_echoed_key_never_leaves_the_client() {
        let model = ScrubbingModel::new(Arc::new(Echo), Secret::new(KEY));
        let request = ChatRequest {
            model: "m".into(),
            messages: vec![],
            tools: vec![],
            max_tokens: 1,
            temperature: None,
        };
        let reply = model.complete(&request).await.expect("reply");
        assert!(!reply.content.contains("0123456789"), "{}", reply.content);
        let call = &reply.tool_calls[0];
        assert!(!call.arguments.contains("0123456789"), "{}", call.arguments);
        let parsed: serde_json::Value = serde_json::from_str(&call.arguments).expect("still JSON");
        assert!(
            parsed["summary"]
                .as_str()
                .is_some_and(|s| s.contains("[REDACTED]"))
        );
        assert_eq!(call.name, "submit_review");
    }
}
