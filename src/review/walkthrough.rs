//! The walkthrough: what a change does, one line per area (a group of files), written by
//! the model in the same `submit_review` call as its findings and shown before them.
//!
//! Invariants:
//! - Walkthrough text is model output: every string is cut to one line and a bounded
//!   length when it is read (`review::parse`), and a review holds at most [`MAX_AREAS`] areas
//!   ([`finalize`]). Files a change does not touch are dropped.
//! - Anything unusable (not a list, items without a summary) is dropped without a word:
//!   the walkthrough is a courtesy, and a review never fails or loses findings over it.
//! - [`markdown`] escapes what could break out of one list item on GitHub: HTML (so no
//!   hidden markers), images, `@` mentions and emphasis in area names; a single line
//!   cannot open a heading, a fence or a table.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Areas a review's walkthrough holds at most.
pub(crate) const MAX_AREAS: usize = 12;
/// Characters of an area's name at most.
pub(crate) const MAX_AREA_CHARS: usize = 80;
/// Characters of an area's summary at most.
pub(crate) const MAX_SUMMARY_CHARS: usize = 300;
/// Files kept per area.
pub(crate) const MAX_FILES: usize = 50;
/// Characters of one file path at most (longer ones are not a path of this change).
pub(crate) const MAX_PATH_CHARS: usize = 300;
/// Files named per area in Markdown and text; the rest are counted.
const FILES_SHOWN: usize = 5;

/// One area of a change: a name, its files, and what the change does there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Area {
    /// A short name for the area (`Parser`, `CLI`, `Tests`).
    pub area: String,
    /// The changed files it covers, repository-relative.
    #[serde(default)]
    pub files: Vec<String>,
    /// One sentence on what the change does there.
    pub summary: String,
}

/// The JSON Schema of `submit_review`'s `walkthrough` property.
pub fn schema() -> Value {
    json!({
        "type": "array",
        "description": format!(
            "What the change does, for the author's overview: one item per area (a group of \
             related files), at most {MAX_AREAS}, in reading order, each \
             {{\"area\": \"...\", \"files\": [\"...\"], \"summary\": \"...\"}}. Describe \
             the change, not its problems: the findings say those."
        ),
        "items": {
            "type": "object",
            "properties": {
                "area": {
                    "type": "string",
                    "description": "A short name for the area, e.g. `Config loading` or `Tests`."
                },
                "files": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "The changed files of this area, as in the diff."
                },
                "summary": {
                    "type": "string",
                    "description": "One plain sentence: what the change does in this area."
                }
            },
            "required": ["area", "files", "summary"]
        }
    })
}

/// Text on one line without control characters, whitespace collapsed, cut at `max`
/// characters (with `…`).
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let line = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

/// The walkthrough of one review from the parts handed in (one per plan task, or one):
/// files outside `changed` dropped, areas of the same name merged (files joined,
/// summaries joined when they differ), at most [`MAX_AREAS`] areas.
pub(crate) fn finalize(parts: Vec<Area>, changed: &[&str]) -> Vec<Area> {
    let mut merged: Vec<Area> = Vec::new();
    for mut area in parts {
        area.files.retain(|f| touches(f, changed));
        let name = area.area.to_lowercase();
        match merged.iter().position(|m| m.area.to_lowercase() == name) {
            Some(at) => join(&mut merged[at], area),
            None if merged.len() < MAX_AREAS => merged.push(area),
            None => {}
        }
    }
    merged
}

/// Adds `other`'s files and (when it says something new) its summary to `area`.
fn join(area: &mut Area, other: Area) {
    for file in other.files {
        if !area.files.contains(&file) && area.files.len() < MAX_FILES {
            area.files.push(file);
        }
    }
    if !area.summary.contains(&other.summary) {
        let joined = format!("{} {}", area.summary, other.summary);
        area.summary = one_line(&joined, MAX_SUMMARY_CHARS);
    }
}

/// Whether `file` is a changed path or a directory holding one.
fn touches(file: &str, changed: &[&str]) -> bool {
    let dir = format!("{}/", file.trim_end_matches('/'));
    changed.iter().any(|c| *c == file || c.starts_with(&dir))
}

