//! Run transcripts end to end: a review writes one, `redline replay` re-runs it
//! offline, `redline review --resume` continues a run killed mid-review.

use crate::common::wait_until;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::cli::{self, KEY};
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, RecordedRequest, Reply, Wire};

const BASE_CALC: &str = "pub fn average(values: &[i32]) -> i32 {\n    let sum: i32 = values.iter().sum();\n    sum / values.len() as i32\n}\n";
const HEAD_CALC: &str = "pub fn average(values: &[i32]) -> i32 {\n    let sum: i32 = values.iter().sum();\n    sum / values.len() as i32\n}\n\npub fn ratio(a: i32, b: i32) -> i32 {\n    a / b\n}\n";

fn repo() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("src/calc.rs", BASE_CALC);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("src/calc.rs", HEAD_CALC);
    repo.commit("add ratio");
    repo
}

/// How many model turns a request's history already holds.
fn turns(request: &RecordedRequest) -> usize {
    request.body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0)
}

/// What the scripted model does with the review's second call.
#[derive(Clone, Copy)]
enum Second {
    /// Answers it.
    Answers,
    /// Never answers it the first time (the window in which a test kills the review).
    HeldOnce,
}

/// A model that reads, searches, then reports; `second_call` says whether the reply to
/// the second call is held the first time it is asked.
fn scripted_model(second_call: Second) -> impl Fn(&RecordedRequest, usize) -> Reply + Send + Sync {
    let held_once = Arc::new(AtomicBool::new(false));
    move |request, _| match turns(request) {
        0 => Reply::tool("call_1", "read_file", json!({"path": "src/calc.rs"})),
        1 => {
            let reply = Reply::tool("call_2", "search", json!({"pattern": "ratio\\("}));
            match second_call {
                Second::HeldOnce if !held_once.swap(true, Ordering::SeqCst) => Reply::Never,
                _ => reply,
            }
        }
        _ => Reply::tool(
            "call_3",
            "submit_review",
            json!({"summary": "Adds ratio.", "findings": [{"path": "src/calc.rs", "line": 7,
                "severity": "critical", "category": "bug", "title": "Division by zero",
                "body": "`b` may be 0."}]}),
        ),
    }
}

fn transcripts(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "jsonl"));
    files.sort();
    files
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("transcript")
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is a JSON record"))
        .collect()
}

async fn review(repo: &Path, server: &ModelServer, runs: &Path, extra: &[&str]) -> cli::Run {
    let runs = runs.display().to_string();
    let mut args = vec!["--format", "json", "--runs-dir", &runs];
    args.extend_from_slice(extra);
    cli::review(repo, &server.base_url(), "openai", &args).await
}

async fn replay(file: &Path, extra: &[&str]) -> cli::Run {
    let output = cli::redline_command()
        .arg("replay")
        .arg(file)
        .args(extra)
        .output()
        .await
        .expect("run redline replay");
    cli::Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        events: String::new(),
    }
}

