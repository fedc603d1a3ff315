//! `redline eval` end to end: a fixture history with bug fixes, ordinary commits and
//! commits mining must skip; the scripted model server catches one bug, flags a wrong
//! line on another, fails on a third and makes noise on the clean case.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::common::cli::{KEY, redline_command};
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, RecordedRequest, Reply, Wire};

const CALC: &str = "pub fn average(values: &[i32]) -> i32 {\n    if values.is_empty() {\n        return 0;\n    }\n    values.iter().sum::<i32>() / values.len() as i32\n}\n\npub fn ratio(a: i32, b: i32) -> i32 {\n    a / b\n}\n";
const PARSE: &str = "/// Parses `lo..hi`.\npub fn parse_range(text: &str) -> Option<(u32, u32)> {\n    let (lo, hi) = text.split_once(\"..\")?;\n    let lo: u32 = lo.trim().parse().ok()?;\n    let hi: u32 = hi.trim().parse().ok()?;\n    if lo <= hi + 1 {\n        Some((lo, hi))\n    } else {\n        None\n    }\n}\n\n/// Parses a count.\npub fn parse_count(text: &str) -> Option<u32> {\n    text.trim().parse().ok()\n}\n\n/// Parses a name.\npub fn parse_name(text: &str) -> Option<&str> {\n    Some(text.trim()).filter(|t| !t.is_empty())\n}\n";
const NET: &str = "pub struct Conn {\n    buffer: Vec<u8>,\n}\n\nimpl Conn {\n    pub fn close(&mut self) {\n        std::mem::forget(std::mem::take(&mut self.buffer));\n    }\n}\n";

/// The commits of the fixture, by role.
struct Fixture {
    repo: TempRepo,
    /// Fix commits mining must find, by the file they fix.
    fixes: BTreeMap<&'static str, String>,
    /// The one ordinary commit small enough to be a clean case.
    clean: String,
}

fn long_text(prefix: &str, lines: usize) -> String {
    (0..lines)
        .map(|i| format!("// {prefix} line {i}\n"))
        .collect()
}

fn fixture() -> Fixture {
    let repo = TempRepo::new();
    repo.write("src/calc.rs", CALC);
    repo.write("src/parse.rs", PARSE);
    repo.write("src/net.rs", NET);
    repo.write("README.md", "A tool. It has a tpyo.\n");
    repo.commit("initial import");
    repo.write("src/net.rs", format!("{NET}{}", long_text("net", 70)));
    repo.commit("rewrite the net module");
    repo.write(
        "src/calc.rs",
        CALC.replace("    a / b\n", "    a.checked_div(b).unwrap_or(0)\n"),
    );
    let calc_fix = repo.commit("Fix division by zero in ratio");
    repo.write("README.md", "A tool. It has no typo.\n");
    repo.commit("Fix typo in README");
    repo.write("src/parse.rs", PARSE.replace("lo <= hi + 1", "lo <= hi"));
    repo.write("tests/parse_test.rs", "#[test]\nfn reversed() {}\n");
    let parse_fix = repo.commit("parse: fix off-by-one in parse_range");
    let calc = std::fs::read_to_string(repo.path().join("src/calc.rs")).unwrap();
    repo.write("src/calc.rs", format!("{calc}{}", long_text("calc", 70)));
    repo.commit("Fix crash on huge input by rewriting calc");
    repo.write(
        "tests/parse_test.rs",
        "#[test]\nfn reversed() {\n    assert!(true);\n}\n",
    );
    repo.commit("tests: fix flaky parse test");
    let net = std::fs::read_to_string(repo.path().join("src/net.rs")).unwrap();
    repo.write(
        "src/net.rs",
        net.replace(
            "std::mem::forget(std::mem::take(&mut self.buffer));",
            "self.buffer = Vec::new();",
        ),
    );
    let net_fix = repo.commit("Plug memory leak in Conn::close");
    let parse = std::fs::read_to_string(repo.path().join("src/parse.rs")).unwrap();
    repo.write(
        "src/parse.rs",
        format!("{parse}\n/// Whether `text` is a flag.\npub fn parse_flag(text: &str) -> bool {{\n    text.starts_with(\"--\")\n}}\n"),
    );
    let clean = repo.commit("add parse_flag helper");
    Fixture {
        repo,
        fixes: BTreeMap::from([("calc", calc_fix), ("net", net_fix), ("parse", parse_fix)]),
        clean,
    }
}

