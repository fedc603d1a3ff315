//! The context stages in real runs of the binary: pruning old tool results,
//! summarising past the threshold, the context-length retry, and `redline context`.

use serde_json::{Value, json};

use crate::common::cli;
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, RecordedRequest, Reply, Wire};

/// A change to one function in a file long enough that reading it costs tokens.
fn long_file_repo() -> TempRepo {
    let repo = TempRepo::new();
    let body: String = (1..=300)
        .map(|n| format!("pub fn helper_{n}(x: u64) -> u64 {{ x.wrapping_mul({n}) + {n} }}\n"))
        .collect();
    repo.write(
        "src/lib.rs",
        format!("pub fn answer() -> u64 {{\n    41\n}}\n{body}"),
    );
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "src/lib.rs",
        format!("pub fn answer() -> u64 {{\n    42 / 0\n}}\n{body}"),
    );
    repo.commit("change");
    repo
}

fn body_text(req: &RecordedRequest) -> String {
    serde_json::to_string(&req.body).unwrap_or_default()
}

fn last_user_text(req: &RecordedRequest) -> String {
    req.body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn submit() -> Reply {
    Reply::tool(
        "s",
        "submit_review",
        json!({"findings": [{"path": "src/lib.rs", "line": 2, "severity": "critical", "category": "bug",
                             "title": "Division by zero", "body": "Always panics."}], "summary": "s"}),
    )
}

fn read(id: &str, start: u32) -> Reply {
    Reply::tool(
        id,
        "read_file",
        json!({"path": "src/lib.rs", "start_line": start, "end_line": start + 99}),
    )
}

#[tokio::test]
async fn old_tool_results_are_pruned_and_a_repeated_read_gets_a_pointer() {
    let repo = long_file_repo();
    // A small window: past 55% of its 8,000 usable tokens, seen results are elided.
    repo.write(
        ".redline.toml",
        "context_window = 9000\nmax_output_tokens = 1000\nkeep_tool_results = 1\n",
    );
    repo.commit("config");
    let config = repo.path().join(".redline.toml").display().to_string();
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![
            read("r1", 1),
            read("r2", 101),
            read("r3", 101),
            read("r4", 201),
            submit(),
        ],
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
            "--config",
            &config,
        ],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["findings"][0]["line"], 2);
    assert!(
        out["stats"]["compression"]["pruned_tokens"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{out}"
    );
    assert!(
        out["stats"]["compression"]["naive_tokens"].as_u64()
            > out["stats"]["compression"]["shaped_tokens"].as_u64()
    );
    let requests = server.requests();
    let last = body_text(&requests[4]);
    assert!(
        last.contains("elided: call again if needed"),
        "old results become stubs: {last}"
    );
    // r3 asked for the range r2 had just returned: it got a pointer, not the text again.
    let third = body_text(&requests[3]);
    assert!(third.contains("same as the result of call r2"), "{third}");
    let stages: Vec<u64> = run
        .events()
        .iter()
        .filter(|e| e["type"] == "compression")
        .filter_map(|e| e["stage"].as_u64())
        .collect();
    assert!(stages.contains(&1) && stages.contains(&2), "{stages:?}");
}

