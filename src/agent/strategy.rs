//! Which strategy runs a review, and the written-down rule `auto` uses.
//!
//! `auto` looks at the change itself and at whether its shaped form (stage 1)
//! fits the first-message budget whole:
//! 1. reflection when `prefer_reflection` is set, or when a changed path looks
//!    security-sensitive (auth, crypto, secrets, permissions, SQL, CI
//!    workflows…) and the change fits;
//! 2. plan-and-execute when the shaped change does not fit the budget whole (one
//!    message could not show every changed line), or when one of the optional
//!    `plan_min_*` thresholds is set and reached;
//! 3. ReAct otherwise: one conversation that sees the whole change is the
//!    cheapest review that shows every line.

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

impl StrategyChoice {
    /// The name the `strategy` setting takes: `auto`, `react`, `plan` or `reflect`.
    pub fn config_name(self) -> &'static str {
        match self {
            StrategyChoice::Auto => "auto",
            StrategyChoice::Fixed(Strategy::React) => "react",
            StrategyChoice::Fixed(Strategy::PlanExecute) => "plan",
            StrategyChoice::Fixed(Strategy::Reflection) => "reflect",
        }
    }
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
            other => Err(crate::text::unknown_value(
                "strategy",
                other,
                &["auto", "react", "plan", "reflect"],
            )),
        }
    }
}

/// Thresholds of the `auto` rule (config table `[auto]`). The `plan_min_*`
/// values are extra signals, off unless set: whether the change fits decides first.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AutoThresholds {
    /// Reviewable files from which plan-and-execute is chosen even when the change fits.
    pub plan_min_files: Option<usize>,
    /// Changed lines from which plan-and-execute is chosen even when the change fits.
    pub plan_min_lines: Option<usize>,
    /// Languages from which plan-and-execute is chosen even when the change fits.
    pub plan_min_languages: Option<usize>,
    /// Top-level directories from which plan-and-execute is chosen even when the change fits.
    pub plan_min_dirs: Option<usize>,
    /// Path fragments that make a change security-sensitive (lower-case substrings).
    pub sensitive_paths: Vec<String>,
    /// Always choose reflection (quality matters most).
    pub prefer_reflection: bool,
}

