//! Tests of the configuration file and model settings.

use super::*;
use crate::llm::CallTimeouts;

fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |k| {
        pairs
            .iter()
            .find(|(name, _)| *name == k)
            .map(|(_, v)| v.to_string())
    }
}

#[test]
fn unknown_keys_are_named() {
    let err = FileConfig::parse("modle = \"x\"\n", ".redline.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("modle"), "{err}");
}

#[test]
fn flags_beat_file_beat_defaults() {
    let file = FileConfig::parse(
        "model = \"from-file\"\nbase_url = \"http://localhost:1/v1\"\n",
        "t",
    )
    .unwrap();
    let flags = ModelFlags {
        model: Some("from-flag".into()),
        ..Default::default()
    };
    let s = resolve_model(&flags, &file, &env_of(&[])).unwrap();
    assert_eq!(s.model, "from-flag");
    assert_eq!(s.base_url, "http://localhost:1/v1");
    let s = resolve_model(&ModelFlags::default(), &file, &env_of(&[])).unwrap();
    assert_eq!(s.model, "from-file");
}

#[test]
fn key_precedence_and_missing_key() {
    let file = FileConfig::default();
    let s = resolve_model(
        &ModelFlags::default(),
        &file,
        &env_of(&[("REDLINE_API_KEY", "k1"), ("OPENAI_API_KEY", "k2")]),
    )
    .unwrap();
    assert_eq!(s.api_key.unwrap().expose(), "k1");
    let flags = ModelFlags {
        provider: Some("anthropic".into()),
        ..Default::default()
    };
    let s = resolve_model(
        &flags,
        &file,
        &env_of(&[("ANTHROPIC_API_KEY", "k3"), ("OPENAI_API_KEY", "k2")]),
    )
    .unwrap();
    assert_eq!(s.api_key.unwrap().expose(), "k3");
    assert_eq!(s.base_url, "https://api.anthropic.com");
    let err = resolve_model(&ModelFlags::default(), &file, &env_of(&[]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("REDLINE_API_KEY")
            && err.contains("OPENAI_API_KEY")
            && err.contains("--base-url"),
        "{err}"
    );
}

#[test]
fn the_missing_key_hint_fits_the_provider() {
    let anthropic = ModelFlags {
        provider: Some("anthropic".into()),
        ..Default::default()
    };
    let err = resolve_model(&anthropic, &FileConfig::default(), &env_of(&[]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("ANTHROPIC_API_KEY") && !err.contains("OpenAI") && !err.contains("Ollama"),
        "{err}"
    );
}

#[test]
fn limits_must_leave_room_for_the_change() {
    use crate::llm::tokens::ModelLimits;
    let limits = |context_window, max_output_tokens| ModelLimits {
        context_window,
        max_output_tokens,
    };
    let err = check_limits(limits(1, 100)).unwrap_err().to_string();
    assert!(err.contains("context_window"), "{err}");
    let err = check_limits(limits(100_000, 0)).unwrap_err().to_string();
    assert!(err.contains("max_output_tokens"), "{err}");
    let min = crate::context::STAGE1_MIN_BUDGET as u32;
    assert!(check_limits(limits(4096 + min, 4096)).is_ok());
    assert!(check_limits(limits(4095 + min, 4096)).is_err());
}

#[test]
fn local_servers_need_no_key() {
    for url in [
        "http://localhost:11434/v1",
        "http://127.0.0.1:8000/v1",
        "http://192.168.1.5:8080/v1",
        "http://[::1]:1/v1",
    ] {
        assert!(is_local_url(&url::Url::parse(url).unwrap()), "{url}");
    }
    assert!(!is_local_url(
        &url::Url::parse("https://openrouter.ai/api/v1").unwrap()
    ));
}

#[test]
fn timeouts_parse_as_durations() {
    let file = FileConfig::parse(
        "connect_timeout = \"5s\"\nfirst_byte_timeout = \"2m\"\nstream_idle_timeout = \"1500ms\"\nrequest_timeout = \"15m\"\n",
        "t",
    )
    .unwrap();
    let timeouts = resolve_timeouts(&file).unwrap();
    assert_eq!(timeouts.request, std::time::Duration::from_secs(900));
    let slow = FileConfig::parse("request_timeout = \"2h\"\n", "t").unwrap();
    assert!(
        resolve_timeouts(&slow)
            .unwrap_err()
            .to_string()
            .contains("request_timeout")
    );
    assert_eq!(timeouts.connect, std::time::Duration::from_secs(5));
    assert_eq!(timeouts.first_byte, std::time::Duration::from_secs(120));
    assert_eq!(timeouts.stream_idle, std::time::Duration::from_millis(1500));
    assert_eq!(
        resolve_timeouts(&FileConfig::default()).unwrap(),
        CallTimeouts::default()
    );
    assert_eq!(
        parse_timeout("k", " 45 ").unwrap(),
        std::time::Duration::from_secs(45)
    );
    for bad in ["", "fast", "10h", "0s", "-1s", "1e9s", "2 hours"] {
        let err = parse_timeout("stream_idle_timeout", bad)
            .unwrap_err()
            .to_string();
        assert!(err.contains("stream_idle_timeout"), "{bad}: {err}");
    }
}

#[test]
fn bad_provider_is_named() {
    let flags = ModelFlags {
        provider: Some("gemini".into()),
        base_url: Some("http://localhost/v1".into()),
        ..Default::default()
    };
    let err = resolve_model(&flags, &FileConfig::default(), &env_of(&[]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("provider"), "{err}");
}

#[test]
fn a_config_error_names_the_line_and_key_without_quoting_the_line() {
    let text = "model = \"gpt-4.1\"\napi_key = \"sk-live-0123456789abcdef\"\n";
    let err = ConfigSource::parse(text, ".redline.toml", Owner::User)
        .expect_err("unknown key")
        .to_string();
    assert!(
        err.starts_with(".redline.toml:2:1: api_key: unknown key"),
        "{err}"
    );
    assert!(!err.contains("0123456789"), "the value is quoted: {err}");
    let broken = "model = \"gpt-4.1\nsecret = \"sk-live-0123456789abcdef\"\n";
    let err = ConfigSource::parse(broken, ".redline.toml", Owner::User)
        .expect_err("unclosed string")
        .to_string();
    assert!(err.starts_with(".redline.toml:1:"), "{err}");
    assert!(!err.contains("0123456789"), "the value is quoted: {err}");
    // A value under a known key of another type, a bad variant, a line that is a pasted
    // secret: the key is named, the value never shown.
    for (text, key) in [
        (
            "context_window = \"sk-live-0123456789abcdef\"\n",
            Some("context_window"),
        ),
        (
            "walkthrough = \"sk-live-0123456789abcdef\"\n",
            Some("walkthrough"),
        ),
        (
            "max_steps = \"sk-live-0123456789abcdef\"\n",
            Some("max_steps"),
        ),
        ("c2VjcmV0LTAxMjM0NTY3ODlhYmNkZWY0123456789abcdef==\n", None),
    ] {
        let err = ConfigSource::parse(text, ".redline.toml", Owner::User)
            .expect_err("invalid")
            .to_string();
        assert!(!err.contains("0123456789"), "a value is quoted: {err}");
        assert!(!err.contains("c2VjcmV0"), "a value is quoted: {err}");
        if let Some(key) = key {
            assert!(
                err.starts_with(".redline.toml:1:") && err.contains(&format!(": {key}: ")),
                "{err}"
            );
        }
    }
}

#[test]
fn an_unknown_key_gets_the_closest_key_not_the_list_of_all() {
    let err = ConfigSource::parse("modle = \"x\"\n", ".redline.toml", Owner::User)
        .expect_err("unknown key")
        .to_string();
    assert_eq!(
        err,
        ".redline.toml:1:1: modle: unknown key: did you mean `model`?"
    );
    let err = ConfigSource::parse("[reflection]\nmax_round = 2\n", "c.toml", Owner::User)
        .expect_err("unknown key")
        .to_string();
    assert_eq!(
        err,
        "c.toml:2:1: reflection.max_round: unknown key: did you mean `max_rounds`?"
    );
    // A range error has the same shape, with the key's line and column.
    let err = ConfigSource::parse("model = \"m\"\n  temperature = 5\n", "c.toml", Owner::User)
        .expect_err("out of range")
        .to_string();
    assert_eq!(
        err,
        "c.toml:2:3: temperature: expected a number from 0 to 2, not 5"
    );
}
