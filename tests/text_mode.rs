//! Text-mode ReAct: parsing messy, real-world-looking replies and building the prompt pieces.

use redline::agent::text_mode::{
    TEXT_MODE_TEMPLATE, TextStep, corrective_observation, observation, parse_text_step,
    render_tools_prompt, to_tool_call, tools_prompt,
};
use redline::llm::ToolSpec;
use serde_json::{Value, json};

/// Asserts that `reply` asks for `tool` with exactly `args`; returns the thought.
fn expect_action(reply: &str, tool: &str, args: Value) -> Option<String> {
    match parse_text_step(reply) {
        TextStep::Action {
            thought,
            tool: got_tool,
            input,
        } => {
            assert_eq!(got_tool, tool, "tool of {reply:?}");
            let parsed: Value = serde_json::from_str(&input)
                .unwrap_or_else(|e| panic!("input {input:?} of {reply:?} is not JSON: {e}"));
            assert_eq!(parsed, args, "arguments of {reply:?}");
            thought
        }
        other => panic!("expected an action for {reply:?}, got {other:?}"),
    }
}

/// Asserts that `reply` concludes with exactly `answer`; returns the thought.
fn expect_final(reply: &str, answer: &str) -> Option<String> {
    match parse_text_step(reply) {
        TextStep::Final {
            thought,
            answer: got,
        } => {
            assert_eq!(got, answer, "answer of {reply:?}");
            thought
        }
        other => panic!("expected a final answer for {reply:?}, got {other:?}"),
    }
}

/// Asserts that `reply` is unparseable, with a reason mentioning every one of `words`.
fn expect_unparseable(reply: &str, words: &[&str]) -> String {
    match parse_text_step(reply) {
        TextStep::Unparseable { reason } => {
            for word in words {
                assert!(
                    reason.contains(word),
                    "reason {reason:?} for {reply:?} should mention {word:?}"
                );
            }
            reason
        }
        other => panic!("expected unparseable for {reply:?}, got {other:?}"),
    }
}

// ---- well-formed and whitespace variations ----

#[test]
fn clean_reply() {
    let thought = expect_action(
        "Thought: I should read the changed file.\nAction: read_file\nAction Input: {\"path\": \"src/lib.rs\"}",
        "read_file",
        json!({"path": "src/lib.rs"}),
    );
    assert_eq!(thought.as_deref(), Some("I should read the changed file."));
}

#[test]
fn extra_whitespace_blank_lines_and_windows_line_endings() {
    let reply = "\r\n\r\n  Thought:   The diff touches parse().  \r\n\r\n\r\n   Action:    search   \r\n\r\nAction Input:\r\n\r\n   {\"pattern\": \"fn parse\", \"path\": \"src\"}  \r\n\r\n";
    let thought = expect_action(
        reply,
        "search",
        json!({"pattern": "fn parse", "path": "src"}),
    );
    assert_eq!(thought.as_deref(), Some("The diff touches parse()."));
}

#[test]
fn old_mac_line_endings() {
    expect_action(
        "Thought: x\rAction: list_files\rAction Input: {}\r",
        "list_files",
        json!({}),
    );
}

#[test]
fn all_sections_on_one_line() {
    let thought = expect_action(
        "Thought: I need the file. Action: read_file Action Input: {\"path\": \"src/main.rs\", \"start_line\": 1}",
        "read_file",
        json!({"path": "src/main.rs", "start_line": 1}),
    );
    assert_eq!(thought.as_deref(), Some("I need the file."));
}

#[test]
fn one_line_prose_that_says_action_in_lower_case_is_not_a_label() {
    let thought = expect_action(
        "Thought: the next action: check callers. Action: search Action Input: {\"pattern\": \"decode(\"}",
        "search",
        json!({"pattern": "decode("}),
    );
    assert_eq!(thought.as_deref(), Some("the next action: check callers."));
}

#[test]
fn labels_in_other_cases() {
    expect_action(
        "THOUGHT: look at the diff\nACTION: diff\nACTION INPUT: {\"path\": \"a.rs\"}",
        "diff",
        json!({"path": "a.rs"}),
    );
    expect_action(
        "thought: look\naction: diff\naction input: {}",
        "diff",
        json!({}),
    );
}

#[test]
fn labels_in_markdown_bold_and_headings() {
    let thought = expect_action(
        "**Thought:** The handler may panic.\n\n**Action:** read_file\n**Action Input:** {\"path\": \"src/server.rs\"}",
        "read_file",
        json!({"path": "src/server.rs"}),
    );
    assert_eq!(thought.as_deref(), Some("The handler may panic."));
    expect_action(
        "### Thought\nignored heading without colon\n**Thought**: ok\n**Action**: list_files\n**Action Input**: {\"dir\": \"src\"}",
        "list_files",
        json!({"dir": "src"}),
    );
}

