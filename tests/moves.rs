//! Moved code reaches the model as a move plus what changed inside it, in the
//! first message, in plan tasks and from the `diff` tool; the base side is
//! readable with `revision: "base"`; and every changed line still counts as shown.

use serde_json::{Value, json};

use crate::common::cli;
use crate::common::git::TempRepo;
use crate::common::model_server::{ModelServer, Reply, Wire};
use crate::strategies::{is_planner, submit};
use redline::agent::{AgentConfig, Orchestrator};
use redline::llm::tokens::{Encoding, TokenCounter};
use redline::llm::{ProviderSettings, build_client};
use redline::repo::{load_change, resolve_range};
use redline::tools::{Derivations, Observation, ToolRegistry, Workspace};

/// A 24-line Python helper; `op` is the operator of one line in its middle.
fn helper(indent: &str, op: &str) -> String {
    let body = [
        "def scale_total(values, factor, offset):",
        "    \"\"\"Sum the values, scale them and shift them.\"\"\"",
        "    total = 0",
        "    skipped = 0",
        "    for value in values:",
        "        if value is None:",
        "            skipped += 1",
        "            continue",
        "        total += value",
        &format!("    scaled = total {op} factor"),
        "    if skipped and not values:",
        "        raise ValueError(\"nothing to scale\")",
        "    shifted = scaled + offset",
        "    log.debug(\"scaled %s values\", len(values))",
        "    result = round(shifted, 4)",
        "    if result < 0:",
        "        result = 0",
        "    history.append(result)",
        "    metrics.observe(\"scale_total\", result)",
        "    cache[(len(values), factor)] = result",
        "    if len(history) > 100:",
        "        history.pop(0)",
        "    assert result >= 0",
        "    return result",
    ];
    body.iter()
        .map(|l| format!("{indent}{l}\n"))
        .collect::<String>()
}

fn filler(prefix: &str, n: usize) -> String {
    (1..=n)
        .map(|i| format!("{prefix}_{i} = compute_{prefix}({i})\n"))
        .collect()
}

/// `pkg/util.py` loses `scale_total` (base lines 12-35), `pkg/core.py` gains
/// it with `*` turned into `+`; in `pkg/shapes.py` a method moves below
/// another one with `*` turned into `-`.
fn moved_repo(config: &str) -> TempRepo {
    let repo = TempRepo::new();
    repo.write(".redline.toml", config);
    repo.write(
        "pkg/util.py",
        format!("{}{}{}", filler("u", 10), helper("", "*"), filler("w", 10)) + "\n",
    );
    repo.write("pkg/core.py", format!("{}\n", filler("c", 10)));
    repo.write(
        "pkg/shapes.py",
        format!(
            "class Shape:\n{}{}",
            helper("    ", "*"),
            filler("    s", 30)
        ),
    );
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "pkg/util.py",
        format!("{}{}", filler("u", 10), filler("w", 10)) + "\n",
    );
    repo.write(
        "pkg/core.py",
        format!("{}\n{}", filler("c", 10), helper("", "+")),
    );
    repo.write(
        "pkg/shapes.py",
        format!(
            "class Shape:\n{}{}",
            filler("    s", 30),
            helper("    ", "-")
        ),
    );
    repo.commit("move helpers");
    repo
}

fn workspace(repo: &TempRepo) -> Workspace {
    let range = resolve_range(repo.path(), Some("main"), "HEAD").expect("range");
    let (view, changes) = load_change(repo.path(), &range, false).expect("change");
    Workspace::new(view, changes)
}

async fn call(ws: &Workspace, tool: &str, args: Value) -> Observation {
    ToolRegistry::repository_tools()
        .dispatch(tool, &args.to_string(), ws)
        .await
        .expect("not fatal")
}

/// Asserts that `text` shows both moves as a move line plus their one edit,
/// and none of the unchanged moved lines as `+` lines.
fn assert_shows_the_moves(text: &str) {
    let core = "12-35 ~ moved from `pkg/util.py:11-34`, edited (- original, + now):";
    assert!(text.contains(core), "{text}");
    assert!(text.contains("20 -    scaled = total * factor\n"), "{text}");
    assert!(text.contains("21 +    scaled = total + factor\n"), "{text}");
    let shapes = "32-55 ~ moved from `pkg/shapes.py:2-25`, edited (- original, + now):";
    assert!(text.contains(shapes), "{text}");
    assert!(
        text.contains("11 -        scaled = total * factor\n"),
        "{text}"
    );
    assert!(
        text.contains("41 +        scaled = total - factor\n"),
        "{text}"
    );
    assert!(
        text.contains("[lines 11-34 of base moved to `pkg/core.py:12-35`]"),
        "{text}"
    );
    // The unchanged lines are not repeated.
    assert!(!text.contains("+    skipped = 0"), "{text}");
    assert!(!text.contains("metrics.observe"), "{text}");
}