#[tokio::test]
async fn a_result_is_never_elided_in_the_request_that_first_delivers_it() {
    let repo = long_file_repo();
    let more: String = (1..=300)
        .map(|n| format!("pub const MORE_{n}: u64 = {n} * 3 + 1; // more line {n}\n"))
        .collect();
    repo.write("src/more.rs", more);
    // Past 55% of 8,000 usable tokens the history is under pressure.
    repo.write(
        ".redline.toml",
        "context_window = 9000\nmax_output_tokens = 1000\n",
    );
    repo.commit("more");
    let config = repo.path().join(".redline.toml").display().to_string();
    let more_read =
        |start: u32| json!({"path": "src/more.rs", "start_line": start, "end_line": start + 29});
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![
            read("r1", 1),
            read("r2", 101),
            read("r3", 201),
            // Four parallel calls after the earlier ones.
            Reply::tools(vec![
                ("p1", "read_file", more_read(1)),
                ("p2", "read_file", more_read(31)),
                ("p3", "read_file", more_read(61)),
                ("p4", "read_file", more_read(91)),
            ]),
            submit(),
        ],
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
            "--config",
            &config,
        ],
    )
    .await;
    run.success_json();
    let requests = server.review_requests();
    assert_eq!(requests.len(), 5);
    let mut delivered: Vec<String> = Vec::new();
    for (k, req) in requests.iter().enumerate() {
        for (id, content) in req.tool_results() {
            if delivered.contains(&id) {
                continue;
            }
            assert!(
                !content.contains("elided: call again if needed"),
                "request {k} delivers {id} elided: {content}"
            );
            delivered.push(id);
        }
    }
    let last = requests[4].tool_results();
    for (id, first_line) in [("p1", 1), ("p2", 31), ("p3", 61), ("p4", 91)] {
        let content = last.get(id).map(String::as_str);
        assert!(
            content.is_some_and(|c| c.contains(&format!("more line {first_line}\n"))),
            "{id}: {content:?}"
        );
    }
    // The pressure was real: older results were elided, and the event says which.
    let removed: Vec<String> = run
        .events()
        .iter()
        .filter(|e| e["type"] == "compression" && e["stage"] == 2)
        .flat_map(|e| e["removed"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect();
    assert!(
        removed
            .iter()
            .any(|r| r.starts_with("read_file src/lib.rs:1-100, ")),
        "{removed:?}"
    );
}

#[tokio::test]
async fn a_long_history_is_summarised_and_findings_survive() {
    let repo = long_file_repo();
    repo.write(".redline.toml", "context_window = 9000\nmax_output_tokens = 1000\nsummary_threshold = 0.5\nkeep_tool_results = 5\n");
    repo.commit("config");
    // The branch's own config applies only when named (by default the base revision's is read).
    let config = repo.path().join(".redline.toml").display().to_string();
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if last_user_text(req).contains("replaced by a summary") {
            return Reply::text("## Reviewed\nsrc/lib.rs lines 1-300: answer() divides by zero.\n## Remaining\nnothing");
        }
        let reads = body_text(req).matches("\"read_file\"").count();
        if reads < 4 { read(&format!("r{reads}"), 1 + 100 * reads as u32) } else { submit() }
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
            "react",
            "--max-steps",
            "12",
            "--config",
            &config,
        ],
    )
    .await;
    let out = run.success_json();
    assert!(
        out["stats"]["compression"]["summaries"]
            .as_u64()
            .unwrap_or(0)
            >= 1,
        "{out}"
    );
    assert_eq!(out["findings"][0]["title"], "Division by zero");
    let requests = server.requests();
    let after = requests
        .iter()
        .position(|r| last_user_text(r).contains("replaced by a summary"))
        .expect("a summary request");
    let next = body_text(&requests[after + 1]);
    assert!(
        next.contains("Progress summary") && next.contains("answer() divides by zero"),
        "{next}"
    );
    // The task (the shaped change) is still there after compaction.
    assert!(next.contains("42 / 0"), "{next}");
}

