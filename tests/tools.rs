//! The repository layer and the repository tools, on real temporary git repositories.

use redline::repo::search::SearchOptions;
use redline::repo::{RepoError, RepoView, Revision, discover, load_change, resolve_range};
use redline::review::diff::{ChangeSet, FileChange, FileStatus, LineKind};
use redline::review::finding::Side;
use redline::tools::{Observation, ToolError, ToolRegistry, Workspace};

use crate::common::git::TempRepo;

fn numbered_lines(n: u32) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

/// Commits `base` files on main, then `head` edits on branch `feature`; returns the change.
fn committed_change(repo: &TempRepo) -> (RepoView, ChangeSet) {
    let range = resolve_range(repo.path(), None, "HEAD").expect("range");
    load_change(repo.path(), &range, false).expect("change")
}

fn workspace(view: RepoView, changes: ChangeSet) -> Workspace {
    Workspace::new(view, changes)
}

async fn call(ws: &Workspace, tool: &str, args: serde_json::Value) -> Observation {
    ToolRegistry::repository_tools()
        .dispatch(tool, &args.to_string(), ws)
        .await
        .expect("not fatal")
}

fn file<'a>(changes: &'a ChangeSet, path: &str) -> &'a FileChange {
    changes
        .file(path)
        .unwrap_or_else(|| panic!("{path} not in change"))
}

/// A repository with every kind of change between `main` and `feature`.
fn repo_with_all_kinds_of_change() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("a.txt", numbered_lines(10));
    repo.write("b.txt", numbered_lines(20));
    repo.write("gone.txt", "bye\n");
    repo.write("old_name.txt", numbered_lines(30));
    repo.write("image.bin", [0u8, 1, 2, 3, 0, 5]);
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("a.txt", numbered_lines(10).replace("line 5\n", "LINE 5\n"));
    let b = numbered_lines(20)
        .replace("line 1\n", "line 1\nnew A\nnew B\n")
        .replace("line 15\n", "");
    repo.write("b.txt", b);
    repo.remove("gone.txt");
    repo.remove("old_name.txt");
    repo.write("new_name.txt", numbered_lines(30));
    repo.write("image.bin", [0u8, 9, 9, 9, 0, 5]);
    repo.write("src/new.rs", "fn new() {}\n");
    repo.commit("change");
    repo
}

#[test]
fn discover_finds_the_work_tree_root_from_a_subdirectory() {
    let repo = TempRepo::new();
    repo.write("deep/dir/f.txt", "x");
    let found = discover(&repo.path().join("deep/dir")).expect("discover");
    assert_eq!(
        found.canonicalize().unwrap(),
        repo.path().canonicalize().unwrap()
    );
    let elsewhere = tempfile::TempDir::new().unwrap();
    assert!(matches!(
        discover(elsewhere.path()),
        Err(RepoError::NotARepository { .. })
    ));
}

#[test]
fn change_has_every_status_with_sorted_paths() {
    let repo = repo_with_all_kinds_of_change();
    let (view, changes) = committed_change(&repo);
    assert_eq!(changes.head.as_deref(), Some(repo.head().as_str()));
    assert_eq!(view.revision(), &Revision::Commit(repo.head()));
    let summary: Vec<(&str, FileStatus, bool)> = changes
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.status, f.binary))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("a.txt", FileStatus::Modified, false),
            ("b.txt", FileStatus::Modified, false),
            ("gone.txt", FileStatus::Deleted, false),
            ("image.bin", FileStatus::Modified, true),
            ("new_name.txt", FileStatus::Renamed, false),
            ("src/new.rs", FileStatus::Added, false),
        ]
    );
    assert_eq!(
        file(&changes, "new_name.txt").old_path.as_deref(),
        Some("old_name.txt")
    );
    assert!(file(&changes, "image.bin").hunks.is_empty());
    let added = &file(&changes, "src/new.rs").hunks[0];
    assert_eq!(
        (added.new_start, added.new_lines, added.old_lines),
        (1, 1, 0)
    );
}

