//! `redline eval` with verification on and off (`--no-verify`): precision, recall and false
//! findings per clean case as posted; per case the findings posted, dropped (with reasons)
//! and merged, and the tokens split between the review and its verifier; the baseline
//! comparison shows each; `--judge` grades the findings that match no expected bug (after
//! reading the repository) and reports the actionable share.

use serde_json::{Value, json};

use super::support::{
    FABRICATED, REAL, fabricated_finding, real_finding, submit, verdicts_dropping,
};
use crate::action_cli::pull_request_repo;
use crate::common::cli::{KEY, redline_command};
use crate::common::model_server::{ModelServer, RecordedRequest, Reply, Wire};

const NIT: &str = "Name the parameters numerator and denominator";

/// The grader's system prompt begins so.
fn is_grader(request: &RecordedRequest) -> bool {
    request
        .system_text()
        .starts_with("You grade the findings of a code review")
}

fn is_match_judge(request: &RecordedRequest) -> bool {
    request
        .system_text()
        .starts_with("You grade code review findings against")
}

/// The grader reads the file first, then grades: the nit and the fabricated finding are
/// not worth posting, anything else a defect.
fn grade(request: &RecordedRequest) -> Reply {
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !messages.iter().any(|m| m["role"] == "tool") {
        return Reply::tool("r", "read_file", json!({"path": "src/calc.rs"}));
    }
    let user = request.user_text();
    let mut lines = Vec::new();
    let mut id = None;
    for line in user.lines() {
        if let Some(rest) = line.strip_prefix("## ") {
            id = rest.split_once(" · ").map(|(id, _)| id.to_string());
        } else if let (Some(title), Some(current)) = (line.strip_prefix("Title: "), id.take()) {
            let grade = match title.contains(NIT) || title.contains(FABRICATED) {
                true => "not worth posting",
                false => "defect",
            };
            lines.push(format!("{current}: {grade} - graded"));
        }
    }
    Reply::text(lines.join("\n"))
}

fn script(request: &RecordedRequest, _: usize) -> Reply {
    if request.is_verifier() {
        return verdicts_dropping(request, FABRICATED);
    }
    if is_grader(request) {
        return grade(request);
    }
    if is_match_judge(request) {
        return Reply::text("{\"match\": true}");
    }
    let nit = json!({"path": "src/calc.rs", "line": 1, "severity": "nit", "category": "style",
                     "title": NIT, "body": "Clearer names."});
    match request.body.to_string().contains("a / b") {
        // Far enough from the bug's line (7) not to count as on it.
        true => submit(vec![real_finding(7), fabricated_finding(2)]),
        false => submit(vec![nit]),
    }
}

async fn eval(server: &ModelServer, args: &[&str]) -> Value {
    let output = redline_command()
        .arg("eval")
        .args(args)
        .args(["--provider", "openai", "--base-url", &server.base_url()])
        .args([
            "--model",
            "test-model",
            "--strategy",
            "react",
            "--format",
            "json",
        ])
        .args(["--judge", "--quiet"])
        .env("REDLINE_API_KEY", KEY)
        .output()
        .await
        .expect("run redline eval");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).expect("a JSON report")
}

fn row<'a>(report: &'a Value, case: &str) -> &'a Value {
    report["results"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["case"] == case))
        .unwrap_or_else(|| panic!("no row {case}: {report}"))
}

fn close(value: &Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|v| (v - expected).abs() < 1e-9)
}

