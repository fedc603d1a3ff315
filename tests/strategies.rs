//! The three strategies and text-mode ReAct, end to end against the scripted model server.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::cli;
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, RecordedRequest, Reply, Wire};

/// A change of three source files in two areas.
fn three_file_repo() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("src/api.rs", "pub fn get() -> u32 {\n    1\n}\n");
    repo.write("src/db.rs", "pub fn open() -> bool {\n    true\n}\n");
    repo.write("tests/api_test.rs", "#[test]\nfn t() {}\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "src/api.rs",
        "pub fn get() -> u32 {\n    let x = 1;\n    x / 0\n}\n",
    );
    repo.write(
        "src/db.rs",
        "pub fn open() -> bool {\n    let ok = false;\n    ok\n}\n",
    );
    repo.write(
        "tests/api_test.rs",
        "#[test]\nfn t() {\n    assert!(true);\n}\n",
    );
    repo.commit("change");
    repo
}

fn message_count(req: &RecordedRequest) -> usize {
    req.body["messages"].as_array().map(Vec::len).unwrap_or(0)
}

fn finding(path: &str, line: u32, title: &str) -> Value {
    json!({"path": path, "line": line, "severity": "major", "category": "bug", "title": title, "body": format!("{title}.")})
}

pub(crate) fn submit(findings: Vec<Value>, summary: &str) -> Reply {
    Reply::tool(
        "submit",
        "submit_review",
        json!({"findings": findings, "summary": summary}),
    )
}

pub(crate) fn is_planner(req: &RecordedRequest) -> bool {
    req.system_text().contains("You are planning the review")
}

fn task_id(req: &RecordedRequest) -> Option<String> {
    let user = req.first_user_text();
    let at = user.find("as task t")? + "as task ".len();
    Some(
        user[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric())
            .collect(),
    )
}

#[tokio::test]
async fn plan_execute_adds_forgotten_files_and_survives_a_failing_task() {
    let repo = three_file_repo();
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_planner(req) {
            // The plan forgets src/db.rs.
            return Reply::tool("p", "submit_plan", json!({"tasks": [
                {"title": "API", "files": ["src/api.rs", "tests/api_test.rs"], "focus": "arithmetic"}
            ]}));
        }
        match task_id(req).as_deref() {
            Some("t1") => submit(vec![finding("src/api.rs", 3, "Division by zero")], "API reviewed."),
            // The added task fails: two unreadable replies in a row.
            Some("t2") => Reply::text("hmm, not sure"),
            _ => Reply::error(500, "unexpected request"),
        }
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "plan"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["stats"]["strategy"], "plan_execute");
    let tasks = out["stats"]["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 2, "{out}");
    assert_eq!(tasks[0]["outcome"], "ok");
    assert_eq!(tasks[1]["outcome"], "failed");
    assert_eq!(tasks[1]["title"], "Files the plan did not cover");
    assert_eq!(out["findings"].as_array().map(Vec::len), Some(1));
    assert_eq!(out["findings"][0]["path"], "src/api.rs");
    assert!(
        out["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("failed"),
        "{out}"
    );
    // The forgotten file reached the model in the added task's context.
    let t2 = server
        .requests()
        .into_iter()
        .find(|r| task_id(r).as_deref() == Some("t2"))
        .expect("t2 ran");
    assert!(t2.first_user_text().contains("+++ b/src/db.rs"));
    assert!(run.event_types().iter().any(|t| t == "plan"));
    let started = run
        .events()
        .into_iter()
        .find(|e| e["type"] == "run_started")
        .expect("run_started");
    assert_eq!(started["strategy"], "plan_execute");
}

#[tokio::test]
async fn plan_execute_reaches_full_coverage_and_merges_duplicates() {
    let repo = three_file_repo();
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_planner(req) {
            return Reply::tool("p", "submit_plan", json!({"tasks": [
                {"title": "API", "files": ["src/api.rs"], "focus": "math"},
                {"title": "DB and tests", "files": ["src/db.rs", "tests/api_test.rs", "src/api.rs"], "focus": "state"}
            ]}));
        }
        // Both tasks report the same problem: it is merged into one finding.
        submit(vec![finding("src/api.rs", 3, "Division by zero")], "ok")
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "plan"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["findings"].as_array().map(Vec::len), Some(1), "{out}");
    assert_eq!(out["stats"]["coverage"], 1.0);
}