impl Default for AutoThresholds {
    fn default() -> Self {
        AutoThresholds {
            plan_min_files: None,
            plan_min_lines: None,
            plan_min_languages: None,
            plan_min_dirs: None,
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
pub(crate) struct Decision {
    /// The strategy.
    pub strategy: Strategy,
    /// A short reason, e.g. "38 files, 2 languages".
    pub reason: String,
}

/// Whether the shaped change fits the first-message budget whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fit {
    /// Every reviewable file's section is in the stage-1 message.
    pub whole: bool,
    /// Tokens of the shaped change (the stage-1 message).
    pub tokens: usize,
    /// The stage-1 budget.
    pub budget: usize,
}

/// Applies the choice to a change.
pub(crate) fn decide(
    choice: StrategyChoice,
    changes: &ChangeSet,
    thresholds: &AutoThresholds,
    fit: Fit,
) -> Decision {
    let shape = ChangeShape::of(changes);
    let size = shape.describe();
    match choice {
        StrategyChoice::Fixed(strategy) => Decision {
            strategy,
            reason: format!("chosen by flag or config; {size}"),
        },
        StrategyChoice::Auto => auto(&shape, thresholds, fit),
    }
}

fn auto(shape: &ChangeShape, t: &AutoThresholds, fit: Fit) -> Decision {
    let size = shape.describe();
    let sensitive = shape.paths.iter().find(|p| {
        let lower = p.to_ascii_lowercase();
        t.sensitive_paths.iter().any(|s| lower.contains(s.as_str()))
    });
    let large = if fit.whole {
        threshold_reached(shape, t)
    } else {
        Some(format!(
            "the shaped change does not fit the {}-token first-message budget whole",
            crate::context::thousands(fit.budget)
        ))
    };
    let (strategy, why) = match (t.prefer_reflection, large, sensitive) {
        (true, _, _) => (
            Strategy::Reflection,
            "reflection preferred by config".into(),
        ),
        (false, Some(why), _) => (Strategy::PlanExecute, why),
        (false, None, Some(path)) => (
            Strategy::Reflection,
            format!("security-sensitive path {path}"),
        ),
        (false, None, None) => (
            Strategy::React,
            format!(
                "fits the first-message budget whole ({} of {} tokens)",
                crate::context::thousands(fit.tokens),
                crate::context::thousands(fit.budget)
            ),
        ),
    };
    Decision {
        strategy,
        reason: format!("{size}; {why}"),
    }
}

/// The first optional `plan_min_*` threshold the change reaches, described.
fn threshold_reached(shape: &ChangeShape, t: &AutoThresholds) -> Option<String> {
    [
        (t.plan_min_files, shape.files, "files", "plan_min_files"),
        (
            t.plan_min_lines,
            shape.lines,
            "changed lines",
            "plan_min_lines",
        ),
        (
            t.plan_min_languages,
            shape.languages.len(),
            "languages",
            "plan_min_languages",
        ),
        (
            t.plan_min_dirs,
            shape.top_dirs,
            "top-level directories",
            "plan_min_dirs",
        ),
    ]
    .into_iter()
    .find_map(|(min, value, what, key)| {
        min.filter(|min| value >= *min)
            .map(|min| format!("at least {min} {what} (auto.{key})"))
    })
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
pub(crate) fn language_of(path: &str) -> Option<&'static str> {
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

    const FITS: Fit = Fit {
        whole: true,
        tokens: 900,
        budget: 24_000,
    };

    const TOO_BIG: Fit = Fit {
        whole: false,
        tokens: 24_000,
        budget: 24_000,
    };

    #[test]
    fn auto_picks_react_when_the_change_fits() {
        let d = decide(
            StrategyChoice::Auto,
            &change(vec![file("src/a.rs", 20)]),
            &AutoThresholds::default(),
            FITS,
        );
        assert_eq!(d.strategy, Strategy::React);
        assert!(
            d.reason.starts_with("1 file, 20 changed lines, 1 language"),
            "{}",
            d.reason
        );
        assert!(
            d.reason.contains("fits the first-message budget whole"),
            "{}",
            d.reason
        );
        // Spread over six top-level directories and three languages, but it fits.
        let spread: Vec<_> = ["a/x.py", "b/y.go", "c/z.ts", "d/w.rs", "e/v.rs", "f/u.rs"]
            .iter()
            .map(|p| file(p, 23))
            .collect();
        let d = decide(
            StrategyChoice::Auto,
            &change(spread),
            &AutoThresholds::default(),
            FITS,
        );
        assert_eq!(d.strategy, Strategy::React, "{}", d.reason);
    }

    #[test]
    fn auto_picks_plan_when_the_change_does_not_fit_or_a_set_threshold_is_reached() {
        let d = decide(
            StrategyChoice::Auto,
            &change(vec![file("src/a.rs", 20)]),
            &AutoThresholds::default(),
            TOO_BIG,
        );
        assert_eq!(d.strategy, Strategy::PlanExecute);
        assert!(
            d.reason.contains("does not fit the 24,000-token"),
            "{}",
            d.reason
        );
        let many: Vec<_> = (0..15).map(|i| file(&format!("src/m{i}.rs"), 5)).collect();
        let thresholds = AutoThresholds {
            plan_min_files: Some(12),
            ..AutoThresholds::default()
        };
        let d = decide(StrategyChoice::Auto, &change(many), &thresholds, FITS);
        assert_eq!(d.strategy, Strategy::PlanExecute);
        assert!(d.reason.contains("auto.plan_min_files"), "{}", d.reason);
    }

    #[test]
    fn auto_picks_reflection_for_sensitive_paths_that_fit() {
        let sensitive = || change(vec![file("src/auth/session.rs", 30)]);
        let d = decide(
            StrategyChoice::Auto,
            &sensitive(),
            &AutoThresholds::default(),
            FITS,
        );
        assert_eq!(d.strategy, Strategy::Reflection);
        assert!(d.reason.contains("src/auth/session.rs"), "{}", d.reason);
        let d = decide(
            StrategyChoice::Auto,
            &sensitive(),
            &AutoThresholds::default(),
            TOO_BIG,
        );
        assert_eq!(d.strategy, Strategy::PlanExecute);
    }

    #[test]
    fn fixed_choice_wins_and_names_parse() {
        let choice: StrategyChoice = "plan".parse().unwrap();
        let d = decide(
            choice,
            &change(vec![file("src/auth.rs", 1)]),
            &AutoThresholds::default(),
            FITS,
        );
        assert_eq!(d.strategy.name(), "plan_execute");
        assert!("sideways".parse::<StrategyChoice>().is_err());
    }
}
