//! The README and the book (`docs/`): the README stays a front door with the test command
//! `.ci/run` relies on, every chapter is in the book's summary, every relative link and
//! `#anchor` of the README, the book and `benches/README.md` resolves (mdBook only warns,
//! so this is what fails a broken link), and the repository the docs name is Cargo.toml's.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use regex::Regex;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The book's chapters: every `.md` file under `docs/src`, recursively.
fn chapters() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("docs/src"), &mut out);
    out
}

/// Every Markdown file whose links are checked.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("benches/README.md")];
    files.extend(chapters());
    files
}

/// The lines of `text` outside fenced code blocks, with their 1-based numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            lines.push((i + 1, line));
        }
    }
    lines
}

/// The anchors mdBook gives the headings of `text`: the heading's text without Markdown
/// (code marks, emphasis, link targets), lower-cased, whitespace as `-`, other characters
/// than letters, digits, `_` and `-` dropped; a repeated anchor gets `-1`, `-2`, ...
fn anchors(text: &str) -> BTreeSet<String> {
    let link = Regex::new(r"\[([^\]]*)\]\([^)]*\)").expect("a valid regex");
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let heading = link.replace_all(line[hashes..].trim().trim_end_matches('#'), "$1");
        let id: String = heading
            .trim()
            .chars()
            .filter_map(|c| {
                if c.is_alphanumeric() || c == '_' || c == '-' {
                    Some(c.to_ascii_lowercase())
                } else if c.is_whitespace() {
                    Some('-')
                } else {
                    None
                }
            })
            .collect();
        let count = seen.entry(id.clone()).or_insert(0);
        out.insert(if *count == 0 {
            id.clone()
        } else {
            format!("{id}-{count}")
        });
        *count += 1;
    }
    out
}

/// The inline links of `text` outside code (`[text](target)`, images included), with
/// their line numbers; targets with a scheme (`https:`, `mailto:`) are left out.
fn relative_links(text: &str) -> Vec<(usize, String)> {
    let link = Regex::new(r"\]\(([^)\s]+)(?:\s+[^)]*)?\)").expect("a valid regex");
    let code = Regex::new(r"`[^`]*`").expect("a valid regex");
    let scheme = Regex::new(r"^[a-zA-Z][a-zA-Z0-9+.-]*:").expect("a valid regex");
    let mut out = Vec::new();
    for (number, line) in prose_lines(text) {
        let line = code.replace_all(line, "``");
        for capture in link.captures_iter(&line) {
            let target = capture[1].trim_start_matches('<').trim_end_matches('>');
            if !scheme.is_match(target) {
                out.push((number, target.to_string()));
            }
        }
    }
    out
}

/// Checks one link of `file`; the problem when it does not resolve.
fn check_link(file: &Path, target: &str) -> Option<String> {
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let resolved = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().expect("a parent directory").join(path)
    };
    if !resolved.exists() {
        return Some(format!("{} does not exist", resolved.display()));
    }
    if anchor.is_empty() || resolved.extension().is_none_or(|e| e != "md") {
        return None;
    }
    let known = anchors(&read(&resolved));
    (!known.contains(anchor)).then(|| format!("no heading with the anchor #{anchor}"))
}

#[test]
fn every_relative_link_and_anchor_of_the_docs_resolves() {
    let include = Regex::new(r"\{\{#include\s+([^}\s:]+)[^}]*\}\}").expect("a valid regex");
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in documents() {
        let text = read(&file);
        for (line, target) in relative_links(&text) {
            checked += 1;
            if let Some(problem) = check_link(&file, &target) {
                broken.push(format!("{}:{line}: ({target}) {problem}", file.display()));
            }
        }
        for capture in include.captures_iter(&text) {
            let path = file.parent().expect("a parent").join(&capture[1]);
            if !path.is_file() {
                broken.push(format!("{}: include {}", file.display(), path.display()));
            }
        }
    }
    assert!(checked > 50, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The checker itself: a missing file, a missing anchor and a good anchor.
#[test]
fn the_link_check_finds_a_missing_file_and_a_missing_anchor() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let a = dir.path().join("a.md");
    std::fs::write(
        &a,
        "# The `redline serve` App\n\n## Limits\n\n## Limits\n\n```\n# not a heading\n```\n",
    )
    .expect("write");
    let known = anchors(&read(&a));
    assert_eq!(
        known,
        BTreeSet::from([
            "the-redline-serve-app".to_string(),
            "limits".to_string(),
            "limits-1".to_string()
        ])
    );
    assert_eq!(check_link(&a, "a.md#limits-1"), None);
    assert_eq!(check_link(&a, "#the-redline-serve-app"), None);
    assert!(check_link(&a, "a.md#nowhere").is_some());
    assert!(check_link(&a, "b.md").is_some());
    let links = relative_links(
        "[x](a.md#y) `[not](a link)` [web](https://example.com)\n```\n[no](c.md)\n```\n",
    );
    assert_eq!(links, vec![(1, "a.md#y".to_string())]);
}

#[test]
fn every_chapter_is_in_the_summary_and_every_summary_entry_exists() {
    let src = root().join("docs/src");
    let summary_path = src.join("SUMMARY.md");
    let summary = read(&summary_path);
    let listed: BTreeSet<PathBuf> = relative_links(&summary)
        .into_iter()
        .map(|(_, target)| src.join(target))
        .collect();
    for path in &listed {
        assert!(path.is_file(), "SUMMARY.md lists {}", path.display());
    }
    for chapter in chapters() {
        if chapter != summary_path {
            assert!(
                listed.contains(&chapter),
                "{} is not in SUMMARY.md",
                chapter.display()
            );
        }
    }
    let book = read(&root().join("docs/book.toml"));
    assert!(
        book.contains("create-missing = false"),
        "mdbook must fail on a missing chapter rather than create it"
    );
}

/// The README is a front door: short, with the test command `.ci/run` runs.
#[test]
fn the_readme_is_short_and_keeps_the_test_command() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(lines <= 200, "README.md has {lines} lines (at most 200)");
    assert!(
        readme.contains("\n## Test\n\n```sh\ncargo test --all-targets\n```\n"),
        "README.md lost its test section"
    );
    let ci = read(&root().join(".ci/run"));
    assert!(ci.contains("\ncargo test --all-targets\n"), "{ci}");
    assert!(ci.contains("/bin/mdbook\" build docs\n"), "{ci}");
}