#[tokio::test]
async fn context_length_exceeded_drops_the_oldest_turns_and_retries_once() {
    let repo = long_file_repo();
    let server = ModelServer::start_with(Wire::OpenAi, |req, index| match index {
        0 => read("r1", 1),
        1 => read("r2", 101),
        2 => Reply::api_error(
            Wire::OpenAi,
            400,
            "context_length_exceeded",
            "This model's maximum context length is 8192 tokens",
        ),
        _ if body_text(req).contains("Context note") => submit(),
        _ => Reply::error(
            500,
            "expected the retried request to note the dropped turns",
        ),
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
    assert_eq!(run.json()["stats"]["compression"]["dropped_turns"], 1);
}

#[tokio::test]
async fn context_command_reports_shaping_without_a_model() {
    let repo = TempRepo::new();
    repo.write("src/main.rs", "fn main() {}\n");
    repo.write("old.rs", "fn gone() {}\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    repo.write("Cargo.lock", "# lock\nversion = 3\n");
    repo.write("logo.png", "\u{0}\u{1}PNG binary\u{0}");
    repo.remove("old.rs");
    repo.commit("change");
    let output = cli::redline_command()
        .args([
            "context",
            "--repo",
            &repo.path().display().to_string(),
            "--base",
            "main",
            "--model",
            "gpt-4o",
            "--format",
            "json",
        ])
        .output()
        .await
        .expect("run");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let out: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(out["version"], 1);
    assert_eq!(out["model"], "gpt-4o");
    assert_eq!(out["encoding"], "o200k_base");
    assert!(out["budget"].as_u64().unwrap_or(0) > 0);
    let status = |path: &str| {
        out["files"]
            .as_array()
            .and_then(|f| f.iter().find(|e| e["path"] == path))
            .map(|e| (e["status"].clone(), e["reason"].clone()))
    };
    assert_eq!(status("src/main.rs").map(|s| s.0), Some(json!("shown")));
    assert_eq!(
        status("Cargo.lock"),
        Some((json!("excluded"), json!("lockfile")))
    );
    assert_eq!(status("logo.png").map(|s| s.0), Some(json!("excluded")));
    assert_eq!(status("old.rs").map(|s| s.0), Some(json!("listed")));
    assert_eq!(out["changed_lines"]["total"], 3);
    assert_eq!(out["changed_lines"]["shown"], 3);
    assert!(
        out["tokens"]["naive"].as_u64().unwrap_or(0) > 0
            && out["tokens"]["shaped"].as_u64().unwrap_or(0) > 0
    );
}

#[tokio::test]
async fn context_names_a_renamed_files_old_path_and_shows_the_message() {
    let repo = TempRepo::new();
    let body: String = (0..40)
        .map(|n| format!("def step_{n}():\n    return {n}\n"))
        .collect();
    repo.write("scaffold.py", &body);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.remove("scaffold.py");
    repo.write(
        "pkg/scaffold.py",
        format!("{body}def added():\n    return 'new line'\n"),
    );
    repo.commit("move into a package");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "context".to_string(),
            "--repo".into(),
            repo.path().display().to_string(),
            "--base".into(),
            "main".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        cli::redline_command().args(args).output()
    };
    let json = run(&["--format", "json"]).await.expect("run");
    let out: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let files = out["files"].as_array().cloned().unwrap_or_default();
    let moved = files.iter().find(|f| f["path"] == "pkg/scaffold.py");
    assert_eq!(
        moved.map(|f| f["old_path"].clone()),
        Some(json!("scaffold.py")),
        "{out}"
    );
    // The rename is one file, its one added line counted once.
    assert_eq!(files.len(), 1, "{out}");
    assert_eq!(out["changed_lines"]["total"], 2, "{out}");
    let text = run(&["--show"]).await.expect("run");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("renamed from scaffold.py"), "{text}");
    assert!(text.contains("as the model would see it"), "{text}");
    assert!(text.contains("+def added():"), "{text}");
}

#[tokio::test]
async fn context_reads_the_repository_config_as_review_does() {
    let repo = TempRepo::new();
    repo.write(
        ".redline.toml",
        "exclude = [\"gen/**\"]\ncontext_window = 16000\nmax_output_tokens = 2000\n",
    );
    repo.write("src/lib.rs", "pub fn a() {}\n");
    repo.write("gen/out.rs", "pub fn g() {}\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    // The branch drops the exclusion and the small window: as in `redline review`, the
    // base revision's file is the one read, without a key and without a model server.
    repo.write(".redline.toml", "model = \"gpt-4o\"\n");
    repo.write("src/lib.rs", "pub fn a() {\n    let _ = 1;\n}\n");
    repo.write("gen/out.rs", "pub fn g() {\n    let _ = 2;\n}\n");
    repo.commit("change");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "context".to_string(),
            "--repo".into(),
            repo.path().display().to_string(),
            "--base".into(),
            "main".into(),
            "--format".into(),
            "json".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        cli::redline_command().args(args).output()
    };
    let at_base = run(&[]).await.expect("run");
    assert_eq!(at_base.status.code(), Some(0), "{at_base:?}");
    let at_base: Value = serde_json::from_slice(&at_base.stdout).expect("JSON");
    let status = |out: &Value, path: &str| {
        out["files"]
            .as_array()
            .and_then(|f| f.iter().find(|e| e["path"] == path))
            .map(|e| e["status"].clone())
    };
    assert_eq!(status(&at_base, "gen/out.rs"), Some(json!("excluded")));
    assert_eq!(status(&at_base, "src/lib.rs"), Some(json!("shown")));
    // `--config` names another file, read as the repository's would be.
    let other = repo.path().join("other.toml");
    std::fs::write(&other, "model = \"gpt-4o\"\n").expect("write");
    let chosen = run(&["--config", &other.display().to_string()])
        .await
        .expect("run");
    let chosen: Value = serde_json::from_slice(&chosen.stdout).expect("JSON");
    assert_eq!(status(&chosen, "gen/out.rs"), Some(json!("shown")));
    assert!(
        at_base["budget"].as_u64().unwrap_or(u64::MAX) < chosen["budget"].as_u64().unwrap_or(0),
        "the base file's 16k window must shrink the budget: {at_base} vs {chosen}"
    );
    // A broken value is the user's error, named, before any shaping.
    std::fs::write(&other, "temperature = 9\n").expect("write");
    let broken = run(&["--config", &other.display().to_string()])
        .await
        .expect("run");
    assert_eq!(broken.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&broken.stderr).contains("temperature"),
        "{broken:?}"
    );
}