#[tokio::test]
async fn a_review_writes_a_transcript_and_replays_it_offline() {
    let repo = repo();
    let runs = tempfile::tempdir().unwrap();
    let server = ModelServer::start_with(Wire::OpenAi, scripted_model(Second::Answers)).await;
    let run = review(repo.path(), &server, runs.path(), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.assert_no_key();
    let files = transcripts(runs.path());
    assert_eq!(files.len(), 1);
    let file = &files[0];
    let text = std::fs::read_to_string(file).unwrap();
    assert!(!text.contains(KEY) && !text.contains("0123456789abcdef"));
    let records = records(file);
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| r["record"].as_str().unwrap())
        .collect();
    assert_eq!(kinds[0], "header");
    // Three review calls and the verifier's.
    assert_eq!(kinds.iter().filter(|k| **k == "model_call").count(), 4);
    assert_eq!(kinds.iter().filter(|k| **k == "tool_result").count(), 2);
    assert_eq!(kinds.last(), Some(&"end"));
    let header = &records[0];
    assert_eq!(header["head"], repo.head());
    assert_eq!(header["model"], "test-model");
    assert_eq!(header["provider"], "openai");
    let run_id = header["run_id"].as_str().unwrap();
    assert_eq!(file.file_stem().unwrap().to_str(), Some(run_id));
    let started = run
        .events()
        .into_iter()
        .find(|e| e["type"] == "run_started")
        .unwrap();
    assert_eq!(started["run_id"], run_id);
    // Later calls carry only what is new: each conversation's system prompt (the
    // review's, the verifier's) is written once.
    assert_eq!(text.matches("\"role\":\"system\"").count(), 2, "{text}");

    // With the model server gone, the replay prints the same report.
    drop(server);
    let replayed = replay(file, &["--format", "json"]).await;
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert_eq!(replayed.stdout, run.stdout);
    // As text, each finding is shown with its line of the head version; coloured on request.
    let plain = replay(file, &["--color", "never"]).await;
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert!(
        plain
            .stdout
            .starts_with("critical[bug]: Division by zero\n --> src/calc.rs:7:")
            && plain.stdout.contains("\n7 | ")
            && !plain.stdout.contains('\x1b'),
        "{}",
        plain.stdout
    );
    let coloured = replay(file, &["--color", "always"]).await;
    assert!(coloured.stdout.contains("\x1b["), "{}", coloured.stdout);

    // The history of the second call, as the model saw it: the file it had read.
    let until = replay(file, &["--until", "2"]).await;
    assert_eq!(until.code, 0, "{}", until.stderr);
    assert!(
        until.stdout.contains("=== tool read_file (call_1) ==="),
        "{}",
        until.stdout
    );
    assert!(until.stdout.contains("pub fn ratio"), "{}", until.stdout);
    assert!(until.stdout.contains("-> search"), "{}", until.stdout);
    let beyond = replay(file, &["--until", "9"]).await;
    assert_eq!(beyond.code, 2);
    assert!(beyond.stderr.contains("4 model calls"), "{}", beyond.stderr);
}

