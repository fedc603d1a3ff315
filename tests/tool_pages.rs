//! Tool results are never cut in the middle: very long lines are elided first,
//! results are pages of whole lines (whole hunks for `diff`), and what does not
//! fit is named at the end with the call that shows it.

use serde_json::json;

use redline::context::DEFAULT_MAX_OBSERVATION_TOKENS;
use redline::llm::tokens::{Encoding, TokenCounter};
use redline::repo::{load_change, resolve_range};
use redline::tools::{Observation, ToolRegistry, Workspace};

use crate::common::git::TempRepo;

fn workspace(repo: &TempRepo) -> Workspace {
    let range = resolve_range(repo.path(), Some("main"), "HEAD").expect("range");
    let (view, changes) = load_change(repo.path(), &range, false).expect("change");
    Workspace::new(view, changes)
}

async fn call(ws: &Workspace, tool: &str, args: serde_json::Value) -> Observation {
    let out = ToolRegistry::repository_tools()
        .dispatch(tool, &args.to_string(), ws)
        .await
        .expect("not fatal");
    assert!(!out.is_error, "{}", out.content);
    // No later stage cuts it either: it is within the pruner's cap in every encoding.
    for encoding in [Encoding::O200kBase, Encoding::Approximate] {
        let tokens = TokenCounter::new(encoding).count(&out.content);
        assert!(tokens <= DEFAULT_MAX_OBSERVATION_TOKENS, "{tokens}");
    }
    assert!(
        !out.content.contains("[output truncated"),
        "{}",
        out.content
    );
    out
}

/// A module with a minified 36,000-character line, then the function under review.
fn module_with_a_long_line() -> String {
    let mut text: String = (1..=100).map(|i| format!("const v{i} = {i};\n")).collect();
    text.push_str(&format!("const table = \"{}\";\n", "x".repeat(36_000)));
    text.push_str(
        &(102..=115)
            .map(|i| format!("const w{i} = {i};\n"))
            .collect::<String>(),
    );
    text.push_str("function underReview(a, b) {\n  return a - b;\n}\n");
    text.push_str("const after = 1;\nconst end = 2;\n");
    text
}

#[tokio::test]
async fn a_read_holding_a_very_long_line_returns_every_line_and_the_function_after_it() {
    let repo = TempRepo::new();
    repo.write("web/app.js", module_with_a_long_line());
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "web/app.js",
        module_with_a_long_line().replace("a - b", "a + b"),
    );
    repo.commit("change");
    let ws = workspace(&repo);
    let out = call(
        &ws,
        "read_file",
        json!({"path": "web/app.js", "start_line": 1, "end_line": 120}),
    )
    .await;
    let text = out.content;
    assert!(
        text.starts_with("web/app.js (lines 1-120 of 120)\n"),
        "{text}"
    );
    assert!(
        text.contains("  101 | [a line of 36,017 characters, not shown]\n"),
        "{text}"
    );
    assert!(
        text.contains("  116 | function underReview(a, b) {\n  117 |   return a + b;\n  118 | }\n"),
        "{text}"
    );
    assert!(text.contains("  120 | const end = 2;\n"), "{text}");
    assert!(!text.contains("not shown (size limit)"), "{text}");
}

#[tokio::test]
async fn a_read_past_the_room_names_the_missing_lines_and_the_call_that_shows_them() {
    let repo = TempRepo::new();
    let line =
        |i: usize| format!("    total_{i} = compute_weighted_total(records, weights, {i})\n");
    repo.write("big.py", (1..=1_000).map(line).collect::<String>());
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.commit("nothing");
    let ws = workspace(&repo);
    let out = call(
        &ws,
        "read_file",
        json!({"path": "big.py", "start_line": 1, "end_line": 400}),
    )
    .await;
    let text = &out.content;
    let last_line = text.lines().rev().nth(1).expect("a line before the note");
    let (number, _) = last_line.split_once(" | ").expect("a numbered line");
    let last: usize = number.trim().parse().expect("a number");
    assert!((100..400).contains(&last), "{text}");
    assert!(
        last_line.ends_with(&line(last).trim_end_matches('\n').to_string()),
        "{last_line}"
    );
    let note = format!(
        "[lines {}-400 not shown (size limit): call read_file with start_line {} and end_line 400]\n",
        last + 1,
        last + 1
    );
    assert!(text.ends_with(&note), "{text}");
    assert!(
        text.starts_with(&format!("big.py (lines 1-{last} of 1000)\n")),
        "{text}"
    );
    // The call the note names shows the rest.
    let rest = call(
        &ws,
        "read_file",
        json!({"path": "big.py", "start_line": last + 1, "end_line": 400}),
    )
    .await;
    assert!(
        rest.content.contains(&format!("{:>5} | ", last + 1)),
        "{}",
        rest.content
    );
}

