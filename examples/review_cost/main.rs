//! What whole reviews cost, on real changes, with a scripted model
//! (driven by `benches/review_cost.sh`).
//!
//! ```text
//! review_cost header
//! review_cost git <redline-binary> <repo> <base-rev> <head-rev> <label>
//! review_cost fixture <redline-binary>
//! ```
//!
//! For each change and each scripted behaviour (`submit`: the reviewer submits
//! at once; `explore`: `diff`, `read_file`, `search`, then submit), the example
//! starts the scripted OpenAI-compatible server of the tests with its prompt
//! cache simulation, runs `redline review --format json --strategy auto --yes`
//! against it as a child process, and prints one row measured from the
//! server's own record (see the book's Benchmarks chapter for the columns).
//! With `REVIEW_COST_UNCOVERED=1` the reviewable lines never received under
//! their own file are listed on stderr, per file; with `REVIEW_COST_BREAKDOWN=1`
//! the prompt tokens are split by kind of text, per change and behaviour.

#[path = "../../tests/common"]
#[allow(dead_code)]
mod common {
    pub mod git;
    pub mod model_server;
}

mod breakdown;
#[path = "../shared/fixture_change.rs"]
mod fixture_change;
mod measure;
mod scripted;

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use common::model_server::{ModelServer, Wire};
use measure::{Reference, Reviewable, Seen, later_calls_cache};
use redline::repo::{load_change, resolve_range};
use scripted::Behaviour;

/// The default OpenAI model, whose prices the costs use.
const MODEL: &str = "gpt-4.1-mini";
/// gpt-4.1-mini, US$ per million tokens: input, cached input, output.
const PRICE_INPUT: f64 = 0.40;
const PRICE_CACHED: f64 = 0.10;
const PRICE_OUTPUT: f64 = 1.60;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    match (arg(0), arg(1)) {
        (Some("header"), _) => {
            print_header();
            Ok(())
        }
        (Some("git"), Some(redline)) => {
            let (Some(repo), Some(base), Some(head), Some(label)) =
                (arg(2), arg(3), arg(4), arg(5))
            else {
                anyhow::bail!("usage: review_cost git <redline> <repo> <base> <head> <label>");
            };
            bench_change(Path::new(redline), Path::new(repo), base, head, label).await
        }
        (Some("fixture"), Some(redline)) => {
            let repo = fixture_change::fixture();
            bench_change(
                Path::new(redline),
                repo.path(),
                "main",
                "HEAD",
                "fixture (4 files)",
            )
            .await
        }
        _ => anyhow::bail!(
            "usage: review_cost header | git <redline> <repo> <base> <head> <label> | fixture <redline>"
        ),
    }
}

fn print_header() {
    println!(
        "{:<30} {:<8} {:<13} {:>5} {:>9} {:>9} {:>8} {:>8} {:>7} {:>7} {:>7} {:>8} {:>8} {:>6} {:>7}",
        "change",
        "behave",
        "strategy",
        "calls",
        "prompt",
        "cached",
        "output",
        "cost_$",
        "cov_rl",
        "cov_ind",
        "cpu_s",
        "tok/line",
        "ref_t/l",
        "ratio",
        "cache%"
    );
}

