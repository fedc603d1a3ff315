//! The review value of a changed file: source before tests before docs before
//! config, and within a class the larger real change first. The class comes from the
//! one classification of paths ([`crate::review::file_kind`]).

use std::cmp::Reverse;

use crate::review::diff::{FileChange, LineKind};
use crate::review::file_kind::{FileKind, file_kind, in_test_dir};

/// What kind of file a path is, in the order a reviewer wants them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileClass {
    /// Program source.
    Source,
    /// Tests, fixtures, benchmarks.
    Test,
    /// Documentation.
    Docs,
    /// Build, CI and configuration files.
    Config,
}

/// Extensions of configuration files, among those [`FileKind::Other`] holds.
const CONFIG_EXTENSIONS: &[&str] = &[
    "toml",
    "yaml",
    "yml",
    "json",
    "jsonc",
    "ini",
    "cfg",
    "conf",
    "xml",
    "properties",
    "env",
    "lock",
    "gradle",
    "cmake",
    "mk",
    "nix",
    "plist",
];
/// Directories of editor, tool and container settings.
const CONFIG_DIRS: &[&str] = &[".cargo", ".config", ".vscode", ".devcontainer"];

/// The class of a path: its [`FileKind`], the classes a reviewer tells apart.
pub(crate) fn file_class(path: &str) -> FileClass {
    match file_kind(path) {
        FileKind::Source => FileClass::Source,
        FileKind::Test => FileClass::Test,
        FileKind::Doc | FileKind::Changelog => FileClass::Docs,
        FileKind::Lockfile | FileKind::Ci | FileKind::Packaging => FileClass::Config,
        FileKind::Other => other_class(path),
    }
}

/// Configuration and data: fixtures with the tests, settings with the config, and
/// anything else (templates, styles, markup) with the source, where its change matters.
fn other_class(path: &str) -> FileClass {
    if in_test_dir(path) {
        return FileClass::Test;
    }
    let lower = path.to_ascii_lowercase();
    let mut parts: Vec<&str> = lower.split('/').collect();
    let name = parts.pop().unwrap_or("");
    let extension = name.rsplit_once('.').map_or("", |(_, ext)| ext);
    let dotfile = name.starts_with('.') && !name[1..].contains('.');
    if dotfile
        || CONFIG_EXTENSIONS.contains(&extension)
        || parts.iter().any(|d| CONFIG_DIRS.contains(d))
    {
        FileClass::Config
    } else {
        FileClass::Source
    }
}

/// Added and removed lines that are not blank.
pub(crate) fn real_changed_lines(file: &FileChange) -> usize {
    file.hunks
        .iter()
        .flat_map(|h| &h.lines)
        .filter(|l| l.kind != LineKind::Context && !l.text.trim().is_empty())
        .count()
}

/// Sort key: class first, then the larger real change, then the path.
pub fn review_order_key(file: &FileChange) -> (FileClass, Reverse<usize>, String) {
    (
        file_class(&file.path),
        Reverse(real_changed_lines(file)),
        file.path.clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_fall_into_classes() {
        assert_eq!(file_class("src/main.rs"), FileClass::Source);
        assert_eq!(file_class("lib/parser.py"), FileClass::Source);
        assert_eq!(file_class("tests/cli.rs"), FileClass::Test);
        assert_eq!(file_class("pkg/server_test.go"), FileClass::Test);
        assert_eq!(file_class("app/test_views.py"), FileClass::Test);
        assert_eq!(file_class("web/src/App.test.tsx"), FileClass::Test);
        assert_eq!(file_class("README.md"), FileClass::Docs);
        assert_eq!(file_class("docs/guide/intro.html"), FileClass::Docs);
        assert_eq!(file_class("CHANGELOG"), FileClass::Docs);
        assert_eq!(file_class("Cargo.toml"), FileClass::Config);
        assert_eq!(file_class(".github/workflows/ci.yml"), FileClass::Config);
        assert_eq!(file_class("Dockerfile"), FileClass::Config);
        assert_eq!(file_class(".gitignore"), FileClass::Config);
        assert_eq!(file_class("build.rs"), FileClass::Source);
        assert_eq!(file_class("Cargo.lock"), FileClass::Config);
        assert_eq!(file_class("tests/fixtures/page.json"), FileClass::Test);
        assert_eq!(file_class("config/settings.yaml"), FileClass::Config);
        assert_eq!(file_class(".vscode/settings.json"), FileClass::Config);
        assert_eq!(file_class(".npmrc"), FileClass::Config);
        assert_eq!(file_class("web/templates/page.html"), FileClass::Source);
    }
}