#[tokio::test]
async fn the_diff_tool_shows_a_move_plus_its_one_change_and_the_raw_patch_on_request() {
    let repo = moved_repo("");
    let ws = workspace(&repo);
    let all = call(&ws, "diff", json!({})).await;
    assert!(!all.is_error, "{}", all.content);
    assert_shows_the_moves(&all.content);
    let core = call(&ws, "diff", json!({"path": "pkg/core.py"})).await;
    assert!(
        core.content
            .contains("12-35 ~ moved from `pkg/util.py:11-34`"),
        "{}",
        core.content
    );
    let raw = call(&ws, "diff", json!({"path": "pkg/core.py", "raw": true})).await;
    assert!(!raw.content.contains("~ moved from"), "{}", raw.content);
    assert!(
        raw.content.contains("   30 +    metrics.observe"),
        "{}",
        raw.content
    );
    // A change that only moves code costs a fraction of its plain patch.
    let counter = TokenCounter::new(Encoding::O200kBase);
    let all_raw = call(&ws, "diff", json!({"raw": true})).await;
    let (moved, plain) = (counter.count(&all.content), counter.count(&all_raw.content));
    assert!(moved * 2 < plain, "{moved} tokens as moves, {plain} plain");
}

#[tokio::test]
async fn read_file_and_search_read_the_base_revision_on_request() {
    let repo = moved_repo("");
    let ws = workspace(&repo);
    let base = call(
        &ws,
        "read_file",
        json!({"path": "pkg/util.py", "start_line": 20, "end_line": 20, "revision": "base"}),
    )
    .await;
    assert_eq!(
        base.content,
        "pkg/util.py at base (lines 20-20 of 45)\n   20 |     scaled = total * factor\n\
         [25 more lines; call read_file with start_line 21 to continue]\n"
    );
    let head = call(
        &ws,
        "read_file",
        json!({"path": "pkg/util.py", "start_line": 20, "end_line": 20}),
    )
    .await;
    assert!(
        head.content.contains("   20 | w_10 = compute_w(10)"),
        "{}",
        head.content
    );
    let bad = call(
        &ws,
        "read_file",
        json!({"path": "pkg/util.py", "revision": "old"}),
    )
    .await;
    assert!(bad.is_error, "{}", bad.content);
    let found = call(
        &ws,
        "search",
        json!({"pattern": "total * factor", "fixed_string": true, "revision": "base"}),
    )
    .await;
    assert_eq!(
        found.content,
        "[at the base revision]\npkg/shapes.py:11:         scaled = total * factor\npkg/util.py:20:     scaled = total * factor\n"
    );
    let now = call(
        &ws,
        "search",
        json!({"pattern": "total * factor", "fixed_string": true}),
    )
    .await;
    assert!(now.content.starts_with("no matches"), "{}", now.content);
}

#[tokio::test]
async fn a_review_detects_its_moves_and_opens_its_base_once() {
    let repo = moved_repo("");
    let ws = workspace(&repo);
    let tool_of_the_same_review = ws.clone();
    assert_eq!(ws.derivations(), Derivations::default());
    // The diff tool detects through the workspace, and once however often it is called.
    for args in [
        json!({}),
        json!({"path": "pkg/core.py"}),
        json!({"path": "pkg/core.py", "raw": true}),
    ] {
        let diff = call(&ws, "diff", args).await;
        assert!(!diff.is_error, "{}", diff.content);
        assert_eq!(ws.derivations().moves_detected, 1);
    }
    let again = call(&tool_of_the_same_review, "diff", json!({})).await;
    assert!(again.content.contains("~ moved from"), "{}", again.content);
    assert_eq!(ws.derivations().base_views_opened, 0);
    for (tool, args) in [
        (
            "read_file",
            json!({"path": "pkg/util.py", "revision": "base"}),
        ),
        (
            "read_file",
            json!({"path": "pkg/shapes.py", "revision": "base"}),
        ),
        ("search", json!({"pattern": "factor", "revision": "base"})),
    ] {
        let base = call(&tool_of_the_same_review, tool, args).await;
        assert!(!base.is_error, "{}", base.content);
        assert_eq!(ws.derivations().base_views_opened, 1);
    }
    assert_eq!(
        ws.derivations(),
        Derivations {
            moves_detected: 1,
            base_views_opened: 1,
        }
    );
}

