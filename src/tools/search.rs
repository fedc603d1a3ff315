//! The `search` tool: regex or literal search over the files at the reviewed revision.

use async_trait::async_trait;
use serde::Deserialize;

use super::page::{NOT_SHOWN, Page, Room, runs_named};
use super::revision::{self, Side};
use super::{Tool, ToolError, Workspace, parse_args};
use crate::llm::ToolSpec;
use crate::repo::search::{DEFAULT_MAX_RESULTS, SearchMatch, SearchOptions, SearchOutput};

/// Most matches one call may ask for.
const MAX_RESULTS_CAP: usize = 500;

/// The `search` tool.
pub(crate) struct Search;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    path_glob: Option<String>,
    #[serde(default)]
    fixed_string: bool,
    #[serde(default)]
    case_insensitive: bool,
    max_results: Option<usize>,
    #[serde(default)]
    revision: Side,
}

#[async_trait]
impl Tool for Search {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "search".into(),
            description: format!(
                "Search the contents of the repository's files at the reviewed revision, like ripgrep. \
                 Returns matching lines as `path:line: text`, sorted by path then line. \
                 The pattern is a Rust regular expression matched against single lines \
                 (escape `(`, `.`, `[` etc. or set fixed_string). Binary files are skipped. \
                 Returns at most max_results matches (default {DEFAULT_MAX_RESULTS}, at most {MAX_RESULTS_CAP}) \
                 and says how many there were in all. With revision \"base\", searches the files as they were before the change."
            ),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "pattern": {
                        "type": "string",
                        "description": "Regular expression, e.g. `fn\\s+parse_\\w+` or `TODO|FIXME`; literal text with fixed_string."
                    },
                    "path_glob": {
                        "type": "string",
                        "description": "Only search files matching this glob. Without `/` it matches file names at any depth (`*.rs`); with `/` the path from the root (`src/**/*.ts`)."
                    },
                    "fixed_string": {
                        "type": "boolean",
                        "description": "Treat pattern as literal text, not a regex. Default false."
                    },
                    "case_insensitive": {
                        "type": "boolean",
                        "description": "Ignore case. Default false."
                    },
                    "max_results": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_RESULTS_CAP,
                        "description": format!("Most matching lines to return. Default {DEFAULT_MAX_RESULTS}.")
                    },
                    "revision": revision::schema()
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(
        &self,
        args: serde_json::Value,
        workspace: &Workspace,
    ) -> Result<String, ToolError> {
        let args: Args = parse_args("search", args)?;
        if args.pattern.is_empty() {
            return Err(ToolError::Model(
                "pattern is empty; give the text or regular expression to look for".into(),
            ));
        }
        let options = SearchOptions {
            fixed_string: args.fixed_string,
            case_insensitive: args.case_insensitive,
            path_glob: args.path_glob,
            max_results: args
                .max_results
                .unwrap_or(DEFAULT_MAX_RESULTS)
                .clamp(1, MAX_RESULTS_CAP),
            ..SearchOptions::new(args.pattern)
        };
        let query = options.clone();
        let view = revision::view(workspace, args.revision).await?;
        let output = view.blocking(move |repo| repo.search(&query)).await?;
        Ok(match args.revision {
            Side::Head => render(&options, &output, Room::DEFAULT),
            Side::Base => format!(
                "[at the base revision]\n{}",
                render(&options, &output, Room::DEFAULT)
            ),
        })
    }
}

fn render(options: &SearchOptions, output: &SearchOutput, room: Room) -> String {
    if output.matches.is_empty() {
        let scope = options
            .path_glob
            .as_deref()
            .map(|glob| format!(" in files matching `{glob}`"))
            .unwrap_or_default();
        return format!("no matches for `{}`{scope}", options.pattern);
    }
    let mut page = Page::new(room);
    let shown = output
        .matches
        .iter()
        .take_while(|found| page.push(&format!("{}:{}: {}\n", found.path, found.line, found.text)))
        .count();
    let mut out = page.into_text();
    if shown < output.matches.len() {
        out.push_str(&left_out_note(&output.matches[shown..], shown));
    }
    if output.is_truncated() {
        out.push_str(&format!(
            "[showing the first {} of {} matching lines; narrow the pattern or path_glob, or raise max_results (at most {MAX_RESULTS_CAP})]\n",
            output.matches.len(),
            output.total_matches
        ));
    }
    out
}

/// The note for matches past the page: how many, in which files (and lines), and the call.
fn left_out_note(rest: &[SearchMatch], shown: usize) -> String {
    let files = runs_named(
        rest,
        |found| found.path.as_str(),
        8,
        "files",
        |path, first, last, _| match first.line == last.line {
            true => format!("`{path}` line {}", first.line),
            false => format!("`{path}` lines {}-{}", first.line, last.line),
        },
    );
    format!(
        "[matches {}-{} {NOT_SHOWN}, in {files}: call search again with path_glob set to one of these files]\n",
        shown + 1,
        shown + rest.len(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(path: &str, line: u64, text: &str) -> SearchMatch {
        SearchMatch {
            path: path.into(),
            line,
            text: text.into(),
        }
    }

    #[test]
    fn renders_matches_and_says_when_the_list_was_cut() {
        let output = SearchOutput {
            matches: vec![found("a.rs", 3, "fn a()"), found("b.rs", 10, "fn b()")],
            total_matches: 7,
        };
        let out = render(&SearchOptions::new("fn"), &output, Room::DEFAULT);
        assert!(out.starts_with("a.rs:3: fn a()\nb.rs:10: fn b()\n"));
        assert!(out.contains("showing the first 2 of 7 matching lines"));
    }

    #[test]
    fn says_so_when_nothing_matches() {
        let options = SearchOptions {
            path_glob: Some("*.rs".into()),
            ..SearchOptions::new("nope")
        };
        let out = render(&options, &SearchOutput::default(), Room::DEFAULT);
        assert_eq!(out, "no matches for `nope` in files matching `*.rs`");
    }

    #[test]
    fn matches_past_the_room_are_named_by_file_and_line() {
        let matches: Vec<SearchMatch> = (1..=40)
            .map(|i| found(if i <= 30 { "a.rs" } else { "b.rs" }, i, "let total = 1;"))
            .collect();
        let output = SearchOutput {
            total_matches: matches.len() as u64,
            matches,
        };
        let room = Room {
            chars: 200,
            tokens: 1_000,
        };
        let out = render(&SearchOptions::new("total"), &output, room);
        // `a.rs:N: let total = 1;` is 23 or 24 characters: 8 fit in 200.
        assert!(out.contains("a.rs:8: let total = 1;\n"), "{out}");
        assert!(!out.contains("a.rs:9: "), "{out}");
        assert!(out.ends_with(
            "[matches 9-40 not shown (size limit), in `a.rs` lines 9-30, `b.rs` lines 31-40: call search again with path_glob set to one of these files]\n"
        ), "{out}");
    }
}
