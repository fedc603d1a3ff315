//! The scripted model of the benchmark, in two behaviours.
//!
//! Every conversation is recognised by what it offers: a planner (system prompt
//! "You are planning the review") gets a plan at once; a conversation offering
//! `submit_review` or `submit_evaluation` is a reviewer (or evaluator); anything
//! else (a history summary) gets a short text. Reviewers either submit at once
//! ([`Behaviour::Submit`]) or explore first ([`Behaviour::Explore`]): `diff` of a
//! file, `read_file` of a file, `search`, then the submission: four calls.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::common::model_server::{RecordedRequest, Reply};

/// Files per planned task at most.
const FILES_PER_TASK: usize = 8;

/// How the scripted reviewer behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Submits its review (no findings) in its first reply.
    Submit,
    /// `diff`, `read_file`, `search`, then submits: four calls per conversation.
    Explore,
}

impl Behaviour {
    /// The name printed in the table.
    pub fn name(self) -> &'static str {
        match self {
            Behaviour::Submit => "submit",
            Behaviour::Explore => "explore",
        }
    }
}

/// The reply to `request`; `reviewable` lists the change's reviewable paths.
pub fn reply(behaviour: Behaviour, request: &RecordedRequest, reviewable: &[String]) -> Reply {
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let system = messages.first().map(message_text).unwrap_or_default();
    let user = messages.get(1).map(message_text).unwrap_or_default();
    if system.contains("You are planning the review") {
        return Reply::tool("plan", "submit_plan", plan(&user));
    }
    let tools = offered_tools(&request.body);
    let submit = if tools.iter().any(|t| t == "submit_review") {
        "submit_review"
    } else if tools.iter().any(|t| t == "submit_evaluation") {
        "submit_evaluation"
    } else {
        return Reply::text("Summary: the review so far found no problems.");
    };
    let turns = messages.iter().filter(|m| m["role"] == "assistant").count();
    let targets = targets(&user, reviewable);
    match (behaviour, turns) {
        (Behaviour::Explore, 0) => Reply::tool("c1", "diff", json!({"path": targets.0})),
        (Behaviour::Explore, 1) => Reply::tool("c2", "read_file", json!({"path": targets.1})),
        (Behaviour::Explore, 2) => Reply::tool(
            "c3",
            "search",
            json!({"pattern": search_word(&targets.0), "fixed_string": true}),
        ),
        _ => Reply::tool("c4", submit, submission(submit)),
    }
}

/// The text of a message's content (a string or an array of text parts).
pub fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn offered_tools(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn submission(submit: &str) -> Value {
    if submit == "submit_evaluation" {
        json!({"findings": [], "overall_score": 9, "missed_areas": []})
    } else {
        json!({"findings": [], "summary": "No problems found."})
    }
}

/// A plan from the planner's overview lines (`- path [Status] +a -d`): one task
/// per directory, split into tasks of at most eight files; noise is left out.
fn plan(overview: &str) -> Value {
    let mut by_dir: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for line in overview.lines() {
        let Some((path, rest)) = line
            .strip_prefix("- ")
            .and_then(|rest| rest.split_once(" ["))
        else {
            continue;
        };
        if rest.contains("not under review") {
            continue;
        }
        let dir = path.rsplit_once('/').map_or(".", |(dir, _)| dir);
        by_dir.entry(dir).or_default().push(path);
    }
    let mut tasks = Vec::new();
    for (dir, files) in by_dir {
        for chunk in files.chunks(FILES_PER_TASK) {
            tasks.push(json!({"title": format!("Review {dir}"), "files": chunk,
                "focus": "Correctness, error handling, callers that may break."}));
        }
    }
    json!({"tasks": tasks})
}

/// Two reviewable files named in the first user message: the first whose diff
/// it does not show (else the first named), and the next one (else the same).
fn targets(user: &str, reviewable: &[String]) -> (String, String) {
    let mut named: Vec<(usize, &String)> = reviewable
        .iter()
        .filter_map(|path| user.find(path.as_str()).map(|at| (at, path)))
        .collect();
    named.sort();
    let not_shown: Vec<&String> = named
        .iter()
        .map(|(_, path)| *path)
        .filter(|path| !user.contains(&format!("+++ b/{path}\n")))
        .collect();
    let pool: Vec<&String> = if not_shown.is_empty() {
        named.iter().map(|(_, path)| *path).collect()
    } else {
        not_shown
    };
    let first = pool
        .first()
        .map(|p| p.to_string())
        .or_else(|| reviewable.first().cloned())
        .unwrap_or_default();
    let second = pool.get(1).map(|p| p.to_string()).unwrap_or(first.clone());
    (first, second)
}

/// The file stem of `path`, a word likely to occur in the repository.
fn search_word(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    if stem.is_empty() {
        "fn".into()
    } else {
        stem.into()
    }
}
