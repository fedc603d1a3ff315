//! Findings: what a review reports, in the shape of the JSON output (version 1).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How serious a finding is. Ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Cosmetic.
    Nit,
    /// Worth fixing, not urgent.
    Minor,
    /// Should be fixed before merging.
    Major,
    /// Breaks something or opens a hole.
    Critical,
}

impl Severity {
    /// All severities, most severe first.
    pub const ALL: [Severity; 4] = [
        Severity::Critical,
        Severity::Major,
        Severity::Minor,
        Severity::Nit,
    ];

    /// The lower-case name used in JSON and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::Major => "major",
            Severity::Minor => "minor",
            Severity::Nit => "nit",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Severity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "critical" | "blocker" | "high" => Ok(Severity::Critical),
            "major" | "error" | "medium" => Ok(Severity::Major),
            "minor" | "warning" | "low" => Ok(Severity::Minor),
            "nit" | "info" | "trivial" | "style" => Ok(Severity::Nit),
            other => Err(crate::text::unknown_value(
                "severity",
                other,
                &["critical", "major", "minor", "nit"],
            )),
        }
    }
}

/// What kind of concern a finding raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Wrong behaviour.
    Bug,
    /// A vulnerability or unsafe handling of data or secrets.
    Security,
    /// Needless cost in time or memory.
    Performance,
    /// Harder to read, change or reason about.
    Maintainability,
    /// Formatting and naming.
    Style,
    /// Missing or wrong tests.
    Test,
}

impl Category {
    /// The lower-case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Bug => "bug",
            Category::Security => "security",
            Category::Performance => "performance",
            Category::Maintainability => "maintainability",
            Category::Style => "style",
            Category::Test => "test",
        }
    }
}

impl FromStr for Category {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bug" | "correctness" | "logic" => Ok(Category::Bug),
            "security" => Ok(Category::Security),
            "performance" | "perf" => Ok(Category::Performance),
            "maintainability" | "design" | "readability" => Ok(Category::Maintainability),
            "style" | "formatting" => Ok(Category::Style),
            "test" | "tests" | "testing" => Ok(Category::Test),
            other => Err(format!("unknown category `{other}`")),
        }
    }
}

/// Which version of the file a line number refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Side {
    /// The base version (deleted lines).
    Left,
    /// The head version (added and context lines).
    #[default]
    Right,
}

/// One finding of a review, anchored on a line range of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Repository-relative path, `/`-separated.
    pub path: String,
    /// Last line of the range (1-based) on `side`.
    pub line: u32,
    /// First line of the range; equal to `line` for a single line.
    pub start_line: u32,
    /// Which version of the file the lines are in.
    pub side: Side,
    /// How serious it is.
    pub severity: Severity,
    /// What kind of concern.
    pub category: Category,
    /// One-line title.
    pub title: String,
    /// Explanation, Markdown.
    pub body: String,
    /// Replacement code for `start_line..=line`, if the fix is mechanical.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// The project guideline the finding rests on, by its source path (`AGENTS.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Verification was on but read no verdict on it (the verifier's answer was missing,
    /// unreadable or cut by a limit): it is kept, and says so. Written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unverified: bool,
}

impl Finding {
    /// The line range as `start..=end`, `start <= end`.
    pub fn range(&self) -> std::ops::RangeInclusive<u32> {
        self.start_line.min(self.line)..=self.line.max(self.start_line)
    }

    /// `path:line` or `path:start-line`, for humans.
    pub fn location(&self) -> String {
        if self.start_line == self.line {
            format!("{}:{}", self.path, self.line)
        } else {
            format!("{}:{}-{}", self.path, self.start_line, self.line)
        }
    }

    /// A major bug on head lines `start..=end` of `path`, titled "t" with body "b": the
    /// finding unit tests start from.
    #[cfg(test)]
    pub(crate) fn on_lines(path: &str, start: u32, end: u32) -> Finding {
        Finding {
            path: path.into(),
            line: end,
            start_line: start,
            side: Side::Right,
            severity: Severity::Major,
            category: Category::Bug,
            title: "t".into(),
            body: "b".into(),
            suggestion: None,
            rule: None,
            unverified: false,
        }
    }
}
