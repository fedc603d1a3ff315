//! Measures stage-1 shaping on real changes (driven by `benches/context_corpus.sh`).
//!
//! ```text
//! context_bench git <repo> <base-rev> <head-rev> <label> [budget] [model]
//! context_bench synthetic <files> [budget] [model]
//! context_bench synthetic-repo <dir> <files>
//! context_bench header
//! ```
//!
//! `git` diffs two revisions of a local repository with git2 (three lines of
//! context, renames found) and shapes the change, reading head files from the
//! head tree. `synthetic` builds a change of `<files>` Rust-like source files in
//! memory. Each run prints one row: files, reviewable changed lines, naive and
//! shaped tokens, reduction, the share of changed lines shown, the share shown or
//! listed by name (coverage), and the wall time of `shape_change` alone.
//! `synthetic-repo` writes the same synthetic change as a git repository at
//! `<dir>` (tags `base` and `head`) for timing `redline context` end to end.

#[path = "../tests/context/text_diff.rs"]
#[allow(dead_code)]
mod text_diff;

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use redline::context::{ShapeOptions, ShapeStatus, ShapedContext, shape_change, stage1_budget};
use redline::llm::tokens::{ModelLimits, TokenCounter};
use redline::review::diff::{ChangeSet, DiffLine, FileChange, FileStatus, Hunk, LineKind};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    match arg(0) {
        Some("header") => {
            println!(
                "{:<34} {:>6} {:>10} {:>11} {:>10} {:>9} {:>7} {:>9} {:>8}",
                "change",
                "files",
                "reviewable",
                "naive_tok",
                "shaped_tok",
                "reduction",
                "shown",
                "coverage",
                "time_ms"
            );
            Ok(())
        }
        Some("git") => {
            let (Some(repo), Some(base), Some(head), Some(label)) =
                (arg(1), arg(2), arg(3), arg(4))
            else {
                anyhow::bail!(
                    "usage: context_bench git <repo> <base-rev> <head-rev> <label> [budget] [model]"
                );
            };
            let (budget, model) = budget_and_model(arg(5), arg(6))?;
            bench_git(Path::new(repo), base, head, label, budget, &model)
        }
        Some("synthetic-repo") => {
            let (Some(dir), Some(files)) = (arg(1), arg(2)) else {
                anyhow::bail!("usage: context_bench synthetic-repo <dir> <files>");
            };
            synthetic_repo(Path::new(dir), files.parse()?)
        }
        Some("synthetic") => {
            let files: usize = arg(1).unwrap_or("5000").parse()?;
            let (budget, model) = budget_and_model(arg(2), arg(3))?;
            bench_synthetic(files, budget, &model);
            Ok(())
        }
        _ => anyhow::bail!(
            "usage: context_bench header | git <repo> <base> <head> <label> [budget] [model] | synthetic <files> [budget] [model]"
        ),
    }
}

fn budget_and_model(budget: Option<&str>, model: Option<&str>) -> anyhow::Result<(usize, String)> {
    let model = model.unwrap_or("gpt-4o").to_string();
    let budget = match budget {
        Some(b) if b != "auto" => b.parse()?,
        _ => stage1_budget(ModelLimits::for_model(&model)),
    };
    Ok((budget, model))
}

fn bench_git(
    repo: &Path,
    base: &str,
    head: &str,
    label: &str,
    budget: usize,
    model: &str,
) -> anyhow::Result<()> {
    let repo = git2::Repository::open(repo)?;
    let base_tree = repo.revparse_single(base)?.peel_to_tree()?;
    let head_tree = repo.revparse_single(head)?.peel_to_tree()?;
    let changes = change_set(&repo, &base_tree, &head_tree, base, head)?;
    let head_text = |path: &str| -> Option<String> {
        let entry = head_tree.get_path(Path::new(path)).ok()?;
        let blob = entry.to_object(&repo).ok()?.peel_to_blob().ok()?;
        String::from_utf8(blob.content().to_vec()).ok()
    };
    run(label, &changes, &head_text, budget, model);
    Ok(())
}