fn titles(findings: &Value) -> Vec<String> {
    findings
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["title"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn eval_scores_what_is_posted_and_reports_what_verification_dropped() {
    // The bug case: the Action's change (ratio divides by b at line 7). The clean case:
    // the same file with a comment added on top.
    let pr = pull_request_repo();
    pr.repo.write(
        "src/calc.rs",
        format!("// Integer helpers.\n{}", crate::action_cli::HEAD),
    );
    let clean_head = pr.repo.commit("document calc");
    let work = tempfile::tempdir().expect("work");
    let cases = work.path().join("cases.jsonl");
    let repo = pr.repo.path().display().to_string();
    let lines = [
        json!({"version": 1, "id": "bug", "repo": repo, "base": pr.base, "head": pr.head,
               "expected": [{"path": "src/calc.rs", "start_line": 7, "end_line": 7,
                             "description": "divides by zero"}]}),
        json!({"version": 1, "id": "clean", "repo": repo, "base": pr.head, "head": clean_head,
               "clean": true}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&cases, text).expect("cases");
    let cases = cases.display().to_string();
    let server = ModelServer::start_with(Wire::OpenAi, script)
        .await
        .scripting_verifier();

    // Before: no verification.
    let before = eval(&server, &["--cases", &cases, "--no-verify"]).await;
    assert!(server.verifier_requests().is_empty());
    let bug = row(&before, "bug");
    assert_eq!(titles(&bug["screening"]["posted"]).len(), 2, "{bug}");
    assert_eq!(bug["screening"]["verified"], false);
    let p = &before["pairs"][0];
    assert!(close(&p["precision"], 1.0 / 3.0), "{p}");
    assert!(close(&p["false_findings_per_clean_case"], 1.0), "{p}");
    assert!(close(&p["recall"], 1.0), "{p}");
    // Graded: the fabricated finding and the nit are not worth posting.
    assert!(close(&p["actionable_share"], 1.0 / 3.0), "{p}");
    assert!(close(&p["not_worth_posting_per_clean_case"], 1.0), "{p}");
    let baseline = work.path().join("before.json");
    std::fs::write(&baseline, before.to_string()).expect("baseline");

    // After: the verifier drops the fabricated finding.
    let baseline_arg = baseline.display().to_string();
    let after = eval(&server, &["--cases", &cases, "--baseline", &baseline_arg]).await;
    assert_eq!(server.verifier_requests().len(), 2, "one per review");
    let bug = row(&after, "bug");
    let screening = &bug["screening"];
    assert_eq!(titles(&screening["posted"]), [REAL], "{bug}");
    assert_eq!(titles(&screening["dropped"]), [FABRICATED], "{bug}");
    assert!(screening["dropped"][0]["reason"].as_str().is_some());
    assert_eq!(screening["merged"], json!([]));
    assert_eq!(screening["dropped_true_positives"], 0);
    assert_eq!(screening["bugs_lost"], 0);
    let (review, verifier) = (
        screening["review_tokens"].as_u64().unwrap_or(0),
        screening["verification_tokens"].as_u64().unwrap_or(0),
    );
    assert!(review > 0 && verifier > 0, "{screening}");
    assert_eq!(bug["tokens"].as_u64(), Some(review + verifier));
    let p = &after["pairs"][0];
    assert!(close(&p["precision"], 0.5), "{p}");
    assert!(close(&p["recall"], 1.0), "{p}");
    assert_eq!(
        (&p["dropped"], &p["dropped_true_positives"]),
        (&json!(1), &json!(0))
    );
    assert!(
        p["verification_share"].as_f64().is_some_and(|s| s > 0.0),
        "{p}"
    );
    assert!(close(&p["actionable_share"], 0.5), "{p}");
    // The grader read the repository at the case's head before grading.
    let graded_after_reading = server
        .requests()
        .iter()
        .filter(|r| is_grader(r))
        .any(|r| r.body["messages"].to_string().contains("pub fn ratio"));
    assert!(graded_after_reading);
    let grades = &row(&after, "clean")["grades"]["findings"];
    assert_eq!(grades[0]["grade"], "not_worth_posting", "{grades}");

    // The baseline comparison shows each figure.
    let figures = after["baseline"]["pairs"][0]["figures"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let figure = |name: &str| {
        figures
            .iter()
            .find(|f| f["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no figure {name}: {figures:?}"))
    };
    assert!(close(&figure("precision")["change"], 0.5 - 1.0 / 3.0));
    assert!(close(&figure("dropped")["change"], 1.0));
    assert!(close(&figure("dropped_true_positives")["after"], 0.0));
    assert!(close(
        &figure("verification_tokens_per_case")["before"],
        0.0
    ));
    assert!(
        figure("verification_tokens_per_case")["after"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.0
    );
    assert!(close(
        &figure("actionable_share")["change"],
        0.5 - 1.0 / 3.0
    ));
    assert!(close(
        &figure("false_findings_per_clean_case")["change"],
        0.0
    ));
}
