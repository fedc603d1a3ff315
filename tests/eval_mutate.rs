//! `redline eval --mutate`: bugs planted one at a time in a change of a fixture
//! repository (Python, JavaScript, Rust and Go), reviewed by the scripted model server;
//! `--judge` asks the same server whether a near finding describes the bug; `--format
//! html` draws the report.

use serde_json::{Value, json};

use crate::common::cli::{KEY, redline_command};
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, Reply, Wire};

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
