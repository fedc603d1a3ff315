//! The direction of the dependencies between the forge modules, read from the sources:
//! what both forges share (`forge`, and the `flow`s built on it) imports neither forge, and
//! neither forge imports the other; in the server, the intake and the pipelines import
//! neither forge, and each forge's part only its own. A forge-neutral helper written under `github/` or
//! `gitlab/` then cannot be reached from the other forge without this test failing.

use std::path::{Path, PathBuf};

use regex::Regex;

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The Rust files of module `name`: `src/NAME.rs` and everything under `src/NAME/`.
fn module_files(name: &str) -> Vec<PathBuf> {
    let mut files = vec![src().join(format!("{name}.rs"))];
    let mut dirs = vec![src().join(name)];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.retain(|path| path.is_file());
    assert!(!files.is_empty(), "module {name} has no files");
    files
}

/// The lines of `path` that name module `target` through the crate root
/// (`crate::target::…` or `use crate::{…, target, …}`).
fn naming(path: &Path, target: &str) -> Vec<String> {
    let pattern = Regex::new(&format!(r"crate::{target}\b|crate::\{{[^}}]*\b{target}\b")).unwrap();
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(_, line)| pattern.is_match(line))
        .map(|(n, line)| format!("{}:{}: {}", path.display(), n + 1, line.trim()))
        .collect()
}

#[test]
fn shared_code_imports_neither_forge_and_neither_forge_imports_the_other() {
    let rules = [
        ("forge", "github"),
        ("forge", "gitlab"),
        ("flow", "github"),
        ("flow", "gitlab"),
        ("github", "gitlab"),
        ("gitlab", "github"),
    ];
    let mut broken = Vec::new();
    for (module, forbidden) in rules {
        for file in module_files(module) {
            broken.extend(naming(&file, forbidden));
        }
    }
    assert!(
        broken.is_empty(),
        "imports against the layering:\n{}",
        broken.join("\n")
    );
}

/// The server's files that wire a forge in on purpose: its two forge folders, and the check
/// statuses, which pick each job's forge.
fn wires_a_forge(path: &Path) -> bool {
    let Ok(relative) = path.strip_prefix(src().join("server")) else {
        return false; // src/server.rs
    };
    let first = relative.components().next().unwrap().as_os_str();
    ["github", "github.rs", "gitlab", "gitlab.rs"]
        .iter()
        .any(|name| first == *name)
        || relative == Path::new("check_status.rs")
        || relative == Path::new("check_status/job_forge.rs")
}

#[test]
fn the_server_s_shared_steps_import_neither_forge_and_each_forge_s_part_only_its_own() {
    let mut broken = Vec::new();
    for file in module_files("server") {
        if !wires_a_forge(&file) {
            broken.extend(naming(&file, "github"));
            broken.extend(naming(&file, "gitlab"));
        }
    }
    for file in module_files("server/github") {
        broken.extend(naming(&file, "gitlab"));
    }
    for file in module_files("server/gitlab") {
        broken.extend(naming(&file, "github"));
    }
    assert!(
        broken.is_empty(),
        "imports against the server's layering:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_rule_reads_both_import_forms() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.rs");
    std::fs::write(
        &file,
        "use crate::{forge, github};\nuse crate::github::GitHubClient;\nuse crate::githubish;\n",
    )
    .unwrap();
    assert_eq!(naming(&file, "github").len(), 2);
}
