//! Which changed files are noise for a reviewer: lockfiles, generated code,
//! vendored trees, minified bundles, binaries, snapshots and whatever the
//! config excludes. Noise is left out of the first prompt but still listed by
//! name, so the model knows it exists and can open it.

use std::sync::LazyLock;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::review::diff::{FileChange, LineKind};

/// Why a file is left out of the first prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoiseKind {
    /// A dependency lockfile.
    Lockfile,
    /// Generated code (by path or by a "generated" marker).
    Generated,
    /// Third-party code copied into the repository.
    Vendored,
    /// A minified bundle or a file of very long lines.
    Minified,
    /// A binary file.
    Binary,
    /// Test snapshots.
    Snapshot,
    /// Matched one of the config's `exclude` globs.
    ConfigExcluded,
}

impl NoiseKind {
    /// The reason as written in the JSON output and the prompt.
    pub fn reason(self) -> &'static str {
        match self {
            NoiseKind::Lockfile => "lockfile",
            NoiseKind::Generated => "generated",
            NoiseKind::Vendored => "vendored",
            NoiseKind::Minified => "minified",
            NoiseKind::Binary => "binary",
            NoiseKind::Snapshot => "snapshot",
            NoiseKind::ConfigExcluded => "excluded by config",
        }
    }
}

/// File names of dependency lockfiles, wherever they sit.
const LOCKFILES: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lockb",
    "bun.lock",
    "deno.lock",
    "poetry.lock",
    "Pipfile.lock",
    "pdm.lock",
    "uv.lock",
    "Gemfile.lock",
    "go.sum",
    "go.work.sum",
    "composer.lock",
    "mix.lock",
    "pubspec.lock",
    "Podfile.lock",
    "Package.resolved",
    "flake.lock",
    "packages.lock.json",
    "gradle.lockfile",
    "cabal.project.freeze",
    "MODULE.bazel.lock",
];

const GENERATED_GLOBS: &[&str] = &[
    "**/generated/**",
    "**/__generated__/**",
    "**/*.pb.go",
    "**/*.pb.cc",
    "**/*.pb.h",
    "**/*_pb2.py",
    "**/*_pb2.pyi",
    "**/*_pb2_grpc.py",
    "**/*.generated.*",
    "**/*.g.dart",
    "**/*.freezed.dart",
    "**/*.designer.cs",
];

const VENDORED_GLOBS: &[&str] = &[
    "**/vendor/**",
    "**/vendored/**",
    "**/third_party/**",
    "**/third-party/**",
    "**/thirdparty/**",
    "**/node_modules/**",
];

const MINIFIED_GLOBS: &[&str] = &["**/*.min.js", "**/*.min.css", "**/*.min.mjs", "**/*.js.map"];

const SNAPSHOT_GLOBS: &[&str] = &["**/__snapshots__/**", "**/*.snap", "**/*.snap.new"];

/// Lines checked for a "generated" marker.
const MARKER_LINES: usize = 5;

/// An added line this long means a minified or machine-written file; a line
/// this long on any side (added, removed or context) is shown as its length only.
pub(crate) const MINIFIED_LINE_CHARS: usize = 1_000;

/// The built-in path patterns, compiled once, with the kind of each pattern.
struct BuiltinPatterns {
    set: GlobSet,
    kinds: Vec<NoiseKind>,
}

static BUILTIN: LazyLock<BuiltinPatterns> = LazyLock::new(build_builtin_patterns);

fn build_builtin_patterns() -> BuiltinPatterns {
    let lockfiles: Vec<String> = LOCKFILES.iter().map(|name| format!("**/{name}")).collect();
    let groups: [(NoiseKind, Vec<&str>); 5] = [
        (
            NoiseKind::Lockfile,
            lockfiles.iter().map(String::as_str).collect(),
        ),
        (NoiseKind::Generated, GENERATED_GLOBS.to_vec()),
        (NoiseKind::Vendored, VENDORED_GLOBS.to_vec()),
        (NoiseKind::Minified, MINIFIED_GLOBS.to_vec()),
        (NoiseKind::Snapshot, SNAPSHOT_GLOBS.to_vec()),
    ];
    let mut builder = GlobSetBuilder::new();
    let mut kinds = Vec::new();
    for (kind, patterns) in groups {
        for pattern in patterns {
            // The built-in patterns are constants and known to be valid; a bad
            // one is skipped rather than taking the review down.
            if let Ok(glob) = GlobBuilder::new(pattern).literal_separator(true).build() {
                builder.add(glob);
                kinds.push(kind);
            }
        }
    }
    BuiltinPatterns {
        set: builder.build().unwrap_or_else(|_| GlobSet::empty()),
        kinds,
    }
}

