//! Which strategy runs a review, and the written-down rule `auto` uses.
//!
//! `auto` looks at the change itself:
//! 1. reflection when a changed path looks security-sensitive (auth, crypto,
//!    secrets, permissions, SQL, CI workflows…) and the change is not large;
//! 2. plan-and-execute when the change is large or spans several areas:
//!    at least `plan_min_files` reviewable files, or `plan_min_lines` changed
//!    lines, or `plan_min_languages` languages, or `plan_min_dirs` top-level directories;
//! 3. ReAct otherwise (small, focused changes).

use serde::Deserialize;
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use crate::review::diff::ChangeSet;

/// A review strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Think, call tools, observe, repeat.
    React,
    /// Plan review tasks, confirm, run them, merge.
    PlanExecute,
    /// Review, evaluate, revise.
    Reflection,
}

impl Strategy {
    /// The name used in events and stats.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::React => "react",
            Strategy::PlanExecute => "plan_execute",
            Strategy::Reflection => "reflection",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `--strategy`: a fixed strategy or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StrategyChoice {
    /// Decide from the change.
    #[default]
    Auto,
    /// Always this one.
    Fixed(Strategy),
}

impl FromStr for StrategyChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(StrategyChoice::Auto),
            "react" => Ok(StrategyChoice::Fixed(Strategy::React)),
            "plan" | "plan_execute" | "plan-execute" => {
                Ok(StrategyChoice::Fixed(Strategy::PlanExecute))
            }
            "reflect" | "reflection" => Ok(StrategyChoice::Fixed(Strategy::Reflection)),
            other => Err(format!(
                "unknown strategy `{other}` (expected auto, react, plan or reflect)"
            )),
        }
    }
}

/// Thresholds of the `auto` rule (config table `[auto]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AutoThresholds {
    /// Reviewable files from which plan-and-execute is chosen.
    pub plan_min_files: usize,
    /// Changed lines from which plan-and-execute is chosen.
    pub plan_min_lines: usize,
    /// Languages from which plan-and-execute is chosen.
    pub plan_min_languages: usize,
    /// Top-level directories from which plan-and-execute is chosen.
    pub plan_min_dirs: usize,
    /// Path fragments that make a change security-sensitive (lower-case substrings).
    pub sensitive_paths: Vec<String>,
    /// Always choose reflection (quality matters most).
    pub prefer_reflection: bool,
}

impl Default for AutoThresholds {
    fn default() -> Self {
        AutoThresholds {
            plan_min_files: 12,
            plan_min_lines: 600,
            plan_min_languages: 3,
            plan_min_dirs: 4,
            sensitive_paths: [
                "auth",
                "login",
                "password",
                "passwd",
                "secret",
                "token",
                "crypto",
                "cipher",
                "permission",
                "acl",
                "session",
                "oauth",
                "jwt",
                "sanitiz",
                "security",
                "sql",
                ".github/workflows",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            prefer_reflection: false,
        }
    }
}

/// The strategy chosen and why (shown in the `run_started` event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The strategy.
    pub strategy: Strategy,
    /// A short reason, e.g. "38 files, 2 languages".
    pub reason: String,
}

/// Applies the choice to a change.
pub fn decide(
    choice: StrategyChoice,
    changes: &ChangeSet,
    thresholds: &AutoThresholds,
) -> Decision {
    let shape = ChangeShape::of(changes);
    let size = shape.describe();
    match choice {
        StrategyChoice::Fixed(strategy) => Decision {
            strategy,
            reason: format!("chosen by flag or config; {size}"),
        },
        StrategyChoice::Auto => auto(&shape, thresholds),
    }
}

fn auto(shape: &ChangeShape, t: &AutoThresholds) -> Decision {
    let size = shape.describe();
    let large = shape.files >= t.plan_min_files
        || shape.lines >= t.plan_min_lines
        || shape.languages.len() >= t.plan_min_languages
        || shape.top_dirs >= t.plan_min_dirs;
    let sensitive = shape.paths.iter().find(|p| {
        let lower = p.to_ascii_lowercase();
        t.sensitive_paths.iter().any(|s| lower.contains(s.as_str()))
    });
    if t.prefer_reflection {
        return Decision {
            strategy: Strategy::Reflection,
            reason: format!("{size}; reflection preferred by config"),
        };
    }
    if let (Some(path), false) = (sensitive, large) {
        return Decision {
            strategy: Strategy::Reflection,
            reason: format!("{size}; security-sensitive path {path}"),
        };
    }
    if large {
        return Decision {
            strategy: Strategy::PlanExecute,
            reason: size,
        };
    }
    Decision {
        strategy: Strategy::React,
        reason: format!("{size}; small, focused change"),
    }
}

