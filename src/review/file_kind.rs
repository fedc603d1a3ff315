//! What a changed file is: program source, or one of the files a change may touch
//! besides it (tests, docs, changelogs, lockfiles, CI and tooling, packaging). Judged
//! from the path alone (directories, name, extension). One classification serves the
//! review order of a change ([`crate::context::order`]) and the mining of eval cases.
//!
//! Invariant: a file is [`FileKind::Source`] only when its extension is a programming
//! language's and nothing else claims it; a source revert touches only such files, so
//! everything else of a fix stays in the case's head as the fix left it.

use serde::Serialize;

/// What a changed file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileKind {
    /// Program code.
    Source,
    /// Test code, test fixtures and benchmarks.
    Test,
    /// Documentation (and examples).
    Doc,
    /// A changelog, release notes or a news fragment.
    Changelog,
    /// A dependency lockfile.
    Lockfile,
    /// Continuous integration and tooling (linters, formatters, hooks).
    Ci,
    /// Packaging and build metadata (manifests, setup scripts, container files).
    Packaging,
    /// Anything else (configuration, data).
    Other,
}

impl FileKind {
    /// The plural name used in skip reasons.
    pub fn plural(self) -> &'static str {
        match self {
            FileKind::Source => "source files",
            FileKind::Test => "tests",
            FileKind::Doc => "docs",
            FileKind::Changelog => "changelogs",
            FileKind::Lockfile => "lockfiles",
            FileKind::Ci => "CI",
            FileKind::Packaging => "packaging",
            FileKind::Other => "other files",
        }
    }
}

const CODE_EXTENSIONS: &[&str] = &[
    "rs", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "go", "py", "pyi", "js", "jsx", "ts", "tsx",
    "mts", "cts", "mjs", "cjs", "java", "kt", "kts", "scala", "swift", "m", "mm", "rb", "php",
    "cs", "fs", "ex", "exs", "erl", "hs", "ml", "lua", "pl", "sh", "bash", "zig", "dart", "vue",
    "svelte", "sql", "r", "jl", "clj", "groovy", "nim", "v", "sv", "vhd",
];
const DOC_EXTENSIONS: &[&str] = &["md", "markdown", "rst", "txt", "adoc", "asciidoc", "org"];
const DOC_DIRS: &[&str] = &["doc", "docs", "documentation", "examples", "example"];
const DOC_NAMES: &[&str] = &[
    "readme",
    "authors",
    "contributors",
    "license",
    "licence",
    "copying",
    "notice",
    "contributing",
    "code_of_conduct",
    "security",
];
const CHANGELOG_NAMES: &[&str] = &[
    "changelog",
    "changes",
    "history",
    "news",
    "releasenotes",
    "release-notes",
    "release_notes",
];
const CHANGELOG_DIRS: &[&str] = &["changelog.d", "newsfragments", ".changeset", ".changes"];
const LOCKFILES: &[&str] = &[
    "cargo.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "pipfile.lock",
    "uv.lock",
    "pdm.lock",
    "go.sum",
    "gemfile.lock",
    "composer.lock",
    "bun.lockb",
];
const CI_DIRS: &[&str] = &[".github", ".circleci", ".buildkite", ".gitlab", ".ci", "ci"];
const CI_NAMES: &[&str] = &[
    ".travis.yml",
    ".gitlab-ci.yml",
    "appveyor.yml",
    ".appveyor.yml",
    "azure-pipelines.yml",
    ".cirrus.yml",
    "jenkinsfile",
    ".pre-commit-config.yaml",
    ".pre-commit-hooks.yaml",
    "tox.ini",
    "noxfile.py",
    ".flake8",
    ".pylintrc",
    "mypy.ini",
    ".coveragerc",
    ".codecov.yml",
    "codecov.yml",
    "clippy.toml",
    ".clippy.toml",
    "rustfmt.toml",
    ".rustfmt.toml",
    "deny.toml",
    ".eslintrc",
    ".eslintrc.js",
    ".eslintrc.json",
    ".prettierrc",
    ".editorconfig",
    ".readthedocs.yml",
    ".readthedocs.yaml",
    "dependabot.yml",
    ".gitignore",
    ".gitattributes",
    ".mailmap",
];
const PACKAGING_NAMES: &[&str] = &[
    "cargo.toml",
    "setup.py",
    "setup.cfg",
    "pyproject.toml",
    "manifest.in",
    "package.json",
    "go.mod",
    "pipfile",
    "gemfile",
    "makefile",
    "dockerfile",
    "build.gradle",
    "pom.xml",
    "rust-toolchain",
    "rust-toolchain.toml",
    "gnumakefile",
    "justfile",
    "procfile",
    "vagrantfile",
    "rakefile",
    "cmakelists.txt",
];
const TEST_DIRS: &[&str] = &[
    "test",
    "tests",
    "spec",
    "specs",
    "__tests__",
    "testdata",
    "testing",
    "benches",
    "bench",
    "benchmarks",
    "fuzz",
    "fixtures",
    "test_data",
    "e2e",
];