/// An invalid glob in the config's `exclude` list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid exclude glob `{glob}`: {message}")]
pub(crate) struct ExcludeGlobError {
    /// The glob as written.
    pub glob: String,
    /// What is wrong with it.
    pub message: String,
}

/// Compiles the config's `exclude` globs. A glob without a `/` matches at any depth
/// (`*.md` matches `docs/a.md`), as in `.gitignore`.
pub(crate) fn compile_excludes(globs: &[String]) -> Result<GlobSet, ExcludeGlobError> {
    crate::repo::glob::compile_set(globs).map_err(|(glob, e)| ExcludeGlobError {
        glob,
        message: e.kind().to_string(),
    })
}

/// Why `file` is noise, or `None` when it deserves review. `head_start` is the
/// beginning of the file's head text, when known, for the "generated" marker.
pub fn noise_kind(
    file: &FileChange,
    head_start: Option<&str>,
    exclude: &GlobSet,
) -> Option<NoiseKind> {
    if file.binary {
        return Some(NoiseKind::Binary);
    }
    if let Some(kind) = noise_kind_by_path(&file.path, exclude) {
        return Some(kind);
    }
    if has_generated_marker(file, head_start) {
        return Some(NoiseKind::Generated);
    }
    has_very_long_lines(file).then_some(NoiseKind::Minified)
}

/// Noise by path alone: config globs first (the user's word wins), then built-in patterns.
pub(crate) fn noise_kind_by_path(path: &str, exclude: &GlobSet) -> Option<NoiseKind> {
    if exclude.is_match(path) {
        return Some(NoiseKind::ConfigExcluded);
    }
    let builtin = &*BUILTIN;
    builtin
        .set
        .matches(path)
        .into_iter()
        .min()
        .and_then(|index| builtin.kinds.get(index).copied())
}

/// Whether the first lines say the file is generated ("@generated", "DO NOT EDIT").
fn has_generated_marker(file: &FileChange, head_start: Option<&str>) -> bool {
    let first_lines: Vec<&str> = match head_start {
        Some(text) => text.lines().take(MARKER_LINES).collect(),
        // Without the head text, a new file's first added lines are its first lines.
        None => file
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| {
                l.kind != LineKind::Removed
                    && l.new_line.is_some_and(|n| n as usize <= MARKER_LINES)
            })
            .map(|l| l.text.as_str())
            .collect(),
    };
    first_lines.iter().any(|line| is_generated_marker(line))
}

fn is_generated_marker(line: &str) -> bool {
    line.contains("@generated")
        || line.contains("DO NOT EDIT")
        || line.contains("Code generated by")
        || line.contains("<auto-generated")
}

fn has_very_long_lines(file: &FileChange) -> bool {
    file.hunks
        .iter()
        .flat_map(|h| &h.lines)
        .any(|l| l.kind == LineKind::Added && l.text.chars().count() >= MINIFIED_LINE_CHARS)
}

