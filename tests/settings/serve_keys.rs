//! Every key of the book's configuration table (docs/src/configuration.md), set in the base commit's
//! `.redline.toml`, changes what `redline serve` does: compared with the same pull
//! request reviewed without a config file.

use serde_json::Value;

use super::support::{DOC_MARK, Observed, SERVER_MODEL, review_by_the_app};

/// One key: the config that sets it, and what must differ from the review without it.
struct Case {
    key: &'static str,
    config: &'static str,
    changed: fn(&Observed, &Observed) -> bool,
}

fn max_tokens(observed: &Observed) -> u64 {
    observed.first()["max_tokens"].as_u64().unwrap_or(0)
}

fn event(observed: &Observed) -> &str {
    observed
        .reviews
        .first()
        .and_then(|r| r["event"].as_str())
        .unwrap_or("")
}

fn inline_comments(observed: &Observed) -> Option<usize> {
    observed.reviews.first()?["comments"]
        .as_array()
        .map(Vec::len)
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The App refused the config: no model call, no review, one comment naming the key.
fn notice_names(observed: &Observed, key: &str) -> bool {
    observed.requests.is_empty()
        && observed.reviews.is_empty()
        && observed.comments.len() == 1
        && observed.comments[0]["body"].as_str().is_some_and(|body| {
            body.contains(&format!(": {key}: ")) || body.contains(&format!(": {key}."))
        })
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            key: "max_steps",
            config: "max_steps = 1\n",
            // After one step the next turn is the final one, without tools.
            changed: |plain, set| {
                !tool_names(plain.body(1)).is_empty() && tool_names(set.body(1)).is_empty()
            },
        },
        Case {
            key: "walkthrough",
            config: "walkthrough = false\n",
            // The schema of `submit_review` asks for a walkthrough only when it is on.
            changed: |plain, set| {
                let asks =
                    |o: &Observed| o.first()["tools"].to_string().contains("\"walkthrough\"");
                asks(plain) && !asks(set)
            },
        },
        Case {
            key: "temperature",
            config: "temperature = 0.25\n",
            changed: |plain, set| {
                plain.first().get("temperature").is_none()
                    && (set.first()["temperature"].as_f64().unwrap_or(9.0) - 0.25).abs() < 1e-6
            },
        },
        Case {
            key: "prompts",
            config: "[prompts]\nsystem = \"SYSTEM-OVERRIDE-91\"\n",
            changed: |plain, set| {
                !plain.first_text().contains("SYSTEM-OVERRIDE-91")
                    && set.first()["messages"][0]["content"]
                        .to_string()
                        .contains("SYSTEM-OVERRIDE-91")
            },
        },
        Case {
            key: "instructions",
            config: "instructions = \"INSTRUCTION-MARK-42\"\n",
            changed: |plain, set| {
                !plain.first_text().contains("INSTRUCTION-MARK-42")
                    && set.first_text().contains("INSTRUCTION-MARK-42")
            },
        },
        Case {
            key: "max_output_tokens",
            config: "max_output_tokens = 1500\n",
            changed: |plain, set| max_tokens(plain) > 1500 && max_tokens(set) == 1500,
        },
        Case {
            key: "context_window",
            config: "context_window = 2500\n",
            changed: |_, set| notice_names(set, "context_window"),
        },
        Case {
            key: "tool_mode",
            config: "tool_mode = \"text\"\n",
            changed: |plain, set| {
                !tool_names(plain.first()).is_empty() && tool_names(set.first()).is_empty()
            },
        },
        Case {
            key: "exclude",
            config: "exclude = [\"docs/**\"]\n",
            // Listed, not shown.
            changed: |plain, set| {
                plain.first_text().contains(DOC_MARK)
                    && !set.first_text().contains(DOC_MARK)
                    && set.first_text().contains("docs/notes.md")
            },
        },
        Case {
            key: "include",
            config: "include = [\"src/**\"]\n",
            changed: |plain, set| {
                plain.first_text().contains("docs/notes.md")
                    && !set.first_text().contains("docs/notes.md")
            },
        },
        Case {
            key: "strategy",
            config: "strategy = \"plan\"\n",
            changed: |plain, set| {
                !tool_names(plain.first()).contains(&"submit_plan".to_string())
                    && tool_names(set.first()).contains(&"submit_plan".to_string())
            },
        },
        Case {
            key: "auto",
            config: "[auto]\nplan_min_files = 1\n",
            // Plan-and-execute: a change this small runs as one task, without a planning call.
            changed: |plain, set| {
                let task = "as task t1";
                !plain.first().to_string().contains(task) && set.first().to_string().contains(task)
            },
        },
        Case {
            key: "reflection",
            config: "strategy = \"reflect\"\n[reflection]\nmax_rounds = 11\n",
            changed: |_, set| notice_names(set, "reflection.max_rounds"),
        },
        Case {
            key: "parallel",
            config: "strategy = \"plan\"\nparallel = 33\n",
            changed: |_, set| notice_names(set, "parallel"),
        },
        Case {
            key: "keep_tool_results",
            config: "keep_tool_results = 0\n",
            changed: |_, set| notice_names(set, "keep_tool_results"),
        },
        Case {
            key: "prune_threshold",
            config: "prune_threshold = 0.99\n",
            changed: |_, set| notice_names(set, "prune_threshold"),
        },
        Case {
            key: "summary_threshold",
            config: "summary_threshold = 0.99\n",
            changed: |_, set| notice_names(set, "summary_threshold"),
        },
        Case {
            key: "task_budget",
            config: "task_budget = 10\n",
            changed: |_, set| notice_names(set, "task_budget"),
        },
        Case {
            key: "request_changes",
            config: "request_changes = \"minor\"\n",
            changed: |plain, set| event(plain) == "COMMENT" && event(set) == "REQUEST_CHANGES",
        },
        Case {
            key: "max_comments",
            config: "max_comments = 1\n",
            changed: |plain, set| {
                inline_comments(plain) == Some(2) && inline_comments(set) == Some(1)
            },
        },
        Case {
            key: "inline_at",
            config: "inline_at = \"critical\"\n",
            // Both findings are major: listed, collapsed, in the summary; no review.
            changed: |plain, set| {
                inline_comments(plain) == Some(2)
                    && set.reviews.is_empty()
                    && set.comments.iter().any(|c| {
                        c["body"]
                            .as_str()
                            .is_some_and(|b| b.contains("<details><summary>Less severe findings"))
                    })
            },
        },
        Case {
            key: "verify",
            config: "verify = false\n",
            changed: |plain, set| plain.verifier.len() == 1 && set.verifier.is_empty(),
        },
        Case {
            key: "max_tokens",
            config: "max_tokens = 7000\n",
            // The first call's allowance is cut to what is left of the budget.
            changed: |plain, set| max_tokens(set) < max_tokens(plain),
        },
        Case {
            key: "max_cost",
            config: "max_cost = 0.004\n",
            changed: |plain, set| max_tokens(set) < max_tokens(plain),
        },
        Case {
            key: "timeout",
            config: "timeout = \"0s\"\n",
            changed: |_, set| notice_names(set, "timeout"),
        },
        Case {
            key: "connect_timeout",
            config: "connect_timeout = \"2h\"\n",
            changed: |_, set| notice_names(set, "connect_timeout"),
        },
        Case {
            key: "first_byte_timeout",
            config: "first_byte_timeout = \"soon\"\n",
            changed: |_, set| notice_names(set, "first_byte_timeout"),
        },
        Case {
            key: "stream_idle_timeout",
            config: "stream_idle_timeout = \"0ms\"\n",
            changed: |_, set| notice_names(set, "stream_idle_timeout"),
        },
    ]
}

