//! What plan-and-execute pays besides the change itself: on a change many
//! times the task budget, chosen by `auto`, the system prompt, tool schemas,
//! task prose, list of other files and the planner call together stay a small
//! share of the diff text, and the tasks are about as few as the budget allows.

use serde_json::json;

use crate::common::cli;
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, RecordedRequest, Reply, Wire};
use crate::strategies::{is_planner, submit};
use redline::llm::tokens::TokenCounter;

/// Stage 1 (and so each task) gets a quarter of (112,000 - 16,000) = 24,000 tokens.
const WINDOW: &str = "context_window = 112000\nmax_output_tokens = 16000\n";

/// The task budget that window gives.
const BUDGET: usize = 24_000;

/// Where the diff of a task's first message begins.
const DIFF_INTRO: &str = "The diff of this task's files";

/// 96 edited modules in 24 directories, 60 added lines each.
fn wide_change() -> TempRepo {
    let repo = TempRepo::new();
    repo.write(".redline.toml", WINDOW);
    for i in 0..96 {
        repo.write(&module(i), "pub fn f() -> u32 {\n    0\n}\n");
    }
    repo.commit("base");
    repo.checkout_new_branch("feature");
    for i in 0..96 {
        let body: String = (0..60)
            .map(|k| format!("    let v{k} = compute_value({i}, {k}) + offset_{k}; // m{i}-{k}\n"))
            .collect();
        repo.write(
            &module(i),
            format!("pub fn f() -> u32 {{\n{body}    0\n}}\n"),
        );
    }
    repo.commit("change");
    repo
}

fn module(i: usize) -> String {
    format!("area{}/module_{i}.rs", i % 24)
}

/// The diff text of a task's first message.
fn diff_of(request: &RecordedRequest) -> String {
    let text = request.first_user_text();
    text.split_once(DIFF_INTRO)
        .map(|(_, rest)| rest.split_once("\n\n").map_or(rest, |(_, d)| d).to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn plan_tasks_spend_their_prompts_on_the_change() {
    let repo = wide_change();
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_planner(req) {
            // One planned task per directory, as a planner might group them.
            let tasks: Vec<_> = (0..24)
                .map(|d| {
                    let files: Vec<String> = (0..96).filter(|i| i % 24 == d).map(module).collect();
                    json!({"title": format!("Area {d}"), "files": files,
                           "focus": "Check the computed values and their offsets."})
                })
                .collect();
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
    assert_eq!(out["stats"]["strategy"], "plan_execute", "{out}");
    assert_eq!(out["stats"]["coverage"], 1.0);

    let counter = TokenCounter::for_model("test-model");
    let requests = server.requests();
    let tasks: Vec<&RecordedRequest> = requests.iter().filter(|r| !is_planner(r)).collect();
    let diff: usize = tasks.iter().map(|r| counter.count(&diff_of(r))).sum();
    let prompt: usize = requests
        .iter()
        .map(|r| counter.count(&r.body.to_string()))
        .sum();
    // Per task the fixed part (system prompt, tools, prose, other files) is about
    // 2,300 tokens, a tenth of a full task; the planner call comes on top once
    // (14% in all when written; with the whole overview in every task, 20%).
    let overhead = prompt.saturating_sub(diff);
    assert!(
        overhead * 100 <= diff * 16,
        "{overhead} tokens besides {diff} of diff in {} tasks",
        tasks.len()
    );
    // First fit: at most one task more than the diff would need at full budget.
    let least = diff.div_ceil(BUDGET);
    assert!(
        tasks.len() <= least + 1,
        "{} tasks for {diff} tokens of diff",
        tasks.len()
    );
    // Each task lists the other files compactly, not the whole change's overview.
    for task in &tasks {
        let text = task.first_user_text();
        assert!(text.contains("Other files of this change"), "{text}");
        assert!(counter.count(&text) <= BUDGET);
    }
}
