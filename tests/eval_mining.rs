//! `redline eval --mine`: which "fixes" become cases (a formatting-only and a
//! docstring-only fix are skipped with their reason, a changelog-only one too), how
//! they rank (a fix with a test first), `--list` without a model or key, and what a
//! mined case is: the fix's source files put back, its test and changelog left as the
//! fix made them, under a neutral message that the model never sees beside the fix's.

use serde_json::{Value, json};

use crate::common::cli::{KEY, redline_command};
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, RecordedRequest, Reply};

const CALC: &str = "\"\"\"Arithmetic helpers.\"\"\"\n\n\ndef ratio(a,b):\n    '''Divide a by b.'''\n    return a / b\n\n\ndef clamp(value, low, high):\n    \"\"\"Clamp value to [low, high].\"\"\"\n    return max(low, min(value, high - 1))\n";
const TEST: &str = "from calc import ratio\n\n\ndef test_ratio():\n    assert ratio(4, 2) == 2\n";
/// Words of the fix's message: none may reach the model.
const SECRET_WORDS: [&str; 3] = ["zebracorn", "quokka", "wombat"];

/// The fixture's commits, by role.
struct History {
    repo: TempRepo,
    format: String,
    docstring: String,
    fix: String,
    changelog: String,
    untested: String,
}

fn short(id: &str) -> &str {
    &id[..7]
}

