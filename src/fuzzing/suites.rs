//! The fuzz suites, one per parser of untrusted input.

use serde_json::Value;

use super::{assert_bounded, fuzz};
use crate::agent::text_mode::parse_text_step;
use crate::github::action_event::{check_action_event, parse_action_event};
use crate::repo::changes_from_patch;
use crate::review::parse::{parse_submission, parse_text_reply};
use crate::server::ServerConfig;
use crate::server::github::events::classify_app_delivery;

/// The seed of every suite: fixed, so that failures reproduce.
const SEED: u64 = 0x5eed_2ed1;

/// Inputs a suite must at least get through, even on a slow machine.
const MIN_CASES: usize = 200;

const REACT_SEEDS: &[&str] = &[
    "Thought: I should read the file.\nAction: read_file\nAction Input: {\"path\": \"src/lib.rs\", \"start\": 1}",
    "**Thought:** look around\n**Action:** `search`\n**Action Input:**\n```json\n{'pattern': 'fn main',}\n```\nObservation: made up",
    "Thought: done\nFinal Answer: ```json\n{\"findings\": [], \"summary\": \"ok\"}\n```",
    "Action: list_files(path=\"src\")\nAction Input: {path: \"src\", depth: 2}",
    "thought: hmm action: read_file action input: {\"path\":\"a\"}",
    "I am not sure what to do.",
];

const REACT_TOKENS: &[&str] = &[
    "Thought:",
    "Action:",
    "Action Input:",
    "Final Answer:",
    "Observation:",
    "```json\n",
    "```",
    "{",
    "}",
    "[",
    "]",
    "\"",
    "'",
    ",",
    ":",
    "\n",
    "**",
    "`",
    "(",
    ")",
    "\\",
    "\\u",
    "é",
    "\u{0}",
    "\r\n",
    "null",
    "true",
];

#[test]
fn text_mode_react_parser() {
    let seeds: Vec<&[u8]> = REACT_SEEDS.iter().map(|s| s.as_bytes()).collect();
    let tried = fuzz("text-mode step", SEED, &seeds, REACT_TOKENS, |input| {
        let text = String::from_utf8_lossy(input);
        let step = parse_text_step(&text);
        assert_bounded(
            "text-mode step",
            text.len(),
            format!("{step:?}").len(),
            8,
            2_048,
        );
    });
    assert!(tried >= MIN_CASES, "{tried}");
}

const FINDINGS_SEEDS: &[&str] = &[
    r#"{"findings":[{"path":"src/a.rs","line":3,"severity":"high","category":"bug","title":"Off by one","body":"The loop skips the last item.","suggestion":"for i in 0..=n {"}],"summary":"One bug."}"#,
    r#"[{"file":"b.py","start_line":2,"end_line":5,"side":"LEFT","severity":"low","title":"t","body":"b"}]"#,
    "Here is my review:\n```json\n{\"issues\": [{\"path\": \"x\", \"line\": \"7\", \"severity\": \"Medium\", \"title\": \"t\", \"body\": \"b\"}], \"overview\": \"fine\"}\n```",
    "No issues found. LGTM.",
    r#""{\"findings\": [], \"summary\": \"encoded as a string\"}""#,
];

const JSON_TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ",",
    ":",
    "null",
    "true",
    "-",
    "0",
    "1e5",
    "\"line\":",
    "\"path\":",
    "\"findings\":",
    "\"summary\":",
    "\\\"",
    "\\u00e9",
    "```",
    "\n",
    "é",
    "\u{0}",
];

#[test]
fn findings_parser() {
    let seeds: Vec<&[u8]> = FINDINGS_SEEDS.iter().map(|s| s.as_bytes()).collect();
    let tried = fuzz("findings", SEED, &seeds, JSON_TOKENS, |input| {
        let text = String::from_utf8_lossy(input);
        if let Some(submission) = parse_text_reply(&text) {
            let out = format!("{submission:?}").len();
            assert_bounded("findings from text", text.len(), out, 64, 4_096);
        }
        if let Ok(value) = serde_json::from_slice::<Value>(input)
            && let Ok(submission) = parse_submission(&value)
        {
            let out = format!("{submission:?}").len();
            assert_bounded("findings from JSON", input.len(), out, 64, 4_096);
        }
    });
    assert!(tried >= MIN_CASES, "{tried}");
}