/// The repository the README and the book name (releases, the action, the image, the
/// schema) is Cargo.toml's `repository`, at this version; no placeholder is left.
#[test]
fn the_docs_name_the_repository_of_cargo_toml() {
    let repository = env!("CARGO_PKG_REPOSITORY");
    let path = repository
        .strip_prefix("https://github.com/")
        .expect("Cargo.toml's repository is on github.com");
    let version = env!("CARGO_PKG_VERSION");
    let named = Regex::new(
        r"(?:github\.com/|ghcr\.io/|raw\.githubusercontent\.com/|uses: )([A-Za-z0-9_.-]+/redline)\b",
    )
    .expect("a valid regex");
    let tagged = Regex::new(r"redline@v([0-9][0-9A-Za-z.-]*)").expect("a valid regex");
    let mut files = documents();
    files.push(root().join("templates/redline.yml"));
    files.push(root().join("docs/book.toml"));
    let mut mentions = 0;
    for file in files {
        let text = read(&file);
        assert!(
            !text.contains("OWNER/") && !text.contains("/OWNER"),
            "{} has an OWNER placeholder",
            file.display()
        );
        for capture in named.captures_iter(&text) {
            mentions += 1;
            assert_eq!(&capture[1], path, "in {}", file.display());
        }
        for capture in tagged.captures_iter(&text) {
            assert_eq!(&capture[1], version, "in {}", file.display());
        }
    }
    assert!(
        mentions >= 5,
        "the docs name the repository {mentions} times"
    );
}

/// The chapters are read on GitHub too (the README links them): no mdBook directive
/// (`{{#include}}` shows there as raw text), and nothing they cite lies outside the
/// repository (a reader of a clone has no `shared/` directory).
#[test]
fn the_chapters_read_the_same_on_github_and_cite_only_the_repository() {
    let outside = Regex::new(r"(?:^|[\s`(])(?:\.\./)*shared/").expect("a valid regex");
    for file in documents() {
        let text = read(&file);
        for (number, line) in text.lines().enumerate() {
            assert!(
                !line.contains("{{#"),
                "{}:{}: an mdBook directive shows raw on GitHub: {line}",
                file.display(),
                number + 1
            );
            assert!(
                !outside.is_match(line),
                "{}:{}: cites a path outside the repository: {line}",
                file.display(),
                number + 1
            );
        }
    }
}

/// The troubleshooting chapter quotes the error `redline action` prints outside a
/// workflow, word for word.
#[tokio::test]
async fn troubleshooting_quotes_the_action_s_error_outside_a_workflow() {
    let output = crate::common::cli::redline_command()
        .arg("action")
        .output()
        .await
        .expect("run redline action");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let message = stderr
        .lines()
        .find_map(|l| l.strip_prefix("error: "))
        .expect("an error line");
    let chapter = read(&root().join("docs/src/troubleshooting.md"));
    assert!(
        chapter.contains(&format!("**`{message}`**")),
        "troubleshooting does not quote `{message}`"
    );
}

/// The getting-started chapter says what `cargo install` needs: a Rust toolchain and a C
/// compiler, and no OpenSSL or pkg-config (nothing in the build links them).
#[test]
fn getting_started_says_what_the_cargo_build_needs() {
    let chapter = read(&root().join("docs/src/getting-started.md"));
    let install = chapter
        .split("## Install")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("an Install section");
    // The version the manifest declares (`rust-version = "1.94"` gives `Rust 1.94`).
    let manifest = read(&root().join("Cargo.toml"));
    let rust_version = manifest
        .lines()
        .find_map(|line| line.strip_prefix("rust-version = "))
        .map(|value| value.trim_matches('"'))
        .expect("a rust-version in Cargo.toml");
    let rust = format!("Rust {rust_version}");
    for needed in [rust.as_str(), "C compiler", "no OpenSSL", "pkg-config"] {
        assert!(
            install.contains(needed),
            "the Install section omits {needed}"
        );
    }
    assert!(!install.contains("libssl3"), "{install}");
}
