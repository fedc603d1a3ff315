//! The harness overhead of `redline eval` and one end-to-end run with a scripted model
//! (driven by `benches/eval_overhead.sh`).
//!
//! ```text
//! eval_bench history <commits>        a synthetic history as a `git fast-import` stream
//! eval_bench overhead <repo>          mining and scoring time, no model
//! eval_bench e2e <redline> <repo>     `redline eval --mine` against the tests' scripted server
//! ```
//!
//! The history: 40 Rust source files, then commits drawn by a fixed pseudo-random
//! sequence: one-line bug fixes (messages with fix, overflow, crash, leak, ...), small
//! feature additions, test-only and docs-only edits, and refactors of 80 lines; one
//! second apart. Every figure is printed; none fails the run.

#[path = "../tests/common"]
#[allow(dead_code)]
mod common {
    pub mod model_server;
}

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use common::model_server::{ModelServer, RecordedRequest, Reply, Wire};
use redline::eval::mine::{MineOptions, mine};
use redline::eval::score::score_case;
use redline::review::finding::{Category, Finding, Severity, Side};
use serde_json::json;

const FILES: usize = 40;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    match (arg(0), arg(1), arg(2)) {
        (Some("history"), Some(n), _) => history(n.parse().context("commits")?),
        (Some("overhead"), Some(repo), _) => overhead(Path::new(repo)),
        (Some("e2e"), Some(redline), Some(repo)) => e2e(Path::new(redline), Path::new(repo)).await,
        _ => anyhow::bail!(
            "usage: eval_bench history <commits> | overhead <repo> | e2e <redline> <repo>"
        ),
    }
}

/// A small deterministic generator (the same history every run).
struct Sequence(u64);

impl Sequence {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % below as u64) as usize
    }
}

fn source_file(k: usize) -> Vec<String> {
    (0..10)
        .flat_map(|f| {
            [
                format!("pub fn f{f}(a: u32, b: u32) -> u32 {{"),
                format!("    let x = a.wrapping_add(b) ^ {f};"),
                "    x / 2".to_string(),
                "}".to_string(),
                String::new(),
            ]
        })
        .chain(std::iter::once(format!("// module {k}")))
        .collect()
}

fn history(commits: usize) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut files: Vec<Vec<String>> = (0..FILES).map(source_file).collect();
    let mut seq = Sequence(42);
    let fix_words = [
        "Fix overflow in",
        "Fix crash in",
        "fix: leak in",
        "Fix race in",
        "Fix panic in",
        "Fix regression in",
    ];
    for i in 0..commits {
        let k = seq.next(FILES);
        let (message, changes): (String, Vec<(String, String)>) = match (i, seq.next(20)) {
            (0, _) => {
                let all = (0..FILES)
                    .map(|k| (format!("src/mod_{k}.rs"), files[k].join("\n")))
                    .collect();
                ("Initial import".into(), all)
            }
            (_, 0..=2) => {
                let line = seq.next(files[k].len());
                files[k][line] = format!("    let x = a.saturating_add(b); // checked in {i}");
                (
                    format!("{} mod_{k}", fix_words[seq.next(fix_words.len())]),
                    vec![(format!("src/mod_{k}.rs"), files[k].join("\n"))],
                )
            }
            (_, 3..=12) => {
                let at = seq.next(files[k].len());
                let added = [
                    format!("pub fn g{i}(v: u32) -> u32 {{"),
                    format!("    v * {}", i % 7 + 1),
                    "}".into(),
                ];
                files[k].splice(at..at, added);
                (
                    format!("Add g{i} to mod_{k}"),
                    vec![(format!("src/mod_{k}.rs"), files[k].join("\n"))],
                )
            }
            (_, 13..=14) => (
                format!("tests: cover mod_{k}"),
                vec![(
                    format!("tests/mod_{k}_test.rs"),
                    format!("#[test]\nfn t{i}() {{}}\n"),
                )],
            ),
            (_, 15..=16) => (
                format!("docs: explain mod_{k}"),
                vec![("docs/guide.md".into(), format!("Guide revision {i}.\n"))],
            ),
            _ => {
                files[k] = source_file(k)
                    .into_iter()
                    .map(|l| l.replace("wrapping", &format!("w{i}")))
                    .collect();
                (
                    format!("Refactor mod_{k}"),
                    vec![(format!("src/mod_{k}.rs"), files[k].join("\n"))],
                )
            }
        };
        writeln!(out, "commit refs/heads/main\nmark :{}", i + 1)?;
        writeln!(
            out,
            "committer Bench <bench@redline.invalid> {} +0000",
            1_700_000_000 + i
        )?;
        writeln!(out, "data {}\n{message}", message.len())?;
        if i > 0 {
            writeln!(out, "from :{i}")?;
        }
        for (path, text) in changes {
            let text = text + "\n";
            writeln!(out, "M 100644 inline {path}\ndata {}\n{text}", text.len())?;
        }
    }
    Ok(())
}

