//! What the shared flow reviews: the commits since the last reviewed head when it is an
//! ancestor of the new head, else the whole pull request; from the Action's checkout
//! and from the App's mirror alike.

use redline::flow::pull::{CommitSource, load_commits};
use redline::review::diff::ChangeSet;

use crate::common::git::TempRepo;

fn paths(changes: &ChangeSet) -> Vec<&str> {
    changes.files.iter().map(|f| f.path.as_str()).collect()
}

/// main: base; feature: base → first (a.rs) → second (b.rs); rewrite: base → other (a.rs).
fn pushed_twice_and_rewritten() -> (TempRepo, [String; 4]) {
    let repo = TempRepo::new();
    repo.write("README.md", "demo\n");
    let base = repo.commit("base");
    repo.checkout_new_branch("feature");
    repo.write("a.rs", "fn a() {}\n");
    let first = repo.commit("a");
    repo.write("b.rs", "fn b() {}\n");
    let second = repo.commit("b");
    repo.set_ref("refs/heads/rewrite", &base);
    repo.checkout("rewrite");
    repo.write("a.rs", "fn a2() {}\n");
    let other = repo.commit("a, rewritten");
    (repo, [base, first, second, other])
}

#[test]
fn only_what_is_new_since_an_ancestor_is_reviewed() {
    let (repo, [base, first, second, other]) = pushed_twice_and_rewritten();
    let mirror_dir = tempfile::tempdir().expect("tmp");
    let clone_url = repo.path().display().to_string();
    let mirror_path = mirror_dir.path().join("demo.git");
    let mirror = CommitSource::Mirror {
        path: &mirror_path,
        clone_url: &clone_url,
    };
    let checkout = CommitSource::Checkout {
        root: repo.path(),
        remote: "origin",
    };
    for source in [mirror, checkout] {
        let since = load_commits(source, &base, &second, Some(&first), None).expect("commits");
        assert_eq!(since.from, first, "{source:?}");
        assert_eq!(paths(&since.changes), ["b.rs"], "{source:?}");
        assert_eq!(paths(&since.pr_changes), ["a.rs", "b.rs"], "{source:?}");

        let whole = load_commits(source, &base, &second, None, None).expect("commits");
        assert_eq!(whole.from, base, "{source:?}");
        assert_eq!(paths(&whole.changes), ["a.rs", "b.rs"], "{source:?}");

        // After a force-push the last reviewed head is not an ancestor: all is reviewed again.
        let rewritten = load_commits(source, &base, &other, Some(&second), None).expect("commits");
        assert_eq!(rewritten.from, base, "{source:?}");
        assert_eq!(paths(&rewritten.changes), ["a.rs"], "{source:?}");
    }
}