/// Both behaviours on one change.
async fn bench_change(
    redline: &Path,
    repo: &Path,
    base: &str,
    head: &str,
    label: &str,
) -> anyhow::Result<()> {
    let range = resolve_range(repo, Some(base), head)?;
    let (view, changes) = load_change(repo, &range, false)?;
    let reviewable = Reviewable::of(&changes, &view);
    let reference = Reference::of(&changes, &reviewable, MODEL);
    let reference_per_line = per_line(reference.prompt_tokens as u64, reference.covered);
    for behaviour in [Behaviour::Submit, Behaviour::Explore] {
        let paths = Arc::new(reviewable.paths.clone());
        let server = ModelServer::start_with(Wire::OpenAi, move |request, _| {
            scripted::reply(behaviour, request, &paths)
        })
        .await
        .with_prompt_cache();
        let run = run_redline(redline, repo, &range.base, &range.head, &server.base_url()).await;
        let (stats, cpu) = match run {
            Ok(result) => result,
            Err(error) => {
                println!("{label:<30} {:<8} failed: {error:#}", behaviour.name());
                continue;
            }
        };
        let requests = server.requests();
        let served = server.served_usage();
        let prompt: u64 = served.iter().map(|u| u.prompt_tokens).sum();
        let cached: u64 = served.iter().map(|u| u.cached_tokens).sum();
        let output: u64 = served.iter().map(|u| u.completion_tokens).sum();
        let cost = ((prompt - cached) as f64 * PRICE_INPUT
            + cached as f64 * PRICE_CACHED
            + output as f64 * PRICE_OUTPUT)
            / 1e6;
        let seen = Seen::of_requests(&requests);
        let (covered, coverage) = seen.coverage(&reviewable.lines);
        if std::env::var_os("REVIEW_COST_UNCOVERED").is_some() {
            print_uncovered(label, behaviour, &seen, &reviewable);
        }
        if std::env::var_os("REVIEW_COST_BREAKDOWN").is_some() {
            breakdown::Breakdown::of_requests(&requests)
                .print(&format!("{label} [{}]", behaviour.name()));
        }
        let (later_cached, later_prompt) = later_calls_cache(&requests, &served);
        let per_line_redline = per_line(prompt, covered);
        println!(
            "{:<30} {:<8} {:<13} {:>5} {:>9} {:>9} {:>8} {:>8.4} {:>6.1}% {:>6.1}% {:>7.2} {:>8} {:>8} {:>6} {:>6}",
            label,
            behaviour.name(),
            stats["strategy"].as_str().unwrap_or("?"),
            served.len(),
            prompt,
            cached,
            output,
            cost,
            stats["coverage"].as_f64().unwrap_or(0.0) * 100.0,
            coverage * 100.0,
            cpu,
            show(per_line_redline, 0),
            show(reference_per_line, 0),
            show(
                per_line_redline.zip(reference_per_line).map(|(r, f)| r / f),
                2
            ),
            show(
                (later_prompt > 0).then(|| 100.0 * later_cached as f64 / later_prompt as f64),
                1
            ),
        );
    }
    eprintln!(
        "{label}: {} reviewable files, {} reviewable lines; reference: {} tokens, {} lines covered",
        reviewable.paths.len(),
        reviewable.lines.len(),
        reference.prompt_tokens,
        reference.covered
    );
    Ok(())
}

/// Per file, the reviewable lines the server never received under that file (stderr).
fn print_uncovered(label: &str, behaviour: Behaviour, seen: &Seen, reviewable: &Reviewable) {
    let mut missing: std::collections::BTreeMap<&str, (usize, &str)> = Default::default();
    for line in reviewable.lines.iter().filter(|l| !seen.covers(l)) {
        let entry = missing.entry(&line.path).or_insert((0, &line.text));
        entry.0 += 1;
    }
    for (path, (count, example)) in missing {
        eprintln!(
            "{label} [{}] uncovered: {path}: {count} line(s), e.g. {example:?}",
            behaviour.name()
        );
    }
}

fn per_line(tokens: u64, lines: usize) -> Option<f64> {
    (lines > 0).then(|| tokens as f64 / lines as f64)
}

fn show(value: Option<f64>, decimals: usize) -> String {
    value.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

/// Runs one review; returns its `stats` and the child's user+system CPU seconds.
async fn run_redline(
    redline: &Path,
    repo: &Path,
    base: &str,
    head: &str,
    base_url: &str,
) -> anyhow::Result<(serde_json::Value, f64)> {
    let before = children_cpu_seconds();
    let output = tokio::process::Command::new(redline)
        .args([
            "review",
            "--format",
            "json",
            "--strategy",
            "auto",
            "--yes",
            "--quiet",
        ])
        .args([
            "--provider",
            "openai",
            "--model",
            MODEL,
            "--base-url",
            base_url,
        ])
        .arg("--repo")
        .arg(repo)
        .args(["--base", base, "--head", head, "--fail-on", "never"])
        .env_remove("REDLINE_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .kill_on_drop(true)
        .output()
        .await
        .context("running redline")?;
    let cpu = children_cpu_seconds() - before;
    if !output.status.success() {
        anyhow::bail!(
            "redline exited with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("reading redline's JSON output")?;
    Ok((report["stats"].clone(), cpu))
}

/// User + system CPU seconds of this process's waited-for children so far.
/// Only `redline` children are started, one at a time, so differences around a
/// run are that run's CPU (the model server runs in this process, not counted).
fn children_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes into the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
