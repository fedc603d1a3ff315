use super::*;

/// `redline eval` with the flags of `argv` (split at white space).
fn eval_args(argv: &str) -> EvalArgs {
    let argv = ["redline", "eval"]
        .into_iter()
        .chain(argv.split_whitespace());
    match <crate::cli::Cli as clap::Parser>::try_parse_from(argv)
        .unwrap()
        .command
    {
        crate::cli::Command::Eval(args) => args,
        other => panic!("not eval: {other:?}"),
    }
}

/// The engine of `args` with the one pair (`reflect`, `m2`).
fn reviewer_with_one_pair(args: EvalArgs) -> (EngineReviewer, Pair) {
    let pair = Pair {
        strategy: Some("reflect".into()),
        model: Some("m2".into()),
        label: PairLabel {
            strategy: "reflect".into(),
            model: "m2".into(),
        },
    };
    let reviewer = EngineReviewer {
        args,
        pairs: vec![pair.clone()],
        events_dir: PathBuf::new(),
        judge: None,
    };
    (reviewer, pair)
}

#[test]
fn a_case_becomes_the_request_redline_review_would_make() {
    let args = eval_args(
        "--cases cases.jsonl --provider openai --base-url http://127.0.0.1:9/v1 \
         --max-steps 4 --max-cost 1 --timeout 5m --max-tokens 900 --config eval.toml",
    );
    let case: Case = serde_json::from_value(serde_json::json!({
        "id": "fix-1", "repo": "/src/demo", "base": "b1", "head": "h1", "clean": false,
        "title": "Fix the ratio", "body": "Guards b == 0."
    }))
    .unwrap();
    let (reviewer, pair) = reviewer_with_one_pair(args);
    let request = reviewer.case_request(&case, &pair);
    assert_eq!(request.repository, Some(PathBuf::from("/src/demo")));
    assert_eq!(
        request.change,
        ChangeSelection {
            base: Some("b1".into()),
            head: "h1".into(),
            uncommitted: false,
        }
    );
    let overrides = &request.settings.overrides;
    assert_eq!(overrides.strategy.as_deref(), Some("reflect"));
    assert_eq!(overrides.model.model.as_deref(), Some("m2"));
    assert_eq!(overrides.model.provider.as_deref(), Some("openai"));
    assert_eq!(
        overrides.model.base_url.as_deref(),
        Some("http://127.0.0.1:9/v1")
    );
    assert_eq!(overrides.max_steps, Some(4));
    let limits = &overrides.limits;
    assert_eq!(
        (
            limits.max_cost.as_deref(),
            limits.timeout.as_deref(),
            limits.max_tokens.as_deref()
        ),
        (Some("1"), Some("5m"), Some("900"))
    );
    assert_eq!(
        (&overrides.tool_mode, overrides.parallel, &overrides.fail_on),
        (&None, None, &None)
    );
    assert_eq!(
        request.settings.config_file,
        Some(PathBuf::from("eval.toml"))
    );
    assert!(request.settings.user_file);
    assert_eq!(
        request.intent,
        IntentSources {
            title: Some("Fix the ratio".into()),
            description: Some(Description::Text("Guards b == 0.".into())),
        }
    );
    assert_eq!(request.purpose, Purpose::Review);
    assert_eq!(
        request.output,
        OutputWants {
            format: Format::Json,
            plan: PlanChoice::Review,
        }
    );
}

#[test]
fn since_takes_a_date_or_a_time() {
    assert_eq!(parse_since("2025-01-02").unwrap(), 1_735_776_000);
    assert_eq!(parse_since("2025-01-02T00:00:10Z").unwrap(), 1_735_776_010);
    assert!(parse_since("last week").is_err());
}

#[test]
fn events_files_are_named_safely() {
    let case: Case =
        serde_json::from_str(r#"{"id":"fix-abc","repo":".","base":"a","head":"b","clean":true}"#)
            .unwrap();
    let pair = PairLabel {
        strategy: "react".into(),
        model: "org/model:7b".into(),
    };
    let name = events_file_name(&case, &pair);
    assert!(
        name.starts_with("fix-abc--react--org_model_7b-") && name.ends_with(".jsonl"),
        "{name}"
    );
    assert!(!name.contains('/') && !name.contains(':'));
}

#[test]
fn case_ids_that_differ_only_in_replaced_characters_get_their_own_events_file() {
    let case = |id: &str| -> Case {
        serde_json::from_value(serde_json::json!(
            {"id": id, "repo": ".", "base": "a", "head": "b", "clean": true}
        ))
        .unwrap()
    };
    let pair = PairLabel {
        strategy: "react".into(),
        model: "m".into(),
    };
    let slash = events_file_name(&case("bug/1"), &pair);
    let colon = events_file_name(&case("bug:1"), &pair);
    assert_ne!(slash, colon);
    assert_eq!(
        events_file_name(&case("fix-1"), &pair),
        "fix-1--react--m.jsonl"
    );
    let long = events_file_name(&case(&"x".repeat(5000)), &pair);
    assert!(long.len() < 200, "{}", long.len());
}