#[test]
fn hunks_carry_ranges_and_line_numbers_on_both_sides() {
    let repo = repo_with_all_kinds_of_change();
    let (_, changes) = committed_change(&repo);

    let a = file(&changes, "a.txt");
    assert_eq!(a.hunks.len(), 1);
    let hunk = &a.hunks[0];
    assert_eq!(
        (
            hunk.old_start,
            hunk.old_lines,
            hunk.new_start,
            hunk.new_lines
        ),
        (2, 7, 2, 7)
    );
    let removed = hunk
        .lines
        .iter()
        .find(|l| l.kind == LineKind::Removed)
        .unwrap();
    assert_eq!((removed.old_line, removed.new_line), (Some(5), None));
    assert_eq!(removed.text, "line 5");
    let added = hunk
        .lines
        .iter()
        .find(|l| l.kind == LineKind::Added)
        .unwrap();
    assert_eq!((added.old_line, added.new_line), (None, Some(5)));
    assert_eq!(added.text, "LINE 5");

    // Two hunks; the second is shifted by the two lines inserted in the first.
    let b = file(&changes, "b.txt");
    assert_eq!(b.hunks.len(), 2);
    let (first, second) = (&b.hunks[0], &b.hunks[1]);
    assert_eq!(
        (
            first.old_start,
            first.old_lines,
            first.new_start,
            first.new_lines
        ),
        (1, 4, 1, 6)
    );
    assert_eq!(
        (
            second.old_start,
            second.old_lines,
            second.new_start,
            second.new_lines
        ),
        (12, 7, 14, 6)
    );
    let context_16 = second.lines.iter().find(|l| l.text == "line 16").unwrap();
    assert_eq!(
        (context_16.old_line, context_16.new_line),
        (Some(16), Some(17))
    );
    assert!(b.hunk_at(Side::Right, 3).is_some() && b.hunk_at(Side::Left, 15).is_some());
    assert_eq!((b.additions(), b.deletions()), (2, 1));
}

#[test]
fn default_base_is_the_merge_base_with_main() {
    let repo = TempRepo::new();
    repo.write("f.txt", "1\n");
    let fork = repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("f.txt", "2\n");
    let head = repo.commit("feature work");
    repo.checkout("main");
    repo.write("g.txt", "main moved on\n");
    repo.commit("main work");
    repo.checkout("feature");

    let range = resolve_range(repo.path(), None, "HEAD").unwrap();
    assert_eq!(
        (range.base.as_str(), range.head.as_str()),
        (fork.as_str(), head.as_str())
    );
    assert_eq!(range.base_label, "merge-base with main");

    let explicit = resolve_range(repo.path(), Some("main"), "HEAD").unwrap();
    assert_eq!(explicit.base_label, "main");
    assert_ne!(explicit.base, fork);
    assert!(matches!(
        resolve_range(repo.path(), Some("no-such-branch"), "HEAD"),
        Err(RepoError::UnknownRevision { rev }) if rev == "no-such-branch"
    ));
}

#[test]
fn default_base_falls_back_to_master_and_prefers_origin_head() {
    let old_style = TempRepo::with_initial_branch("master");
    old_style.write("f.txt", "1\n");
    let fork = old_style.commit("base");
    old_style.checkout_new_branch("feature");
    old_style.write("f.txt", "2\n");
    old_style.commit("work");
    let range = resolve_range(old_style.path(), None, "HEAD").unwrap();
    assert_eq!(
        (range.base, range.base_label.as_str()),
        (fork, "merge-base with master")
    );

    let cloned = TempRepo::with_initial_branch("trunk");
    cloned.write("f.txt", "1\n");
    let fork = cloned.commit("base");
    cloned.set_origin_head("develop", &fork);
    // `main` is the work branch here: were it preferred, the base would be HEAD itself.
    cloned.checkout_new_branch("main");
    cloned.write("f.txt", "2\n");
    cloned.commit("work");
    let range = resolve_range(cloned.path(), None, "HEAD").unwrap();
    assert_eq!(
        (range.base, range.base_label.as_str()),
        (fork, "merge-base with origin/HEAD")
    );
}

#[test]
fn no_default_base_asks_for_one() {
    let repo = TempRepo::with_initial_branch("trunk");
    repo.write("f.txt", "1\n");
    repo.commit("base");
    let err = resolve_range(repo.path(), None, "HEAD").unwrap_err();
    assert_eq!(err, RepoError::NoDefaultBase);
    assert!(err.to_string().contains("--base REV"));
}