fn finding(path: &str, line: u32, title: &str) -> Value {
    json!({"path": path, "line": line, "severity": "major", "category": "bug",
           "title": title, "body": "See the change."})
}

fn submit(findings: Vec<Value>) -> Reply {
    Reply::tool(
        "c1",
        "submit_review",
        json!({"findings": findings, "summary": "done"}),
    )
}

/// Which fixture case a request reviews, from the change it shows.
fn which_case(request: &RecordedRequest) -> &'static str {
    let body = request.body.to_string();
    if body.contains("parse_flag") {
        "clean"
    } else if body.contains("checked_div") {
        "calc"
    } else if body.contains("lo <= hi + 1") {
        "parse"
    } else {
        "net"
    }
}

/// First run: the calc bug is caught (reported twice on the same line, plus one
/// finding elsewhere), the parse bug gets a finding 5 lines off, the net review fails,
/// the clean case gets two findings.
fn first_script(request: &RecordedRequest, _: usize) -> Reply {
    match which_case(request) {
        "calc" => submit(vec![
            finding("src/calc.rs", 9, "Division by zero"),
            finding("src/calc.rs", 9, "Division by zero again"),
            finding("src/calc.rs", 1, "Average of nothing"),
        ]),
        "parse" => submit(vec![finding("src/parse.rs", 18, "Unclear name")]),
        "clean" => submit(vec![
            finding("src/parse.rs", 24, "Unused import"),
            finding("src/parse.rs", 25, "Magic string literal"),
        ]),
        _ => Reply::api_error(Wire::OpenAi, 401, "invalid_api_key", "this case fails"),
    }
}

/// Second run: the calc bug is missed, the parse bug is caught, the net review works.
fn second_script(request: &RecordedRequest, _: usize) -> Reply {
    match which_case(request) {
        "calc" => submit(vec![]),
        "parse" => submit(vec![finding("src/parse.rs", 6, "Off by one")]),
        "net" => submit(vec![finding("src/net.rs", 7, "Leak")]),
        _ => submit(vec![]),
    }
}