#[tokio::test]
async fn the_first_message_and_the_diff_tool_share_one_detection() {
    let repo = moved_repo("");
    let ws = workspace(&repo);
    // Shaping the first message detects through the workspace; the model is never called.
    let server = ModelServer::start(Wire::OpenAi, vec![]).await;
    let model = build_client(
        ProviderSettings {
            base_url: server.base_url(),
            ..ProviderSettings::default()
        },
        None,
    );
    let _review = Orchestrator::new(model, ws.clone(), AgentConfig::new("gpt-4o"));
    assert_eq!(ws.derivations().moves_detected, 1);
    let diff = call(&ws, "diff", json!({})).await;
    assert!(diff.content.contains("~ moved from"), "{}", diff.content);
    assert_eq!(ws.derivations().moves_detected, 1);
}

#[tokio::test]
async fn redline_context_shows_the_moves_as_the_model_sees_them_and_counts_their_tokens() {
    let repo = moved_repo("");
    let run = |format: &'static str| {
        cli::redline_command()
            .args(["context", "--repo"])
            .arg(repo.path())
            .args([
                "--base", "main", "--model", "gpt-4o", "--format", format, "--show",
            ])
            .output()
    };
    let text = run("text").await.expect("run");
    let text = String::from_utf8_lossy(&text.stdout);
    assert_shows_the_moves(&text);
    assert!(
        text.contains("moved code: 2 blocks, 48 lines, shown as moves in "),
        "{text}"
    );
    assert!(text.contains("changed lines: 48 of 48 shown"), "{text}");
    let json = run("json").await.expect("run");
    let out: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let moves = &out["moves"];
    assert_eq!(moves["blocks"], 2, "{out}");
    let (shown, raw) = (moves["tokens"].as_u64(), moves["raw_tokens"].as_u64());
    assert!(
        shown.zip(raw).is_some_and(|(s, r)| s > 0 && s * 4 < r),
        "{moves}"
    );
}

#[tokio::test]
async fn a_review_shows_the_moves_once_and_covers_every_changed_line() {
    let repo = moved_repo("");
    let server = ModelServer::start(Wire::OpenAi, vec![submit(vec![], "fine")]).await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["stats"]["strategy"], "react", "{out}");
    assert_eq!(out["stats"]["coverage"], 1.0, "{}", out["stats"]);
    let first = server.requests()[0].first_user_text();
    assert_shows_the_moves(&first);
    assert!(first.contains("Moved code is one line"), "{first}");
}

/// A window too small for one message: stage 1 gets 3,000 tokens.
const SMALL_WINDOW: &str = "context_window = 16000\nmax_output_tokens = 4000\n";

#[tokio::test]
async fn plan_tasks_show_the_moves_compactly_and_coverage_stays_whole() {
    let repo = moved_repo(SMALL_WINDOW);
    // Something large besides, so that the change does not fit one message.
    repo.write("pkg/big.py", filler("big", 1_500));
    repo.commit("and a big module");
    let server = ModelServer::start_with(Wire::OpenAi, |req, _| {
        if is_planner(req) {
            return Reply::text("no plan");
        }
        submit(vec![], "done")
    })
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "plan", "--yes"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["stats"]["strategy"], "plan_execute", "{out}");
    assert_eq!(out["stats"]["coverage"], 1.0, "{}", out["stats"]);
    let tasks: String = server
        .requests()
        .iter()
        .filter(|r| !is_planner(r))
        .map(|r| r.first_user_text())
        .collect();
    // Unpadded numbers in task sections.
    assert!(
        tasks.contains("\n12-35 ~ moved from `pkg/util.py:11-34`, edited (- original, + now):\n20 -    scaled = total * factor\n21 +    scaled = total + factor\n"),
        "{tasks}"
    );
    assert!(
        tasks.contains("\n41 +        scaled = total - factor\n"),
        "{tasks}"
    );
    assert!(!tasks.contains("metrics.observe"), "{tasks}");
}

