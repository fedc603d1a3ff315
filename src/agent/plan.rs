//! Review plans for plan-and-execute: what the model proposes through
//! `submit_plan`, what a person may edit (`--plan-only --format json` / `--plan FILE`),
//! and the orchestrator's guarantee that every reviewable file is covered.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

use crate::errors::ModelReplyError;
use crate::llm::ToolSpec;
use crate::review::diff::ChangeSet;

/// Name of the tool the planner calls.
pub(crate) const SUBMIT_PLAN: &str = "submit_plan";

/// One review task: an area of the change and what to check there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanTask {
    /// Short stable id (`t1`, `t2`, …).
    pub id: String,
    /// What the task is about.
    pub title: String,
    /// Changed files it covers.
    pub files: Vec<String>,
    /// What to check.
    #[serde(default)]
    pub focus: String,
}

/// A plan: the tasks, in the exact JSON that `--plan-only --format json` prints and `--plan FILE` reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Format version.
    pub version: u32,
    /// The tasks.
    pub tasks: Vec<PlanTask>,
}

/// Why a plan file cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum PlanFileError {
    /// Not JSON, or not in the plan's shape.
    #[error("not a Redline plan: {0}")]
    Invalid(#[source] serde_json::Error),
    /// A plan format this build does not know.
    #[error("unsupported plan version {0}")]
    Version(u32),
}

impl Plan {
    /// Parses a plan file (the `--plan-only --format json` output, possibly edited).
    pub fn from_json(text: &str) -> Result<Plan, PlanFileError> {
        let plan: Plan = serde_json::from_str(text).map_err(PlanFileError::Invalid)?;
        if plan.version != 1 {
            return Err(PlanFileError::Version(plan.version));
        }
        Ok(plan)
    }