struct EvalRun {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn eval(server: &ModelServer, args: &[&str]) -> EvalRun {
    let base_url = server.base_url();
    let output = redline_command()
        .arg("eval")
        .args(args)
        .args([
            "--provider",
            "openai",
            "--base-url",
            &base_url,
            "--model",
            "test-model",
        ])
        .args(["--strategy", "react"])
        .env("REDLINE_API_KEY", KEY)
        .output()
        .await
        .expect("run redline eval");
    EvalRun {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Every reference but the private namespace (name, target), `HEAD`'s target, and the
/// work tree's status (path, status bits).
type UserState = (Vec<(String, String)>, String, Vec<(String, u32)>);

fn user_state(repo: &TempRepo) -> UserState {
    let git = repo.git();
    let mut refs: Vec<(String, String)> = git
        .references()
        .unwrap()
        .flatten()
        .filter_map(|r| Some((r.name().ok()?.to_string(), r.target()?.to_string())))
        .filter(|(name, _)| !name.starts_with("refs/redline-eval/"))
        .collect();
    refs.sort();
    let head = git.head().unwrap().name().unwrap().to_string();
    let mut options = git2::StatusOptions::new();
    options.include_untracked(true);
    let status = git
        .statuses(Some(&mut options))
        .unwrap()
        .iter()
        .map(|s| (s.path().unwrap_or_default().to_string(), s.status().bits()))
        .collect();
    (refs, head, status)
}

fn pair(report: &Value) -> &Value {
    &report["pairs"][0]
}

fn close(value: &Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|v| (v - expected).abs() < 1e-9)
}

#[tokio::test]
async fn mined_fixes_are_scored_and_a_failing_review_does_not_stop_the_others() {
    let fixture = fixture();
    let repo = &fixture.repo;
    repo.checkout_new_branch("feature");
    repo.checkout("main");
    repo.write("README.md", "local edit, not committed\n");
    repo.write("notes.txt", "untracked\n");
    let before = user_state(repo);
    let work = tempfile::tempdir().unwrap();
    let cases_file = work.path().join("cases.jsonl");
    let events_dir = work.path().join("events");
    let server = ModelServer::start_with(Wire::OpenAi, first_script).await;
    let repo_arg = repo.path().display().to_string();
    let run = eval(
        &server,
        &[
            "--mine",
            &repo_arg,
            "--clean",
            "1",
            "--limit",
            "10",
            "--write-cases",
            &cases_file.display().to_string(),
            "--events-dir",
            &events_dir.display().to_string(),
            "--parallel",
            "2",
            "--format",
            "json",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(
        user_state(repo),
        before,
        "the user's refs, HEAD or work tree changed"
    );
    assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));

    check_mined_cases(&fixture, &cases_file);
    check_first_scores(&fixture, &run);
    // Again from the saved cases, with a model that does better on one case and worse on
    // another: the baseline comparison names both.
    let baseline = work.path().join("first.json");
    std::fs::write(&baseline, &run.stdout).unwrap();
    check_baseline_run(&fixture, &cases_file, &events_dir, &baseline).await;
}

/// Mining found exactly the three fixes and the one small ordinary commit.
fn check_mined_cases(fixture: &Fixture, cases_file: &Path) {
    let repo = &fixture.repo;
    let cases: Vec<Value> = std::fs::read_to_string(cases_file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut bases: Vec<String> = cases
        .iter()
        .filter(|c| c["clean"] == false)
        .map(|c| c["base"].as_str().unwrap().to_string())
        .collect();
    bases.sort();
    let mut fixes: Vec<String> = fixture.fixes.values().cloned().collect();
    fixes.sort();
    assert_eq!(bases, fixes);
    let clean: Vec<&Value> = cases.iter().filter(|c| c["clean"] == true).collect();
    assert_eq!(clean.len(), 1);
    assert_eq!(clean[0]["head"], fixture.clean.as_str());
    check_revert_cases(repo, fixture, &cases);
}

/// The hand-computed scores: 2 of the 3 bug reviews finished, 1 caught; 5 distinct
/// findings (the duplicate counts once), 1 on the bug; the clean case got 2.
fn check_first_scores(fixture: &Fixture, run: &EvalRun) {
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["version"], 1);
    let p = pair(&report);
    assert_eq!(p["strategy"], "react");
    assert_eq!(p["model"], "test-model");
    assert_eq!(
        (p["reviews"].as_u64(), p["failed"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(
        (p["bug_cases"].as_u64(), p["caught"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(
        (p["findings"].as_u64(), p["true_positives"].as_u64()),
        (Some(5), Some(1)),
        "{report:#}"
    );
    assert!(close(&p["recall"], 0.5), "{p}");
    assert!(close(&p["precision"], 0.2), "{p}");
    assert!(close(&p["f1"], 2.0 * 0.2 * 0.5 / 0.7), "{p}");
    assert!(close(&p["false_findings_per_clean_case"], 2.0), "{p}");
    assert!(p["tokens_per_case"].as_f64().unwrap() > 0.0);

    let net_id = format!("fix-{}", &fixture.fixes["net"][..7]);
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    let failed: Vec<&Value> = results.iter().filter(|r| r["error"].is_string()).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["case"], net_id.as_str());
    assert!(failed[0]["caught"].is_null());
    // Every review, the failed one too, has its own events file.
    for result in results {
        let events = std::fs::read_to_string(result["events"].as_str().unwrap()).unwrap();
        assert!(events.contains("\"run_started\""), "{result}");
    }
    assert!(run.stderr.contains("[4/4]"), "progress: {}", run.stderr);
    assert!(run.stderr.contains("left ~"), "progress: {}", run.stderr);
}

async fn check_baseline_run(
    fixture: &Fixture,
    cases_file: &Path,
    events_dir: &Path,
    baseline: &Path,
) {
    let net_id = format!("fix-{}", &fixture.fixes["net"][..7]);
    let server = ModelServer::start_with(Wire::OpenAi, second_script).await;
    let second = eval(
        &server,
        &[
            "--cases",
            &cases_file.display().to_string(),
            "--events-dir",
            &events_dir.display().to_string(),
            "--baseline",
            &baseline.display().to_string(),
            "--format",
            "markdown",
        ],
    )
    .await;
    assert_eq!(second.code, 0, "stderr: {}", second.stderr);
    let calc_id = format!("fix-{}", &fixture.fixes["calc"][..7]);
    let parse_id = format!("fix-{}", &fixture.fixes["parse"][..7]);
    let text = &second.stdout;
    assert!(
        text.contains(&format!(
            "Newly caught: {parse_id} (react/test-model), {net_id} (react/test-model)"
        )) || text.contains(&format!(
            "Newly caught: {net_id} (react/test-model), {parse_id} (react/test-model)"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("Lost: {calc_id} (react/test-model)")),
        "{text}"
    );
    assert!(
        text.contains("| react | test-model | recall | 0.500 | 0.667 | +0.167 |"),
        "{text}"
    );
    assert!(
        text.contains(
            "| react | test-model | false_findings_per_clean_case | 2.000 | 0.000 | -2.000 |"
        ),
        "{text}"
    );
}

/// Each fix case reviews a revert commit, kept under the private namespace, whose
/// expected lines are the bug's lines in the head.
fn check_revert_cases(repo: &TempRepo, fixture: &Fixture, cases: &[Value]) {
    let git = repo.git();
    let expected = [
        ("calc", "src/calc.rs", 9),
        ("parse", "src/parse.rs", 6),
        ("net", "src/net.rs", 7),
    ];
    for (name, path, line) in expected {
        let fix = &fixture.fixes[name];
        let case = cases.iter().find(|c| c["base"] == fix.as_str()).unwrap();
        let head = case["head"].as_str().unwrap();
        let reference = git
            .find_reference(&format!("refs/redline-eval/revert/{fix}"))
            .unwrap();
        assert_eq!(reference.target().unwrap().to_string(), head);
        let revert = git.find_commit(git2::Oid::from_str(head).unwrap()).unwrap();
        assert_eq!(revert.parent_id(0).unwrap().to_string(), *fix);
        assert_eq!(
            case["expected"],
            json!([{"path": path, "start_line": line, "end_line": line, "side": "RIGHT",
                    "description": case["expected"][0]["description"], "bug": &fix[..7]}]),
            "{name}"
        );
        assert_eq!(case["version"], 1);
        assert!(
            Path::new(case["repo"].as_str().unwrap())
                .join(".git")
                .exists()
        );
    }
}

#[tokio::test]
async fn bad_flags_and_paths_fail_before_any_model_call() {
    let fixture = fixture();
    let server = ModelServer::start_with(Wire::OpenAi, first_script).await;
    let repo_arg = fixture.repo.path().display().to_string();
    let work = tempfile::tempdir().unwrap();
    let events = work.path().join("events").display().to_string();
    let missing = work
        .path()
        .join("no/such/dir/report.json")
        .display()
        .to_string();
    let not_json = work.path().join("baseline.json");
    std::fs::write(&not_json, "{\"version\": 7}").unwrap();
    let not_json = not_json.display().to_string();
    for (args, message) in [
        (vec!["--mine", &repo_arg, "--format", "xml"], "--format"),
        (
            vec!["--mine", &repo_arg, "--output", &missing],
            "cannot write --output",
        ),
        (
            vec!["--mine", &repo_arg, "--baseline", &not_json],
            "unsupported report version 7",
        ),
        (vec!["--mine", &repo_arg, "--since", "yesterday"], "--since"),
        (vec!["--mine", &repo_arg, "--parallel", "0"], "--parallel"),
    ] {
        let mut all = args.clone();
        all.extend(["--events-dir", &events]);
        let run = eval(&server, &all).await;
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(message), "{args:?}: {}", run.stderr);
    }
    let both = eval(&server, &["--mine", &repo_arg, "--cases", "x.jsonl"]).await;
    assert_eq!(both.code, 2, "{}", both.stderr);
    assert!(server.requests().is_empty());
    assert!(fixture.repo.git().find_reference("refs/heads/main").is_ok());
}

#[tokio::test]
async fn a_case_that_cannot_be_prepared_is_reported_and_the_others_finish() {
    let fixture = fixture();
    let repo = fixture.repo.path().display().to_string();
    let calc = &fixture.fixes["calc"];
    let parent = fixture
        .repo
        .git()
        .find_commit(git2::Oid::from_str(calc).unwrap())
        .unwrap()
        .parent_id(0)
        .unwrap()
        .to_string();
    let work = tempfile::tempdir().unwrap();
    let cases = work.path().join("cases.jsonl");
    // The fix itself as a change with two bugs: one at line 9 (its range has no bug id,
    // as in files written before bug ids), one at line 30 that no finding meets; then a
    // case whose head is gone.
    let good = json!({"version": 1, "id": "by-hand", "repo": repo, "base": calc, "head": parent,
                      "expected": [{"path": "src/calc.rs", "start_line": 9, "end_line": 9,
                                    "side": "RIGHT", "description": "division by zero (ANSWER-MARK)"},
                                   {"path": "src/calc.rs", "start_line": 30, "end_line": 30,
                                    "side": "RIGHT", "description": "elsewhere", "bug": "b2"}],
                      "clean": false, "source": "written by hand",
                      "title": "Average of no values (TITLE-MARK)",
                      "body": "Returns 0 for an empty slice (BODY-MARK)."});
    let gone = json!({"version": 1, "id": "gone", "repo": repo, "base": calc,
                      "head": "0123456789012345678901234567890123456789", "clean": true});
    std::fs::write(&cases, format!("{good}\n{gone}\n")).unwrap();
    let server = ModelServer::start_with(Wire::OpenAi, first_script).await;
    let events = work.path().join("events").display().to_string();
    // Two models: every case is reviewed under each.
    let run = eval(
        &server,
        &[
            "--cases",
            &cases.display().to_string(),
            "--events-dir",
            &events,
            "--model",
            "second-model",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let text = &run.stdout;
    assert!(text.contains("2 strategy/model pairs"), "{text}");
    assert!(
        text.contains("react/test-model") && text.contains("react/second-model"),
        "{text}"
    );
    assert!(
        text.contains("by-hand  bug    caught 1/2 bugs, 2 findings, "),
        "{text}"
    );
    // Per pair: 1 of 1 case caught, 1 of 2 bugs.
    assert!(text.contains("1/1     100.0%  1/2   50.0%"), "{text}");
    assert!(text.contains("gone     clean  FAILED"), "{text}");
    for model in ["test-model", "second-model"] {
        assert!(
            text.contains(&format!("- gone (react/{model}): ")),
            "{text}"
        );
    }
    let models: Vec<String> = server
        .review_requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(models.len(), 2);
    assert!(models.contains(&"second-model".to_string()), "{models:?}");
    // The case's title and body are its stated intent; its expected ranges are the answer.
    for request in server.requests() {
        let (system, first) = (request.system_text(), request.first_user_text());
        assert!(
            first.contains("TITLE-MARK") && first.contains("BODY-MARK"),
            "{first}"
        );
        assert!(!system.contains("BODY-MARK"), "{system}");
        assert!(!request.body.to_string().contains("ANSWER-MARK"));
    }

    // Mining a history with nothing new enough finds nothing and says so.
    let none = eval(
        &server,
        &[
            "--mine",
            &repo,
            "--since",
            "2999-01-01",
            "--events-dir",
            &events,
        ],
    )
    .await;
    assert_eq!(none.code, 2, "{}", none.stderr);
    assert!(none.stderr.contains("no case found"), "{}", none.stderr);
}
