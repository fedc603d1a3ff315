use super::*;
use crate::config::Owner;
use crate::llm::{CallTimeouts, Provider};

fn no_env(_: &str) -> Option<String> {
    None
}

fn repo(text: &str) -> Option<ConfigSource> {
    Some(ConfigSource::parse(text, ".redline.toml", Owner::Repository).unwrap())
}

/// The error of a repository file `text`, when it is read or when the settings are resolved.
fn file_error(text: &str) -> String {
    ConfigSource::parse(text, ".redline.toml", Owner::Repository)
        .and_then(|source| local(SettingFlags::default(), Some(source)))
        .unwrap_err()
        .to_string()
}

fn local(flags: SettingFlags, repository: Option<ConfigSource>) -> Result<Settings, ConfigError> {
    let flags = SettingFlags {
        model: ModelFlags {
            base_url: Some("http://localhost:1/v1".into()),
            ..flags.model.clone()
        },
        ..flags
    };
    resolve(SettingsInput {
        flags,
        flags_origin: "flag",
        env: &no_env,
        user: None,
        repository,
        scope: Scope::Local,
    })
}

fn server_model() -> ModelSettings {
    ModelSettings {
        provider: Provider::OpenAi,
        model: "gpt-4.1-mini".into(),
        base_url: "http://localhost:1/v1".into(),
        api_key: None,
        timeouts: CallTimeouts::default(),
    }
}

#[test]
fn every_kind_of_value_is_typed_once() {
    let text = "strategy = \"reflect\"\ntool_mode = \"text\"\nfail_on = \"major\"\nrequest_changes = \"minor\"\nmax_comments = 3\ninclude = [\"src/**\"]\nconnect_timeout = \"5s\"\n";
    let settings = local(SettingFlags::default(), repo(text)).unwrap();
    assert_eq!(settings.agent.strategy, "reflect".parse().unwrap());
    assert_eq!(settings.agent.tool_mode, "text".parse().unwrap());
    assert_eq!(settings.fail_on, "major".parse().unwrap());
    assert_eq!(settings.request_changes_at, Some(Severity::Minor));
    assert_eq!(settings.max_comments, 3);
    assert_eq!(
        settings.model.timeouts.connect,
        std::time::Duration::from_secs(5)
    );
    let flags = SettingFlags {
        strategy: Some("react".into()),
        max_comments: Some(9),
        ..SettingFlags::default()
    };
    let settings = local(flags, repo(text)).unwrap();
    assert_eq!(settings.agent.strategy, "react".parse().unwrap());
    assert_eq!(settings.max_comments, 9);
}

#[test]
fn a_bad_file_value_names_the_key_the_file_and_the_line() {
    for (text, key, line) in [
        ("model = \"m\"\n\nstrategy = \"fastest\"\n", "strategy", 3),
        ("tool_mode = \"psychic\"\n", "tool_mode", 1),
        ("# x\nrequest_changes = \"huge\"\n", "request_changes", 2),
        ("include = [\"src/[\"]\n", "include", 1),
        ("exclude = [\"{a\"]\n", "exclude", 1),
        ("summary_threshold = 0.01\n", "summary_threshold", 1),
        ("prune_threshold = 0.99\n", "prune_threshold", 1),
        ("task_budget = 5\n", "task_budget", 1),
        (
            "\n[reflection]\nmax_rounds = 50\n",
            "reflection.max_rounds",
            3,
        ),
        (
            "stream_idle_timeout = \"forever\"\n",
            "stream_idle_timeout",
            1,
        ),
        ("timeout = \"0s\"\n", "timeout", 1),
    ] {
        let err = file_error(text);
        // One format: `FILE:LINE:COL: key: message`.
        assert!(
            err.starts_with(&format!(".redline.toml:{line}:"))
                && err.contains(&format!(": {key}: ")),
            "{text}: {err}"
        );
    }
}

#[test]
fn a_bad_flag_value_names_the_flag() {
    let flags = SettingFlags {
        strategy: Some("fastest".into()),
        ..SettingFlags::default()
    };
    let err = local(flags, repo("strategy = \"react\"\n"))
        .unwrap_err()
        .to_string();
    // The flag names the setting; a slip gets the closest value.
    assert!(
        err.starts_with("--strategy: unknown strategy `fastest`"),
        "{err}"
    );
    assert!(!err.contains(".redline.toml"), "{err}");
}

