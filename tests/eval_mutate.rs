//! `redline eval --mutate`: bugs planted one at a time in a change of a fixture
//! repository (Python, JavaScript, Rust and Go), reviewed by the scripted model server;
//! `--judge` asks the same server whether a near finding describes the bug; `--format
//! html` draws the report.

use serde_json::{Value, json};

use crate::common::cli::{KEY, redline_command};
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, RecordedRequest, Reply, Wire};

const PY: &str = "def pick(items, n):\n    if not items:\n        return None\n    items = sorted(items)\n    log(n)\n    return items[n - 1] if n > 0 and n < len(items) else take(items, n)\n";
const JS: &str = "async function f(a, b) {\n  if (!a) return;\n  const r = await load(a);\n  if (a.length === b && r) {\n    save(b, a);\n    done();\n  }\n}\n";
const RS: &str = "pub fn get(v: &[u8], i: usize) -> u8 {\n    if i >= v.len() {\n        return 0;\n    }\n    let i = clamp(i, v);\n    v[i..v.len() - 1].iter().sum()\n}\n";
const GO: &str = "package a\n\nfunc f(a []int, n int) int {\n\tif n < 0 || !ok(a) {\n\t\treturn 0\n\t}\n\tn = clamp(n, a)\n\treturn a[n-1]\n}\n";

/// A base with a README, and a head adding the four sources; returns (base, head).
fn change(repo: &TempRepo) -> (String, String) {
    repo.write("README.md", "A fixture.\n");
    let base = repo.commit("initial import");
    repo.write("src/pick.py", PY);
    repo.write("web/f.js", JS);
    repo.write("src/get.rs", RS);
    repo.write("go/f.go", GO);
    let head = repo.commit("add the four modules");
    (base, head)
}

