//! The optional `revision` argument of `read_file` and `search`: the reviewed
//! (head) revision by default, or the base of the change, where moved and
//! removed code can be read as it was.

use serde::Deserialize;

use super::{ToolError, Workspace};
use crate::repo::RepoView;

/// Which side of the change a tool reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Side {
    /// The reviewed revision (or the work tree).
    #[default]
    Head,
    /// The base commit of the change.
    Base,
}

/// The JSON Schema of the argument.
pub(crate) fn schema() -> serde_json::Value {
    serde_json::json!({
        "type": "string",
        "enum": ["head", "base"],
        "description": "`base` reads the files as they were before the change (to see moved or removed code as it was); default `head`, the reviewed revision."
    })
}

/// The view of `side`, sharing the workspace's open repository (the base view is
/// opened once per review and kept in the workspace).
pub(crate) async fn view(workspace: &Workspace, side: Side) -> Result<RepoView, ToolError> {
    match side {
        Side::Head => Ok((*workspace.repo).clone()),
        Side::Base => workspace.base_view().await,
    }
}

/// Whether a tool call's JSON arguments ask for the base revision.
pub(crate) fn is_base(arguments: &serde_json::Value) -> bool {
    arguments.get("revision").and_then(|r| r.as_str()) == Some("base")
}