#[test]
fn action_input_spelled_differently() {
    for label in ["Action input", "Action_Input", "ActionInput", "Input"] {
        expect_action(
            &format!("Thought: t\nAction: read_file\n{label}: {{\"path\": \"x.rs\"}}"),
            "read_file",
            json!({"path": "x.rs"}),
        );
    }
}

// ---- tool names ----

#[test]
fn tool_names_in_backticks_quotes_or_bold() {
    for action in [
        "`read_file`",
        "\"read_file\"",
        "'read_file'",
        "**read_file**",
        "read_file.",
    ] {
        expect_action(
            &format!("Thought: t\nAction: {action}\nAction Input: {{\"path\": \"a\"}}"),
            "read_file",
            json!({"path": "a"}),
        );
    }
}

#[test]
fn tool_names_written_as_calls() {
    expect_action(
        "Thought: t\nAction: read_file({\"path\": \"src/a.rs\", \"start_line\": 3})",
        "read_file",
        json!({"path": "src/a.rs", "start_line": 3}),
    );
    expect_action(
        "Action: `read_file(path=\"src/a.rs\", end_line=9)`",
        "read_file",
        json!({"path": "src/a.rs", "end_line": 9}),
    );
    expect_action("Action: list_files()", "list_files", json!({}));
}

#[test]
fn arguments_after_the_name_without_an_input_label() {
    expect_action(
        "Thought: t\nAction: read_file\n```json\n{\"path\": \"b.rs\"}\n```",
        "read_file",
        json!({"path": "b.rs"}),
    );
    expect_action(
        "Action: read_file {\"path\": \"b.rs\"}",
        "read_file",
        json!({"path": "b.rs"}),
    );
}

#[test]
fn a_missing_action_input_means_no_arguments() {
    expect_action(
        "Thought: what is there?\nAction: list_files\n",
        "list_files",
        json!({}),
    );
}

#[test]
fn a_capitalised_action_in_the_thought_does_not_hide_the_real_action() {
    expect_action(
        "Thought: the best next Action: reading the file.\nAction: read_file\nAction Input: {\"path\": \"a.rs\"}",
        "read_file",
        json!({"path": "a.rs"}),
    );
}

#[test]
fn prose_in_the_action_line_is_refused() {
    expect_unparseable(
        "Thought: t\nAction: I will read the file src/main.rs\nAction Input: {\"path\": \"src/main.rs\"}",
        &["just the name of one tool", "I will read the file"],
    );
}

// ---- action input forms ----

#[test]
fn action_input_in_json_fences() {
    expect_action(
        "Thought: t\nAction: search\nAction Input:\n```json\n{\n  \"pattern\": \"unsafe\",\n  \"path\": \"src\"\n}\n```\n",
        "search",
        json!({"pattern": "unsafe", "path": "src"}),
    );
}

#[test]
fn action_input_in_plain_fences_and_backticks() {
    expect_action(
        "Action: search\nAction Input:\n```\n{\"pattern\": \"todo!\"}\n```",
        "search",
        json!({"pattern": "todo!"}),
    );
    expect_action(
        "Action: search\nAction Input: `{\"pattern\": \"todo!\"}`",
        "search",
        json!({"pattern": "todo!"}),
    );
}

#[test]
fn action_input_with_single_quotes_and_apostrophes() {
    expect_action(
        "Thought: t\nAction: search\nAction Input: {'pattern': 'can't fail', 'path': 'src'}",
        "search",
        json!({"pattern": "can't fail", "path": "src"}),
    );
}

#[test]
fn action_input_with_trailing_commas() {
    expect_action(
        "Action: read_file\nAction Input: {\n  \"path\": \"src/db.rs\",\n  \"start_line\": 10,\n  \"end_line\": 40,\n}",
        "read_file",
        json!({"path": "src/db.rs", "start_line": 10, "end_line": 40}),
    );
}

#[test]
fn action_input_with_unquoted_keys() {
    expect_action(
        "Action: read_file\nAction Input: {path: \"src/db.rs\", start_line: 5}",
        "read_file",
        json!({"path": "src/db.rs", "start_line": 5}),
    );
}

#[test]
fn a_self_written_observation_and_everything_after_it_is_ignored() {
    let reply = "Thought: read it\nAction: read_file\nAction Input: {\"path\": \"src/a.rs\"}\nObservation: fn main() { panic!() }\nThought: it panics\nFinal Answer: {\"findings\": []}";
    expect_action(reply, "read_file", json!({"path": "src/a.rs"}));
    // Also when the observation follows on the same line as the JSON.
    expect_action(
        "Action: search Action Input: {\"pattern\": \"x\"} Observation: 3 matches",
        "search",
        json!({"pattern": "x"}),
    );
}