#[tokio::test]
async fn every_config_key_changes_what_serve_does() {
    let plain = review_by_the_app(None, 1).await;
    assert_eq!(plain.requests.len(), 2, "read_file, then submit_review");
    assert_eq!(plain.reviews.len(), 1);
    let mut unchanged = Vec::new();
    for case in cases() {
        let set = review_by_the_app(Some(case.config), 1).await;
        let requests = set.requests.len();
        if !(case.changed)(&plain, &set) {
            let comments: Vec<String> = set
                .comments
                .iter()
                .map(|c| c["body"].as_str().unwrap_or("").chars().take(160).collect())
                .collect();
            unchanged.push(format!(
                "{}: {requests} requests, {} reviews, comments {comments:?}",
                case.key,
                set.reviews.len()
            ));
        }
    }
    assert!(
        unchanged.is_empty(),
        "keys without effect:\n{}",
        unchanged.join("\n")
    );
}

/// The keys the server decides: a repository's file cannot change the model, the
/// endpoint, the provider or the prices, and `fail_on` has no exit code to set.
#[tokio::test]
async fn the_server_decides_its_model_endpoint_and_prices() {
    let set = review_by_the_app(
        Some("model = \"gpt-4.1\"\nverify_model = \"gpt-4.1\"\nprovider = \"anthropic\"\nbase_url = \"http://127.0.0.1:9/v1\"\nfail_on = \"nit\"\n[pricing.\"gpt-4.1-mini\"]\ninput = 0\noutput = 0\n"),
        1,
    )
    .await;
    assert_eq!(set.requests.len(), 2, "the server's endpoint got the calls");
    assert_eq!(set.first()["model"], SERVER_MODEL);
    assert_eq!(set.verifier.len(), 1, "and the verifier's");
    assert_eq!(set.verifier[0].body["model"], SERVER_MODEL);
    assert_eq!(set.reviews.len(), 1);
}
