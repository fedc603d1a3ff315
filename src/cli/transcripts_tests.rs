use super::*;

fn header_line(run_id: &str) -> String {
    let header = Header {
        format: FORMAT_VERSION,
        redline: "0".into(),
        run_id: run_id.into(),
        created: "2026-01-01T00:00:00Z".into(),
        strategy: "auto".into(),
        settings_digest: "d".into(),
        repository: RepositoryIdentity {
            root: "/r".into(),
            origin: None,
        },
        base: "b".into(),
        head: "h".into(),
        uncommitted: false,
        model: "m".into(),
        provider: "openai".into(),
        invocation: Vec::new(),
        intent: String::new(),
    };
    let record = crate::agent::transcript::Record::Header(header);
    format!("{}\n", serde_json::to_string(&record).unwrap())
}

fn age(path: &Path, days: u64) {
    let modified = SystemTime::now() - Duration::from_secs(days * 86_400 + 60);
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(modified).unwrap();
}

/// A transcript (a run id's name, a header) of about `bytes`, `age_days` old.
fn write(dir: &Path, id: &str, bytes: usize, age_days: u64) -> PathBuf {
    let path = dir.join(format!("{id}.jsonl"));
    let mut text = header_line(id);
    text.push_str(&"x".repeat(bytes.saturating_sub(text.len())));
    std::fs::write(&path, text).unwrap();
    age(&path, age_days);
    path
}

#[test]
fn prunes_by_age_then_oldest_first_by_size_and_keeps_the_current_run() {
    let dir = tempfile::tempdir().unwrap();
    let old = write(dir.path(), "20260101T000000Z-00000001", 10, 40);
    let older_big = write(dir.path(), "20260102T000000Z-0000000a", 600 * 1024, 5);
    let newer_big = write(dir.path(), "20260103T000000Z-0000000b", 600 * 1024, 1);
    let current = write(dir.path(), "20260104T000000Z-0000000c", 10, 90);
    let other = dir.path().join("notes.txt");
    std::fs::write(&other, "x").unwrap();
    age(&other, 90);
    let args = RunsArgs {
        runs_max_age: 30,
        runs_max_size: 1,
        ..RunsArgs::default()
    };
    assert_eq!(prune(dir.path(), &args, &current), 2);
    assert!(!old.exists(), "older than --runs-max-age");
    assert!(
        !older_big.exists(),
        "the oldest goes first while over the size"
    );
    assert!(newer_big.exists() && current.exists() && other.exists());
}

#[test]
fn cleanup_deletes_only_transcripts_by_name_and_header_and_follows_no_link() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    // Old and large, but not transcripts.
    let important = dir.path().join("important.jsonl");
    std::fs::write(&important, header_line("x")).unwrap();
    age(&important, 40);
    let big = dir.path().join("bigdata.jsonl");
    std::fs::write(&big, vec![b'{'; 3 << 20]).unwrap();
    let headless = dir.path().join("20260101T000000Z-00000002.jsonl");
    std::fs::write(&headless, "{\"record\":\"end\",\"status\":\"finished\"}\n").unwrap();
    age(&headless, 40);
    // A link with a transcript's name to a transcript elsewhere.
    let target = write(outside.path(), "20260101T000000Z-00000003", 10, 40);
    let link = dir.path().join("20260101T000000Z-00000003.jsonl");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let real = write(dir.path(), "20260101T000000Z-00000004", 10, 40);
    let current = write(dir.path(), "20260105T000000Z-0000000d", 10, 0);
    let args = RunsArgs {
        runs_max_age: 30,
        runs_max_size: 1,
        ..RunsArgs::default()
    };
    assert_eq!(prune(dir.path(), &args, &current), 1);
    assert!(!real.exists());
    assert!(important.exists() && big.exists() && headless.exists());
    assert!(target.exists());
    #[cfg(unix)]
    assert!(link.symlink_metadata().is_ok());
    assert!(is_transcript_name(&format!("{}.jsonl", new_run_id())));
    for name in [
        "20260101T000000Z-0000000G.jsonl",
        "20260101T000000Z-000000.jsonl",
        "2026010T1000000Z-00000000.jsonl",
        "20260101T000000Z-00000000.json",
    ] {
        assert!(!is_transcript_name(name), "{name}");
    }
}

#[test]
fn the_runs_dir_flag_wins() {
    let args = RunsArgs {
        runs_dir: Some(PathBuf::from("/tmp/r")),
        ..RunsArgs::default()
    };
    assert_eq!(runs_dir(&args).unwrap(), PathBuf::from("/tmp/r"));
}
