//! The review value of a changed file: source before tests before docs before
//! config, and within a class the larger real change first.

use std::cmp::Reverse;

use crate::review::diff::{FileChange, LineKind};

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

const TEST_DIRS: &[&str] = &[
    "test",
    "tests",
    "__tests__",
    "spec",
    "specs",
    "testdata",
    "test_data",
    "fixtures",
    "e2e",
    "benches",
    "testing",
];
const DOC_DIRS: &[&str] = &["doc", "docs", "documentation"];
const DOC_EXTENSIONS: &[&str] = &["md", "markdown", "rst", "txt", "adoc", "asciidoc", "org"];
const DOC_NAMES: &[&str] = &[
    "readme",
    "changelog",
    "changes",
    "license",
    "licence",
    "copying",
    "contributing",
    "authors",
    "notice",
    "history",
];
const CONFIG_DIRS: &[&str] = &[
    ".github",
    ".circleci",
    ".gitlab",
    ".cargo",
    ".config",
    ".vscode",
    ".devcontainer",
];
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
const CONFIG_NAMES: &[&str] = &[
    "dockerfile",
    "makefile",
    "gnumakefile",
    "justfile",
    "procfile",
    "vagrantfile",
    "cmakelists.txt",
    "setup.cfg",
    "rakefile",
    "gemfile",
    "jenkinsfile",
];

/// The class of a path.
pub(crate) fn file_class(path: &str) -> FileClass {
    let lower = path.to_ascii_lowercase();
    let mut parts: Vec<&str> = lower.split('/').collect();
    let name = parts.pop().unwrap_or("");
    let extension = name.rsplit_once('.').map(|(_, ext)| ext).unwrap_or("");
    let stem = name.split('.').next().unwrap_or(name);
    if CONFIG_NAMES.contains(&name)
        || parts.iter().any(|d| CONFIG_DIRS.contains(d))
        || (name.starts_with('.') && !name[1..].contains('.'))
    {
        return FileClass::Config;
    }
    if parts.iter().any(|d| TEST_DIRS.contains(d)) || is_test_file_name(name) {
        return FileClass::Test;
    }
    if DOC_EXTENSIONS.contains(&extension)
        || DOC_NAMES.contains(&stem)
        || parts.iter().any(|d| DOC_DIRS.contains(d))
    {
        return FileClass::Docs;
    }
    if CONFIG_EXTENSIONS.contains(&extension) {
        return FileClass::Config;
    }
    FileClass::Source
}

fn is_test_file_name(name: &str) -> bool {
    let stem = name.rsplit_once('.').map(|(s, _)| s).unwrap_or(name);
    stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("_spec")
        || stem.ends_with(".test")
        || stem.ends_with(".spec")
        || stem == "tests"
        || stem == "conftest"
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
    }
}
