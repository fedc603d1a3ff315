//! The `diff` tool: the change under review, whole or one file, with line numbers.
//! Moved code is shown as a move plus its edits ([`crate::context::moves`]),
//! unless the model asks for the raw patch.

use async_trait::async_trait;
use serde::Deserialize;

use super::{Tool, ToolError, Workspace, parse_args};
use crate::context::moves::{Moves, render::render_numbered};
use crate::llm::ToolSpec;
use crate::repo::normalize_path;
use crate::review::diff::{ChangeSet, FileChange, FileStatus};

/// The `diff` tool.
pub(crate) struct Diff;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: Option<String>,
    #[serde(default)]
    raw: bool,
}

#[async_trait]
impl Tool for Diff {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "diff".into(),
            description: "Show the change under review in unified format with 3 lines of context. \
                 Each diff line starts with its line number: the new file's number for context and \
                 added (+) lines, the old file's for removed (-) lines. Without path: a one-line summary \
                 per changed file, then every file's diff. With path: only that file's diff. \
                 A block of code the change moves is one line (`40-46 ~ moved from `old.py:154-160``) \
                 followed only by its edits against the original; set raw for the plain patch."
                .into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "A changed file, relative to the repository root (its old path also works for renames and deletions)."
                    },
                    "raw": {
                        "type": "boolean",
                        "description": "The plain patch, moved code printed line by line. Default false."
                    }
                },
                "additionalProperties": false
            }),
        }
    }

    async fn call(
        &self,
        args: serde_json::Value,
        workspace: &Workspace,
    ) -> Result<String, ToolError> {
        let args: Args = parse_args("diff", args)?;
        let changes = &workspace.changes;
        // Detected once per review and kept in the workspace; the raw patch shows none.
        let raw = Moves::default();
        let moves = match args.raw {
            true => &raw,
            false => workspace.moves(),
        };
        match args.path {
            None => Ok(render_all(changes, moves)),
            Some(path) => {
                let normalized = normalize_path(&path)?;
                changes
                    .file(&normalized)
                    .map(|file| render_numbered(file, &moves.of_file(&file.path)))
                    .ok_or_else(|| not_in_change(&path, changes))
            }
        }
    }
}

fn render_all(changes: &ChangeSet, moves: &Moves) -> String {
    if changes.files.is_empty() {
        return "the change is empty: no files differ between base and head".into();
    }
    let mut out = format!(
        "{} changed\n",
        crate::text::count(changes.files.len(), "file", "files")
    );
    for file in &changes.files {
        out.push_str(&overview_line(file));
        out.push('\n');
    }
    for file in &changes.files {
        out.push('\n');
        out.push_str(&render_numbered(file, &moves.of_file(&file.path)));
    }
    out
}

fn overview_line(file: &FileChange) -> String {
    let status = match file.status {
        FileStatus::Added => "added",
        FileStatus::Modified => "modified",
        FileStatus::Deleted => "deleted",
        FileStatus::Renamed => "renamed",
        FileStatus::TypeChange => "type/mode changed",
    };
    let name = match &file.old_path {
        Some(old) => format!("{old} -> {}", file.path),
        None => file.path.clone(),
    };
    if file.binary {
        format!("{status:<8} {name} (binary)")
    } else {
        format!(
            "{status:<8} {name} +{} -{}",
            file.additions(),
            file.deletions()
        )
    }
}

fn not_in_change(path: &str, changes: &ChangeSet) -> ToolError {
    let changed: Vec<&str> = changes.files.iter().map(|f| f.path.as_str()).collect();
    let listing = if changed.is_empty() {
        "no files changed".to_string()
    } else {
        format!("changed files: {}", changed.join(", "))
    };
    ToolError::Model(format!(
        "`{path}` is not part of the change; {listing}. Use read_file for unchanged files."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::diff::{DiffLine, Hunk, LineKind};

    fn added_file() -> FileChange {
        FileChange {
            path: "src/new.rs".into(),
            old_path: None,
            status: FileStatus::Added,
            binary: false,
            hunks: vec![Hunk {
                old_start: 0,
                old_lines: 0,
                new_start: 1,
                new_lines: 1,
                header: String::new(),
                lines: vec![DiffLine {
                    kind: LineKind::Added,
                    old_line: None,
                    new_line: Some(1),
                    text: "fn new() {}".into(),
                }],
            }],
        }
    }

    fn changes() -> ChangeSet {
        let image = FileChange {
            path: "logo.png".into(),
            binary: true,
            hunks: vec![],
            ..added_file()
        };
        ChangeSet {
            base: "b".into(),
            head: Some("h".into()),
            files: vec![image, added_file()],
        }
    }

    #[test]
    fn overview_then_every_numbered_diff() {
        let out = render_all(&changes(), &Moves::default());
        assert!(out.starts_with(
            "2 files changed\nadded    logo.png (binary)\nadded    src/new.rs +1 -0\n"
        ));
        assert!(out.contains("(binary file changed)"));
        assert!(out.contains("    1 +fn new() {}\n"));
    }

    #[test]
    fn one_file_is_one_file_changed() {
        let one = ChangeSet {
            files: vec![added_file()],
            ..changes()
        };
        assert!(render_all(&one, &Moves::default()).starts_with("1 file changed\n"));
    }

    #[test]
    fn unknown_path_lists_the_changed_files() {
        let err = not_in_change("x.rs", &changes());
        assert_eq!(
            err,
            ToolError::Model(
                "`x.rs` is not part of the change; changed files: logo.png, src/new.rs. Use read_file for unchanged files.".into()
            )
        );
    }
}
