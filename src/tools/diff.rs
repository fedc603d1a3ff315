//! The `diff` tool (placeholder until implemented).

use async_trait::async_trait;

use super::{Tool, ToolError, Workspace};
use crate::llm::ToolSpec;

/// The `diff` tool.
pub struct Diff;

#[async_trait]
impl Tool for Diff {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "diff".into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    async fn call(
        &self,
        _args: serde_json::Value,
        _workspace: &Workspace,
    ) -> Result<String, ToolError> {
        Err(ToolError::Model("not available yet".into()))
    }
}
