//! The `read_file` tool (placeholder until implemented).

use async_trait::async_trait;

use super::{Tool, ToolError, Workspace};
use crate::llm::ToolSpec;

/// The `read_file` tool.
pub struct ReadFile;

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
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
