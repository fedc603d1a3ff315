//! Tests of the review limits and the price table.

use super::*;

fn file(text: &str) -> FileConfig {
    FileConfig::parse(text, ".redline.toml").unwrap()
}

#[test]
fn flags_beat_the_file_and_durations_parse() {
    let f = file("max_cost = 2\nmax_tokens = 50000\ntimeout = \"10m\"\n");
    let limits = resolve_limits(&LimitFlags::default(), &f).unwrap();
    assert_eq!(limits.max_cost_usd, Some(2.0));
    assert_eq!(limits.max_tokens, Some(50_000));
    assert_eq!(limits.timeout, Some(Duration::from_secs(600)));
    let flags = LimitFlags {
        max_cost: Some("0.5".into()),
        max_tokens: Some("1_000".into()),
        timeout: Some("1h30m".into()),
    };
    let limits = resolve_limits(&flags, &f).unwrap();
    assert_eq!(limits.max_cost_usd, Some(0.5));
    assert_eq!(limits.max_tokens, Some(1_000));
    assert_eq!(limits.timeout, Some(Duration::from_secs(5_400)));
    assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
}

#[test]
fn bad_limits_name_their_flag_or_key() {
    let cases: [(LimitFlags, &str, &str); 6] = [
        (
            LimitFlags {
                max_cost: Some("-1".into()),
                ..LimitFlags::default()
            },
            "",
            "--max-cost",
        ),
        (
            LimitFlags {
                max_tokens: Some("0".into()),
                ..LimitFlags::default()
            },
            "",
            "--max-tokens",
        ),
        (
            LimitFlags {
                timeout: Some("ten minutes".into()),
                ..LimitFlags::default()
            },
            "",
            "--timeout",
        ),
        (LimitFlags::default(), "max_cost = \"lots\"\n", "`max_cost`"),
        (LimitFlags::default(), "max_tokens = -5\n", "`max_tokens`"),
        (LimitFlags::default(), "timeout = \"0s\"\n", "`timeout`"),
    ];
    for (flags, text, key) in cases {
        let err = resolve_limits(&flags, &file(text)).unwrap_err().to_string();
        assert!(err.contains(key), "{key}: {err}");
    }
}

#[test]
fn durations_are_bounded_and_the_error_names_the_key() {
    for text in [
        "18446744073709551615s",
        "18446744073709551615",
        "367d",
        "9000h",
    ] {
        assert_eq!(
            parse_duration(text),
            Err(LimitValueError::TooLongDuration(text.into()))
        );
    }
    assert_eq!(parse_duration("366d"), Ok(MAX_DURATION));
    let flags = LimitFlags {
        timeout: Some("18446744073709551615s".into()),
        ..LimitFlags::default()
    };
    let err = resolve_limits(&flags, &FileConfig::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("--timeout") && err.contains("366d"), "{err}");
    for text in ["timeout = 9223372036854775807\n", "timeout = \"400d\"\n"] {
        let err = resolve_limits(&LimitFlags::default(), &file(text))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`timeout`") && err.contains("366d"), "{err}");
    }
}

#[test]
fn prices_override_and_bad_prices_name_the_key() {
    let f = file("[pricing.\"gpt-4.1\"]\ninput = 1\noutput = 4.5\ncached_input = 0.25\n");
    let price = price_table(&f).unwrap().lookup("gpt-4.1").unwrap();
    assert_eq!(
        (
            price.input,
            price.cached_input,
            price.cache_write,
            price.output
        ),
        (1.0, 0.25, 1.0, 4.5)
    );
    for (text, key) in [
        (
            "[pricing.\"gpt-4.1\"]\ninput = -1\noutput = 1\n",
            "pricing.\"gpt-4.1\".input",
        ),
        (
            "[pricing.\"gpt-4.1\"]\ninput = \"x\"\noutput = 1\n",
            "pricing.\"gpt-4.1\".input",
        ),
        ("[pricing.\"m\"]\ninput = 1\n", "pricing.\"m\".output"),
        (
            "[pricing.\"m\"]\ninput = 1\noutput = 1\nouput = 2\n",
            "pricing.\"m\".ouput",
        ),
    ] {
        let err = price_table(&file(text)).unwrap_err().to_string();
        assert!(err.contains(key), "{key}: {err}");
    }
}