fn run(
    label: &str,
    changes: &ChangeSet,
    head_text: &dyn Fn(&str) -> Option<String>,
    budget: usize,
    model: &str,
) {
    let counter = TokenCounter::for_model(model);
    // The tokenizer's one-time set-up is paid once per process, not per change.
    counter.count("warm up the tokenizer");
    let opts = ShapeOptions {
        budget_tokens: budget,
        ..ShapeOptions::default()
    };
    let started = Instant::now();
    let shaped = shape_change(changes, head_text, &opts, &counter);
    let elapsed = started.elapsed();
    print_row(label, &shaped, elapsed.as_millis());
    if std::env::var_os("CONTEXT_BENCH_DUMP").is_some() {
        eprintln!("{}\n{}", shaped.render_text(), shaped.message);
    }
}

fn print_row(label: &str, shaped: &ShapedContext, millis: u128) {
    let total = shaped.changed_lines_total;
    let named: usize = shaped
        .files
        .iter()
        .filter(|f| f.status != ShapeStatus::Excluded)
        .map(|f| f.changed_lines)
        .sum();
    let percent = |part: usize| {
        if total == 0 {
            100.0
        } else {
            100.0 * part as f64 / total as f64
        }
    };
    println!(
        "{:<34} {:>6} {:>10} {:>11} {:>10} {:>8.1}% {:>6.1}% {:>8.1}% {:>8}",
        label,
        shaped.files.len(),
        total,
        shaped.naive_tokens,
        shaped.shaped_tokens,
        shaped.reduction_percent(),
        percent(shaped.changed_lines_shown),
        percent(named),
        millis
    );
}