#[test]
fn text_after_the_json_is_ignored() {
    expect_action(
        "Action: read_file\nAction Input: {\"path\": \"a.rs\"} (this shows the whole file)\nI'll wait for the result.",
        "read_file",
        json!({"path": "a.rs"}),
    );
}

#[test]
fn label_like_words_inside_the_json_stay_in_the_json() {
    expect_action(
        "Action: search\nAction Input: {\"pattern\": \"Observation: |Final Answer:\"}",
        "search",
        json!({"pattern": "Observation: |Final Answer:"}),
    );
}

#[test]
fn empty_action_input_is_an_empty_object() {
    expect_action(
        "Thought: t\nAction: list_files\nAction Input:\n",
        "list_files",
        json!({}),
    );
    expect_action(
        "Action: list_files\nAction Input: ```json\n```",
        "list_files",
        json!({}),
    );
}

#[test]
fn a_bare_string_input_is_refused_and_asks_for_an_object() {
    expect_unparseable(
        "Thought: t\nAction: read_file\nAction Input: src/main.rs",
        &["JSON object", "read_file", "src/main.rs", "{\"path\""],
    );
    expect_unparseable(
        "Action: read_file\nAction Input: \"src/main.rs\"",
        &["bare string", "JSON object"],
    );
    expect_unparseable(
        "Action: search\nAction Input: [\"a\", \"b\"]",
        &["an array", "JSON object"],
    );
}

#[test]
fn broken_json_is_refused_with_the_parser_message() {
    expect_unparseable(
        "Action: read_file\nAction Input: {\"path\": \"a.rs\", \"start_line\": }",
        &["not valid JSON", "read_file"],
    );
}

#[test]
fn a_double_encoded_object_is_accepted() {
    expect_action(
        "Action: read_file\nAction Input: \"{\\\"path\\\": \\\"a.rs\\\"}\"",
        "read_file",
        json!({"path": "a.rs"}),
    );
}

// ---- action versus final answer ----

#[test]
fn action_wins_over_a_final_answer_in_the_same_reply() {
    expect_action(
        "Thought: check then conclude\nAction: read_file\nAction Input: {\"path\": \"a.rs\"}\nFinal Answer: looks fine",
        "read_file",
        json!({"path": "a.rs"}),
    );
    expect_action(
        "Final Answer: probably fine\nAction: diff\nAction Input: {}",
        "diff",
        json!({}),
    );
}

#[test]
fn an_action_naming_no_tool_gives_way_to_the_final_answer() {
    expect_final(
        "Thought: done\nAction: None\nFinal Answer: No issues found.",
        "No issues found.",
    );
    expect_final(
        "Thought: done\nAction: Final Answer\nAction Input: \"All good.\"",
        "All good.",
    );
    expect_unparseable(
        "Thought: hmm\nAction: none",
        &["names no tool", "Final Answer:"],
    );
}

// ---- final answers ----

#[test]
fn final_answer_with_fenced_json() {
    let thought = expect_final(
        "Thought: I have reviewed everything.\nFinal Answer:\n```json\n{\"summary\": \"ok\", \"findings\": []}\n```\n",
        "{\"summary\": \"ok\", \"findings\": []}",
    );
    assert_eq!(thought.as_deref(), Some("I have reviewed everything."));
}

#[test]
fn final_answer_with_plain_json_containing_label_words() {
    expect_final(
        "Final Answer: {\"summary\": \"Action: needed\",\n\"findings\": [{\"message\": \"Observation: leaks\"}]}",
        "{\"summary\": \"Action: needed\",\n\"findings\": [{\"message\": \"Observation: leaks\"}]}",
    );
}

#[test]
fn final_answer_in_prose_over_several_lines() {
    expect_final(
        "**Thought:** done.\n**Final Answer:** The change is correct.\n\nOne nit: the Action: field name is vague.",
        "The change is correct.\n\nOne nit: the Action: field name is vague.",
    );
    expect_final("final answer: LGTM", "LGTM");
}

#[test]
fn a_reply_fenced_as_a_whole() {
    expect_final(
        "```\nThought: done\nFinal Answer: nothing to report\n```",
        "nothing to report",
    );
}

#[test]
fn an_empty_final_answer_is_refused() {
    expect_unparseable(
        "Thought: done\nFinal Answer:   \n",
        &["Final Answer:", "empty"],
    );
}

// ---- JSON blobs ----

#[test]
fn a_langchain_style_json_blob() {
    expect_action(
        "```json\n{\"action\": \"read_file\", \"action_input\": {\"path\": \"a.rs\"}}\n```",
        "read_file",
        json!({"path": "a.rs"}),
    );
    expect_action(
        "Thought: t\nAction:\n```json\n{\"action\": \"search\", \"action_input\": \"{'pattern': 'x'}\"}\n```",
        "search",
        json!({"pattern": "x"}),
    );
    expect_final(
        "{\"action\": \"Final Answer\", \"action_input\": \"Looks good.\"}",
        "Looks good.",
    );
}