fn history() -> History {
    let repo = TempRepo::new();
    repo.write("src/calc.py", CALC);
    repo.write("tests/test_calc.py", TEST);
    repo.write("CHANGELOG.md", "# Changes\n");
    repo.commit("initial import");
    // Same tokens: spaces, blank lines, quote style.
    let formatted = CALC
        .replace("def ratio(a,b):", "def ratio(a, b):")
        .replace("'''Divide a by b.'''", "\"\"\"Divide a by b.\"\"\"");
    repo.write("src/calc.py", &formatted);
    let format = repo.commit("Fix format of calc.py");
    let documented = formatted.replace("Divide a by b.", "Divide a by b (b is not zero).");
    repo.write("src/calc.py", &documented);
    let docstring = repo.commit("Fix the ratio docstring");
    let guarded = documented.replace(
        "    return a / b\n",
        "    if b == 0:\n        return 0\n    return a / b\n",
    );
    repo.write("src/calc.py", &guarded);
    repo.write(
        "tests/test_calc.py",
        format!("{TEST}\n\ndef test_ratio_by_zero():\n    assert ratio(1, 0) == 0\n"),
    );
    repo.write("CHANGELOG.md", "# Changes\n\n- ratio: a new case.\n");
    let fix = repo.commit(
        "Fix the zebracorn crash on a quokka divisor\n\nThe wombat reported it; this fixes it.\n",
    );
    repo.write("CHANGELOG.md", "# Changes\n\n- ratio: one more case.\n");
    let changelog = repo.commit("Fix changelog wording");
    repo.write("src/calc.py", guarded.replace("high - 1", "high"));
    let untested = repo.commit("Fix off-by-one in clamp");
    History {
        repo,
        format,
        docstring,
        fix,
        changelog,
        untested,
    }
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn redline(args: &[&str]) -> Output {
    let output = redline_command()
        .args(args)
        .output()
        .await
        .expect("run redline");
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn private_refs(repo: &TempRepo) -> usize {
    repo.git()
        .references_glob("refs/redline-eval/*")
        .unwrap()
        .count()
}

#[tokio::test]
async fn list_needs_no_key_and_says_why_each_fix_is_kept_or_skipped() {
    let h = history();
    let repo = h.repo.path().display().to_string();
    // No key, no provider, no model: the environment is empty.
    let run = redline(&["eval", "--mine", &repo, "--list"]).await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let line = |id: &str| -> String {
        run.stdout
            .lines()
            .find(|l| l.starts_with(short(id)))
            .unwrap_or_else(|| panic!("no line for {id}: {}", run.stdout))
            .to_string()
    };
    for (id, verdict, subject) in [
        (
            &h.format,
            "skipped: formatting only",
            "Fix format of calc.py",
        ),
        (
            &h.docstring,
            "skipped: comments or docstrings only",
            "Fix the ratio docstring",
        ),
        (
            &h.fix,
            "kept, with a test",
            "Fix the zebracorn crash on a quokka divisor",
        ),
        (
            &h.changelog,
            "skipped: no source change: only changelogs",
            "Fix changelog wording",
        ),
        (&h.untested, "kept ", "Fix off-by-one in clamp"),
    ] {
        let line = line(id);
        assert!(line.contains(verdict) && line.ends_with(subject), "{line}");
    }
    assert!(
        run.stderr
            .contains("5 candidates in 6 commits: 2 kept (1 with a test), 3 skipped"),
        "{}",
        run.stderr
    );

    // JSON, with one case: the tested fix ranks before the newer untested one, and
    // the walk stops there (nothing older can rank before it).
    let run = redline(&[
        "eval", "--mine", &repo, "--list", "--limit", "1", "--format", "json",
    ])
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let listed: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    let commits: Vec<&str> = listed
        .iter()
        .map(|e| e["commit"].as_str().unwrap())
        .collect();
    assert_eq!(commits, [&h.untested, &h.changelog, &h.fix]);
    let entry = |id: &str| listed.iter().find(|e| e["commit"] == id).unwrap().clone();
    let fix = entry(&h.fix);
    assert_eq!(
        (&fix["kept"], &fix["with_test"], &fix["skip"]),
        (&json!(true), &json!(true), &Value::Null)
    );
    assert_eq!(fix["case"], format!("fix-{}", short(&h.fix)));
    assert_eq!(fix["sources"], json!(["src/calc.py"]));
    assert_eq!(entry(&h.untested)["skip"], "over_limit");
    assert_eq!(entry(&h.changelog)["skip"], "no_source");

    let run = redline(&[
        "eval",
        "--mine",
        &repo,
        "--list",
        "--require-test",
        "--format",
        "json",
    ])
    .await;
    let listed: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(listed.len(), 5);
    let entry = |id: &str| listed.iter().find(|e| e["commit"] == id).unwrap().clone();
    assert_eq!(
        entry(&h.untested)["reason"],
        "no test change (--require-test)"
    );
    assert_eq!(entry(&h.format)["skip"], "formatting");
    assert_eq!(entry(&h.format)["reason"], "formatting only");
    assert_eq!(entry(&h.docstring)["skip"], "comments");
    assert_eq!(entry(&h.fix)["kept"], true);
    // Listing writes nothing to the repository.
    assert_eq!(private_refs(&h.repo), 0);
}

/// Submits one finding on the line the revert left unguarded.
fn catch_it(_: &RecordedRequest, _: usize) -> Reply {
    let finding = json!({"path": "src/calc.py", "line": 6, "severity": "major",
                         "category": "bug", "title": "Division by zero", "body": "b may be 0."});
    Reply::tool(
        "c1",
        "submit_review",
        json!({"findings": [finding], "summary": "done"}),
    )
}

#[tokio::test]
async fn a_mined_case_puts_back_source_only_and_never_shows_the_fix_message() {
    let h = history();
    let repo = h.repo.path().display().to_string();
    let work = tempfile::tempdir().unwrap();
    let cases_file = work.path().join("cases.jsonl");
    let server = ModelServer::start_with(crate::common::model_server::Wire::OpenAi, catch_it).await;
    let base_url = server.base_url();
    let run = redline_command()
        .args(["eval", "--mine", &repo, "--limit", "1", "--format", "json"])
        .args(["--write-cases", &cases_file.display().to_string()])
        .args([
            "--events-dir",
            &work.path().join("ev").display().to_string(),
        ])
        .args(["--provider", "openai", "--base-url", &base_url])
        .args(["--model", "test-model", "--strategy", "react"])
        .env("REDLINE_API_KEY", KEY)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    let case: Value =
        serde_json::from_str(std::fs::read_to_string(&cases_file).unwrap().trim()).unwrap();
    assert_eq!(case["base"], h.fix.as_str());
    assert_eq!(case["title"], "Change src/calc.py");
    assert!(case.get("body").is_none(), "{case}");
    let ranges = case["expected"].as_array().unwrap();
    assert!(!ranges.is_empty());
    assert!(ranges.iter().all(|r| r["bug"] == short(&h.fix)), "{case}");
    check_source_only_revert(&h, case["head"].as_str().unwrap());

    let requests = server.requests();
    assert!(!requests.is_empty());
    for request in &requests {
        let body = request.body.to_string();
        for word in SECRET_WORDS.iter().chain(&["Revert", "reverts commit"]) {
            assert!(!body.contains(word), "`{word}` reached the model: {body}");
        }
    }
    // The change under review is there: the guard the revert removes.
    assert!(
        requests
            .iter()
            .any(|r| r.body.to_string().contains("if b == 0:")),
        "the diff never reached the model"
    );

    let report: Value = serde_json::from_str(&stdout).unwrap();
    let row = &report["results"][0];
    assert_eq!(
        (&row["expected_total"], &row["expected_caught"]),
        (&json!(1), &json!(1)),
        "{row}"
    );
    assert_eq!(row["expected_recall"], 1.0);
    let pair = &report["pairs"][0];
    assert_eq!(
        (&pair["expected_total"], &pair["expected_caught"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(pair["expected_recall"], 1.0);
}

/// The case's head: a child of the fix with a neutral message, whose source file is as
/// before the fix and whose test and changelog are the fix's.
fn check_source_only_revert(h: &History, head: &str) {
    let git = h.repo.git();
    let head = git.find_commit(git2::Oid::from_str(head).unwrap()).unwrap();
    assert_eq!(head.parent_id(0).unwrap().to_string(), h.fix);
    assert_eq!(head.message().unwrap(), "Change src/calc.py\n");
    let fix = git
        .find_commit(git2::Oid::from_str(&h.fix).unwrap())
        .unwrap();
    let before = fix.parent(0).unwrap();
    let blob = |commit: &git2::Commit<'_>, path: &str| {
        commit
            .tree()
            .unwrap()
            .get_path(std::path::Path::new(path))
            .unwrap()
            .id()
    };
    assert_eq!(blob(&head, "src/calc.py"), blob(&before, "src/calc.py"));
    for kept in ["tests/test_calc.py", "CHANGELOG.md"] {
        assert_eq!(blob(&head, kept), blob(&fix, kept), "{kept}");
        assert_ne!(blob(&before, kept), blob(&fix, kept), "{kept}");
    }
}