/// The change between two trees, as the review code sees it.
fn change_set(
    repo: &git2::Repository,
    base: &git2::Tree<'_>,
    head: &git2::Tree<'_>,
    base_rev: &str,
    head_rev: &str,
) -> anyhow::Result<ChangeSet> {
    let mut opts = git2::DiffOptions::new();
    opts.context_lines(3);
    let mut diff = repo.diff_tree_to_tree(Some(base), Some(head), Some(&mut opts))?;
    diff.find_similar(Some(git2::DiffFindOptions::new().renames(true)))?;
    let mut files = Vec::new();
    for index in 0..diff.deltas().len() {
        let Some(patch) = git2::Patch::from_diff(&diff, index)? else {
            continue;
        };
        files.push(file_change(&patch)?);
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(ChangeSet {
        base: base_rev.into(),
        head: Some(head_rev.into()),
        files,
    })
}

fn file_change(patch: &git2::Patch<'_>) -> anyhow::Result<FileChange> {
    let delta = patch.delta();
    let path_of = |file: git2::DiffFile<'_>| file.path().map(|p| p.to_string_lossy().into_owned());
    let new_path = path_of(delta.new_file());
    let old_path = path_of(delta.old_file());
    let status = match delta.status() {
        git2::Delta::Added => FileStatus::Added,
        git2::Delta::Deleted => FileStatus::Deleted,
        git2::Delta::Renamed => FileStatus::Renamed,
        git2::Delta::Typechange => FileStatus::TypeChange,
        _ => FileStatus::Modified,
    };
    let path = match status {
        FileStatus::Deleted => old_path.clone(),
        _ => new_path.clone(),
    }
    .unwrap_or_default();
    let mut hunks = Vec::new();
    for h in 0..patch.num_hunks() {
        let (hunk, count) = patch.hunk(h)?;
        let header = String::from_utf8_lossy(hunk.header()).into_owned();
        let header = header.rsplit("@@").next().unwrap_or("").trim().to_string();
        let mut lines = Vec::with_capacity(count);
        for l in 0..count {
            let line = patch.line_in_hunk(h, l)?;
            let kind = match line.origin() {
                '+' => LineKind::Added,
                '-' => LineKind::Removed,
                ' ' => LineKind::Context,
                _ => continue, // "\ No newline at end of file" and friends
            };
            let text = String::from_utf8_lossy(line.content());
            lines.push(DiffLine {
                kind,
                old_line: line.old_lineno(),
                new_line: line.new_lineno(),
                text: text.trim_end_matches(['\n', '\r']).to_string(),
            });
        }
        hunks.push(Hunk {
            old_start: hunk.old_start(),
            old_lines: hunk.old_lines(),
            new_start: hunk.new_start(),
            new_lines: hunk.new_lines(),
            header,
            lines,
        });
    }
    Ok(FileChange {
        old_path: (status == FileStatus::Renamed)
            .then_some(old_path)
            .flatten(),
        path,
        status,
        binary: delta.flags().is_binary(),
        hunks,
    })
}

/// A change of `count` files: Rust-like modules of 130-260 lines in 50 directories,
/// each with a few modified, added and removed lines; every 50th file is vendored.
fn bench_synthetic(count: usize, budget: usize, model: &str) {
    let mut heads = HashMap::new();
    let mut files = Vec::with_capacity(count);
    for i in 0..count {
        let path = synthetic_path(i);
        let (old, new) = synthetic_file(i);
        files.push(text_diff::file_change(&path, &old, &new));
        heads.insert(path, new);
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let changes = ChangeSet {
        base: "synthetic-base".into(),
        head: Some("synthetic-head".into()),
        files,
    };
    let head_text = |path: &str| heads.get(path).cloned();
    run(
        &format!("synthetic {count} files"),
        &changes,
        &head_text,
        budget,
        model,
    );
}

/// Writes the synthetic change of `count` files as commits tagged `base` and `head` at `dir`.
fn synthetic_repo(dir: &Path, count: usize) -> anyhow::Result<()> {
    let repo = git2::Repository::init(dir)?;
    let who = git2::Signature::now("bench", "bench@localhost")?;
    let mut parent: Option<git2::Oid> = None;
    for (tag, pick_new) in [("base", false), ("head", true)] {
        for i in 0..count {
            let path = synthetic_path(i);
            let (old, new) = synthetic_file(i);
            let file = dir.join(&path);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(file, if pick_new { new } else { old })?;
        }
        let mut index = repo.index()?;
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None)?;
        index.write()?;
        let tree = repo.find_tree(index.write_tree()?)?;
        let parents: Vec<git2::Commit<'_>> = parent
            .map(|id| repo.find_commit(id))
            .transpose()?
            .into_iter()
            .collect();
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        let commit = repo.commit(Some("HEAD"), &who, &who, tag, &tree, &parents)?;
        repo.tag_lightweight(tag, &repo.find_object(commit, None)?, true)?;
        parent = Some(commit);
    }
    Ok(())
}

/// The path of synthetic file `i`: 50 directories, every 50th file vendored.
fn synthetic_path(i: usize) -> String {
    let directory = if i % 50 == 49 { "vendor/dep" } else { "src" };
    format!("{directory}/m{:02}/file_{i}.rs", i % 50)
}

fn synthetic_file(i: usize) -> (String, String) {
    let functions = 8 + i % 9;
    let mut old = format!("//! Module {i}.\n\nuse std::collections::HashMap;\n\n");
    let mut new = old.clone();
    for f in 0..functions {
        let body: Vec<String> = (0..12)
            .map(|k| format!("    let v{k} = input.get(\"k{f}_{k}\").copied().unwrap_or({k});"))
            .collect();
        let signature = format!("pub fn handler_{f}(input: &HashMap<&str, u32>) -> u32 {{\n");
        old.push_str(&signature);
        new.push_str(&signature);
        for (k, line) in body.iter().enumerate() {
            old.push_str(line);
            old.push('\n');
            match (f % 4, k) {
                (0, 5) => new.push_str(&format!(
                    "{}\n",
                    line.replace("unwrap_or", "unwrap_or_default().max")
                )),
                (1, 3) => {
                    new.push_str(line);
                    new.push_str(&format!(
                        "\n    tracing::debug!(\"handler {i}/{f} step {k}\");\n"
                    ));
                }
                (2, 8) => {}
                _ => {
                    new.push_str(line);
                    new.push('\n');
                }
            }
        }
        let tail = "    v0 + v11\n}\n\n".to_string();
        old.push_str(&tail);
        new.push_str(&tail);
    }
    (old, new)
}
