//! The `diff` tool: the change under review, whole or one file, with line numbers.
//! Moved code is shown as a move plus its edits ([`crate::context::moves`]),
//! unless the model asks for the raw patch.
//!
//! A result is a page ([`super::page`]): whole files, then whole hunks
//! ([`super::hunks`]); what does not fit is named at its end with the call that
//! shows it (`path`, `hunk`, `start_line`), never cut from the middle.

use async_trait::async_trait;
use serde::Deserialize;

use super::hunks::{Start, elided, page_file};
use super::page::{NOT_SHOWN, Page, Room, runs_named};
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
    hunk: Option<usize>,
    start_line: Option<u32>,
}

#[async_trait]
impl Tool for Diff {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "diff".into(),
            description: "The change under review, unified, 3 lines of context; each line starts with \
                 its number (the new file's for context and + lines, the old file's for - lines). \
                 No path: a summary line per changed file, then every diff; path: that file's. Moved \
                 code is one line (`40-46 ~ moved from `old.py:154-160``) plus its edits; raw: the \
                 plain patch. A long result names the call for the rest (hunk: from that hunk, 1 \
                 first; start_line: from that head line of it)."
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
                    },
                    "hunk": {"type": "integer", "minimum": 1},
                    "start_line": {"type": "integer", "minimum": 1}
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
        let start = Start {
            hunk: args.hunk.unwrap_or(1),
            line: args.start_line,
        };
        match (args.path, start) {
            (None, Start::WHOLE) => Ok(render_all(changes, moves, Room::DEFAULT)),
            (None, _) => Err(ToolError::Model(
                "hunk and start_line need a path: the file whose hunks to show".into(),
            )),
            (Some(_), Start { line: Some(_), .. }) if args.hunk.is_none() => Err(ToolError::Model(
                "start_line needs hunk: the hunk that holds that line".into(),
            )),
            (Some(path), start) => {
                let normalized = normalize_path(&path)?;
                let file = changes
                    .file(&normalized)
                    .ok_or_else(|| not_in_change(&path, changes))?;
                let text = render_numbered(file, &moves.of_file(&file.path));
                let mut page = Page::new(Room::DEFAULT);
                let note = page_file(&text, &file.path, start, &mut page)?;
                Ok(page.into_text() + &note.unwrap_or_default())
            }
        }
    }
}

/// Every file's diff after a one-line summary of each, as many whole files as
/// fit a page; the first file that does not fit is paged by hunk when it is the
/// first on the page, else it and the rest are named.
fn render_all(changes: &ChangeSet, moves: &Moves, room: Room) -> String {
    if changes.files.is_empty() {
        return "the change is empty: no files differ between base and head".into();
    }
    let mut page = Page::new(room);
    page.push_always(&format!(
        "{} changed\n",
        crate::text::count(changes.files.len(), "file", "files")
    ));
    let listed = changes
        .files
        .iter()
        .take_while(|file| page.push(&format!("{}\n", overview_line(file))))
        .count();
    if listed < changes.files.len() {
        let rest = changes.files.len() - listed;
        return page.into_text()
            + &format!(
                "[{} {NOT_SHOWN}, and no diffs: call diff with path for one file, e.g. `{}`]\n",
                crate::text::count(rest, "more changed file", "more changed files"),
                changes.files[listed].path
            );
    }
    for (index, file) in changes.files.iter().enumerate() {
        let text = format!("\n{}", render_numbered(file, &moves.of_file(&file.path)));
        if page.push(&elided(&text)) {
            continue;
        }
        let mut note = String::new();
        let mut rest = &changes.files[index..];
        if index == 0 {
            page.push_always("\n");
            // The first file's diff is paged by hunk; an error cannot occur from hunk 1.
            note = page_file(&text[1..], &file.path, Start::WHOLE, &mut page)
                .ok()
                .flatten()
                .unwrap_or_default();
            rest = &rest[1..];
        }
        if !rest.is_empty() {
            note.push_str(&files_note(rest));
        }
        return page.into_text() + &note;
    }
    page.into_text()
}

/// The note for the files whose diffs did not fit.
fn files_note(rest: &[FileChange]) -> String {
    let names = runs_named(
        rest,
        |f| f.path.as_str(),
        8,
        "files",
        |path, _, _, _| format!("`{path}`"),
    );
    format!(
        "[the diffs of {} {NOT_SHOWN}: {names}: call diff with path `{}`, and so on]\n",
        crate::text::count(rest.len(), "more file", "more files"),
        rest[0].path
    )
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
        let out = render_all(&changes(), &Moves::default(), Room::DEFAULT);
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
        assert!(render_all(&one, &Moves::default(), Room::DEFAULT).starts_with("1 file changed\n"));
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
