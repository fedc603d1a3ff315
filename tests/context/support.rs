//! Helpers shared by the shaping tests: changes built from texts, and readers of the message.

use std::collections::HashMap;

use redline::context::{FileEntry, ShapeOptions, ShapedContext, shape_change};
use redline::llm::tokens::{Encoding, TokenCounter};
use redline::review::diff::{ChangeSet, FileChange};

use super::text_diff::file_change;

/// A change with the head text of each file, as the git layer would give them.
#[derive(Default)]
pub struct Change {
    /// The files.
    pub files: Vec<FileChange>,
    /// Head text by path.
    pub heads: HashMap<String, String>,
}

impl Change {
    /// Adds the change from `old` to `new` at `path`.
    pub fn file(mut self, path: &str, old: &str, new: &str) -> Self {
        self.files.push(file_change(path, old, new));
        if !new.is_empty() {
            self.heads.insert(path.into(), new.into());
        }
        self
    }

    /// Adds a hand-made file change (no head text).
    pub fn raw(mut self, file: FileChange) -> Self {
        self.files.push(file);
        self
    }

    /// Shapes the change with `opts`.
    pub fn shape(&self, opts: &ShapeOptions) -> ShapedContext {
        let mut files = self.files.clone();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let changes = ChangeSet {
            base: "base".into(),
            head: Some("head".into()),
            files,
        };
        let heads = &self.heads;
        let head_text = |path: &str| heads.get(path).cloned();
        shape_change(
            &changes,
            &head_text,
            opts,
            &TokenCounter::new(Encoding::O200kBase),
        )
    }
}

/// The entry of `path`.
pub fn entry<'a>(shaped: &'a ShapedContext, path: &str) -> &'a FileEntry {
    shaped
        .files
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("no entry for {path}: {:?}", shaped.files))
}

/// `1234` → `1,234`, as the message writes counts.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The numbered diff of one file in the message.
pub fn section(message: &str, path: &str) -> String {
    section_opt(message, path).unwrap_or_else(|| panic!("no section for {path}:\n{message}"))
}

/// The numbered diff of one file, if it is in the message.
pub fn section_opt(message: &str, path: &str) -> Option<String> {
    let start = message.find(&format!("+++ b/{path}\n"))?;
    let rest = &message[start..];
    let end = rest[1..]
        .find("\n--- a/")
        .or_else(|| rest[1..].find("\n## "))
        .map_or(rest.len(), |i| i + 2);
    Some(rest[..end].to_string())
}

/// `(number, mark, text)` of each numbered line.
pub fn numbered(section: &str) -> Vec<(u32, char, String)> {
    section
        .lines()
        .filter_map(|line| {
            let number: u32 = line.get(..5)?.trim().parse().ok()?;
            let mut rest = line.get(6..)?.chars();
            let mark = rest.next()?;
            Some((number, mark, rest.collect()))
        })
        .collect()
}

/// A Rust-like source file: `fn name()` at line 1, then `n` body lines.
pub fn function(name: &str, n: usize) -> String {
    let mut text = format!("fn {name}() {{\n");
    for i in 1..=n {
        text.push_str(&format!("    let v{i} = {i};\n"));
    }
    text.push_str("}\n");
    text
}