#[tokio::test]
async fn read_file_returns_a_moved_blocks_head_lines_and_points_only_at_printed_ones() {
    let repo = moved_repo("");
    let server = ModelServer::start(
        Wire::OpenAi,
        vec![
            Reply::tools(vec![
                // The moved block: the first message printed only its move line and one edit.
                (
                    "moved",
                    "read_file",
                    json!({"path": "pkg/core.py", "start_line": 12, "end_line": 35}),
                ),
                // Context lines the first message printed with their text.
                (
                    "printed",
                    "read_file",
                    json!({"path": "pkg/core.py", "start_line": 8, "end_line": 10}),
                ),
            ]),
            submit(vec![], "fine"),
        ],
    )
    .await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "react"],
    )
    .await;
    let out = run.success_json();
    assert_eq!(out["stats"]["coverage"], 1.0, "{}", out["stats"]);
    let requests = server.requests();
    assert_shows_the_moves(&requests[0].first_user_text());
    let results = requests[1].tool_results();
    let result = |id: &str| results.get(id).cloned().unwrap_or_default();
    let moved = result("moved");
    assert!(!moved.contains("first message above"), "{moved}");
    assert!(
        moved.contains("   12 | def scale_total(values, factor, offset):\n"),
        "{moved}"
    );
    assert!(
        moved.contains("   21 |     scaled = total + factor\n"),
        "{moved}"
    );
    assert!(moved.contains("   35 |     return result\n"), "{moved}");
    assert!(
        result("printed")
            .contains("lines 8-10 of pkg/core.py are shown in the first message above"),
        "{results:?}"
    );
}

/// A seven-line helper: `name` is its own name, `clean` the helper it calls,
/// `low` the lowest port it accepts.
fn port_helper(name: &str, clean: &str, low: &str) -> String {
    format!(
        "def {name}(text, default):\n    value = {clean}(text)\n    if not value:\n        \
         return default\n    port = int(value, 10)\n    if port < {low} or port > 65535:\n        \
         raise ValueError(\"port out of range: %s\" % value)\n"
    )
}

#[tokio::test]
async fn a_renamed_seven_line_helper_moved_between_files_is_a_move_with_its_edit() {
    let repo = TempRepo::new();
    repo.write(
        "pkg/util.py",
        format!(
            "{}{}{}",
            filler("u", 10),
            port_helper("parse_port", "strip_quotes", "1"),
            filler("w", 10)
        ),
    );
    repo.write("pkg/net.py", filler("n", 10));
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write(
        "pkg/util.py",
        format!("{}{}", filler("u", 10), filler("w", 10)),
    );
    repo.write(
        "pkg/net.py",
        format!(
            "{}{}",
            filler("n", 10),
            port_helper("read_port", "unquote", "0")
        ),
    );
    repo.commit("move and rename the port helper");
    let out = cli::redline_command()
        .args(["context", "--repo"])
        .arg(repo.path())
        .args(["--base", "main", "--model", "gpt-4o", "--show"])
        .output()
        .await
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "11-17 ~ moved from `pkg/util.py:11-17`, renamed `parse_port` to `read_port` and \
             `strip_quotes` to `unquote`, edited (- original, + now):\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("16 -    if port < 1 or port > 65535:\n"),
        "{text}"
    );
    assert!(
        text.contains("16 +    if port < 0 or port > 65535:\n"),
        "{text}"
    );
    assert!(
        text.contains("[lines 11-17 of base moved to `pkg/net.py:11-17`]"),
        "{text}"
    );
    assert!(!text.contains("+def read_port"), "{text}");
    assert!(!text.contains("parse_port(text, default):\n"), "{text}");
}

#[tokio::test]
async fn a_finding_on_a_moved_line_the_first_message_did_not_print_is_anchored_there() {
    let repo = moved_repo("");
    // Line 25 of pkg/core.py is inside the moved block (12-35): only its move line and
    // the edit at 20-21 were printed, yet it is part of the change.
    let finding = json!({"path": "pkg/core.py", "line": 25, "severity": "major",
        "category": "bug", "title": "Moved line", "body": "A problem on a moved line."});
    let server = ModelServer::start(Wire::OpenAi, vec![submit(vec![finding], "one")]).await;
    let run = cli::review(
        repo.path(),
        &server.base_url(),
        "openai",
        &["--format", "json", "--strategy", "react"],
    )
    .await;
    let out = run.success_json();
    let first = server.requests()[0].first_user_text();
    assert_shows_the_moves(&first);
    assert!(
        first.contains("a finding may point at any of them"),
        "{first}"
    );
    let findings = out["findings"].as_array().cloned().unwrap_or_default();
    assert_eq!(findings.len(), 1, "{out}");
    assert_eq!(findings[0]["path"], "pkg/core.py", "{out}");
    assert_eq!(findings[0]["line"], 25, "{out}");
}