#[tokio::test]
async fn replay_shows_changed_findings_as_a_diff() {
    let repo = repo();
    let runs = tempfile::tempdir().unwrap();
    let server = ModelServer::start_with(Wire::OpenAi, scripted_model(Second::Answers)).await;
    let run = review(repo.path(), &server, runs.path(), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let file = &transcripts(runs.path())[0];
    // The recording says another finding was made than the replay will make.
    let text = std::fs::read_to_string(file).unwrap();
    let edited: Vec<String> = text
        .lines()
        .map(|l| match l.contains("\"type\":\"finding\"") {
            true => l.replace("Division by zero", "Overflow"),
            false => l.to_string(),
        })
        .collect();
    std::fs::write(file, edited.join("\n") + "\n").unwrap();
    let replayed = replay(file, &["--format", "json"]).await;
    assert_eq!(replayed.code, 1, "{}", replayed.stderr);
    assert!(
        replayed
            .stderr
            .contains("- critical src/calc.rs:7 Overflow"),
        "{}",
        replayed.stderr
    );
    assert!(
        replayed
            .stderr
            .contains("+ critical src/calc.rs:7 Division by zero"),
        "{}",
        replayed.stderr
    );
}

#[tokio::test]
async fn a_killed_review_resumes_with_fewer_model_calls_and_the_same_findings() {
    let repo = repo();
    // The uninterrupted run, for comparison.
    let fresh_runs = tempfile::tempdir().unwrap();
    let fresh_server = ModelServer::start_with(Wire::OpenAi, scripted_model(Second::Answers)).await;
    let fresh = review(repo.path(), &fresh_server, fresh_runs.path(), &[]).await;
    assert_eq!(fresh.code, 0, "{}", fresh.stderr);
    let fresh_calls = fresh_server.requests().len();

    let runs = tempfile::tempdir().unwrap();
    let server = ModelServer::start_with(Wire::OpenAi, scripted_model(Second::HeldOnce)).await;
    let mut child = cli::redline_command()
        .args(["review", "--repo"])
        .arg(repo.path())
        .args(["--base", "main", "--provider", "openai", "--base-url"])
        .arg(server.base_url())
        .args(["--model", "test-model", "--format", "json", "--runs-dir"])
        .arg(runs.path())
        .env("REDLINE_API_KEY", KEY)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start redline");
    // Kill -9 while the second model call waits for its reply.
    let waited = wait_until(|| server.requests().len() >= 2).await;
    assert!(waited, "the review never made its second call");
    child.kill().await.expect("kill -9");
    let before = server.requests().len();

    let resumed = review(repo.path(), &server, runs.path(), &["--resume", "latest"]).await;
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    resumed.assert_no_key();
    let live = server.requests().len() - before;
    assert!(
        live < fresh_calls,
        "{live} live calls on resume, {fresh_calls} in a fresh run"
    );
    assert_eq!(resumed.json()["findings"], fresh.json()["findings"]);
    assert!(
        resumed
            .stderr
            .contains("1 model calls answered from the transcript"),
        "{}",
        resumed.stderr
    );
    // One transcript, continued; the finished run cannot be resumed again.
    let files = transcripts(runs.path());
    assert_eq!(files.len(), 1);
    let kinds: Vec<String> = records(&files[0])
        .iter()
        .map(|r| r["record"].as_str().unwrap().to_string())
        .collect();
    assert!(kinds.contains(&"resumed".to_string()), "{kinds:?}");
    let again = review(repo.path(), &server, runs.path(), &["--resume", "latest"]).await;
    assert_eq!(again.code, 2);
    assert!(
        again.stderr.contains("already finished"),
        "{}",
        again.stderr
    );
}

#[tokio::test]
async fn a_second_resume_of_a_running_run_is_refused_naming_its_process() {
    let repo = repo();
    let runs = tempfile::tempdir().unwrap();
    let server = ModelServer::start_with(Wire::OpenAi, scripted_model(Second::Answers)).await;
    let first = review(repo.path(), &server, runs.path(), &[]).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let file = transcripts(runs.path()).remove(0);
    cut_transcript(&file);
    let id = file.file_stem().unwrap().to_str().unwrap().to_string();
    // The first resume waits on its first live call (the second of the run).
    let slow = ModelServer::start_with(Wire::OpenAi, scripted_model(Second::HeldOnce)).await;
    let mut child = cli::redline_command()
        .args(["review", "--repo"])
        .arg(repo.path())
        .args(["--base", "main", "--provider", "openai", "--base-url"])
        .arg(slow.base_url())
        .args(["--model", "test-model", "--format", "json", "--runs-dir"])
        .arg(runs.path())
        .args(["--resume", &id])
        .env("REDLINE_API_KEY", KEY)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start redline");
    let waited = wait_until(|| !slow.requests().is_empty()).await;
    assert!(waited, "the first resume never called the model");
    let second = review(repo.path(), &slow, runs.path(), &["--resume", &id]).await;
    let pid = child.id().expect("running");
    child.kill().await.expect("kill");
    assert_eq!(second.code, 2, "{}", second.stderr);
    assert!(
        second.stderr.contains(&format!("process {pid}")),
        "{}",
        second.stderr
    );
    assert_eq!(
        slow.requests().len(),
        1,
        "the second resume called no model"
    );
    // Nothing was spliced: every line is still one record.
    assert!(records(&file).iter().all(|r| r["record"].is_string()));
}

/// A finished run's transcript cut after its first model call, mid-way through the next line.
fn cut_transcript(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let mut kept = String::new();
    let mut calls = 0;
    for line in text.split_inclusive('\n') {
        if line.contains("\"record\":\"model_call\"") {
            calls += 1;
            if calls == 2 {
                kept.push_str(&line[..line.len() / 2]);
                break;
            }
        }
        kept.push_str(line);
    }
    std::fs::write(file, &kept).unwrap();
    kept
}

#[tokio::test]
async fn a_transcript_cut_mid_line_resumes_from_its_last_complete_record() {
    let repo = repo();
    let runs = tempfile::tempdir().unwrap();
    let server = ModelServer::start_with(Wire::OpenAi, scripted_model(Second::Answers)).await;
    let first = review(repo.path(), &server, runs.path(), &[]).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let file = transcripts(runs.path()).remove(0);
    cut_transcript(&file);
    let id = file.file_stem().unwrap().to_str().unwrap().to_string();
    let before = server.review_requests().len();
    let resumed = review(repo.path(), &server, runs.path(), &["--resume", &id]).await;
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(resumed.json()["findings"], first.json()["findings"]);
    assert_eq!(
        server.review_requests().len() - before,
        2,
        "the first call is answered from the transcript"
    );
    // The cut line is gone: every line of the continued transcript is a record.
    let kinds: Vec<String> = records(&file)
        .iter()
        .map(|r| r["record"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds.last().map(String::as_str), Some("end"));
}

#[tokio::test]
async fn a_transcript_of_another_head_is_refused() {
    let repo = repo();
    let runs = tempfile::tempdir().unwrap();
    let server = ModelServer::start_with(Wire::OpenAi, scripted_model(Second::Answers)).await;
    let first = review(repo.path(), &server, runs.path(), &[]).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let file = transcripts(runs.path()).remove(0);
    let old_head = repo.head();
    cut_transcript(&file);
    repo.write("src/calc.rs", format!("{HEAD_CALC}// more\n"));
    repo.commit("more");
    let before = server.requests().len();
    let refused = review(repo.path(), &server, runs.path(), &["--resume", "latest"]).await;
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(&format!("head commit {old_head}")),
        "{}",
        refused.stderr
    );
    assert_eq!(
        server.requests().len(),
        before,
        "nothing was sent to the model"
    );
}

#[tokio::test]
async fn a_plan_run_with_parallel_tasks_replays_identically() {
    use crate::strategies::{is_planner, submit};
    let repo = TempRepo::new();
    for (path, text) in [("src/a.rs", "a"), ("src/b.rs", "b"), ("lib/c.rs", "c")] {
        repo.write(path, format!("pub fn {text}() {{}}\n"));
    }
    repo.commit("base");
    repo.checkout_new_branch("feature");
    for (path, text) in [("src/a.rs", "a"), ("src/b.rs", "b"), ("lib/c.rs", "c")] {
        repo.write(path, format!("pub fn {text}() {{\n    todo!()\n}}\n"));
    }
    repo.commit("change");
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_planner(req) {
            return Reply::tool(
                "p",
                "submit_plan",
                json!({"tasks": [
                    {"title": "a", "files": ["src/a.rs"], "focus": "x"},
                    {"title": "b", "files": ["src/b.rs"], "focus": "y"},
                    {"title": "c", "files": ["lib/c.rs"], "focus": "z"}
                ]}),
            );
        }
        let user = req.first_user_text();
        let path = ["src/a.rs", "src/b.rs", "lib/c.rs"]
            .into_iter()
            .find(|p| user.contains(&format!("Files of this task: {p}")))
            .unwrap_or("src/a.rs");
        // The tasks' turns finish in a different order than they started.
        let delay = match path {
            "src/a.rs" => 300,
            "src/b.rs" => 100,
            _ => 0,
        };
        match turns(req) {
            0 => Reply::tool("r1", "read_file", json!({"path": path}))
                .delayed(Duration::from_millis(delay)),
            _ => submit(
                vec![
                    json!({"path": path, "line": 2, "severity": "major", "category": "bug",
                    "title": format!("todo in {path}"), "body": "Panics."}),
                ],
                &format!("reviewed {path}"),
            ),
        }
    })
    .await;
    let runs = tempfile::tempdir().unwrap();
    let run = review(
        repo.path(),
        &server,
        runs.path(),
        &["--strategy", "plan", "--parallel", "3"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.json()["findings"].as_array().map(Vec::len),
        Some(3),
        "{}",
        run.stdout
    );
    drop(server);
    let file = &transcripts(runs.path())[0];
    let conversations: std::collections::HashSet<String> = records(file)
        .iter()
        .filter(|r| r["record"] == "model_call")
        .map(|r| r["conversation"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        conversations.len(),
        5,
        "the planner, three tasks and the verifier"
    );
    let replayed = replay(file, &["--format", "json"]).await;
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert_eq!(replayed.stdout, run.stdout);
}

#[tokio::test]
async fn a_fallback_to_text_mode_is_recorded_and_replayed() {
    let repo = repo();
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if req.body.get("tools").is_some() {
            return Reply::api_error(
                Wire::OpenAi,
                400,
                "invalid_request_error",
                "tools is not supported for this model",
            );
        }
        let answer = json!({"summary": "Adds ratio.", "findings": [{"path": "src/calc.rs",
            "line": 7, "severity": "critical", "category": "bug",
            "title": "Division by zero", "body": "`b` may be 0."}]});
        Reply::text(format!("Thought: done.\nFinal Answer: {answer}"))
    })
    .await;
    let runs = tempfile::tempdir().unwrap();
    let run = review(repo.path(), &server, runs.path(), &["--strategy", "react"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["findings"].as_array().map(Vec::len), Some(1));
    drop(server);
    let file = &transcripts(runs.path())[0];
    let errors: Vec<Value> = records(file)
        .into_iter()
        .filter(|r| r["record"] == "model_error")
        .collect();
    assert_eq!(errors.len(), 1, "the rejected native call is recorded");
    assert_eq!(errors[0]["error"]["kind"], "tools_unsupported");
    let replayed = replay(file, &["--format", "json"]).await;
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert_eq!(replayed.stdout, run.stdout);
}