/// Records, per task, the order in which its requests arrived.
async fn task_arrivals(parallel: &str) -> Vec<String> {
    let repo = three_file_repo();
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let seen = arrivals.clone();
    let server = ModelServer::start_with(Wire::OpenAi, move |req, _| {
        if is_planner(req) {
            return Reply::tool(
                "p",
                "submit_plan",
                json!({"tasks": [
                    {"title": "a", "files": ["src/api.rs"], "focus": "x"},
                    {"title": "b", "files": ["src/db.rs"], "focus": "y"},
                    {"title": "c", "files": ["tests/api_test.rs"], "focus": "z"}
                ]}),
            );
        }
        let id = task_id(req).unwrap_or_default();
        let first = message_count(req) == 2;
        seen.lock()
            .expect("lock")
            .push(format!("{id}{}", if first { "a" } else { "b" }));
        if first {
            Reply::Delay(
                Duration::from_millis(300),
                Box::new(Reply::tool("r", "list_files", json!({}))),
            )
        } else {
            submit(vec![], "fine")
        }
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &[
            "--format",
            "json",
            "--strategy",
            "plan",
            "--parallel",
            parallel,
        ],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(
        run.json()["stats"]["tasks"].as_array().map(Vec::len),
        Some(3)
    );
    arrivals.lock().expect("lock").clone()
}

#[tokio::test]
async fn plan_tasks_run_in_parallel_up_to_the_limit() {
    let order = task_arrivals("3").await;
    assert!(
        order[..3].iter().all(|s| s.ends_with('a')),
        "all three tasks start before any continues: {order:?}"
    );
    let order = task_arrivals("1").await;
    let expected: Vec<String> = order
        .chunks(2)
        .flat_map(|pair| [format!("{}a", &pair[0][..2]), format!("{}b", &pair[0][..2])])
        .collect();
    assert_eq!(order, expected, "one task at a time");
}

#[tokio::test]
async fn plan_only_prints_the_plan_and_a_given_plan_runs() {
    let repo = three_file_repo();
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_planner(req) {
            return Reply::tool("p", "submit_plan", json!({"tasks": [{"title": "All", "files": ["src/api.rs", "src/db.rs", "tests/api_test.rs"], "focus": "x"}]}));
        }
        submit(vec![finding("src/db.rs", 2, "Always false")], "db")
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--plan-only"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let mut plan = run.json();
    assert_eq!(plan["version"], 1);
    assert_eq!(plan["tasks"][0]["files"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        server.requests().len(),
        1,
        "--plan-only makes only the planning call"
    );

    // A person narrows the plan to one file; the orchestrator still covers the rest.
    plan["tasks"][0]["files"] = json!(["src/db.rs"]);
    let plan_path = repo.path().join(".git").join("plan.json");
    std::fs::write(&plan_path, plan.to_string()).expect("write plan");
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &[
            "--format",
            "json",
            "--plan",
            &plan_path.display().to_string(),
        ],
    )
    .await;
    let out = run.success_json();
    assert_eq!(
        out["stats"]["tasks"].as_array().map(Vec::len),
        Some(2),
        "{out}"
    );
    assert_eq!(out["findings"][0]["path"], "src/db.rs");
}

pub(crate) fn is_evaluator(req: &RecordedRequest) -> bool {
    req.system_text().contains("You are the evaluator")
}

fn is_reflector(req: &RecordedRequest) -> bool {
    req.first_user_text()
        .contains("You are revising a code review")
}

fn evaluation(scores: &[(&str, f64)], overall: f64) -> Reply {
    let per: Vec<Value> = scores
        .iter()
        .map(|(id, s)| json!({"id": id, "correctness": s, "evidence": s, "actionability": s, "reason": "checked"}))
        .collect();
    Reply::tool(
        "e",
        "submit_evaluation",
        json!({"findings": per, "overall_score": overall, "missed_areas": ["tests"]}),
    )
}

#[tokio::test]
async fn reflection_drops_low_scores_and_stops_early_on_a_high_score() {
    let repo = three_file_repo();
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_evaluator(req) {
            // F1 is the api.rs finding (checked findings are ordered by path), F2 the db.rs one.
            return evaluation(&[("F1", 9.0), ("F2", 2.0)], 9.0);
        }
        submit(
            vec![
                finding("src/db.rs", 2, "Always false"),
                finding("src/api.rs", 3, "Division by zero"),
            ],
            "two issues",
        )
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "reflect"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["stats"]["strategy"], "reflection");
    let findings = out["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "{out}");
    assert_eq!(findings[0]["path"], "src/api.rs");
    assert_eq!(out["stats"]["scores"]["rounds"], 1);
    assert_eq!(out["stats"]["scores"]["dropped"], 1);
    assert!(
        !server.requests().iter().any(is_reflector),
        "no reflection after a high score"
    );
    let evaluation = run
        .events()
        .into_iter()
        .find(|e| e["type"] == "evaluation")
        .expect("evaluation event");
    assert_eq!(evaluation["round"], 1);
    assert_eq!(evaluation["score"], 9.0);
}

#[tokio::test]
async fn reflection_keeps_findings_that_cannot_be_anchored_as_notes() {
    let repo = three_file_repo();
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_evaluator(req) {
            return evaluation(&[("F1", 9.0)], 9.0);
        }
        submit(
            vec![
                finding("src/api.rs", 3, "Division by zero"),
                finding(
                    "src/unchanged_elsewhere.rs",
                    40,
                    "Caller never checks the result",
                ),
            ],
            "one on the diff, one elsewhere",
        )
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "reflect"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["findings"].as_array().map(Vec::len), Some(1), "{out}");
    let summary = out["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("src/unchanged_elsewhere.rs") && summary.contains("Caller never checks"),
        "{summary}"
    );
}

#[tokio::test]
async fn reflection_is_capped_at_three_rounds() {
    let repo = three_file_repo();
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_evaluator(req) {
            return evaluation(&[("F1", 7.0)], 4.0);
        }
        submit(
            vec![finding("src/api.rs", 3, "Division by zero")],
            "one issue",
        )
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "reflect"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["stats"]["scores"]["rounds"], 3);
    assert_eq!(out["stats"]["scores"]["overall"], json!([4.0, 4.0, 4.0]));
    let requests = server.requests();
    assert_eq!(requests.iter().filter(|r| is_evaluator(r)).count(), 3);
    assert_eq!(requests.iter().filter(|r| is_reflector(r)).count(), 2);
    assert_eq!(out["findings"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn auto_explains_its_choice() {
    let repo = TempRepo::new();
    repo.write("src/auth/session.rs", "pub fn check() {}\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("src/auth/session.rs", "pub fn check() {\n    // TODO\n}\n");
    repo.commit("change");
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_evaluator(req) {
            return evaluation(&[], 9.0);
        }
        submit(vec![], "fine")
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let started = run
        .events()
        .into_iter()
        .find(|e| e["type"] == "run_started")
        .expect("run_started");
    assert_eq!(started["strategy"], "reflection");
    assert!(
        started["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("src/auth/session.rs"),
        "{started}"
    );
}

const TEXT_ACTION: &str = "Thought: I should read the file first.\nAction: `read_file`\nAction Input: ```json\n{'path': 'src/api.rs',}\n```";

fn text_final() -> String {
    format!(
        "Thought: done.\nFinal Answer: ```json\n{}\n```",
        json!({"findings": [finding("src/api.rs", 3, "Division by zero")], "summary": "text mode"})
    )
}

#[tokio::test]
async fn text_mode_runs_react_without_native_tools() {
    let repo = three_file_repo();
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![Reply::text(TEXT_ACTION), Reply::text(text_final())],
    )
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &[
            "--format",
            "json",
            "--strategy",
            "react",
            "--tool-mode",
            "text",
        ],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["findings"][0]["line"], 3);
    assert_eq!(out["stats"]["tool_calls"], 1);
    let requests = server.requests();
    assert!(
        requests[0].body.get("tools").is_none(),
        "text mode sends no tools"
    );
    assert!(requests[0].system_text().contains("read_file"));
    let second = serde_json::to_string(&requests[1].body).expect("body");
    assert!(
        second.contains("Observation:") && second.contains("x / 0"),
        "{second}"
    );
}

#[tokio::test]
async fn auto_tool_mode_falls_back_to_text_when_tools_are_rejected() {
    let repo = three_file_repo();
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if req.body.get("tools").is_some() {
            return Reply::api_error(
                Wire::OpenAi,
                400,
                "invalid_request_error",
                "tools is not supported for this model",
            );
        }
        if message_count(req) == 2 {
            Reply::text(TEXT_ACTION)
        } else {
            Reply::text(text_final())
        }
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "react"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(run.json()["findings"][0]["path"], "src/api.rs");
}

#[tokio::test]
async fn text_mode_garbage_ends_within_the_failure_limit() {
    let repo = three_file_repo();
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![
            Reply::text("lol"),
            Reply::text("???"),
            Reply::text(text_final()),
        ],
    )
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--strategy", "react", "--tool-mode", "text"],
    )
    .await;
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("consecutive"), "{}", run.stderr);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn plan_and_reflection_work_in_text_mode() {
    let repo = three_file_repo();
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_planner(req) {
            return Reply::text("Thought: two areas.\nAction: submit_plan\nAction Input: {'tasks': [{'title': 'All', 'files': ['src/api.rs', 'src/db.rs', 'tests/api_test.rs'], 'focus': 'x',}]}");
        }
        if is_evaluator(req) {
            return Reply::text("Final Answer: {\"findings\": [{\"id\": \"F1\", \"correctness\": 9, \"evidence\": 9, \"actionability\": 9, \"reason\": \"ok\"}], \"overall_score\": 9}");
        }
        Reply::text(text_final())
    })
    .await;
    for strategy in ["plan", "reflect"] {
        let run = cli::review(
            repo.path(),
            &server.base_url(),
            "openai",
            &[
                "--format",
                "json",
                "--strategy",
                strategy,
                "--tool-mode",
                "text",
            ],
        )
        .await;
        assert_eq!(run.code, 0, "{strategy}: {}", run.stderr);
        let out = run.json();
        assert_eq!(
            out["findings"][0]["path"], "src/api.rs",
            "{strategy}: {out}"
        );
    }
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.body.get("tools").is_none())
    );
}