/// What `auto` looks at.
struct ChangeShape {
    files: usize,
    lines: usize,
    languages: BTreeSet<&'static str>,
    top_dirs: usize,
    paths: Vec<String>,
}

impl ChangeShape {
    fn of(changes: &ChangeSet) -> Self {
        let reviewable: Vec<_> = changes.files.iter().filter(|f| !f.binary).collect();
        let languages = reviewable
            .iter()
            .filter_map(|f| language_of(&f.path))
            .collect();
        let top_dirs: BTreeSet<&str> = reviewable
            .iter()
            .map(|f| f.path.split_once('/').map(|(dir, _)| dir).unwrap_or(""))
            .collect();
        ChangeShape {
            files: reviewable.len(),
            lines: reviewable
                .iter()
                .map(|f| f.additions() + f.deletions())
                .sum(),
            languages,
            top_dirs: top_dirs.len(),
            paths: reviewable.iter().map(|f| f.path.clone()).collect(),
        }
    }

    fn describe(&self) -> String {
        format!(
            "{} file{}, {} changed line{}, {} language{}",
            self.files,
            plural(self.files),
            self.lines,
            plural(self.lines),
            self.languages.len(),
            plural(self.languages.len())
        )
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The programming language of a path, by extension; `None` for docs and data.
pub fn language_of(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    Some(match ext.as_str() {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "go" => "go",
        "js" | "jsx" | "mjs" | "cjs" => "javascript",
        "ts" | "tsx" | "mts" | "cts" => "typescript",
        "java" => "java",
        "kt" | "kts" => "kotlin",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "c++",
        "cs" => "c#",
        "rb" => "ruby",
        "php" => "php",
        "swift" => "swift",
        "scala" => "scala",
        "sh" | "bash" => "shell",
        "sql" => "sql",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::diff::{DiffLine, FileChange, FileStatus, Hunk, LineKind};

    fn file(path: &str, added: u32) -> FileChange {
        let lines = (1..=added)
            .map(|n| DiffLine {
                kind: LineKind::Added,
                old_line: None,
                new_line: Some(n),
                text: format!("line {n}"),
            })
            .collect();
        FileChange {
            path: path.into(),
            old_path: None,
            status: FileStatus::Added,
            binary: false,
            hunks: vec![Hunk {
                old_start: 0,
                old_lines: 0,
                new_start: 1,
                new_lines: added,
                header: String::new(),
                lines,
            }],
        }
    }

    fn change(files: Vec<FileChange>) -> ChangeSet {
        ChangeSet {
            base: "b".into(),
            head: Some("h".into()),
            files,
        }
    }

    #[test]
    fn auto_picks_react_for_small_changes() {
        let d = decide(
            StrategyChoice::Auto,
            &change(vec![file("src/a.rs", 20)]),
            &AutoThresholds::default(),
        );
        assert_eq!(d.strategy, Strategy::React);
        assert!(
            d.reason.starts_with("1 file, 20 changed lines, 1 language"),
            "{}",
            d.reason
        );
    }

    #[test]
    fn auto_picks_plan_for_large_or_spread_changes() {
        let many: Vec<_> = (0..15).map(|i| file(&format!("src/m{i}.rs"), 5)).collect();
        assert_eq!(
            decide(
                StrategyChoice::Auto,
                &change(many),
                &AutoThresholds::default()
            )
            .strategy,
            Strategy::PlanExecute
        );
        let spread = vec![file("a/x.py", 3), file("b/y.go", 3), file("c/z.ts", 3)];
        let d = decide(
            StrategyChoice::Auto,
            &change(spread),
            &AutoThresholds::default(),
        );
        assert_eq!(d.strategy, Strategy::PlanExecute);
        assert!(d.reason.contains("3 languages"), "{}", d.reason);
    }

    #[test]
    fn auto_picks_reflection_for_sensitive_paths() {
        let d = decide(
            StrategyChoice::Auto,
            &change(vec![file("src/auth/session.rs", 30)]),
            &AutoThresholds::default(),
        );
        assert_eq!(d.strategy, Strategy::Reflection);
        assert!(d.reason.contains("src/auth/session.rs"), "{}", d.reason);
    }

    #[test]
    fn fixed_choice_wins_and_names_parse() {
        let choice: StrategyChoice = "plan".parse().unwrap();
        let d = decide(
            choice,
            &change(vec![file("src/auth.rs", 1)]),
            &AutoThresholds::default(),
        );
        assert_eq!(d.strategy.name(), "plan_execute");
        assert!("sideways".parse::<StrategyChoice>().is_err());
    }
}
