//! Tools the model calls to explore the repository. Each tool's JSON Schema
//! sits next to its handler; the [`ToolRegistry`] dispatches calls, caps output
//! and turns every failure the model can fix into an observation.
//!
//! Each repository tool fills a page ([`page`]) of whole lines within both the
//! registry's cap and the pruner's, eliding very long lines first, and names
//! what did not fit with the call that shows it; the registry's cap is a last
//! resort that cuts at a line boundary and says so.

mod diff;
mod hunks;
mod list_files;
mod page;
mod read_file;
mod revision;
mod search;
mod workspace;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::llm::ToolSpec;
use crate::repo::RepoError;
use crate::repo::search::SearchError;

pub(crate) use page::NOT_SHOWN;
pub(crate) use revision::is_base as reads_base;
pub use workspace::{Derivations, Workspace};

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// Something the model can act on (bad path, bad arguments): told to the model, the run goes on.
    #[error("{0}")]
    Model(String),
    /// Something the model cannot fix (repository unreadable): ends the run.
    #[error("fatal tool error: {0}")]
    Fatal(String),
}

/// Repository errors the model can fix (a bad path) are told to it; an unreadable repository is fatal.
impl From<RepoError> for ToolError {
    fn from(e: RepoError) -> Self {
        if e.is_fatal() {
            ToolError::Fatal(e.to_string())
        } else {
            ToolError::Model(e.to_string())
        }
    }
}

/// A bad pattern or glob is the model's to fix; a repository failure is as above.
impl From<SearchError> for ToolError {
    fn from(e: SearchError) -> Self {
        match e {
            SearchError::Repo(repo) => repo.into(),
            other => ToolError::Model(other.to_string()),
        }
    }
}

/// A tool: its spec and its handler.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and argument schema.
    fn spec(&self) -> ToolSpec;
    /// Runs the tool on already-parsed JSON arguments.
    async fn call(
        &self,
        args: serde_json::Value,
        workspace: &Workspace,
    ) -> Result<String, ToolError>;
}

/// Parses tool arguments into their typed form; a mismatch is the model's to fix.
pub fn parse_args<T: DeserializeOwned>(
    tool: &str,
    args: serde_json::Value,
) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| {
        ToolError::Model(format!(
            "invalid arguments for `{tool}`: {e}. Check the tool's schema."
        ))
    })
}

/// The result of dispatching one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// What the model reads.
    pub content: String,
    /// Whether the call failed.
    pub is_error: bool,
}

/// The set of tools offered to the model.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    max_output_chars: usize,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Default cap on one observation, in characters (about 6k tokens).
pub(crate) const DEFAULT_MAX_OUTPUT_CHARS: usize = 24_000;

impl ToolRegistry {
    /// An empty registry with the given output cap.
    pub fn new(max_output_chars: usize) -> Self {
        ToolRegistry {
            tools: BTreeMap::new(),
            max_output_chars,
        }
    }

    /// The repository tools: `read_file`, `search`, `diff`, `list_files`.
    pub fn repository_tools() -> Self {
        let mut registry = ToolRegistry::new(DEFAULT_MAX_OUTPUT_CHARS);
        registry.register(Arc::new(read_file::ReadFile::new(read_file::REVIEW_WINDOW)));
        registry.register(Arc::new(search::Search));
        registry.register(Arc::new(diff::Diff));
        registry.register(Arc::new(list_files::ListFiles));
        registry
    }

    /// `read_file` and `search` only: what a checker of findings (the verifier, the eval's
    /// grader) may call; its `read_file` shows a shorter window by default.
    pub(crate) fn read_and_search() -> Self {
        let mut registry = ToolRegistry::new(DEFAULT_MAX_OUTPUT_CHARS);
        registry.register(Arc::new(read_file::ReadFile::new(read_file::VERIFY_WINDOW)));
        registry.register(Arc::new(search::Search));
        registry
    }