// ---- garbage ----

#[test]
fn garbage_is_unparseable_with_a_useful_reason() {
    expect_unparseable(
        "I think the code is fine but let me check more.",
        &["Action:", "Final Answer:"],
    );
    expect_unparseable(
        "Thought: I should look at the tests first.",
        &["neither", "Action:", "Final Answer:"],
    );
    expect_unparseable("", &["empty"]);
    expect_unparseable("   \n\n ", &["empty"]);
    expect_unparseable("Action Input: {\"path\": \"a\"}", &["no `Action:`"]);
    expect_unparseable(
        "Observation: the file has 3 lines",
        &["Observation:", "yourself"],
    );
    expect_unparseable(
        "{\"summary\": \"fine\", \"findings\": []}",
        &["JSON", "Final Answer:"],
    );
    expect_unparseable("Action: read_file(\"a.rs\"", &["never closes"]);
    expect_unparseable(
        "Action: read_file(\"a.rs\")",
        &["without names", "Action Input:", "Action: read_file"],
    );
    expect_unparseable(
        "Action:\nAction Input: {\"path\": \"a\"}",
        &["`Action:` is empty"],
    );
}

// ---- prompt pieces ----

fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read_file".into(),
            description: "Reads a file of the repository.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "end_line": {"type": "integer", "description": "Last line, inclusive."},
                    "path": {"type": "string", "description": "Path relative to the root."}
                },
                "required": ["path"]
            }),
        },
        ToolSpec {
            name: "list_files".into(),
            description: "Lists files.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
    ]
}

#[test]
fn tools_prompt_describes_each_tool_and_the_format() {
    let prompt = tools_prompt(&specs());
    for expected in [
        "### read_file\nReads a file of the repository.\nArguments (a JSON object):\n- `path` (string, required): Path relative to the root.\n- `end_line` (integer, optional): Last line, inclusive.\n",
        "### list_files\nLists files.\nArguments: none; use `{}`.",
        "(read_file, list_files)",
        "Thought:",
        "Action:",
        "Action Input:",
        "Final Answer:",
        "Never write `Observation:` yourself",
    ] {
        assert!(
            prompt.contains(expected),
            "prompt lacks {expected:?}:\n{prompt}"
        );
    }
    assert!(!prompt.contains("{tools}") && !prompt.contains("{tool_names}"));
}

#[test]
fn the_prompt_template_can_be_replaced() {
    assert!(TEXT_MODE_TEMPLATE.contains("{tools}"));
    assert_eq!(
        render_tools_prompt("Use: {tool_names}", &specs()),
        "Use: read_file, list_files"
    );
}

#[test]
fn observations_and_corrections() {
    assert_eq!(observation("3 matches"), "Observation: 3 matches");
    assert_eq!(
        observation("  "),
        "Observation: (the tool returned nothing)"
    );
    let reason = expect_unparseable("Thought: only thinking", &[]);
    let correction = corrective_observation(&reason);
    assert!(
        correction.starts_with("Observation: your reply could not be read: the reply has neither")
    );
    for label in ["Thought:", "Action:", "Action Input:", "Final Answer:"] {
        assert!(correction.contains(label), "{correction}");
    }
}

#[test]
fn tool_calls_get_synthetic_ids() {
    let call = to_tool_call(3, "read_file", "{\"path\":\"a\"}");
    assert_eq!(call.id, "text-3");
    assert_eq!(call.name, "read_file");
    assert_eq!(call.arguments, "{\"path\":\"a\"}");
}

#[test]
fn any_mix_of_fragments_parses_without_panicking_and_yields_objects() {
    let fragments = [
        "Thought:",
        "**Action:**",
        "Action:",
        " Action Input: ",
        "Input:",
        "Final Answer:",
        "Observation:",
        "\n",
        "\r\n",
        " read_file",
        "`search`",
        "(",
        ")",
        "{",
        "}",
        "'",
        "\"",
        "```json\n",
        "```",
        "{'path': 'it's',}",
        "é日",
        "*",
        ",",
        "\\",
    ];
    let mut parsed = 0;
    for a in fragments {
        for b in fragments {
            for c in fragments {
                let reply = format!("{a}{b}{c}");
                if let TextStep::Action { input, .. } = parse_text_step(&reply) {
                    let value: Value = serde_json::from_str(&input)
                        .unwrap_or_else(|e| panic!("{reply:?} gave {input:?}: {e}"));
                    assert!(value.is_object(), "{reply:?} gave {input:?}");
                }
                parsed += 1;
            }
        }
    }
    assert_eq!(parsed, fragments.len().pow(3));
}