    /// Reads the planner's `submit_plan` arguments leniently.
    pub(crate) fn from_submission(args: &serde_json::Value) -> Result<Plan, ModelReplyError> {
        let tasks = args
            .get("tasks")
            .and_then(|t| t.as_array())
            .ok_or_else(|| ModelReplyError::respond("`tasks` must be a list of tasks"))?;
        let mut plan = Plan {
            version: 1,
            tasks: Vec::new(),
        };
        for (i, task) in tasks.iter().enumerate() {
            let files: Vec<String> = match task.get("files") {
                Some(serde_json::Value::Array(items)) => items
                    .iter()
                    .filter_map(|f| f.as_str())
                    .map(|f| f.trim_start_matches("./").to_string())
                    .collect(),
                Some(serde_json::Value::String(one)) => vec![one.clone()],
                _ => Vec::new(),
            };
            let text = |key: &str| {
                task.get(key)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            let title = Some(text("title"))
                .filter(|t| !t.is_empty())
                .unwrap_or_else(|| format!("Task {}", i + 1));
            plan.tasks.push(PlanTask {
                id: format!("t{}", i + 1),
                title,
                files,
                focus: text("focus"),
            });
        }
        if plan.tasks.is_empty() {
            return Err(ModelReplyError::respond("the plan has no tasks"));
        }
        Ok(plan)
    }

    /// Gives every reviewable changed file exactly one owner, removes tasks left
    /// empty, and adds a task for every reviewable changed file no task covers.
    /// Returns the added files.
    ///
    /// An entry that is a changed file is kept in the first task naming it; an
    /// entry naming a directory (`src/config/`, also without the slash) covers
    /// the changed files under it that no task names one by one, each going to
    /// the task with the deepest such directory (the first on a tie). Anything
    /// else is dropped. So no file is in two tasks' scopes.
    pub fn cover(&mut self, changes: &ChangeSet) -> Vec<String> {
        let reviewable: BTreeSet<&str> = changes
            .files
            .iter()
            .filter(|f| !f.binary)
            .map(|f| f.path.as_str())
            .collect();
        // Per file: (rank, task); lower wins. Rank 0 is a file named one by one,
        // then deeper directories before shallower ones.
        let mut owner: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for (t, task) in self.tasks.iter().enumerate() {
            for entry in &task.files {
                let entry = entry.trim().trim_start_matches("./");
                if let Some(&file) = reviewable.get(entry) {
                    claim(&mut owner, file, (0, t));
                    continue;
                }
                let dir = entry.trim_end_matches('/');
                let depth = dir.split('/').filter(|c| !c.is_empty()).count();
                let rank = usize::MAX - depth;
                let under = |f: &&&str| {
                    dir.is_empty() || f.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
                };
                for file in reviewable.iter().filter(under) {
                    claim(&mut owner, file, (rank, t));
                }
            }
        }
        let mut owned: Vec<Vec<String>> = vec![Vec::new(); self.tasks.len()];
        for (file, (_, t)) in &owner {
            owned[*t].push(file.to_string());
        }
        for (task, files) in self.tasks.iter_mut().zip(owned) {
            // The planner's order first, then what its directories brought in.
            let mut ordered: Vec<String> = task
                .files
                .iter()
                .map(|f| f.trim().trim_start_matches("./").to_string())
                .filter(|f| files.contains(f))
                .collect();
            ordered.dedup();
            let mut seen: BTreeSet<String> = ordered.iter().cloned().collect();
            for file in files {
                if seen.insert(file.clone()) {
                    ordered.push(file);
                }
            }
            task.files = ordered;
        }
        self.tasks.retain(|t| !t.files.is_empty());
        let forgotten: Vec<String> = reviewable
            .iter()
            .filter(|f| !owner.contains_key(**f))
            .map(|f| f.to_string())
            .collect();
        if !forgotten.is_empty() {
            self.tasks.push(PlanTask {
                id: format!("t{}", self.tasks.len() + 1),
                title: "Files the plan did not cover".into(),
                files: forgotten.clone(),
                focus: "Review these changed files for correctness, security and tests.".into(),
            });
        }
        for (i, task) in self.tasks.iter_mut().enumerate() {
            task.id = format!("t{}", i + 1);
        }
        forgotten
    }

    /// Merges tasks that ask for the same check (their focus equal once case,
    /// spacing and a final full stop are ignored) into the first of them: two
    /// tasks checking one thing report the same finding twice. Tasks without a
    /// focus are left apart.
    pub(crate) fn merge_same_checks(&mut self) {
        let mut merged: Vec<(PlanTask, Vec<String>)> = Vec::with_capacity(self.tasks.len());
        let mut first_with: BTreeMap<String, usize> = BTreeMap::new();
        for task in self.tasks.drain(..) {
            let check = normalised_check(&task.focus);
            match first_with.get(&check).filter(|_| !check.is_empty()) {
                Some(&at) => {
                    let (into, titles) = &mut merged[at];
                    titles.push(task.title);
                    into.files.extend(task.files);
                }
                None => {
                    first_with.insert(check, merged.len());
                    let titles = vec![task.title.clone()];
                    merged.push((task, titles));
                }
            }
        }
        // Every slice of a task repeats its title: a few areas are named, the rest counted.
        self.tasks = merged
            .into_iter()
            .map(|(mut task, titles)| {
                task.title = match titles.len() {
                    n if n <= MERGED_TITLES => titles.join("; "),
                    n => format!(
                        "{} and {}",
                        titles[..MERGED_TITLES].join("; "),
                        crate::text::count(n - MERGED_TITLES, "more area", "more areas")
                    ),
                };
                task
            })
            .collect();
    }

    /// The plan for people.
    pub fn render_text(&self) -> String {
        let mut out = format!(
            "Review plan ({})\n",
            crate::text::count(self.tasks.len(), "task", "tasks")
        );
        for task in &self.tasks {
            out.push_str(&format!("\n[{}] {}\n", task.id, task.title));
            if !task.focus.is_empty() {
                out.push_str(&format!("    check: {}\n", task.focus));
            }
            for file in &task.files {
                out.push_str(&format!("    - {file}\n"));
            }
        }
        out
    }

    /// The plan as pretty JSON (the `--plan FILE` format).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Titles named in the title of tasks merged for one check.
const MERGED_TITLES: usize = 3;

/// A focus as compared for [`Plan::merge_same_checks`].
fn normalised_check(focus: &str) -> String {
    focus
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches(['.', '!', ';'])
        .to_lowercase()
}

/// Keeps the better claim on `file`: the lower (rank, task).
fn claim<'a>(owner: &mut BTreeMap<&'a str, (usize, usize)>, file: &'a str, bid: (usize, usize)) {
    let held = owner.entry(file).or_insert(bid);
    if bid < *held {
        *held = bid;
    }
}

/// The `submit_plan` tool's spec.
pub(crate) fn submit_plan_spec() -> ToolSpec {
    ToolSpec {
        name: SUBMIT_PLAN.into(),
        description: "Submit the review plan: a list of review tasks, each covering some changed files and saying what to check. Every changed file must be in some task; group files that belong together.".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "tasks": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "title": {"type": "string", "description": "What this task reviews."},
                            "files": {"type": "array", "items": {"type": "string"}, "description": "Changed file paths this task covers (each file in one task only); a directory ending in `/` covers the changed files under it that no task names."},
                            "focus": {"type": "string", "description": "What to check: risks, invariants, callers to verify."}
                        },
                        "required": ["title", "files", "focus"]
                    }
                }
            },
            "required": ["tasks"]
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::diff::{FileChange, FileStatus};

    fn changes(paths: &[&str]) -> ChangeSet {
        ChangeSet {
            base: "b".into(),
            head: None,
            files: paths
                .iter()
                .map(|p| FileChange {
                    path: p.to_string(),
                    old_path: None,
                    status: FileStatus::Modified,
                    binary: false,
                    hunks: vec![],
                })
                .collect(),
        }
    }

    #[test]
    fn forgotten_files_get_a_task_and_unknown_files_are_dropped() {
        let args = serde_json::json!({"tasks": [
            {"title": "API", "files": ["./src/api.rs", "src/ghost.rs"], "focus": "errors"},
            {"title": "Nothing real", "files": ["nope.rs"]}
        ]});
        let mut plan = Plan::from_submission(&args).unwrap();
        let added = plan.cover(&changes(&["src/api.rs", "src/db.rs", "tests/t.rs"]));
        assert_eq!(
            added,
            vec!["src/db.rs".to_string(), "tests/t.rs".to_string()]
        );
        assert_eq!(plan.tasks.len(), 2);
        assert_eq!(plan.tasks[0].files, vec!["src/api.rs".to_string()]);
        assert_eq!(plan.tasks[1].id, "t2");
    }

    #[test]
    fn every_file_has_one_owner_and_directories_cover_the_rest() {
        let args = serde_json::json!({"tasks": [
            {"title": "Config", "files": ["src/config/", "src/api.rs"]},
            {"title": "API", "files": ["src/api.rs", "src/config/ssl.rs", "src/api.rs"]},
            {"title": "Everything", "files": ["src"]},
            {"title": "Root", "files": ["./"]}
        ]});
        let mut plan = Plan::from_submission(&args).unwrap();
        let added = plan.cover(&changes(&[
            "src/api.rs",
            "src/config/load.rs",
            "src/config/ssl.rs",
            "src/db.rs",
            "README.md",
        ]));
        assert!(added.is_empty());
        let files = |i: usize| plan.tasks[i].files.clone();
        // Named one by one: the first task naming it; the deepest directory next.
        assert_eq!(files(0), vec!["src/api.rs", "src/config/load.rs"]);
        assert_eq!(files(1), vec!["src/config/ssl.rs"]);
        assert_eq!(files(2), vec!["src/db.rs"]);
        assert_eq!(files(3), vec!["README.md"]);
        let mut all: Vec<String> = plan.tasks.iter().flat_map(|t| t.files.clone()).collect();
        let count = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), count, "no file in two tasks");
    }

    #[test]
    fn tasks_with_the_same_check_are_merged_and_others_kept() {
        let args = serde_json::json!({"tasks": [
            {"title": "API", "files": ["src/api.rs"], "focus": "Check the TLS defaults."},
            {"title": "DB", "files": ["src/db.rs"], "focus": "Check error handling"},
            {"title": "Config", "files": ["src/config.rs"], "focus": "  check the TLS\n defaults"},
            {"title": "Docs", "files": ["README.md"]},
            {"title": "Tests", "files": ["tests/t.rs"]}
        ]});
        let mut plan = Plan::from_submission(&args).unwrap();
        plan.merge_same_checks();
        let titles: Vec<&str> = plan.tasks.iter().map(|t| t.title.as_str()).collect();
        assert_eq!(titles, ["API; Config", "DB", "Docs", "Tests"]);
        assert_eq!(plan.tasks[0].files, ["src/api.rs", "src/config.rs"]);
    }

    #[test]
    fn json_round_trips_and_checks_version() {
        let plan = Plan {
            version: 1,
            tasks: vec![PlanTask {
                id: "t1".into(),
                title: "x".into(),
                files: vec!["a".into()],
                focus: String::new(),
            }],
        };
        assert_eq!(Plan::from_json(&plan.to_json()).unwrap(), plan);
        assert!(plan.render_text().starts_with("Review plan (1 task)\n"));
        assert!(Plan::from_json("{\"version\":2,\"tasks\":[]}").is_err());
        assert!(Plan::from_submission(&serde_json::json!({"tasks": []})).is_err());
    }
}