#[test]
fn uncommitted_change_has_staged_unstaged_and_untracked_files() {
    let repo = TempRepo::new();
    repo.write(".gitignore", "*.log\n");
    repo.write("staged.txt", "old\n");
    repo.write("unstaged.txt", "old\n");
    repo.write("same.txt", "same\n");
    repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("staged.txt", "new\n");
    repo.stage("staged.txt");
    repo.write("unstaged.txt", "new\n");
    repo.write("dir/untracked.txt", "hello\n");
    repo.write("debug.log", "ignored\n");

    let range = resolve_range(repo.path(), None, "HEAD").unwrap();
    let (view, changes) = load_change(repo.path(), &range, true).unwrap();
    assert_eq!(view.revision(), &Revision::WorkTree);
    assert_eq!(changes.head, None);
    let paths: Vec<&str> = changes.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        vec!["dir/untracked.txt", "staged.txt", "unstaged.txt"]
    );
    assert_eq!(
        file(&changes, "dir/untracked.txt").status,
        FileStatus::Added
    );
    assert_eq!(file(&changes, "unstaged.txt").additions(), 1);
}

#[tokio::test]
async fn read_file_numbers_lines_and_pages() {
    let repo = TempRepo::new();
    repo.write("big.txt", numbered_lines(450));
    repo.commit("base");
    let view = RepoView::open(repo.path(), Revision::Commit("HEAD".into())).unwrap();
    let ws = workspace(view, ChangeSet::default());

    let first = call(&ws, "read_file", serde_json::json!({"path": "big.txt"})).await;
    assert!(!first.is_error);
    assert!(
        first
            .content
            .starts_with("big.txt (lines 1-400 of 450)\n    1 | line 1\n")
    );
    assert!(first.content.contains("start_line 401"));

    let window = call(
        &ws,
        "read_file",
        serde_json::json!({"path": "./big.txt", "start_line": 449}),
    )
    .await;
    assert_eq!(
        window.content,
        "./big.txt (lines 449-450 of 450)\n  449 | line 449\n  450 | line 450\n"
    );

    let past = call(
        &ws,
        "read_file",
        serde_json::json!({"path": "big.txt", "start_line": 451}),
    )
    .await;
    assert!(past.is_error && past.content.contains("450 lines"));
    let unknown_arg = call(&ws, "read_file", serde_json::json!({"file": "big.txt"})).await;
    assert!(unknown_arg.is_error && unknown_arg.content.contains("invalid arguments"));
}

#[tokio::test]
async fn diff_tool_shows_overview_one_file_or_lists_the_changed_files() {
    let repo = repo_with_all_kinds_of_change();
    let (view, changes) = committed_change(&repo);
    let ws = workspace(view, changes);

    let all = call(&ws, "diff", serde_json::json!({})).await;
    assert!(
        all.content
            .starts_with("6 files changed\nmodified a.txt +1 -1\n")
    );
    assert!(all.content.contains("modified image.bin (binary)"));
    assert!(
        all.content
            .contains("renamed  old_name.txt -> new_name.txt +0 -0")
    );
    assert!(all.content.contains("    5 -line 5\n    5 +LINE 5\n"));

    let one = call(&ws, "diff", serde_json::json!({"path": "b.txt"})).await;
    assert!(
        one.content
            .starts_with("--- a/b.txt\n+++ b/b.txt\n@@ -1,4 +1,6 @@")
    );
    assert!(one.content.contains("   15 -line 15\n"));

    let missing = call(&ws, "diff", serde_json::json!({"path": "nope.rs"})).await;
    assert!(missing.is_error);
    assert!(
        missing
            .content
            .contains("changed files: a.txt, b.txt, gone.txt")
    );
}

#[tokio::test]
async fn list_files_filters_by_dir_and_glob() {
    let repo = TempRepo::new();
    repo.write("Cargo.toml", "");
    repo.write("src/lib.rs", "");
    repo.write("src/tools/mod.rs", "");
    repo.write("srcx/other.rs", "");
    repo.write(".github/ci.yml", "");
    repo.commit("base");
    let view = RepoView::open(repo.path(), Revision::Commit("HEAD".into())).unwrap();
    let ws = workspace(view, ChangeSet::default());

    let all = call(&ws, "list_files", serde_json::json!({})).await;
    assert_eq!(
        all.content,
        ".github/ci.yml\nCargo.toml\nsrc/lib.rs\nsrc/tools/mod.rs\nsrcx/other.rs\n"
    );
    let src = call(
        &ws,
        "list_files",
        serde_json::json!({"dir": "src", "glob": "*.rs"}),
    )
    .await;
    assert_eq!(src.content, "src/lib.rs\nsrc/tools/mod.rs\n");
    let missing = call(&ws, "list_files", serde_json::json!({"dir": "nope"})).await;
    assert!(missing.is_error && missing.content.contains("does not exist"));
    let escape = call(&ws, "list_files", serde_json::json!({"dir": "../"})).await;
    assert!(escape.is_error && escape.content.contains("outside the repository"));
}

