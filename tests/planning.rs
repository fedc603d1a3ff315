//! Planning in plan-and-execute: no planning call for a change that fits one
//! task conversation, the planner told how many conversations the diff fills
//! and the room of each focus, and a long focus shortened at a sentence.

use serde_json::json;

use crate::common::cli;
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, Reply, Wire};
use crate::strategies::{is_planner, submit};

/// Stage 1 gets a quarter of (16,000 - 4,000) = 3,000 tokens.
const SMALL_WINDOW: &str = "context_window = 16000\nmax_output_tokens = 4000\n";

/// `modules` edited modules in six directories, twelve added lines each: far
/// more than a 3,000-token first message shows.
fn edited_modules(config: &str, modules: usize, lines: usize) -> TempRepo {
    let repo = TempRepo::new();
    repo.write(".redline.toml", config);
    for i in 0..modules {
        repo.write(&module(i), "pub fn f(x: u32) -> u32 {\n    x\n}\n");
    }
    repo.commit("base");
    repo.checkout_new_branch("feature");
    for i in 0..modules {
        let body: String = (0..lines)
            .map(|k| format!("    let y{k} = x.wrapping_mul({k} + 3); // mod{i}-{k}-mark\n"))
            .collect();
        repo.write(
            &module(i),
            format!("pub fn f(x: u32) -> u32 {{\n{body}    x\n}}\n"),
        );
    }
    repo.commit("change");
    repo
}

fn module(i: usize) -> String {
    format!("area{}/mod{i}.rs", i % 6)
}

#[tokio::test]
async fn a_change_that_fits_one_task_makes_no_planning_call() {
    // Too large for the 3,000-token first message, small for a 20,000-token task.
    let repo = edited_modules(&format!("{SMALL_WINDOW}task_budget = 20000\n"), 12, 12);
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_planner(req) {
            return Reply::tool("p", "submit_plan", json!({"tasks": []}));
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
    assert_eq!(out["stats"]["strategy"], "plan_execute", "{out}");
    assert_eq!(out["stats"]["coverage"], 1.0, "{}", out["stats"]);
    let requests = server.requests();
    assert_eq!(requests.iter().filter(|r| is_planner(r)).count(), 0);
    assert_eq!(requests.len(), 1, "one task conversation of one call");
    let task = requests[0].first_user_text();
    assert!(task.contains("as task t1: The whole change"), "{task}");
    assert!(task.contains("mod11-11-mark"), "{task}");
}

#[tokio::test]
async fn the_planner_is_told_its_conversations_and_a_long_focus_ends_at_a_sentence() {
    let repo = edited_modules(SMALL_WINDOW, 24, 12);
    let long_focus = format!(
        "Check that every multiplier stays below the overflow bound. {}Check negative inputs are refused before the keylog setting is read.",
        "Check the wrapping arithmetic matches the documented contract of each module. ".repeat(30)
    );
    let focus = long_focus.clone();
    let server = ModelServer::start_with(Wire::OpenAi, move |req, _| {
        if is_planner(req) {
            let files: Vec<String> = (0..24).map(module).collect();
            return Reply::tool(
                "p",
                "submit_plan",
                json!({"tasks": [{"title": "Arithmetic", "files": files, "focus": focus}]}),
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
    assert_eq!(out["stats"]["strategy"], "plan_execute", "{out}");
    let requests = server.requests();
    let planner: Vec<_> = requests.iter().filter(|r| is_planner(r)).collect();
    assert_eq!(planner.len(), 1);
    let asked = planner[0].first_user_text();
    let conversations = asked
        .split_once("The diff fills about ")
        .and_then(|(_, rest)| rest.split(' ').next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_default();
    assert!(conversations >= 2, "{asked}");
    assert!(
        asked.contains(&format!(
            "Plan at most {conversations} tasks, and give each check to one task only."
        )),
        "{asked}"
    );
    assert!(
        asked.contains("Each focus has room for 400 characters"),
        "{asked}"
    );
    // Each task's focus: whole sentences, then the note; never a cut word.
    for task in requests.iter().filter(|r| !is_planner(r)) {
        let text = task.first_user_text();
        let focus = text
            .split_once("What to check: ")
            .and_then(|(_, rest)| rest.split_once("\n\nFiles of this task"))
            .map(|(focus, _)| focus)
            .unwrap_or_default();
        assert!(focus.ends_with(". [focus shortened to fit]"), "{focus}");
        let kept = focus.trim_end_matches(" [focus shortened to fit]");
        assert!(long_focus.starts_with(kept), "{kept}");
        assert!(
            long_focus[kept.len()..].starts_with(' '),
            "cut inside a sentence: {kept}"
        );
    }
}
