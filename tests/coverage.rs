//! Coverage by construction: every changed line is in front of the model
//! whatever the model does, `auto` picks by fit, and nothing shown is paid twice.

use std::collections::BTreeMap;

use serde_json::json;

use crate::common::cli;
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, RecordedRequest, Reply, Wire};
use crate::strategies::{is_planner, submit};
use redline::llm::tokens::TokenCounter;

/// A window small enough that the change below does not fit one message:
/// stage 1 gets a quarter of (16,000 - 4,000) = 3,000 tokens.
const SMALL_WINDOW: &str = "context_window = 16000\nmax_output_tokens = 4000\n";

/// The stage-1 budget that window gives.
const BUDGET: usize = 3_000;

/// A change far larger than one message: a 1,500-line new file and 24 edited
/// modules in 12 directories. Every added line carries a unique marker.
fn large_change(config: &str) -> (TempRepo, Vec<String>) {
    let repo = TempRepo::new();
    repo.write(".redline.toml", config);
    for i in 0..24 {
        repo.write(&module(i), module_text(i, false));
    }
    repo.commit("base");
    repo.checkout_new_branch("feature");
    let mut markers = Vec::new();
    let huge: String = (1..=1_500)
        .map(|n| {
            markers.push(format!("huge-{n}-mark"));
            format!("pub const C{n}: u64 = {n} * 7; // huge-{n}-mark\n")
        })
        .collect();
    repo.write("src/huge.rs", huge);
    for i in 0..24 {
        repo.write(&module(i), module_text(i, true));
        markers.extend((0..12).map(|k| format!("mod{i}-{k}-mark")));
    }
    repo.commit("change");
    (repo, markers)
}

fn module(i: usize) -> String {
    format!("area{}/mod{i}.rs", i % 12)
}

fn module_text(i: usize, changed: bool) -> String {
    let mut text = format!("pub fn f{i}(x: u32) -> u32 {{\n    let mut y = x;\n");
    if changed {
        for k in 0..12 {
            text.push_str(&format!(
                "    y = y.wrapping_mul({k} + 3); // mod{i}-{k}-mark\n"
            ));
        }
    }
    text.push_str("    y\n}\n");
    text
}

/// The first user message of every task conversation (not the planner's).
fn task_messages(requests: &[RecordedRequest]) -> BTreeMap<String, String> {
    let mut first = BTreeMap::new();
    for req in requests.iter().filter(|r| !is_planner(r)) {
        let text = req.first_user_text();
        first.entry(task_label(&text)).or_insert(text);
    }
    first
}

fn task_label(text: &str) -> String {
    text.split_once("as task ")
        .map(|(_, rest)| rest.split(':').next().unwrap_or_default().to_string())
        .unwrap_or_else(|| "react".into())
}

/// Checks that every marker is in exactly one task's first message and that no
/// first message is over the budget.
fn assert_each_line_once(messages: &BTreeMap<String, String>, markers: &[String]) {
    let counter = TokenCounter::for_model("test-model");
    for (task, text) in messages {
        let tokens = counter.count(text);
        assert!(
            tokens <= BUDGET,
            "task {task}: first message of {tokens} tokens"
        );
    }
    for marker in markers {
        let holders: Vec<&String> = messages
            .iter()
            .filter(|(_, text)| text.contains(marker.as_str()))
            .map(|(task, _)| task)
            .collect();
        assert_eq!(holders.len(), 1, "{marker} is in tasks {holders:?}");
    }
}

#[tokio::test]
async fn plan_execute_shows_every_line_once_to_a_model_that_submits_at_once() {
    let (repo, markers) = large_change(SMALL_WINDOW);
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_planner(req) {
            // A planner that puts everything in one task and forgets the new file.
            let files: Vec<String> = (0..24).map(module).collect();
            return Reply::tool(
                "p",
                "submit_plan",
                // A planner that writes far too much: the code bounds it.
                json!({"tasks": [{"title": "Everything ".repeat(100), "files": files,
                                  "focus": "Check every error path carefully. ".repeat(800)}]}),
            );
        }
        submit(vec![], "nothing found")
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--yes"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["stats"]["strategy"], "plan_execute");
    assert_eq!(out["stats"]["coverage"], 1.0, "{}", out["stats"]);
    let messages = task_messages(&server.requests());
    assert!(messages.len() >= 4, "{} tasks", messages.len());
    assert_each_line_once(&messages, &markers);
    let parts = messages
        .values()
        .filter(|m| m.contains("of src/huge.rs: head lines"))
        .count();
    assert!(parts >= 2, "the new file is split into parts ({parts})");
    let started = run
        .events()
        .into_iter()
        .find(|e| e["type"] == "run_started");
    let reason = started.map(|e| e["reason"].to_string()).unwrap_or_default();
    assert!(reason.contains("does not fit"), "{reason}");
}