/// Every tool Redline can offer a model.
const ALL_TOOLS: &[&str] = &[
    "diff",
    "read_file",
    "search",
    "list_files",
    "submit_review",
    "submit_plan",
    "submit_evaluation",
    "answer",
];

/// The tools a request's text names (`` `diff` ``, "the diff tool") that it does not offer.
pub(crate) fn tools_named_but_not_offered(req: &RecordedRequest) -> Vec<String> {
    let offered: Vec<&str> = req.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    let text: String = req.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    ALL_TOOLS
        .iter()
        .filter(|name| !offered.contains(name))
        .filter(|name| {
            text.contains(&format!("`{name}`"))
                || text.contains(&format!("{name} tool"))
                || text.contains(&format!("tool {name}"))
        })
        .map(|name| name.to_string())
        .collect()
}

#[tokio::test]
async fn the_planner_sees_every_file_and_no_tool_it_is_not_offered() {
    let repo = TempRepo::new();
    // Far more than the 20-odd lines the planner was shown before.
    let paths: Vec<String> = (0..120)
        .map(|i| format!("pkg{}/module_{i:03}.py", i % 6))
        .collect();
    for path in &paths {
        repo.write(path, "value = 1\n");
    }
    repo.commit("base");
    repo.checkout_new_branch("feature");
    for path in &paths {
        repo.write(path, "value = 2\n");
    }
    repo.commit("change");
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_planner(req) {
            // Directories for most, one file named by two tasks.
            return Reply::tool("p", "submit_plan", json!({"tasks": [
                {"title": "Package 0", "files": ["pkg0/", "pkg1/module_001.py"], "focus": "x"},
                {"title": "The rest", "files": ["pkg1/module_001.py", "pkg1", "pkg2/", "pkg3/", "pkg4/", "pkg5/"], "focus": "y"}
            ]}));
        }
        submit(vec![], "fine")
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--plan-only"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let requests = server.requests();
    let planner = requests.iter().find(|r| is_planner(r)).expect("planner");
    assert_eq!(tools_named_but_not_offered(planner), Vec::<String>::new());
    let text = planner.first_user_text();
    for path in &paths {
        let (dir, name) = path.split_once('/').unwrap_or_default();
        let named = text.contains(path.as_str())
            || text
                .lines()
                .any(|l| l.starts_with(&format!("{dir}/: ")) && l.contains(&format!("{name} ")));
        assert!(named, "{path} is not named:\n{text}");
    }
    // Each file in exactly one task, the first to name it one by one.
    let plan = run.json();
    let tasks = plan["tasks"].as_array().cloned().unwrap_or_default();
    let mut owned: Vec<String> = tasks
        .iter()
        .flat_map(|t| t["files"].as_array().cloned().unwrap_or_default())
        .filter_map(|f| f.as_str().map(str::to_string))
        .collect();
    assert!(owned.iter().take(21).any(|f| f == "pkg1/module_001.py"));
    owned.sort();
    let mut expected = paths.clone();
    expected.sort();
    assert_eq!(owned, expected);
}
