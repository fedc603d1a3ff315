//! Searching file contents with ripgrep's libraries, in the work tree
//! ([`search_dir`], usable on any directory) or in a commit's tree
//! (`search_tree_with`, through a [`crate::repo::RepoView`]). Matches come back sorted by path then line, at most
//! `max_results` of them, with the total count.

mod top;
mod tree;
mod walk;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};

use super::RepoError;
use super::glob::PathFilter;
use top::TopMatches;

pub(crate) use tree::search_tree_with;
pub use walk::search_dir;

/// Matches kept when the caller does not say.
pub(crate) const DEFAULT_MAX_RESULTS: usize = 50;

/// Characters of a matching line kept; longer lines are shortened.
pub(crate) const DEFAULT_MAX_LINE_CHARS: usize = 300;

/// What to search for and how much to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchOptions {
    /// A regular expression (Rust `regex` syntax), or literal text with `fixed_string`.
    pub pattern: String,
    /// Treat `pattern` as literal text.
    pub fixed_string: bool,
    /// Match regardless of case.
    pub case_insensitive: bool,
    /// Only files selected by this glob (see [`PathFilter`]).
    pub path_glob: Option<String>,
    /// Matches kept (the first ones by path, then line); all are counted.
    pub max_results: usize,
    /// Longer matching lines are shortened to this many characters.
    pub max_line_chars: usize,
}

impl SearchOptions {
    /// Options for a regex search with the defaults.
    pub fn new(pattern: impl Into<String>) -> Self {
        SearchOptions {
            pattern: pattern.into(),
            fixed_string: false,
            case_insensitive: false,
            path_glob: None,
            max_results: DEFAULT_MAX_RESULTS,
            max_line_chars: DEFAULT_MAX_LINE_CHARS,
        }
    }
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchMatch {
    /// Path relative to the searched root, `/`-separated.
    pub path: String,
    /// 1-based line number.
    pub line: u64,
    /// The line without its ending, shortened past `max_line_chars`.
    pub text: String,
}

/// The result of a search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchOutput {
    /// The kept matches, sorted by path then line.
    pub matches: Vec<SearchMatch>,
    /// How many lines matched in all.
    pub total_matches: u64,
}

impl SearchOutput {
    /// Whether `max_results` left matches out.
    pub fn is_truncated(&self) -> bool {
        self.total_matches > self.matches.len() as u64
    }
}

/// Why a search could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// The pattern does not compile.
    #[error(
        "invalid regular expression: {0}\n(set fixed_string to true to search for the text literally)"
    )]
    InvalidPattern(String),
    /// The glob does not compile.
    #[error("invalid path_glob `{glob}`: {message}")]
    InvalidGlob {
        /// The glob as given.
        glob: String,
        /// What is wrong with it.
        message: String,
    },
    /// The repository could not be read.
    #[error(transparent)]
    Repo(#[from] RepoError),
}

/// The compiled pattern and path filter shared by all search threads.
struct Query {
    matcher: RegexMatcher,
    filter: PathFilter,
}

impl Query {
    fn new(options: &SearchOptions) -> Result<Self, SearchError> {
        let matcher = RegexMatcherBuilder::new()
            .fixed_strings(options.fixed_string)
            .case_insensitive(options.case_insensitive)
            // Line-oriented search lets the searcher scan whole buffers at a time.
            .line_terminator(Some(b'\n'))
            .build(&options.pattern)
            .map_err(|e| SearchError::InvalidPattern(e.to_string()))?;
        let glob = options.path_glob.as_deref();
        let filter = PathFilter::new(glob).map_err(|e| SearchError::InvalidGlob {
            glob: glob.unwrap_or_default().to_string(),
            message: e.kind().to_string(),
        })?;
        Ok(Query { matcher, filter })
    }
}

/// A searcher configured as ripgrep does for files found by walking: line
/// numbers on, and a file is abandoned at its first NUL byte (binary).
fn new_searcher() -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build()
}

/// Receives the matching lines of one file.
struct FileSink<'a> {
    path: &'a str,
    top: &'a mut TopMatches,
    max_line_chars: usize,
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let line = found.line_number().unwrap_or(0);
        self.top.count();
        if self.top.admits(self.path, line) {
            self.top.push(SearchMatch {
                path: self.path.to_string(),
                line,
                text: line_text(found.bytes(), self.max_line_chars),
            });
        }
        Ok(true)
    }
}

/// The line without its ending, cut to `max_chars` characters with a marker.
fn line_text(bytes: &[u8], max_chars: usize) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{} […]", &text[..cut]),
        None => text.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_shortened_on_a_char_boundary() {
        assert_eq!(line_text(b"short\r\n", 300), "short");
        let long = "é".repeat(400);
        let cut = line_text(long.as_bytes(), 300);
        assert!(cut.starts_with(&"é".repeat(300)) && cut.ends_with(" […]"));
        assert_eq!(cut.chars().count(), 304);
    }

    #[test]
    fn bad_patterns_and_globs_are_reported() {
        let bad = Query::new(&SearchOptions::new("fn (")).err().unwrap();
        assert!(matches!(bad, SearchError::InvalidPattern(_)));
        assert!(bad.to_string().contains("fixed_string"));
        let literal = SearchOptions {
            fixed_string: true,
            ..SearchOptions::new("fn (")
        };
        assert!(Query::new(&literal).is_ok());
        let bad_glob = SearchOptions {
            path_glob: Some("[a".into()),
            ..SearchOptions::new("x")
        };
        assert!(matches!(
            Query::new(&bad_glob),
            Err(SearchError::InvalidGlob { .. })
        ));
    }
}
