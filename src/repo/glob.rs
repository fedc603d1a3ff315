//! [`PathFilter`]: which files a glob selects, the same way for `search` and
//! `list_files`, in both revision modes.

use globset::{GlobBuilder, GlobMatcher};

/// A file filter built from an optional glob.
///
/// A glob without `/` is matched against file names (`*.rs`, `Cargo.toml`);
/// one with `/` against the whole path from the repository root
/// (`src/**/*.rs`). `*` never crosses `/`; `**` does.
#[derive(Debug, Clone, Default)]
pub struct PathFilter {
    glob: Option<GlobMatcher>,
    whole_path: bool,
}

impl PathFilter {
    /// Builds the filter; `None` selects every file.
    pub fn new(glob: Option<&str>) -> Result<Self, globset::Error> {
        let Some(glob) = glob.map(str::trim).filter(|g| !g.is_empty()) else {
            return Ok(PathFilter::default());
        };
        let glob = glob.strip_prefix("./").unwrap_or(glob);
        let matcher = GlobBuilder::new(glob)
            .literal_separator(true)
            .build()?
            .compile_matcher();
        Ok(PathFilter {
            glob: Some(matcher),
            whole_path: glob.contains('/'),
        })
    }

    /// Whether the file at `path` (relative, `/`-separated) is selected.
    pub fn matches(&self, path: &str) -> bool {
        let Some(glob) = &self.glob else {
            return true;
        };
        if self.whole_path {
            glob.is_match(path)
        } else {
            glob.is_match(path.rsplit('/').next().unwrap_or(path))
        }
    }

    /// Whether every file is selected.
    pub fn is_everything(&self) -> bool {
        self.glob.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