#[test]
fn the_server_keeps_its_model_and_prices_and_bounds_the_limits() {
    let text =
        "model = \"gpt-4.1\"\nmax_cost = 5\n[pricing.\"gpt-4.1-mini\"]\ninput = 0\noutput = 0\n";
    let settings = resolve(SettingsInput {
        flags: SettingFlags::default(),
        flags_origin: "/redline command",
        env: &no_env,
        user: None,
        repository: repo(text),
        scope: Scope::Server {
            model: server_model(),
            ceilings: LimitCeilings {
                max_cost_usd: Some(0.5),
                timeout: None,
                max_tokens: None,
            },
        },
    })
    .unwrap();
    assert_eq!(settings.model.model, "gpt-4.1-mini");
    assert_eq!(settings.agent.model, "gpt-4.1-mini");
    assert_eq!(settings.agent.review_limits.max_cost_usd, Some(0.5));
    assert_eq!(
        settings.agent.price,
        crate::llm::pricing::builtin_price("gpt-4.1-mini")
    );
}

#[test]
fn guideline_keys_resolve_the_same_for_every_scope_and_a_bad_glob_names_its_key() {
    let text = "guidelines = false\nguidelines_files = [\"docs/*.md\"]\nguidelines_budget = 500\n";
    let expected = crate::guidelines::GuidelinesConfig {
        enabled: false,
        files: vec!["docs/*.md".into()],
        budget: 500,
    };
    let settings = local(SettingFlags::default(), repo(text)).unwrap();
    assert_eq!(settings.guidelines, expected);
    let served = resolve(SettingsInput {
        flags: SettingFlags::default(),
        flags_origin: "/redline command",
        env: &no_env,
        user: None,
        repository: repo(text),
        scope: Scope::Server {
            model: server_model(),
            ceilings: LimitCeilings {
                max_cost_usd: None,
                timeout: None,
                max_tokens: None,
            },
        },
    })
    .unwrap();
    assert_eq!(served.guidelines, expected);
    let defaults = local(SettingFlags::default(), None).unwrap();
    assert_eq!(
        defaults.guidelines,
        crate::guidelines::GuidelinesConfig::default()
    );

    let error = local(
        SettingFlags::default(),
        repo("guidelines_files = [\"a/[\"]\n"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.starts_with(".redline.toml:1:1: guidelines_files: "),
        "{error}"
    );
    for outside in ["../secrets.md", "/etc/passwd", "docs/../../x.md"] {
        let text = format!("guidelines_files = [\"{outside}\"]\n");
        let error = local(SettingFlags::default(), repo(&text))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("not a path inside the repository"),
            "{error}"
        );
    }
}

#[test]
fn walkthrough_is_on_by_default_off_by_key_for_every_scope_and_must_be_a_boolean() {
    assert!(
        local(SettingFlags::default(), None)
            .unwrap()
            .agent
            .walkthrough
    );
    let off = local(SettingFlags::default(), repo("walkthrough = false\n")).unwrap();
    assert!(!off.agent.walkthrough);
    let served = resolve(SettingsInput {
        flags: SettingFlags::default(),
        flags_origin: "/redline command",
        env: &no_env,
        user: None,
        repository: repo("walkthrough = false\n"),
        scope: Scope::Server {
            model: server_model(),
            ceilings: LimitCeilings {
                max_cost_usd: None,
                timeout: None,
                max_tokens: None,
            },
        },
    })
    .unwrap();
    assert!(!served.agent.walkthrough);
    let error = ConfigSource::parse("walkthrough = \"no\"\n", ".redline.toml", Owner::Repository)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("walkthrough") && error.contains("expected true or false"),
        "{error}"
    );
}

#[test]
fn thread_keys_default_resolve_and_bad_values_name_their_key() {
    let defaults = local(SettingFlags::default(), None).unwrap();
    assert_eq!(defaults.threads, super::ThreadSettings::default());
    assert_eq!(defaults.threads.chat_max_steps, 4);
    assert_eq!(defaults.threads.chat_max_replies, 5);
    assert!(!defaults.threads.resolve_outdated);
    let text = "chat_max_steps = 2\nchat_max_replies = 0\nresolve_outdated = true\n";
    let settings = local(SettingFlags::default(), repo(text)).unwrap();
    assert_eq!(
        (
            settings.threads.chat_max_steps,
            settings.threads.chat_max_replies,
            settings.threads.resolve_outdated
        ),
        (2, 0, true)
    );
    for (text, key) in [
        ("chat_max_steps = 0\n", "chat_max_steps"),
        ("chat_max_steps = 21\n", "chat_max_steps"),
        ("chat_max_replies = 101\n", "chat_max_replies"),
    ] {
        let error = file_error(text);
        assert!(
            error.starts_with(&format!(".redline.toml:1:1: {key}: ")),
            "{error}"
        );
    }
}