#[tokio::test]
async fn a_tool_call_pending_at_the_crash_is_run_once_on_resume() {
    let repo = repo();
    let runs = tempfile::tempdir().unwrap();
    let server = ModelServer::start_with(Wire::OpenAi, scripted_model(Second::Answers)).await;
    let first = review(repo.path(), &server, runs.path(), &[]).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let file = transcripts(runs.path()).remove(0);
    // The crash came after the first reply (asking for read_file) was recorded,
    // in the middle of writing that call's result.
    let text = std::fs::read_to_string(&file).unwrap();
    let mut kept = String::new();
    for line in text.split_inclusive('\n') {
        if line.contains("\"record\":\"tool_result\"") {
            kept.push_str(&line[..line.len() / 2]);
            break;
        }
        kept.push_str(line);
    }
    std::fs::write(&file, &kept).unwrap();
    let before = server.review_requests().len();
    let resumed = review(repo.path(), &server, runs.path(), &["--resume", "latest"]).await;
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(resumed.json()["findings"], first.json()["findings"]);
    assert_eq!(
        server.review_requests().len() - before,
        2,
        "the first reply came from the transcript"
    );
    let results: Vec<Value> = records(&file)
        .into_iter()
        .filter(|r| r["record"] == "tool_result" && r["id"] == "call_1")
        .collect();
    assert_eq!(results.len(), 1, "the pending read_file ran once");
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("pub fn ratio")
    );
}