#[tokio::test]
async fn search_sorts_counts_and_reports_bad_patterns() {
    let repo = TempRepo::new();
    repo.write("b.rs", "fn beta() {}\nfn gamma() {}\n");
    repo.write("a.rs", "// nothing\nfn alpha() {}\n");
    repo.write("notes.md", "fn in prose\n");
    repo.write("blob.bin", b"fn \0 binary");
    repo.commit("base");
    let view = RepoView::open(repo.path(), Revision::Commit("HEAD".into())).unwrap();
    let ws = workspace(view, ChangeSet::default());

    let out = call(
        &ws,
        "search",
        serde_json::json!({"pattern": r"fn \w+\(", "path_glob": "*.rs"}),
    )
    .await;
    assert_eq!(
        out.content,
        "a.rs:2: fn alpha() {}\nb.rs:1: fn beta() {}\nb.rs:2: fn gamma() {}\n"
    );

    let cut = call(
        &ws,
        "search",
        serde_json::json!({"pattern": "fn", "max_results": 2}),
    )
    .await;
    assert!(
        cut.content
            .starts_with("a.rs:2: fn alpha() {}\nb.rs:1: fn beta() {}\n")
    );
    assert!(
        cut.content
            .contains("showing the first 2 of 4 matching lines")
    );

    let literal = call(
        &ws,
        "search",
        serde_json::json!({"pattern": "alpha()", "fixed_string": true}),
    )
    .await;
    assert_eq!(literal.content, "a.rs:2: fn alpha() {}\n");
    let caseless = call(
        &ws,
        "search",
        serde_json::json!({"pattern": "FN ALPHA", "case_insensitive": true}),
    )
    .await;
    assert_eq!(caseless.content, "a.rs:2: fn alpha() {}\n");

    let bad = call(&ws, "search", serde_json::json!({"pattern": "fn ("})).await;
    assert!(bad.is_error && bad.content.contains("invalid regular expression"));
}

#[tokio::test]
async fn commit_mode_search_sees_committed_content_not_the_dirty_work_tree() {
    let repo = TempRepo::new();
    repo.write("f.txt", "committed needle\n");
    let head = repo.commit("base");
    repo.write("f.txt", "dirty needle\n");
    repo.write("untracked.txt", "needle\n");

    let committed = RepoView::open(repo.path(), Revision::Commit(head)).unwrap();
    let out = committed.search(&SearchOptions::new("needle")).unwrap();
    let lines: Vec<String> = out
        .matches
        .iter()
        .map(|m| format!("{}:{}", m.path, m.text))
        .collect();
    assert_eq!(lines, vec!["f.txt:committed needle"]);

    let work_tree = RepoView::open(repo.path(), Revision::WorkTree).unwrap();
    let out = work_tree.search(&SearchOptions::new("needle")).unwrap();
    let lines: Vec<String> = out
        .matches
        .iter()
        .map(|m| format!("{}:{}", m.path, m.text))
        .collect();
    assert_eq!(lines, vec!["f.txt:dirty needle", "untracked.txt:needle"]);
}

#[tokio::test]
async fn work_tree_search_and_listing_honour_gitignore() {
    let repo = TempRepo::new();
    repo.write(".gitignore", "target/\n*.log\n");
    repo.write("src/main.rs", "needle\n");
    repo.commit("base");
    repo.write("target/debug/out.rs", "needle\n");
    repo.write("run.log", "needle\n");
    repo.write(".hidden/conf", "needle\n");
    let view = RepoView::open(repo.path(), Revision::WorkTree).unwrap();
    let ws = workspace(view.clone(), ChangeSet::default());

    let out = call(&ws, "search", serde_json::json!({"pattern": "needle"})).await;
    assert_eq!(
        out.content,
        ".hidden/conf:1: needle\nsrc/main.rs:1: needle\n"
    );
    let files = view.list_files().unwrap();
    assert_eq!(files, vec![".gitignore", ".hidden/conf", "src/main.rs"]);
    let ignored = call(&ws, "read_file", serde_json::json!({"path": "run.log"})).await;
    assert!(ignored.is_error && ignored.content.contains("ignored"));
}