/// Twelve hunks of about 3,900 characters each: a raw diff of about 45,000.
fn many_hunks() -> (String, String) {
    let block = |h: usize, op: &str| -> String {
        (0..30)
            .map(|i| {
                format!("    value_{h}_{i} = weighted(records, weights, {i}) {op} offset_{h}\n")
            })
            .collect()
    };
    let gap = |h: usize| -> String { (0..10).map(|i| format!("# gap {h} {i}\n")).collect() };
    let base: String = (0..12).map(|h| block(h, "+") + &gap(h)).collect();
    let head: String = (0..12).map(|h| block(h, "-") + &gap(h)).collect();
    (base, head)
}

#[tokio::test]
async fn a_raw_diff_is_paged_by_whole_hunks_and_names_the_hunks_left() {
    let (base, head) = many_hunks();
    let repo = TempRepo::new();
    repo.write("pkg/calc.py", base);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("pkg/calc.py", head);
    repo.commit("change");
    let ws = workspace(&repo);
    let change = ws.changes.file("pkg/calc.py").expect("changed");
    assert_eq!(change.hunks.len(), 12);
    let plain = change.render_numbered();
    assert!((35_000..55_000).contains(&plain.len()), "{}", plain.len());
    let mut seen = String::new();
    let mut args = json!({"path": "pkg/calc.py", "raw": true});
    let mut pages = 0;
    loop {
        pages += 1;
        assert!(pages < 10, "the pages do not end");
        let out = call(&ws, "diff", args.clone()).await;
        let text = out.content;
        let (body, note) = match text.rfind("\n[hunks ").or_else(|| text.rfind("\n[hunk ")) {
            Some(at) => (&text[..=at], Some(&text[at + 1..])),
            None => (text.as_str(), None),
        };
        let body = body
            .strip_prefix("--- a/pkg/calc.py\n+++ b/pkg/calc.py\n")
            .expect("the file's header");
        // Whole hunks only: every hunk on the page is the hunk of the plain diff.
        for hunk in body.split("@@ -").skip(1) {
            let hunk = format!("@@ -{hunk}");
            assert!(plain.contains(&hunk), "a hunk was cut: {hunk}");
            seen.push_str(&hunk);
        }
        let Some(note) = note else { break };
        // `[hunks 4-12 of pkg/calc.py not shown (size limit): call diff with path `pkg/calc.py` and hunk 4]`
        assert!(
            note.contains("not shown (size limit): call diff with path `pkg/calc.py` and hunk "),
            "{note}"
        );
        let next: usize = note
            .trim_end()
            .trim_end_matches(']')
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("the next hunk");
        assert!(
            note.starts_with(&format!("[hunks {next}-12 of pkg/calc.py")) || next == 12,
            "{note}"
        );
        args = json!({"path": "pkg/calc.py", "raw": true, "hunk": next});
    }
    assert!(pages >= 2, "{pages}");
    // Every hunk once, none missing, nothing cut.
    assert_eq!(
        seen,
        plain
            .split_once("@@ -")
            .map(|(_, rest)| format!("@@ -{rest}"))
            .unwrap_or_default()
    );
}

#[tokio::test]
async fn the_whole_change_diff_names_the_files_it_has_no_room_for() {
    let (base, head) = many_hunks();
    let repo = TempRepo::new();
    repo.write("a/first.py", &base);
    repo.write("b/second.py", &base);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("a/first.py", &head);
    repo.write("b/second.py", &head);
    repo.commit("change");
    let ws = workspace(&repo);
    let text = call(&ws, "diff", json!({})).await.content;
    assert!(text.starts_with("2 files changed\n"), "{text}");
    assert!(
        text.contains("not shown (size limit): call diff with path `a/first.py`, hunk ")
            || text.contains(
                "of a/first.py not shown (size limit): call diff with path `a/first.py` and hunk "
            ),
        "{text}"
    );
    assert!(
        text.ends_with("[the diffs of 1 more file not shown (size limit): `b/second.py`: call diff with path `b/second.py`, and so on]\n"),
        "{text}"
    );
    let bad = ToolRegistry::repository_tools()
        .dispatch("diff", &json!({"hunk": 2}).to_string(), &ws)
        .await
        .expect("not fatal");
    assert!(
        bad.is_error && bad.content.contains("need a path"),
        "{}",
        bad.content
    );
}