/// A run that fails before any model call answered leaves no transcript: a bad output
/// path, or a model endpoint that is not there.
#[tokio::test]
async fn a_run_that_fails_before_any_model_answer_writes_no_transcript() {
    let repo = repo();
    let runs = tempfile::tempdir().unwrap();
    let server = ModelServer::start_with(Wire::OpenAi, scripted_model(Second::Answers)).await;
    let run = review(
        repo.path(),
        &server,
        runs.path(),
        &["--output", "/nonexistent-dir/report.json"],
    )
    .await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(server.requests().is_empty());
    assert_eq!(transcripts(runs.path()), Vec::<PathBuf>::new());

    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let runs_arg = runs.path().display().to_string();
    let run = cli::review(
        repo.path(),
        &format!("http://127.0.0.1:{closed}/v1"),
        "openai",
        &["--format", "json", "--runs-dir", &runs_arg],
    )
    .await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(transcripts(runs.path()), Vec::<PathBuf>::new());
    // Nor does it name a transcript it did not keep.
    assert!(!run.stderr.contains("transcript"), "{}", run.stderr);
    // A run that got its answers keeps its transcript.
    let run = review(repo.path(), &server, runs.path(), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(transcripts(runs.path()).len(), 1);
    let kept = transcripts(runs.path())[0].display().to_string();
    assert!(
        run.stderr.contains(&format!("transcript {kept}")),
        "{}",
        run.stderr
    );
}

async fn redline_in(dir: &Path, args: &[&str]) -> cli::Run {
    let output = cli::redline_command()
        .current_dir(dir)
        .args(args)
        .output()
        .await
        .expect("run redline");
    cli::Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        events: String::new(),
    }
}