/// Whether a path lies below a directory of tests, fixtures or benchmarks.
pub(crate) fn in_test_dir(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower
        .split('/')
        .rev()
        .skip(1)
        .any(|d| TEST_DIRS.contains(&d))
}

/// The kind of a repository path by its directories, name and extension.
pub fn file_kind(path: &str) -> FileKind {
    let lower = path.to_ascii_lowercase();
    let parts: Vec<&str> = lower.split('/').collect();
    let (name, dirs) = parts.split_last().map_or(("", &[][..]), |(n, d)| (*n, d));
    let in_dir = |names: &[&str]| dirs.iter().any(|d| names.contains(d));
    let (stem, extension) = name.rsplit_once('.').unwrap_or((name, ""));
    if CI_NAMES.contains(&name) || in_dir(CI_DIRS) {
        return FileKind::Ci;
    }
    if LOCKFILES.contains(&name) {
        return FileKind::Lockfile;
    }
    // `history.py` or `news.rs` is code: names decide only for files that are not.
    let code = CODE_EXTENSIONS.contains(&extension);
    if (!code && CHANGELOG_NAMES.contains(&stem)) || in_dir(CHANGELOG_DIRS) {
        return FileKind::Changelog;
    }
    if PACKAGING_NAMES.contains(&name) || extension == "gemspec" || name.starts_with("requirements")
    {
        return FileKind::Packaging;
    }
    if DOC_EXTENSIONS.contains(&extension)
        || in_dir(DOC_DIRS)
        || (!code && DOC_NAMES.contains(&stem))
    {
        return FileKind::Doc;
    }
    if !code {
        return FileKind::Other;
    }
    let test_name = name.starts_with("test_")
        || name == "conftest.py"
        || stem == "tests"
        || stem.starts_with("bench")
        || ["_test.", ".test.", "_spec.", ".spec.", "_tests."]
            .iter()
            .any(|marker| name.contains(marker));
    if test_name || in_dir(TEST_DIRS) {
        FileKind::Test
    } else {
        FileKind::Source
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_classified() {
        use FileKind::*;
        for (path, kind) in [
            ("src/parser.rs", Source),
            ("lib/util.py", Source),
            ("src/marshmallow/fields.py", Source),
            ("build.rs", Source),
            ("tests/parser.rs", Test),
            ("pkg/http_test.go", Test),
            ("web/app.spec.ts", Test),
            ("tests/conftest.py", Test),
            ("benches/buf.rs", Test),
            ("performance/benchmark.py", Test),
            ("e2e/login.ts", Test),
            ("CMakeLists.txt", Packaging),
            ("README.md", Doc),
            ("docs/guide.rs", Doc),
            ("docs/conf.py", Doc),
            ("examples/demo.py", Doc),
            ("AUTHORS.rst", Doc),
            ("LICENSE", Doc),
            ("CHANGELOG.md", Changelog),
            ("CHANGELOG.rst", Changelog),
            ("changelog.d/123.bugfix", Changelog),
            ("Cargo.lock", Lockfile),
            ("go.sum", Lockfile),
            (".github/workflows/ci.yml", Ci),
            ("ci/test-stable.sh", Ci),
            ("tox.ini", Ci),
            (".pre-commit-config.yaml", Ci),
            ("Cargo.toml", Packaging),
            ("setup.py", Packaging),
            ("pyproject.toml", Packaging),
            ("requirements-dev.txt", Packaging),
            ("Makefile", Packaging),
            ("config/settings.yaml", Other),
            ("src/history.py", Source),
            ("lib/security.rs", Source),
        ] {
            assert_eq!(file_kind(path), kind, "{path}");
        }
    }
}
