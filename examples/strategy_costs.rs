//! What each review strategy costs on the same change, with a scripted model:
//! model calls, tool calls, prompt and completion tokens, and wall time.
//!
//! Run: `cargo run --release --example strategy_costs`
//!
//! The scripted model behaves the same way under every strategy (a planner
//! proposes two tasks, each reviewer reads one file and submits one finding, the
//! evaluator scores high), so the differences are the strategies' own overhead.

#[path = "../tests/common"]
#[allow(dead_code)]
mod common {
    pub mod git;
    pub mod model_server;
}

#[path = "shared/fixture_change.rs"]
mod fixture_change;

use std::time::Instant;

use common::model_server::{ModelServer, RecordedRequest, Reply, Wire};
use redline::agent::strategy::{Strategy, StrategyChoice};
use redline::agent::{AgentConfig, Orchestrator};
use redline::llm::{Provider, ProviderSettings, build_client};
use redline::repo::{load_change, resolve_range};
use redline::tools::Workspace;
use serde_json::json;

fn system(req: &RecordedRequest) -> String {
    req.body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn respond(req: &RecordedRequest, _: usize) -> Reply {
    if system(req).contains("You are planning the review") {
        return Reply::tool(
            "p",
            "submit_plan",
            json!({"tasks": [
                {"title": "Parsing", "files": ["src/parse.rs", "src/lex.rs"], "focus": "error paths"},
                {"title": "Evaluation", "files": ["src/eval.rs", "tests/eval.rs"], "focus": "arithmetic"}
            ]}),
        );
    }
    if system(req).contains("You are the evaluator") {
        return Reply::tool(
            "e",
            "submit_evaluation",
            json!({"findings": [{"id": "F1", "correctness": 9, "evidence": 9, "actionability": 9, "reason": "real"}], "overall_score": 9}),
        );
    }
    let turns = req.body["messages"].as_array().map(Vec::len).unwrap_or(0);
    if turns <= 2 {
        return Reply::tool("r", "read_file", json!({"path": "src/eval.rs"}));
    }
    Reply::tool(
        "s",
        "submit_review",
        json!({"findings": [{"path": "src/eval.rs", "line": 3, "severity": "major", "category": "bug",
        "title": "Division by zero", "body": "`div` does not check the divisor."}], "summary": "One problem."}),
    )
}

#[tokio::main]
async fn main() {
    let repo = fixture_change::fixture();
    let range = resolve_range(repo.path(), Some("main"), "HEAD").expect("range");
    let (view, changes) = load_change(repo.path(), &range, false).expect("change");
    let workspace = Workspace::new(view, changes);
    println!(
        "{:<14} {:>11} {:>10} {:>13} {:>17} {:>8} {:>9}",
        "strategy",
        "model_calls",
        "tool_calls",
        "prompt_tokens",
        "completion_tokens",
        "coverage",
        "wall_ms"
    );
    for strategy in [Strategy::React, Strategy::PlanExecute, Strategy::Reflection] {
        let server = ModelServer::start_with(Wire::OpenAi, respond).await;
        let settings = ProviderSettings {
            base_url: server.base_url(),
            ..ProviderSettings::new(Provider::OpenAi)
        };
        let mut config = AgentConfig::new("gpt-4o");
        config.strategy = StrategyChoice::Fixed(strategy);
        let started = Instant::now();
        let report = Orchestrator::new(build_client(settings, None), workspace.clone(), config)
            .review()
            .await;
        let wall = started.elapsed().as_millis();
        match report {
            Ok(report) => {
                let s = report.stats;
                println!(
                    "{:<14} {:>11} {:>10} {:>13} {:>17} {:>7.0}% {:>9}",
                    s.strategy,
                    s.model_calls,
                    s.tool_calls,
                    s.prompt_tokens,
                    s.completion_tokens,
                    s.coverage * 100.0,
                    wall
                );
            }
            Err(e) => println!("{:<14} failed: {e}", strategy.name()),
        }
    }
}