const PAYLOAD_SEEDS: &[&str] = &[
    r#"{"action":"synchronize","number":5,"pull_request":{"draft":false,"number":5,"head":{"sha":"abc","ref":"feature","repo":{"full_name":"fork/r"}},"base":{"sha":"def","ref":"main","repo":{"full_name":"o/r"}}},"repository":{"full_name":"o/r","name":"r","owner":{"login":"o"}},"installation":{"id":9},"sender":{"login":"dev","type":"User"}}"#,
    r#"{"action":"created","issue":{"number":3,"pull_request":{"url":"https://example.invalid/pr/3"}},"comment":{"id":77,"body":"/redline review --strategy plan","user":{"login":"alice","type":"User"},"author_association":"MEMBER"},"repository":{"full_name":"o/r","name":"r","owner":{"login":"o"}},"installation":{"id":9}}"#,
    r#"{"action":"deleted","installation":{"id":12,"account":{"login":"o"}},"repositories_removed":[{"full_name":"o/r"}]}"#,
    r#"{"zen":"Design for failure.","hook_id":1}"#,
];

const EVENTS: &[&str] = &[
    "pull_request",
    "pull_request_target",
    "issue_comment",
    "installation",
    "installation_repositories",
    "ping",
    "push",
];

#[test]
fn webhook_and_action_payload_parsers() {
    let seeds: Vec<&[u8]> = PAYLOAD_SEEDS.iter().map(|s| s.as_bytes()).collect();
    let config = ServerConfig::default();
    let mut round = 0usize;
    let tried = fuzz("payloads", SEED, &seeds, JSON_TOKENS, |input| {
        round += 1;
        let event = EVENTS[round % EVENTS.len()];
        if let Ok(classified) = classify_app_delivery(event, input, &config) {
            let out = format!("{classified:?}").len();
            assert_bounded("webhook decision", input.len(), out, 8, 1_024);
        }
        let acted_on = parse_action_event(event, input, false);
        let out = format!("{acted_on:?}").len();
        assert_bounded("action event", input.len(), out, 8, 1_024);
        if let Err(error) = check_action_event(event, input) {
            assert_bounded(
                "event shape",
                input.len(),
                error.to_string().len(),
                8,
                1_024,
            );
        }
    });
    assert!(tried >= MIN_CASES, "{tried}");
}

const DIFF_SEEDS: &[&str] = &[
    "diff --git a/src/main.rs b/src/main.rs\nindex 83db48f..bf269f4 100644\n--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,4 +1,5 @@ fn main() {\n fn main() {\n-    println!(\"old\");\n+    println!(\"new\");\n+    println!(\"more\");\n }\n \n@@ -20,2 +21,2 @@ impl X {\n-a\n+b\n c\n",
    "diff --git a/new.txt b/new.txt\nnew file mode 100644\nindex 0000000..e69de29\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n\\ No newline at end of file\n",
    "diff --git a/old.rs b/renamed.rs\nsimilarity index 90%\nrename from old.rs\nrename to renamed.rs\nindex 1111111..2222222 100644\n--- a/old.rs\n+++ b/renamed.rs\n@@ -3 +3 @@\n-x\n+y\n",
    "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\nindex e69de29..0000000\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\ndiff --git a/img.png b/img.png\nindex 1111111..2222222 100644\nBinary files a/img.png and b/img.png differ\n",
];

const DIFF_TOKENS: &[&str] = &[
    "\n",
    "@@",
    "@@ -",
    " +",
    ",",
    "-",
    "+",
    " ",
    "diff --git a/x b/x\n",
    "--- a/",
    "+++ b/",
    "/dev/null",
    "\\ No newline at end of file\n",
    "rename from ",
    "new file mode 100644\n",
    "index 0000000..1111111 100755\n",
    "4294967295",
    "\r",
    "é",
    "\u{0}",
];

#[test]
fn unified_diff_parser() {
    let seeds: Vec<&[u8]> = DIFF_SEEDS.iter().map(|s| s.as_bytes()).collect();
    let tried = fuzz("unified diff", SEED, &seeds, DIFF_TOKENS, |input| {
        let Ok(files) = changes_from_patch(input) else {
            return;
        };
        let lines: Vec<_> = files
            .iter()
            .flat_map(|f| &f.hunks)
            .flat_map(|h| &h.lines)
            .collect();
        assert_bounded("diff lines", input.len(), lines.len(), 1, 0);
        let text: usize = lines.iter().map(|l| l.text.len()).sum();
        // Lossy decoding may turn one invalid byte into a 3-byte replacement character.
        assert_bounded("diff text", input.len(), text, 3, 0);
        let rendered: usize = files.iter().map(|f| f.render_numbered().len()).sum();
        assert_bounded("rendered diff", input.len(), rendered, 8, 1_024);
    });
    assert!(tried >= MIN_CASES, "{tried}");
}
