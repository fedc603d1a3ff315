//! Redline's one meaning of a glob, for the `search` and `list_files` tools and
//! for the config's `include` and `exclude`: a glob without `/` is matched
//! against file names at any depth (`*.rs`, `Cargo.toml`); one with `/` against
//! the whole path from the repository root (`src/**/*.rs`). `*` never crosses
//! `/`; `**` does. A leading `./` is ignored.

use globset::{Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};

/// Compiles one glob with Redline's meaning, to be matched against whole paths.
pub(crate) fn compile(pattern: &str) -> Result<Glob, globset::Error> {
    let pattern = pattern.trim();
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    let whole = match pattern.contains('/') {
        true => pattern.to_string(),
        false => format!("**/{pattern}"),
    };
    GlobBuilder::new(&whole).literal_separator(true).build()
}

/// Compiles globs into one set; the error names the glob at fault.
pub(crate) fn compile_set(patterns: &[String]) -> Result<GlobSet, (String, globset::Error)> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        builder.add(compile(pattern).map_err(|e| (pattern.clone(), e))?);
    }
    builder.build().map_err(|e| (patterns.join(", "), e))
}

/// A file filter built from an optional glob.
///
/// A glob without `/` is matched against file names (`*.rs`, `Cargo.toml`);
/// one with `/` against the whole path from the repository root
/// (`src/**/*.rs`). `*` never crosses `/`; `**` does.
#[derive(Debug, Clone, Default)]
pub struct PathFilter {
    glob: Option<GlobMatcher>,
}

impl PathFilter {
    /// Builds the filter; `None` selects every file.
    pub fn new(glob: Option<&str>) -> Result<Self, globset::Error> {
        let Some(glob) = glob.map(str::trim).filter(|g| !g.is_empty()) else {
            return Ok(PathFilter::default());
        };
        let matcher = compile(glob)?.compile_matcher();
        Ok(PathFilter {
            glob: Some(matcher),
        })
    }

    /// Whether the file at `path` (relative, `/`-separated) is selected.
    pub fn matches(&self, path: &str) -> bool {
        self.glob.as_ref().is_none_or(|glob| glob.is_match(path))
    }

    #[cfg(test)]
    /// Whether every file is selected.
    pub(crate) fn is_everything(&self) -> bool {
        self.glob.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_filters_give_a_glob_one_meaning() {
        let patterns = ["*.snap", "src/*.rs", "./docs/**"];
        let set = compile_set(&patterns.map(String::from)).unwrap();
        for path in [
            "a/b/c.snap",
            "x.snap",
            "src/a.rs",
            "src/x/a.rs",
            "docs/a/b.md",
            "lib/docs/a.md",
        ] {
            let by_filter = patterns
                .iter()
                .any(|p| PathFilter::new(Some(p)).unwrap().matches(path));
            assert_eq!(set.is_match(path), by_filter, "{path}");
        }
        assert!(set.is_match("a/b/c.snap") && set.is_match("src/a.rs"));
        assert!(!set.is_match("src/x/a.rs") && !set.is_match("lib/docs/a.md"));
        let bad = compile_set(&["src/[".to_string()]).unwrap_err();
        assert_eq!(bad.0, "src/[");
    }

    #[test]
    fn names_match_at_any_depth_and_paths_from_the_root() {
        let by_name = PathFilter::new(Some("*.rs")).unwrap();
        assert!(by_name.matches("src/a/b.rs") && by_name.matches("main.rs"));
        assert!(!by_name.matches("src/b.rs.txt"));

        let by_path = PathFilter::new(Some("src/*.rs")).unwrap();
        assert!(by_path.matches("src/a.rs") && !by_path.matches("src/x/a.rs"));
        let deep = PathFilter::new(Some("./src/**/*.rs")).unwrap();
        assert!(deep.matches("src/x/y/a.rs") && !deep.matches("tests/a.rs"));
    }

    #[test]
    fn no_glob_selects_everything_and_bad_globs_fail() {
        assert!(PathFilter::new(None).unwrap().matches("any/thing"));
        assert!(PathFilter::new(Some("")).unwrap().is_everything());
        assert!(PathFilter::new(Some("src/[a")).is_err());
    }
}