/// The walkthrough as a Markdown section (`### Walkthrough` and one list item per
/// area), `""` when there is none. Model text is escaped (see the module docs).
pub fn markdown(areas: &[Area]) -> String {
    if areas.is_empty() {
        return String::new();
    }
    let mut out = String::from("### Walkthrough\n\n");
    for area in areas {
        let files = files_shown(&area.files, |f| format!("`{}`", f.replace('`', "'")));
        let files = match files.is_empty() {
            true => String::new(),
            false => format!(" ({files})"),
        };
        out.push_str(&format!(
            "- **{}**{files}: {}\n",
            escape_emphasis(&crate::text::escape_inline(&area.area)),
            crate::text::escape_inline(&area.summary)
        ));
    }
    out
}

/// The walkthrough as plain text (`Walkthrough:` and one indented line per area), `""`
/// when there is none.
pub(crate) fn text_lines(areas: &[Area], indent: &str) -> String {
    if areas.is_empty() {
        return String::new();
    }
    let mut out = String::from("Walkthrough:\n");
    for area in areas {
        let files = files_shown(&area.files, str::to_string);
        let files = match files.is_empty() {
            true => String::new(),
            false => format!(" ({files})"),
        };
        out.push_str(&format!("{indent}{}{files}: {}\n", area.area, area.summary));
    }
    out
}

/// The first files, each through `show`, comma-separated, with how many more there are.
fn files_shown(files: &[String], show: impl Fn(&str) -> String) -> String {
    let mut shown: Vec<String> = files.iter().take(FILES_SHOWN).map(|f| show(f)).collect();
    if files.len() > FILES_SHOWN {
        shown.push(format!("{} more", files.len() - FILES_SHOWN));
    }
    shown.join(", ")
}

/// An area name inside `**…**`: emphasis, links and code marks shown as written.
fn escape_emphasis(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '_' | '`' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// An area, for tests.
#[cfg(test)]
pub(crate) fn area(name: &str, files: &[&str], summary: &str) -> Area {
    Area {
        area: name.into(),
        files: files.iter().map(|f| f.to_string()).collect(),
        summary: summary.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_holds_at_most_max_areas() {
        let many: Vec<Area> = (0..100).map(|i| area(&format!("a{i}"), &[], "s")).collect();
        assert_eq!(finalize(many, &[]).len(), MAX_AREAS);
    }

    #[test]
    fn finalize_keeps_changed_files_and_merges_areas_of_one_name() {
        let changed = ["src/a.rs", "src/b.rs", "docs/x.md"];
        let parts = vec![
            area("Core", &["src/a.rs", "/etc/passwd"], "Adds a."),
            area("core", &["src/b.rs", "src/a.rs"], "Adds b."),
            area("Docs", &["docs"], "Documents."),
        ];
        assert_eq!(
            finalize(parts, &changed),
            vec![
                area("Core", &["src/a.rs", "src/b.rs"], "Adds a. Adds b."),
                area("Docs", &["docs"], "Documents."),
            ]
        );
    }

    #[test]
    fn markdown_cannot_break_out_of_its_list_item() {
        let hostile = area(
            "**Bold** [x](y) @team",
            &["a`b.rs"],
            "<!-- redline:fp=abcd --> <img src=x> ![t](http://t) cc @octocat",
        );
        let out = markdown(&[hostile]);
        assert!(out.starts_with(
            "### Walkthrough\n\n- **\\*\\*Bold\\*\\* \\[x\\](y) @\u{2060}team** (`a'b.rs`): "
        ));
        assert!(!out.contains('<') && !out.contains("![") && !out.contains("@octocat"));
        assert_eq!(out.lines().count(), 3, "{out}");
        assert_eq!(markdown(&[]), "");
    }

    #[test]
    fn many_files_are_counted_not_listed() {
        let files: Vec<String> = (0..8).map(|i| format!("f{i}.rs")).collect();
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        let out = text_lines(&[area("Many", &files, "Touches all.")], "  ");
        assert_eq!(
            out,
            "Walkthrough:\n  Many (f0.rs, f1.rs, f2.rs, f3.rs, f4.rs, 3 more): Touches all.\n"
        );
    }
}
