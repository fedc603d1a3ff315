//! The `search` tool (placeholder until implemented).

use async_trait::async_trait;

use super::{Tool, ToolError, Workspace};
use crate::llm::ToolSpec;

/// The `search` tool.
pub struct Search;

#[async_trait]
impl Tool for Search {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "search".into(),
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