async fn redline(server: Option<&ModelServer>, args: &[&str]) -> (i32, String, String) {
    let mut command = redline_command();
    command.arg("eval").args(args);
    if let Some(server) = server {
        command.args([
            "--provider",
            "openai",
            "--base-url",
            &server.base_url(),
            "--model",
            "test-model",
            "--strategy",
            "react",
        ]);
    }
    let output = command
        .env("REDLINE_API_KEY", KEY)
        .output()
        .await
        .expect("run redline eval");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn submit(findings: Vec<Value>) -> Reply {
    Reply::tool(
        "c1",
        "submit_review",
        json!({"findings": findings, "summary": "done"}),
    )
}

#[tokio::test]
async fn mutants_of_a_change_become_cases_on_added_lines_and_repeat_per_seed() {
    let repo = TempRepo::new();
    let (base, head) = change(&repo);
    let repo_arg = repo.path().display().to_string();
    let work = tempfile::tempdir().unwrap();
    let list = |seed: &'static str| {
        let repo_arg = repo_arg.clone();
        let (base, head) = (base.clone(), head.clone());
        async move {
            let args = [
                "--mutate",
                &repo_arg,
                "--base",
                &base,
                "--head",
                &head,
                "--mutants",
                "12",
                "--seed",
                seed,
                "--list",
                "--format",
                "json",
            ];
            let (code, stdout, stderr) = redline(None, &args).await;
            assert_eq!(code, 0, "{stderr}");
            serde_json::from_str::<Value>(&stdout).unwrap()
        }
    };
    let first = list("3").await;
    assert_eq!(first, list("3").await);
    assert_ne!(first, list("4").await);
    let mutants = first.as_array().unwrap();
    assert_eq!(mutants.len(), 12);
    // Every language got a mutant, and the kinds are spread.
    for path in ["src/pick.py", "web/f.js", "src/get.rs", "go/f.go"] {
        assert!(
            mutants.iter().any(|m| m["path"] == path),
            "{path}: {first:#}"
        );
    }
    let kinds: std::collections::BTreeSet<&str> = mutants
        .iter()
        .map(|m| m["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.len() >= 6, "{kinds:?}");
    // Listing wrote nothing.
    assert!(
        repo.git()
            .references_glob("refs/redline-eval/*")
            .unwrap()
            .next()
            .is_none()
    );

    // Reviewed: one case per mutant, each on its own commit, the user's branch untouched.
    let cases_file = work.path().join("cases.jsonl");
    let server = ModelServer::start_with(Wire::OpenAi, |_, _| submit(vec![])).await;
    let args = [
        "--mutate",
        &repo_arg,
        "--base",
        &base,
        "--head",
        &head,
        "--mutants",
        "4",
        "--seed",
        "3",
        "--write-cases",
        &cases_file.display().to_string(),
        "--events-dir",
        &work.path().join("events").display().to_string(),
        "--format",
        "json",
    ];
    let (code, stdout, stderr) = redline(Some(&server), &args).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("4 mutants from"), "{stderr}");
    assert_eq!(repo.head(), head);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["pairs"][0]["bug_cases"], 4);
    assert_eq!(report["pairs"][0]["expected_total"], 4);
    let cases: Vec<Value> = std::fs::read_to_string(&cases_file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(cases.len(), 4);
    for (case, mutant) in cases.iter().zip(mutants) {
        assert_eq!(case["base"], base.as_str());
        let expected = &case["expected"][0];
        assert_eq!(expected["path"], mutant["path"]);
        assert_eq!(expected["bug"], case["id"]);
        assert!(!expected["description"].as_str().unwrap().is_empty());
        let commit = repo
            .git()
            .find_commit(git2::Oid::from_str(case["head"].as_str().unwrap()).unwrap())
            .unwrap();
        assert_eq!(commit.parent_id(0).unwrap().to_string(), base);
        let message = commit.message().unwrap();
        assert!(
            !message.contains(mutant["path"].as_str().unwrap()),
            "{message}"
        );
    }
    // The description (the answer) never reaches the reviewer.
    for request in server.requests() {
        let body = request.body.to_string();
        for case in &cases {
            let description = case["expected"][0]["description"].as_str().unwrap();
            assert!(!body.contains(description), "{description}");
        }
    }
}

#[tokio::test]
async fn mutate_flags_are_checked() {
    let repo = TempRepo::new();
    let (base, _) = change(&repo);
    let repo_arg = repo.path().display().to_string();
    let (code, _, stderr) = redline(None, &["--mutate", &repo_arg, "--base", &base]).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--head"), "{stderr}");
    let args = [
        "--mutate",
        &repo_arg,
        "--base",
        &base,
        "--head",
        "no-such-rev",
        "--list",
    ];
    let (code, _, stderr) = redline(None, &args).await;
    assert_ne!(code, 0);
    assert!(stderr.contains("no-such-rev"), "{stderr}");
}

/// A cases file with one bug at `src/pick.py:6` of the fixture's change.
fn one_bug_case(repo: &TempRepo, base: &str, head: &str, dir: &std::path::Path) -> String {
    let case = json!({
        "version": 1, "id": "planted", "repo": repo.path().display().to_string(),
        "base": base, "head": head, "clean": false,
        "expected": [{"path": "src/pick.py", "start_line": 6, "end_line": 6, "side": "RIGHT",
                      "description": "`n < len(items)` changed to `n <= len(items)`", "bug": "b1"}]
    });
    let path = dir.join("cases.jsonl");
    std::fs::write(&path, format!("{case}\n")).unwrap();
    path.display().to_string()
}

fn is_judge(request: &RecordedRequest) -> bool {
    request
        .system_text()
        .contains("You grade code review findings")
}

/// The reviewer reports one finding on the bug's line; the judge answers `verdict`.
async fn judged_run(
    cases: &str,
    dir: &std::path::Path,
    verdict: Option<bool>,
    format: &str,
) -> (Value, String, Vec<RecordedRequest>) {
    let server = ModelServer::start_with(Wire::OpenAi, move |request, _| {
        if is_judge(request) {
            Reply::text(json!({"match": verdict == Some(true)}).to_string())
        } else {
            submit(vec![
                json!({"path": "src/pick.py", "line": 6, "severity": "major",
                "category": "bug", "title": "Index past the end",
                "body": "`n <= len(items)` lets `items[n - 1]`... wait, it is fine."}),
            ])
        }
    })
    .await;
    let events = dir.join(format!("events-{verdict:?}"));
    let mut args = vec![
        "--cases".to_string(),
        cases.to_string(),
        "--events-dir".into(),
        events.display().to_string(),
        "--format".into(),
        format.into(),
    ];
    if verdict.is_some() {
        args.push("--judge".into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = redline(Some(&server), &args).await;
    assert_eq!(code, 0, "{stderr}");
    let report = if format == "json" {
        serde_json::from_str(&stdout).unwrap()
    } else {
        Value::Null
    };
    (report, stdout, server.requests())
}

#[tokio::test]
async fn a_judge_saying_no_lowers_judged_recall_and_proximity_recall_stays() {
    let repo = TempRepo::new();
    let (base, head) = change(&repo);
    let work = tempfile::tempdir().unwrap();
    let cases = one_bug_case(&repo, &base, &head, work.path());
    let (plain, _, requests) = judged_run(&cases, work.path(), None, "json").await;
    assert!(requests.iter().all(|r| !is_judge(r)));
    assert!(plain["pairs"][0]["judged_recall"].is_null());
    let (yes, _, _) = judged_run(&cases, work.path(), Some(true), "json").await;
    let (no, _, requests) = judged_run(&cases, work.path(), Some(false), "json").await;
    for report in [&plain, &yes, &no] {
        assert_eq!(report["pairs"][0]["expected_recall"], 1.0, "{report:#}");
        assert_eq!(report["pairs"][0]["recall"], 1.0);
    }
    assert_eq!(yes["pairs"][0]["judged_recall"], 1.0, "{yes:#}");
    assert_eq!(no["pairs"][0]["judged_recall"], 0.0, "{no:#}");
    assert_eq!(no["pairs"][0]["judged_caught"], 0);
    assert_eq!(no["judge_model"], "test-model");
    // One call for the one near finding; it saw the description and the finding.
    let judged: Vec<&RecordedRequest> = requests.iter().filter(|r| is_judge(r)).collect();
    assert_eq!(judged.len(), 1);
    let body = judged[0].body.to_string();
    assert!(body.contains("n <= len(items)") && body.contains("Index past the end"));
    // The judge's tokens are its own: the pair's tokens are those of the review alone.
    let judge = &no["pairs"][0]["judge"];
    assert_eq!(judge["calls"], 1);
    assert!(judge["tokens"].as_u64().unwrap() > 0);
    assert_eq!(no["pairs"][0]["tokens"], plain["pairs"][0]["tokens"]);
    assert_eq!(no["results"][0]["judge"]["caught"], 0);
    // The text report shows the judged column and the judge's own line.
    let (_, text, _) = judged_run(&cases, work.path(), Some(false), "text").await;
    assert!(
        text.contains("judged") && text.contains("0/1 0.0%"),
        "{text}"
    );
    assert!(text.contains("Judge test-model: 1 call"), "{text}");
}

#[tokio::test]
async fn the_html_report_is_self_contained_and_shows_each_pair() {
    let repo = TempRepo::new();
    let (base, head) = change(&repo);
    let work = tempfile::tempdir().unwrap();
    let cases = one_bug_case(&repo, &base, &head, work.path());
    let clean = json!({"version": 1, "id": "quiet", "repo": repo.path().display().to_string(),
                       "base": base, "head": head, "clean": true, "source": "commit <a> & \"b\""});
    let text = std::fs::read_to_string(&cases).unwrap();
    std::fs::write(&cases, format!("{text}{clean}\n")).unwrap();
    // The first model finds the bug (and flags the clean case twice); the second finds nothing.
    let server = ModelServer::start_with(Wire::OpenAi, |request, _| {
        if is_judge(request) {
            return Reply::text("{\"match\": true}");
        }
        let first = request.body["model"] == "test-model";
        let clean = request.body.to_string().contains("quiet");
        match (first, clean) {
            (true, _) => submit(vec![
                json!({"path": "src/pick.py", "line": 6, "severity": "major", "category": "bug",
                       "title": "Off by one <b>", "body": "`n <= len(items)` reads past the end."}),
                json!({"path": "src/pick.py", "line": 1, "severity": "minor", "category": "bug",
                       "title": "Name", "body": "Unclear."}),
            ]),
            (false, _) => submit(vec![]),
        }
    })
    .await;
    let output = work.path().join("report.html");
    let args = [
        "--cases",
        &cases,
        "--judge",
        "--format",
        "html",
        "--output",
        &output.display().to_string(),
        "--events-dir",
        &work.path().join("events").display().to_string(),
        "--model",
        "second-model",
    ];
    let (code, _, stderr) = redline(Some(&server), &args).await;
    assert_eq!(code, 0, "{stderr}");
    let html = std::fs::read_to_string(&output).unwrap();
    assert!(
        html.starts_with("<!DOCTYPE html>") && html.contains("<svg"),
        "{html}"
    );
    for forbidden in [
        "http://", "https://", "<script", " src=", " href=", "@import", "url(",
    ] {
        assert!(!html.contains(forbidden), "{forbidden} in {html}");
    }
    // Each pair, its recall (proximity and judged), findings per clean case and the size chart.
    for figure in [
        "react/test-model",
        "react/second-model",
        "bug recall (proximity)",
        "judged recall",
        "100.0% (1/1)",
        "0.0% (0/1)",
        "Findings per clean case",
        "2.00",
        "Cost per case",
        "Bug recall by change size",
        "≤ 60 lines",
        "commit &lt;a&gt; &amp; &quot;b&quot;",
    ] {
        assert!(html.contains(figure), "{figure} not in {html}");
    }
    assert!(!html.contains("<a>"));
}