#[test]
fn ceilings_bound_what_a_repository_asks() {
    let ceilings = LimitCeilings {
        max_cost_usd: Some(1.0),
        timeout: Some(Duration::from_secs(600)),
        max_tokens: None,
    };
    let asked = ReviewLimits {
        max_cost_usd: Some(5.0),
        max_tokens: Some(10_000),
        timeout: Some(Duration::from_secs(60)),
    };
    let bounded = apply_ceilings(asked, &ceilings);
    assert_eq!(bounded.max_cost_usd, Some(1.0));
    assert_eq!(bounded.timeout, Some(Duration::from_secs(60)));
    assert_eq!(bounded.max_tokens, Some(10_000));
    let unasked = apply_ceilings(ReviewLimits::default(), &ceilings);
    assert_eq!(unasked.max_cost_usd, Some(1.0));
    assert_eq!(unasked.timeout, Some(Duration::from_secs(600)));
    let no_ceiling = apply_ceilings(asked, &LimitCeilings::default());
    assert_eq!(no_ceiling, asked);
}

#[test]
fn a_repository_asks_within_the_server_ceilings() {
    let ceilings = LimitCeilings {
        max_cost_usd: Some(0.5),
        timeout: Some(Duration::from_secs(300)),
        max_tokens: None,
    };
    let price = crate::llm::pricing::builtin_price("gpt-4.1-mini");
    let asked = file("max_cost = 3\ntimeout = \"1h\"\nmax_tokens = 8000\n");
    let limits = repository_limits(&asked, &ceilings, price, "gpt-4.1-mini").unwrap();
    assert_eq!(limits.max_cost_usd, Some(0.5));
    assert_eq!(limits.timeout, Some(Duration::from_secs(300)));
    assert_eq!(limits.max_tokens, Some(8000));
    let modest = file("max_cost = 0.1\ntimeout = \"30s\"\n");
    let limits = repository_limits(&modest, &ceilings, price, "gpt-4.1-mini").unwrap();
    assert_eq!(limits.max_cost_usd, Some(0.1));
    assert_eq!(limits.timeout, Some(Duration::from_secs(30)));
    let err = repository_limits(&file("max_cost = 0\n"), &ceilings, price, "gpt-4.1-mini")
        .unwrap_err()
        .to_string();
    assert!(err.contains("max_cost"), "{err}");
    // A repository's [pricing] does not change what the server charges against its ceiling.
    let cheap = file("[pricing.\"gpt-4.1-mini\"]\ninput = 0\noutput = 0\n");
    let limits = repository_limits(&cheap, &ceilings, price, "gpt-4.1-mini").unwrap();
    assert_eq!(limits.max_cost_usd, Some(0.5));
}

#[test]
fn a_cost_limit_needs_a_price() {
    let limits = ReviewLimits {
        max_cost_usd: Some(1.0),
        ..ReviewLimits::default()
    };
    let err = check_priced(&limits, None, "local-llama")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("max_cost") && err.contains("[pricing.\"local-llama\"]"),
        "{err}"
    );
    assert!(check_priced(&ReviewLimits::default(), None, "local-llama").is_ok());
}

#[test]
fn serve_bounds_every_review_by_default_and_flags_override() {
    let priced = LimitCeilings::default().with_defaults(true);
    assert_eq!(priced.max_cost_usd, Some(DEFAULT_COST_CEILING_USD));
    assert_eq!(priced.max_tokens, None);
    let unpriced = LimitCeilings::default().with_defaults(false);
    assert_eq!(unpriced.max_cost_usd, None);
    assert_eq!(unpriced.max_tokens, Some(DEFAULT_TOKEN_CEILING));
    let given = LimitCeilings {
        max_cost_usd: Some(10.0),
        timeout: None,
        max_tokens: Some(50_000),
    };
    assert_eq!(given.with_defaults(true), given);
    // A repository asking for more tokens gets the ceiling; one asking less keeps its own.
    let asked = ReviewLimits {
        max_tokens: Some(5_000_000),
        ..ReviewLimits::default()
    };
    assert_eq!(
        apply_ceilings(asked, &unpriced).max_tokens,
        Some(DEFAULT_TOKEN_CEILING)
    );
    let modest = ReviewLimits {
        max_tokens: Some(1_000),
        ..ReviewLimits::default()
    };
    assert_eq!(apply_ceilings(modest, &unpriced).max_tokens, Some(1_000));
}