/// `text` as a prompt shows it: a line of [`MINIFIED_LINE_CHARS`] or more (on any
/// side of a change) is noise a reviewer cannot read, so it stands as a note of
/// its length instead of filling the prompt or being cut into many task parts.
pub(crate) fn shown_line(text: &str) -> std::borrow::Cow<'_, str> {
    // Bytes bound characters from above: most lines are decided without counting.
    if text.len() < MINIFIED_LINE_CHARS {
        return text.into();
    }
    let chars = text.chars().count();
    if chars < MINIFIED_LINE_CHARS {
        return text.into();
    }
    format!(
        "[a line of {} characters, not shown]",
        super::thousands(chars)
    )
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::diff::{DiffLine, FileStatus, Hunk};

    fn added_file(path: &str, lines: &[&str]) -> FileChange {
        FileChange {
            path: path.into(),
            old_path: None,
            status: FileStatus::Added,
            binary: false,
            hunks: vec![Hunk {
                old_start: 0,
                old_lines: 0,
                new_start: 1,
                new_lines: lines.len() as u32,
                header: String::new(),
                lines: lines
                    .iter()
                    .enumerate()
                    .map(|(i, text)| DiffLine {
                        kind: LineKind::Added,
                        old_line: None,
                        new_line: Some(i as u32 + 1),
                        text: (*text).into(),
                    })
                    .collect(),
            }],
        }
    }

    fn kind(path: &str) -> Option<NoiseKind> {
        noise_kind_by_path(path, &GlobSet::empty())
    }

    #[test]
    fn paths_are_classified() {
        assert_eq!(kind("Cargo.lock"), Some(NoiseKind::Lockfile));
        assert_eq!(kind("web/package-lock.json"), Some(NoiseKind::Lockfile));
        assert_eq!(kind("go.sum"), Some(NoiseKind::Lockfile));
        assert_eq!(kind("api/v1/user.pb.go"), Some(NoiseKind::Generated));
        assert_eq!(kind("py/user_pb2.py"), Some(NoiseKind::Generated));
        assert_eq!(kind("src/generated/schema.rs"), Some(NoiseKind::Generated));
        assert_eq!(kind("src/api.generated.ts"), Some(NoiseKind::Generated));
        assert_eq!(kind("vendor/github.com/x/y.go"), Some(NoiseKind::Vendored));
        assert_eq!(
            kind("ui/node_modules/a/index.js"),
            Some(NoiseKind::Vendored)
        );
        assert_eq!(
            kind("third_party/zlib/inflate.c"),
            Some(NoiseKind::Vendored)
        );
        assert_eq!(kind("static/app.min.js"), Some(NoiseKind::Minified));
        assert_eq!(
            kind("src/__snapshots__/a.test.ts.snap"),
            Some(NoiseKind::Snapshot)
        );
        assert_eq!(kind("tests/snapshots/x.snap"), Some(NoiseKind::Snapshot));
        assert_eq!(kind("src/lockfile.rs"), None);
        assert_eq!(kind("src/vendors.rs"), None);
        assert_eq!(kind("src/main.rs"), None);
    }

    #[test]
    fn config_globs_win_and_match_at_any_depth() {
        let exclude = compile_excludes(&["*.md".into(), "fixtures/**".into()]).expect("globs");
        assert_eq!(
            noise_kind_by_path("docs/a.md", &exclude),
            Some(NoiseKind::ConfigExcluded)
        );
        assert_eq!(
            noise_kind_by_path("fixtures/big.json", &exclude),
            Some(NoiseKind::ConfigExcluded)
        );
        assert_eq!(noise_kind_by_path("src/a.rs", &exclude), None);
        let err = compile_excludes(&["src/[".into()]).expect_err("bad glob");
        assert!(err.to_string().contains("src/["));
    }

    #[test]
    fn content_markers_and_long_lines() {
        let none = GlobSet::empty();
        let generated = added_file("src/schema.rs", &["// @generated by tool", "fn a() {}"]);
        assert_eq!(
            noise_kind(&generated, None, &none),
            Some(NoiseKind::Generated)
        );
        let plain = added_file("src/a.rs", &["fn a() {}"]);
        assert_eq!(noise_kind(&plain, None, &none), None);
        assert_eq!(
            noise_kind(
                &plain,
                Some("// Code generated by protoc. DO NOT EDIT.\n"),
                &none
            ),
            Some(NoiseKind::Generated)
        );
        let long = "x".repeat(MINIFIED_LINE_CHARS);
        let bundle = added_file("static/app.js", &[long.as_str()]);
        assert_eq!(noise_kind(&bundle, None, &none), Some(NoiseKind::Minified));
        let binary = FileChange {
            binary: true,
            ..plain
        };
        assert_eq!(noise_kind(&binary, None, &none), Some(NoiseKind::Binary));
    }

    #[test]
    fn very_long_lines_are_shown_as_their_length() {
        assert_eq!(shown_line("let x = 1;"), "let x = 1;");
        let under = "é".repeat(MINIFIED_LINE_CHARS - 1);
        assert_eq!(shown_line(&under), under.as_str());
        assert_eq!(
            shown_line(&"x".repeat(2_000_000)),
            "[a line of 2,000,000 characters, not shown]"
        );
    }
}
