//! A fabricated finding dropped, with its reason, in every entry point: `redline review`
//! (both wires, native and text tool calling), `redline action`, the App's job runner and
//! `redline gitlab`; the real finding beside it is posted as before.

use serde_json::{Value, json};

use super::support::{
    DROP_REASON, FABRICATED, REAL, fabricated_finding, mentions_fabricated, real_finding,
    reviewer_and_verifier, submit,
};
use crate::action_cli::{pull_request_event, pull_request_repo, run_action};
use crate::common::cli;
use crate::common::github_mock::GitHubMock;
use crate::common::gitlab_mock::GitLabMock;
use crate::common::model_server::{ModelServer, RecordedRequest, Reply, Wire};

/// The names of the tools a request offers, on either wire.
fn offered_tools(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().or(t["name"].as_str()))
        .map(str::to_string)
        .collect()
}

fn titles(findings: &Value) -> Vec<String> {
    findings
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["title"].as_str().map(str::to_string))
        .collect()
}

async fn dropped_in_review(wire: Wire, provider: &str) {
    let pr = pull_request_repo();
    let review = submit(vec![real_finding(7), fabricated_finding(6)]);
    let server = ModelServer::start_with(wire, reviewer_and_verifier(review))
        .await
        .scripting_verifier();
    let run = cli::review(
        pr.repo.path(),
        &server.base_url(),
        provider,
        &["--format", "json"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(titles(&out["findings"]), [REAL], "{out}");
    assert!(out["findings"][0].get("unverified").is_none(), "{out}");
    let dropped = out["dropped"].as_array().expect("dropped");
    assert_eq!(dropped.len(), 1, "{out}");
    assert_eq!(dropped[0]["title"], FABRICATED);
    assert_eq!(dropped[0]["line"], 6);
    assert_eq!(dropped[0]["reason"], DROP_REASON);
    let verification = &out["stats"]["verification"];
    assert_eq!(
        (
            &verification["kept"],
            &verification["dropped"],
            &verification["unverified"]
        ),
        (&json!(1), &json!(1), &json!(0)),
        "{out}"
    );
    assert_eq!(verification["model_calls"], 1);
    assert!(verification["prompt_tokens"].as_u64().unwrap_or(0) > 0);

    // One verifier request: recognisable by its first line, with read_file and search
    // only, the code the findings point at and what the author says the change does.
    let verifier = server.verifier_requests();
    assert_eq!(verifier.len(), 1);
    let first_line = verifier[0].system_prompt();
    let first_line = first_line.lines().next().unwrap_or_default();
    assert!(
        first_line.starts_with("You verify review findings"),
        "{first_line}"
    );
    assert_eq!(
        offered_tools(&verifier[0]),
        ["read_file", "search", "submit_verdicts"]
    );
    let message = verifier[0].body["messages"].to_string();
    for expected in ["a / b", "pub fn ratio", "add ratio", REAL, FABRICATED] {
        assert!(message.contains(expected), "{expected} missing: {message}");
    }
    let verdicts: Vec<Value> = run
        .events()
        .into_iter()
        .filter(|e| e["type"] == "verdict")
        .collect();
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    assert!(
        verdicts.iter().any(|v| v["verdict"] == "drop"
            && v["title"] == FABRICATED
            && v["reason"] == DROP_REASON)
    );
    run.assert_no_key();

    // Text says how many were dropped and shows none of them.
    let text = cli::review(pr.repo.path(), &server.base_url(), provider, &[]).await;
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.contains("Verification: 1 kept, 1 dropped"),
        "{}",
        text.stdout
    );
    assert!(
        !mentions_fabricated([text.stdout.as_str()]),
        "{}",
        text.stdout
    );
}

#[tokio::test]
async fn a_fabricated_finding_is_dropped_in_review_through_openai() {
    dropped_in_review(Wire::OpenAi, "openai").await;
}

#[tokio::test]
async fn a_fabricated_finding_is_dropped_in_review_through_anthropic() {
    dropped_in_review(Wire::Anthropic, "anthropic").await;
}

/// In text mode the verifier answers in plain lines (`F2: drop — reason`), leniently read.
#[tokio::test]
async fn plain_verdict_lines_drop_a_finding_in_text_mode() {
    let pr = pull_request_repo();
    let findings = json!({"findings": [real_finding(7), fabricated_finding(6)], "summary": "s"});
    let review = Reply::text(format!(
        "Thought: done.\nAction: submit_review\nAction Input: {findings}"
    ));
    let server = ModelServer::start_with(Wire::OpenAi, move |request, _| {
        if !request.is_verifier() {
            return review.clone();
        }
        let lines: Vec<String> = super::support::listed(request)
            .into_iter()
            .map(|(id, title)| match title.contains(FABRICATED) {
                true => format!("**{id}** — DROP — {DROP_REASON}"),
                false => format!("{id}: Keep - real"),
            })
            .collect();
        Reply::text(lines.join("\n"))
    })
    .await
    .scripting_verifier();
    let run = cli::review(
        pr.repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--tool-mode", "text"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(titles(&out["findings"]), [REAL], "{out}");
    assert_eq!(out["dropped"][0]["reason"], DROP_REASON, "{out}");
    let verifier = server.verifier_requests();
    assert_eq!(verifier.len(), 1);
    assert!(
        verifier[0].body.get("tools").is_none(),
        "text mode: no native tools"
    );
    assert!(verifier[0].system_text().contains("submit_verdicts"));
}

#[tokio::test]
async fn a_fabricated_finding_is_dropped_in_the_action() {
    let pr = pull_request_repo();
    let gh = GitHubMock::start().await;
    let review = submit(vec![real_finding(7), fabricated_finding(6)]);
    let model = ModelServer::start_with(Wire::OpenAi, reviewer_and_verifier(review))
        .await
        .scripting_verifier();
    let event = pull_request_event("pull_request/opened.payload.json", &pr.base, &pr.head);
    let run = run_action(pr.repo.path(), "pull_request", &event, &gh, &model).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(model.verifier_requests().len(), 1);
    let reviews = gh.reviews();
    assert_eq!(reviews.len(), 1);
    let comments = reviews[0]["comments"].as_array().expect("comments");
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert_eq!(comments[0]["line"], 7);
    let summaries: Vec<String> = gh
        .issue_comments()
        .iter()
        .map(|c| c["body"].as_str().unwrap_or_default().to_string())
        .collect();
    let review_text = reviews[0].to_string();
    let sarif = run.sarif.as_ref().map(Value::to_string).unwrap_or_default();
    assert!(
        !mentions_fabricated(summaries.iter().map(String::as_str).chain([
            review_text.as_str(),
            sarif.as_str(),
            run.summary.as_str()
        ])),
        "posted: {summaries:?} {review_text} {sarif} {}",
        run.summary
    );
    assert!(sarif.contains(REAL), "{sarif}");
    assert!(run.outputs.contains("findings=1\n"), "{}", run.outputs);
    assert!(
        run.summary.contains("1 dropped"),
        "the job summary says so: {}",
        run.summary
    );
}

#[tokio::test]
async fn a_fabricated_finding_is_dropped_in_the_app() {
    let (repo, base, head) = crate::settings::support::pull_request_repo(None);
    let gh = GitHubMock::start().await;
    let review = submit(vec![real_finding(6), fabricated_finding(10)]);
    let model = ModelServer::start_with(Wire::OpenAi, reviewer_and_verifier(review))
        .await
        .scripting_verifier();
    crate::settings::support::run_app(repo.path(), &base, &head, &gh, &model, 1).await;
    assert_eq!(model.verifier_requests().len(), 1);
    let reviews = gh.reviews();
    assert_eq!(reviews.len(), 1);
    let comments = reviews[0]["comments"].as_array().expect("comments");
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert_eq!(comments[0]["line"], 6);
    let review_text = reviews[0].to_string();
    let summaries: Vec<String> = gh
        .issue_comments()
        .iter()
        .map(|c| c["body"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(summaries.len(), 1);
    assert!(
        !mentions_fabricated(
            summaries
                .iter()
                .map(String::as_str)
                .chain([review_text.as_str()])
        ),
        "{summaries:?} {review_text}"
    );
    assert!(
        summaries[0].contains("verification dropped 1 finding"),
        "{}",
        summaries[0]
    );
}

#[tokio::test]
async fn a_fabricated_finding_is_dropped_in_gitlab_ci() {
    use crate::gitlab_cli::{IID, PROJECT, TOKEN, merge_request, run_gitlab};
    let pr = pull_request_repo();
    let gl = GitLabMock::start(TOKEN).await;
    merge_request(&gl, &pr.base, &pr.head, 8);
    let review = submit(vec![real_finding(7), fabricated_finding(6)]);
    let model = ModelServer::start_with(Wire::OpenAi, reviewer_and_verifier(review))
        .await
        .scripting_verifier();
    let run = run_gitlab(pr.repo.path(), &pr.base, &pr.head, &gl, &model, Some(TOKEN)).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(model.verifier_requests().len(), 1);
    let discussions = gl.diff_discussions(PROJECT, IID);
    assert_eq!(discussions.len(), 1, "{discussions:#?}");
    let notes: Vec<String> = gl
        .discussions(PROJECT, IID)
        .iter()
        .flat_map(|d| d["notes"].as_array().cloned().unwrap_or_default())
        .map(|n| n["body"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(notes.iter().any(|n| n.contains(REAL)), "{notes:?}");
    let quality = run.code_quality.expect("a Code Quality report");
    let entries = quality.as_array().expect("entries");
    assert_eq!(entries.len(), 1, "{quality}");
    assert!(
        !mentions_fabricated(
            notes
                .iter()
                .map(String::as_str)
                .chain([quality.to_string().as_str()])
        ),
        "{notes:?} {quality}"
    );
}
