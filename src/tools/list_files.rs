//! The `list_files` tool: the files under a directory, optionally filtered by a glob.

use async_trait::async_trait;
use serde::Deserialize;

use super::page::{NOT_SHOWN, Page, Room, runs_named};
use super::{Tool, ToolError, Workspace, parse_args};
use crate::llm::ToolSpec;
use crate::repo::glob::PathFilter;
use crate::repo::{RepoError, normalize_path};

/// Most paths one call lists.
const MAX_LISTED: usize = 1000;

/// The `list_files` tool.
pub(crate) struct ListFiles;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    dir: Option<String>,
    glob: Option<String>,
}

#[async_trait]
impl Tool for ListFiles {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_files".into(),
            description: format!(
                "List the files of the repository at the reviewed revision, one path per line, \
                 sorted, relative to the repository root. Lists everything below dir (recursively), \
                 at most {MAX_LISTED} paths."
            ),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "dir": {
                        "type": "string",
                        "description": "Directory to list, relative to the repository root. Default: the root."
                    },
                    "glob": {
                        "type": "string",
                        "description": "Only files matching this glob. Without `/` it matches file names at any depth (`*.toml`); with `/` the path from the root (`src/**/mod.rs`)."
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
        let args: Args = parse_args("list_files", args)?;
        let dir_arg = args.dir.unwrap_or_default();
        let dir = normalize_path(&dir_arg)?;
        let filter = PathFilter::new(args.glob.as_deref()).map_err(|e| {
            ToolError::Model(format!(
                "invalid glob `{}`: {}",
                args.glob.as_deref().unwrap_or_default(),
                e.kind()
            ))
        })?;
        let files = workspace.repo.blocking(|repo| repo.list_files()).await?;
        let under_dir = files_under(&files, &dir);
        if under_dir.is_empty() && !dir.is_empty() {
            return Err(if files.contains(&dir) {
                ToolError::Model(format!(
                    "`{dir_arg}` is a file, not a directory; use read_file"
                ))
            } else {
                RepoError::NotFound { path: dir_arg }.into()
            });
        }
        let selected: Vec<&str> = under_dir
            .into_iter()
            .filter(|path| filter.matches(path))
            .collect();
        Ok(render(&selected, args.glob.as_deref(), Room::DEFAULT))
    }
}

/// The files under `dir` (`""` is the root).
fn files_under<'a>(files: &'a [String], dir: &str) -> Vec<&'a str> {
    files
        .iter()
        .map(String::as_str)
        .filter(|path| {
            dir.is_empty()
                || path
                    .strip_prefix(dir)
                    .is_some_and(|rest| rest.starts_with('/'))
        })
        .collect()
}

fn render(selected: &[&str], glob: Option<&str>, room: Room) -> String {
    if selected.is_empty() {
        return match glob {
            Some(glob) => format!("no files match `{glob}` here"),
            None => "no files here".to_string(),
        };
    }
    let mut page = Page::new(room);
    let shown = selected
        .iter()
        .take(MAX_LISTED)
        .take_while(|path| page.push(&format!("{path}\n")))
        .count();
    let mut out = page.into_text();
    if shown < selected.len().min(MAX_LISTED) {
        out.push_str(&left_out_note(&selected[shown..], shown));
    } else if selected.len() > MAX_LISTED {
        out.push_str(&format!(
            "[{} more files not shown; narrow with dir or glob]\n",
            selected.len() - MAX_LISTED
        ));
    }
    out
}

/// The note for paths past the page: how many, under which directories, and the call.
fn left_out_note(rest: &[&str], shown: usize) -> String {
    let dirs = runs_named(
        rest,
        |path| path.rsplit_once('/').map_or("", |(dir, _)| dir),
        8,
        "directories",
        |dir, _, _, count| match dir {
            "" => format!("the root ({count})"),
            dir => format!("`{dir}` ({count})"),
        },
    );
    format!(
        "[files {}-{} {NOT_SHOWN}, from `{}` on, in {dirs}: call list_files with dir set to one of these, or a glob]\n",
        shown + 1,
        shown + rest.len(),
        rest[0],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_files_below_a_directory_only() {
        let files = vec![
            "src/a.rs".to_string(),
            "src2/b.rs".into(),
            "src/x/c.rs".into(),
        ];
        assert_eq!(files_under(&files, "src"), vec!["src/a.rs", "src/x/c.rs"]);
        assert_eq!(files_under(&files, "").len(), 3);
    }

    #[test]
    fn caps_the_list_and_says_how_many_more() {
        let many: Vec<String> = (0..1005).map(|i| format!("f{i:04}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let out = render(
            &refs,
            None,
            Room {
                chars: 100_000,
                tokens: 100_000,
            },
        );
        assert_eq!(out.lines().count(), 1001);
        assert!(out.ends_with("[5 more files not shown; narrow with dir or glob]\n"));
        assert_eq!(
            render(&[], Some("*.x"), Room::DEFAULT),
            "no files match `*.x` here"
        );
    }

    #[test]
    fn paths_past_the_room_are_named_by_directory() {
        let paths = ["src/a.rs", "src/b.rs", "src/c.rs", "src/x/d.rs", "top.md"];
        let room = Room {
            chars: 18,
            tokens: 1_000,
        };
        let out = render(&paths, None, room);
        assert_eq!(
            out,
            "src/a.rs\nsrc/b.rs\n[files 3-5 not shown (size limit), from `src/c.rs` on, in `src` (1), `src/x` (1), the root (1): call list_files with dir set to one of these, or a glob]\n"
        );
    }
}