#[tokio::test]
async fn plan_tasks_own_each_file_once_and_are_labelled_by_their_areas() {
    let (repo, markers) = large_change(SMALL_WINDOW);
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_planner(req) {
            // One area per directory; area0/mod0.rs is also claimed by the second area.
            let mut tasks: Vec<serde_json::Value> = (0..12)
                .map(|d| {
                    let files: Vec<String> = (0..24).filter(|i| i % 12 == d).map(module).collect();
                    json!({"title": format!("Area {d}"), "files": files, "focus": "x"})
                })
                .collect();
            if let Some(files) = tasks[1]["files"].as_array_mut() {
                files.push(json!("area0/mod0.rs"));
            }
            return Reply::tool("p", "submit_plan", json!({ "tasks": tasks }));
        }
        submit(vec![], "nothing found")
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--yes"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["stats"]["strategy"], "plan_execute");
    // One owner per file in the plan.
    let plan = run
        .events()
        .into_iter()
        .find(|e| e["type"] == "plan")
        .expect("plan event");
    let owners = |path: &str| {
        plan["tasks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| {
                t["files"]
                    .as_array()
                    .is_some_and(|f| f.iter().any(|f| f == path))
            })
            .count()
    };
    for i in 0..24 {
        assert_eq!(owners(&module(i)), 1, "{}: {plan}", module(i));
    }
    assert_eq!(owners("src/huge.rs"), 1);
    // A task's own files are never among its "other files".
    for text in task_messages(&server.requests()).values() {
        let (own, others) = match text.split_once("Other files of this change") {
            Some((head, rest)) => {
                let (others, tail) = rest.split_once("\n\n").unwrap_or((rest, ""));
                (format!("{head}{tail}"), others.to_string())
            }
            None => (text.clone(), String::new()),
        };
        for line in own.lines().filter_map(|l| l.strip_prefix("+++ b/")) {
            let name = line.rsplit('/').next().unwrap_or(line);
            let dir = line.rsplit_once('/').map_or("", |(d, _)| d);
            assert!(
                !others
                    .lines()
                    .any(|l| l.starts_with(&format!("{dir}/: ")) && l.contains(name)),
                "{line} is the task's own and among its other files:\n{others}"
            );
        }
    }
    assert_each_line_once(&task_messages(&server.requests()), &markers);
    // Labels a person can read: the planner's area titles, parts as "part k of n".
    let tasks = out["stats"]["tasks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let titles: Vec<String> = tasks
        .iter()
        .filter_map(|t| t["title"].as_str().map(str::to_string))
        .collect();
    // (Which part shares a task with other areas depends on the packing.)
    assert!(
        titles
            .iter()
            .any(|t| t.contains("(part ") && t.contains(" of ")),
        "{titles:?}"
    );
    assert!(titles.iter().any(|t| t.contains("Area 0")), "{titles:?}");
    for task in &tasks {
        let (id, title) = (task["id"].to_string(), task["title"].to_string());
        assert!(!id.contains('+') && !title.contains('+'), "{id} {title}");
        assert!(
            !title.contains("more planned task") && !title.contains("/2)"),
            "{title}"
        );
    }
}

#[tokio::test]
async fn plan_execute_coverage_holds_when_the_planner_writes_garbage() {
    let (repo, markers) = large_change(SMALL_WINDOW);
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_planner(req) {
            return Reply::text("I would rather not plan. {{{");
        }
        submit(vec![], "done")
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "plan", "--yes"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(run.json()["stats"]["coverage"], 1.0);
    assert_each_line_once(&task_messages(&server.requests()), &markers);
}

/// 138 changed lines spread over six top-level directories and four languages.
fn spread_change() -> TempRepo {
    let repo = TempRepo::new();
    let paths = [
        "api/a.py",
        "web/b.ts",
        "db/c.go",
        "cli/d.rs",
        "docs/e.rs",
        "ops/f.sh",
    ];
    for path in paths {
        repo.write(path, "start\n");
    }
    repo.commit("base");
    repo.checkout_new_branch("feature");
    for path in paths {
        let body: String = (0..23).map(|n| format!("line {n} of {path}\n")).collect();
        repo.write(path, format!("start\n{body}"));
    }
    repo.commit("change");
    repo
}