/// A repository with links pointing inside and outside, in both modes.
fn repo_with_links() -> (TempRepo, tempfile::TempDir) {
    let outside = tempfile::TempDir::new().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    let repo = TempRepo::new();
    repo.write("src/lib.rs", "pub fn lib() {}\n");
    repo.symlink("inside_link", "src/lib.rs");
    repo.symlink("src/up_link", "../src/lib.rs");
    repo.symlink("relative_escape", "../../../../../../../../etc/hostname");
    repo.symlink(
        "absolute_escape",
        &outside.path().join("secret.txt").display().to_string(),
    );
    repo.commit("base");
    (repo, outside)
}

#[tokio::test]
async fn paths_outside_the_repository_are_refused_in_both_modes() {
    let (repo, _outside) = repo_with_links();
    for revision in [Revision::Commit("HEAD".into()), Revision::WorkTree] {
        let view = RepoView::open(repo.path(), revision.clone()).unwrap();
        assert_eq!(view.read_text("inside_link").unwrap(), "pub fn lib() {}\n");
        assert_eq!(view.read_text("src/up_link").unwrap(), "pub fn lib() {}\n");
        for bad in [
            "../x",
            "/etc/hostname",
            "src/../../x",
            "relative_escape",
            "absolute_escape",
        ] {
            let err = view.read_text(bad).unwrap_err();
            assert!(
                matches!(
                    err,
                    RepoError::OutsideRepository { .. } | RepoError::NotFound { .. }
                ),
                "{revision:?} {bad}: {err}"
            );
            assert!(!view.exists(bad), "{revision:?} {bad}");
        }
        assert!(matches!(
            view.read_text("absolute_escape"),
            Err(RepoError::OutsideRepository { .. })
        ));
        assert!(matches!(
            view.read_text(".git/config"),
            Err(RepoError::NotFound { .. })
        ));

        let ws = workspace(view, ChangeSet::default());
        let out = call(
            &ws,
            "read_file",
            serde_json::json!({"path": "../etc/passwd"}),
        )
        .await;
        assert_eq!(
            out.content,
            "ERROR: path `../etc/passwd` is outside the repository; use a path relative to the repository root"
        );
    }
}

#[test]
fn binary_oversized_and_directory_reads_are_refused() {
    let repo = TempRepo::new();
    repo.write("image.png", [137u8, 80, 78, 71, 0, 1]);
    repo.write("big.txt", "x".repeat(5000));
    repo.write("src/lib.rs", "");
    repo.commit("base");
    for revision in [Revision::Commit("HEAD".into()), Revision::WorkTree] {
        let view = RepoView::open(repo.path(), revision)
            .unwrap()
            .with_max_file_bytes(4096);
        assert!(matches!(
            view.read_text("image.png"),
            Err(RepoError::Binary { .. })
        ));
        assert_eq!(view.read("image.png").unwrap().len(), 6);
        let too_large = view.read_text("big.txt").unwrap_err();
        assert_eq!(
            too_large,
            RepoError::TooLarge {
                path: "big.txt".into(),
                size: 5000,
                limit: 4096
            }
        );
        assert!(matches!(
            view.read_text("src"),
            Err(RepoError::IsDirectory { .. })
        ));
        assert!(matches!(
            view.read_text("missing.rs"),
            Err(RepoError::NotFound { .. })
        ));
        assert!(view.exists("src") && view.exists("src/lib.rs") && !view.exists("missing.rs"));
    }
}

#[tokio::test]
async fn an_unreadable_repository_ends_the_run() {
    let repo = TempRepo::new();
    repo.write("f.txt", "x\n");
    repo.commit("base");
    let view = RepoView::open(repo.path(), Revision::Commit("HEAD".into())).unwrap();
    std::fs::remove_dir_all(repo.path().join(".git")).unwrap();
    let ws = workspace(view, ChangeSet::default());
    let result = ToolRegistry::repository_tools()
        .dispatch("read_file", r#"{"path": "f.txt"}"#, &ws)
        .await;
    assert!(matches!(result, Err(ToolError::Fatal(_))), "{result:?}");
}
