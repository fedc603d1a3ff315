use std::io::Cursor;

use super::intent_sources::read_bounded;
use super::*;
use crate::repo::test_repo::repo_with_changed_files;

/// A request for `base..head` of the repository at `root`, hermetic: no user file, a
/// local model address (no key, no discovery).
fn request(root: &Path, base: &str, head: &str, purpose: Purpose) -> LocalRequest {
    LocalRequest {
        repository: Some(root.to_path_buf()),
        change: ChangeSelection {
            base: Some(base.into()),
            head: head.into(),
            uncommitted: false,
        },
        settings: SettingsChoice {
            overrides: Overrides {
                model: ModelFlags {
                    model: Some("gpt-4o".into()),
                    base_url: Some("http://127.0.0.1:9/v1".into()),
                    ..ModelFlags::default()
                },
                ..Overrides::default()
            },
            config_file: None,
            user_file: false,
        },
        intent: IntentSources {
            title: Some("Bump every function".into()),
            description: Some(Description::Text("They all return 2 now.".into())),
        },
        purpose,
        output: OutputWants::default(),
    }
}

#[test]
fn a_request_resolves_to_the_change_its_settings_and_its_intent() {
    let (dir, base, head) = repo_with_changed_files(3);
    let mut notices = Vec::new();
    let prepared = request(dir.path(), &base, &head, Purpose::Review)
        .prepare(&mut |n| notices.push(n))
        .unwrap();
    assert_eq!(
        (prepared.range.base.as_str(), prepared.range.head.as_str()),
        (base.as_str(), head.as_str())
    );
    assert!(prepared.has_changes());
    assert_eq!(prepared.workspace.changes.files.len(), 3);
    assert_eq!(prepared.settings.model.model, "gpt-4o");
    assert_eq!(prepared.settings.model.base_url, "http://127.0.0.1:9/v1");
    let intent = &prepared.settings.agent.intent;
    assert!(
        intent.contains("Bump every function") && intent.contains("They all return 2 now."),
        "{intent}"
    );
    assert!(!prepared.uncommitted_would_review);
    assert!(notices.is_empty(), "{notices:?}");
}

#[test]
fn an_empty_change_gets_a_report_that_says_against_what() {
    let (dir, _, head) = repo_with_changed_files(2);
    let prepared = request(dir.path(), &head, &head, Purpose::Review)
        .prepare(&mut |_| {})
        .unwrap();
    assert!(!prepared.has_changes());
    let report = prepared.empty_report();
    assert!(report.findings.is_empty());
    assert!(
        report.summary.starts_with("No changes to review against"),
        "{}",
        report.summary
    );
    assert_eq!(report.stats.coverage, 1.0);
}

#[test]
fn a_config_file_is_noted_before_it_fails_to_read() {
    let (dir, base, head) = repo_with_changed_files(1);
    let missing = dir.path().join("no-such.toml");
    let mut shaped = request(dir.path(), &base, &head, Purpose::Shape);
    shaped.settings.config_file = Some(missing.clone());
    let mut notices = Vec::new();
    let error = shaped.prepare(&mut |n| notices.push(n)).unwrap_err();
    assert!(matches!(error, LocalError::Config(_)), "{error:?}");
    assert!(error.to_string().contains("no-such.toml"), "{error}");
    assert_eq!(
        notices,
        vec![Notice::Note(format!(
            "using the config file {} (--config)",
            missing.display()
        ))]
    );
}

#[test]
fn an_unreadable_description_is_named_with_its_cause() {
    let (dir, base, head) = repo_with_changed_files(1);
    let mut asked = request(dir.path(), &base, &head, Purpose::Shape);
    let missing = dir.path().join("missing.md");
    asked.intent.description = Some(Description::File(missing.clone()));
    let error = asked.prepare(&mut |_| {}).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("--description-file {}", missing.display())
    );
    let cause = std::error::Error::source(&error).map(ToString::to_string);
    assert!(cause.is_some_and(|c| !c.is_empty()));
}

#[test]
fn a_description_is_read_up_to_its_bound() {
    let long = vec![b'x'; MAX_DESCRIPTION_BYTES as usize + 10];
    let text = read_bounded(Cursor::new(long), Path::new("-")).unwrap();
    assert_eq!(text.len() as u64, MAX_DESCRIPTION_BYTES);
    let text = read_bounded(Cursor::new(b"caf\xc3\xa9 \xff".to_vec()), Path::new("-")).unwrap();
    assert_eq!(text, "café \u{fffd}");
}