fn finding(path: &str, line: u32) -> Finding {
    Finding {
        path: path.into(),
        line,
        start_line: line,
        side: Side::Right,
        severity: Severity::Major,
        category: Category::Bug,
        title: "t".into(),
        body: "b".into(),
        suggestion: None,
        rule: None,
        unverified: false,
    }
}

fn overhead(repo: &Path) -> anyhow::Result<()> {
    for (limit, clean) in [(20, 5), (100, 20), (usize::MAX, 0)] {
        let started = Instant::now();
        let mined = mine(
            repo,
            &MineOptions {
                limit,
                since: None,
                clean,
                require_test: false,
            },
        )?;
        let mining = started.elapsed();
        let started = Instant::now();
        let mut caught = 0;
        for case in &mined.cases {
            let path = case
                .expected
                .first()
                .map_or("src/mod_0.rs", |e| e.path.as_str());
            let line = case.expected.first().map_or(1, |e| e.start_line);
            let findings: Vec<Finding> = (0..20).map(|i| finding(path, line + i * 5)).collect();
            caught += usize::from(score_case(case, &findings).caught);
        }
        let scoring = started.elapsed();
        let n = mined.cases.len().max(1) as f64;
        println!(
            "limit {:>9} clean {clean:>2}: {:>4} cases ({caught} caught by the synthetic findings) from {:>5} commits; mining {:>8.1} ms ({:.2} ms/case), scoring {:.3} ms ({:.4} ms/case)",
            if limit == usize::MAX {
                "all".to_string()
            } else {
                limit.to_string()
            },
            mined.cases.len(),
            mined.scanned,
            mining.as_secs_f64() * 1e3,
            mining.as_secs_f64() * 1e3 / n,
            scoring.as_secs_f64() * 1e3,
            scoring.as_secs_f64() * 1e3 / n,
        );
    }
    Ok(())
}

/// The scripted reviewer: one finding on line 5 of the first source file the request
/// shows, in its first reply.
fn scripted(request: &RecordedRequest, _: usize) -> Reply {
    let body = request.body.to_string();
    let path = body
        .find("src/mod_")
        .and_then(|at| {
            body[at..]
                .find(".rs")
                .map(|end| body[at..at + end + 3].to_string())
        })
        .unwrap_or_else(|| "src/mod_0.rs".into());
    Reply::tool(
        "c1",
        "submit_review",
        json!({"findings": [{"path": path, "line": 5, "severity": "major", "category": "bug",
                             "title": "Suspicious arithmetic", "body": "Check it."}],
               "summary": "scripted"}),
    )
}

async fn e2e(redline: &Path, repo: &Path) -> anyhow::Result<()> {
    let server = ModelServer::start_with(Wire::OpenAi, scripted).await;
    let work = tempfile::tempdir()?;
    let started = Instant::now();
    let output = tokio::process::Command::new(redline)
        .args(["eval", "--mine"])
        .arg(repo)
        .args([
            "--limit",
            "20",
            "--clean",
            "5",
            "--parallel",
            "2",
            "--format",
            "text",
        ])
        .args([
            "--strategy",
            "react",
            "--provider",
            "openai",
            "--model",
            "gpt-4.1-mini",
        ])
        .args(["--base-url", &server.base_url()])
        .arg("--events-dir")
        .arg(work.path())
        .env("REDLINE_API_KEY", "sk-bench")
        .env("REDLINE_NO_DISCOVERY", "1")
        .output()
        .await?;
    let wall = started.elapsed();
    std::io::stdout().write_all(&output.stdout)?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if let Some(line) = stderr.lines().find(|l| l.starts_with("mined")) {
        println!("{line}");
    }
    println!(
        "exit {}, {} model requests, wall {:.2}s",
        output.status.code().unwrap_or(-1),
        server.requests().len(),
        wall.as_secs_f64()
    );
    Ok(())
}