    /// Adds (or replaces) a tool.
    pub(crate) fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name, tool);
    }

    /// Specs of all tools, sorted by name.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|t| t.spec()).collect()
    }

    /// Whether a tool of that name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Runs one call. Unknown tools, malformed JSON and tool failures become error
    /// observations; only [`ToolError::Fatal`] is returned as `Err`.
    pub async fn dispatch(
        &self,
        name: &str,
        raw_args: &str,
        workspace: &Workspace,
    ) -> Result<Observation, ToolError> {
        let Some(tool) = self.tools.get(name) else {
            let known: Vec<&str> = self.tools.keys().map(String::as_str).collect();
            return Ok(error_observation(format!(
                "unknown tool `{name}`; available tools: {}",
                known.join(", ")
            )));
        };
        let args = match parse_raw_args(raw_args) {
            Ok(args) => args,
            Err(e) => {
                return Ok(error_observation(format!(
                    "arguments for `{name}` are not valid JSON: {e}"
                )));
            }
        };
        match tool.call(args, workspace).await {
            Ok(content) => Ok(Observation {
                content: cap_output(content, self.max_output_chars),
                is_error: false,
            }),
            Err(ToolError::Model(message)) => Ok(error_observation(message)),
            Err(fatal @ ToolError::Fatal(_)) => Err(fatal),
        }
    }
}

fn error_observation(message: String) -> Observation {
    Observation {
        content: format!("ERROR: {message}"),
        is_error: true,
    }
}

/// Why a tool call's raw arguments are not a JSON object; the model reads it.
#[derive(Debug, thiserror::Error)]
enum RawArgsError {
    #[error("expected a JSON object, got `{0}`")]
    NotAnObject(serde_json::Value),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Empty arguments mean `{}`; anything else must be a JSON object.
fn parse_raw_args(raw: &str) -> Result<serde_json::Value, RawArgsError> {
    if raw.trim().is_empty() {
        return Ok(serde_json::Value::Object(Default::default()));
    }
    match serde_json::from_str::<serde_json::Value>(raw)? {
        v @ serde_json::Value::Object(_) => Ok(v),
        other => Err(RawArgsError::NotAnObject(other)),
    }
}

/// Cuts an oversized observation at a line boundary (a character one when its
/// first line alone is too long) and says so. The repository tools page their
/// own output below this cap; this is the last resort for any other tool.
fn cap_output(content: String, max_chars: usize) -> String {
    if content.len() <= max_chars {
        return content;
    }
    let prefix = crate::text::prefix_at_char_boundary(&content, max_chars);
    let shown = match prefix.rfind('\n') {
        Some(end) => &prefix[..=end],
        None => prefix,
    };
    let shown_lines = shown.lines().count();
    format!(
        "{}\n[output truncated after {shown_lines} lines ({} of {} characters); ask for a narrower range, e.g. read_file with start_line/end_line, or a more specific search]",
        shown.trim_end_matches('\n'),
        shown.len(),
        content.len()
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn repository_errors_split_into_fatal_and_model_errors() {
        let fatal: ToolError = RepoError::Git("object missing".into()).into();
        assert!(matches!(fatal, ToolError::Fatal(_)));
        let model: ToolError = RepoError::OutsideRepository {
            path: "../x".into(),
        }
        .into();
        assert_eq!(
            model,
            ToolError::Model(
                "path `../x` is outside the repository; use a path relative to the repository root"
                    .into()
            )
        );
    }

    use super::*;

    #[test]
    fn caps_output_and_says_how_to_get_the_rest() {
        let out = cap_output("x\n".repeat(100), 50);
        assert!(out.starts_with("x\nx\n"));
        assert!(out.contains("output truncated"));
        assert!(out.len() < 300);
        assert_eq!(cap_output("short".into(), 50), "short");
    }

    #[test]
    fn raw_args_must_be_an_object() {
        assert!(parse_raw_args("").is_ok());
        assert!(parse_raw_args("{\"path\": \"a\"}").is_ok());
        assert!(parse_raw_args("[1]").is_err());
        assert!(parse_raw_args("{\"path\": ").is_err());
    }
}