#[tokio::test]
async fn auto_runs_react_when_a_spread_change_fits() {
    let repo = spread_change();
    let server = ModelServer::start(Wire::OpenAi, vec![submit(vec![], "fine")]).await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["stats"]["strategy"], "react", "{out}");
    assert_eq!(out["stats"]["coverage"], 1.0);
    assert_eq!(server.requests().len(), 1);
}

/// The tool results of the second request, by call id.
#[tokio::test]
async fn what_the_first_message_shows_is_not_sent_again() {
    let repo = spread_change();
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![
            Reply::tools(vec![
                ("d1", "diff", json!({"path": "api/a.py"})),
                (
                    "r1",
                    "read_file",
                    json!({"path": "web/b.ts", "start_line": 3, "end_line": 9}),
                ),
                (
                    "r2",
                    "read_file",
                    json!({"path": "web/b.ts", "start_line": 1, "end_line": 60}),
                ),
            ]),
            submit(vec![], "fine"),
        ],
    )
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "react"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let requests = server.requests();
    let results = requests[1].tool_results();
    let pointer = |id: &str| results.get(id).map(String::as_str).unwrap_or_default();
    assert!(
        pointer("d1").contains("in the first message above"),
        "{results:?}"
    );
    assert!(
        pointer("r1").contains("lines 3-9 of web/b.ts are shown in the first message"),
        "{results:?}"
    );
    // More than the first message shows: read for real.
    assert!(pointer("r2").contains("line 22 of web/b.ts"), "{results:?}");
    assert!(pointer("d1").len() < 200);
}

#[tokio::test]
async fn diff_of_a_file_whose_removed_lines_were_summarised_returns_the_raw_hunks() {
    let repo = TempRepo::new();
    // Lines 5-12 are long enough that one summary line is much cheaper than they are.
    let line = |n: usize| match n {
        5..=12 => {
            format!("value_{n} = weighted_total(records, weights, threshold={n}, strict=True)\n")
        }
        n => format!("value_{n} = {n}\n"),
    };
    let base: String = (1..=30).map(line).collect();
    repo.write("api/a.py", &base);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    // Lines 5-12 go (the first message summarises them in one line); one line changes.
    let head: String = (1..=30)
        .filter(|n| !(5..=12).contains(n))
        .map(|n| match n {
            20 => "value_20 = 2000\n".to_string(),
            n => format!("value_{n} = {n}\n"),
        })
        .collect();
    repo.write("api/a.py", head);
    repo.commit("change");
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![
            Reply::tool("d1", "diff", json!({"path": "api/a.py"})),
            submit(vec![], "fine"),
        ],
    )
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "react"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let requests = server.requests();
    let first = requests[0].first_user_text();
    assert!(
        first.contains("of base removed (8 lines)") && !first.contains("value_7 = weighted"),
        "the first message summarises the removed lines: {first}"
    );
    let results = requests[1].tool_results();
    let diff = results.get("d1").map(String::as_str).unwrap_or_default();
    assert!(!diff.contains("in the first message above"), "{diff}");
    for n in 5..=12 {
        assert!(diff.contains(&format!("-{}", line(n))), "{diff}");
    }
}

#[tokio::test]
async fn a_task_budget_from_the_config_bounds_every_first_message() {
    let (repo, markers) = large_change(&format!("{SMALL_WINDOW}task_budget = 2500\n"));
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_planner(req) {
            return Reply::text("no plan");
        }
        submit(vec![], "done")
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "plan", "--yes"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let counter = TokenCounter::for_model("test-model");
    let messages = task_messages(&server.requests());
    for text in messages.values() {
        assert!(counter.count(text) <= 2_500);
    }
    assert_each_line_once(&messages, &markers);
    assert_eq!(run.json()["stats"]["coverage"], 1.0);
}

#[tokio::test]
async fn a_removed_two_million_character_line_is_summarised_and_does_not_plan() {
    let repo = TempRepo::new();
    let long = "x".repeat(2_000_000);
    let before = format!("fn a() {{}}\nconst TABLE: &str = \"{long}\";\nfn b() {{}}\n");
    repo.write("src/table.rs", &before);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("src/table.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    repo.commit("remove the table");
    let server = ModelServer::start(Wire::OpenAi, vec![submit(vec![], "fine")]).await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["stats"]["strategy"], "react", "{out}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0].body_len < 50_000,
        "first request of {} bytes",
        requests[0].body_len
    );
    let first = requests[0].body.to_string();
    assert!(
        first.contains("-[a line of 2,000,023 characters, not shown]"),
        "{first}"
    );
}