/// `redline runs` lists the runs newest first (text and JSON); `redline replay` takes a
/// run id or `latest` as `--resume` does.
#[tokio::test]
async fn runs_are_listed_and_replayed_by_id_or_latest() {
    let repo = repo();
    let runs = tempfile::tempdir().unwrap();
    let runs_arg = runs.path().display().to_string();
    let server = ModelServer::start_with(Wire::OpenAi, scripted_model(Second::Answers)).await;
    let first = review(repo.path(), &server, runs.path(), &[]).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let second = review(repo.path(), &server, runs.path(), &["--strategy", "react"]).await;
    assert_eq!(second.code, 0, "{}", second.stderr);
    let files = transcripts(runs.path());
    assert_eq!(files.len(), 2);
    let id_of = |p: &PathBuf| p.file_stem().unwrap().to_str().unwrap().to_string();
    let (older, newer) = (id_of(&files[0]), id_of(&files[1]));

    let listed = redline_in(
        repo.path(),
        &["runs", "--runs-dir", &runs_arg, "--format", "json"],
    )
    .await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let json = listed.json();
    let runs_listed = json.as_array().expect("an array");
    assert_eq!(runs_listed.len(), 2);
    assert_eq!(runs_listed[0]["id"], newer.as_str(), "newest first");
    assert_eq!(runs_listed[1]["id"], older.as_str());
    for run in runs_listed {
        assert_eq!(run["status"], "finished");
        assert_eq!(run["strategy"], "react");
        assert!(run["created"].as_str().is_some_and(|c| !c.is_empty()));
        assert!(run.get("cost_usd").is_some(), "{run}");
    }
    let text = redline_in(repo.path(), &["runs", "--runs-dir", &runs_arg]).await;
    assert_eq!(text.code, 0, "{}", text.stderr);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert!(
        lines[0].starts_with("RUN") && lines[0].contains("COST"),
        "{}",
        text.stdout
    );
    assert!(
        lines[1].starts_with(&newer) && lines[1].contains("finished"),
        "{}",
        text.stdout
    );

    for wanted in [older.as_str(), "latest"] {
        let replayed = redline_in(
            repo.path(),
            &[
                "replay",
                wanted,
                "--runs-dir",
                &runs_arg,
                "--format",
                "json",
            ],
        )
        .await;
        assert_eq!(replayed.code, 0, "{wanted}: {}", replayed.stderr);
        assert_eq!(replayed.json()["findings"][0]["title"], "Division by zero");
    }
    let missing = redline_in(
        repo.path(),
        &[
            "replay",
            "20990101T000000Z-00000000",
            "--runs-dir",
            &runs_arg,
        ],
    )
    .await;
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("20990101T000000Z-00000000"),
        "{}",
        missing.stderr
    );
}

/// Nothing committed to review on a dirty work tree: the run says `--uncommitted` reviews it.
#[tokio::test]
async fn nothing_to_review_on_a_dirty_work_tree_points_at_uncommitted() {
    let repo = TempRepo::new();
    repo.write("src/calc.rs", BASE_CALC);
    repo.commit("base");
    repo.write("src/calc.rs", HEAD_CALC);
    let server = ModelServer::start_with(Wire::OpenAi, scripted_model(Second::Answers)).await;
    let runs = tempfile::tempdir().unwrap();
    let run = review(repo.path(), &server, runs.path(), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("--uncommitted"), "{}", run.stderr);
    assert!(
        run.json()["summary"]
            .as_str()
            .is_some_and(|s| s.contains("redline review --uncommitted")),
        "{}",
        run.stdout
    );
    assert!(server.requests().is_empty());
}
