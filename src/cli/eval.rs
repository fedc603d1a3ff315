//! `redline eval`: gathers the cases (a file, or mined from a repository), reviews each
//! under every (strategy, model) pair through the engine of `redline review`, and writes
//! the scored report. The work itself is in [`crate::eval`]; this file resolves the
//! flags and supplies the engine.
//!
//! Invariants: every flag, the output files, the baseline and the events directory are
//! checked before any model call; each review resolves its settings exactly as
//! `redline review --repo R --base B --head H` would (same flags, config files, limits)
//! and writes its events to its own JSON Lines file.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::output::OutputTarget;
use super::progress::{Verbosity, spawn_event_consumers};
use super::review::{local_settings, model_client, prepare};
use super::runs::runs_dir;
use super::signals::StopSignals;
use super::{
    EXIT_ERROR, EXIT_OK, EvalArgs, IntentArgs, ModelArgs, ReviewArgs, RunsArgs, error_message,
};
use crate::agent::Orchestrator;
use crate::agent::events::EventSink;
use crate::config::settings::SettingFlags;
use crate::eval::cases::{Case, cases_to_jsonl, read_cases};
use crate::eval::mine::{MineOptions, list, mine};
use crate::eval::render::{ReportFormat, listing_summary, render_listing, render_report};
use crate::eval::report::{Report, build_report, compare, parse_report};
use crate::eval::run::{CaseReviewer, CaseRun, PairLabel, run_all};
use crate::review::finding::Finding;
use crate::review::stats::Stats;

/// Runs `redline eval` and returns the exit code.
pub async fn run(args: EvalArgs) -> i32 {
    match eval(args).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", error_message(&error));
            EXIT_ERROR
        }
    }
}

/// One (strategy, model) pair as flags, with its label.
#[derive(Debug, Clone)]
struct Pair {
    strategy: Option<String>,
    model: Option<String>,
    label: PairLabel,
}

async fn eval(args: EvalArgs) -> anyhow::Result<i32> {
    let format: ReportFormat = args
        .format
        .parse()
        .map_err(anyhow::Error::msg)
        .context("--format")?;
    if args.parallel == 0 {
        bail!("--parallel must be at least 1");
    }
    if args.list {
        return list_candidates(&args, format);
    }
    let output = OutputTarget::open(args.output.as_deref())?;
    let mut signals = StopSignals::install();
    let outcome = tokio::select! {
        outcome = evaluate(&args) => outcome,
        stop = signals.recv() => {
            // Reviews in flight are dropped with the run; their events files keep what
            // was written. No report: a partial one would read as a complete score.
            output.abandon();
            eprintln!("eval stopped by {}", stop.name());
            return Ok(stop.exit_code());
        }
    };
    match outcome {
        Ok(report) => {
            output.write(&render_report(&report, format))?;
            let all_failed = report.results.iter().all(|r| r.failed());
            Ok(if all_failed { EXIT_ERROR } else { EXIT_OK })
        }
        Err(error) => {
            output.abandon();
            Err(error)
        }
    }
}

/// Everything after the output file is open: checks, cases, the reviews, the report.
async fn evaluate(args: &EvalArgs) -> anyhow::Result<Report> {
    let baseline = read_baseline(args.baseline.as_deref())?;
    let pairs = resolve_pairs(args)?;
    let events_dir = open_events_dir(args.events_dir.as_deref())?;
    let cases = gather_cases(args)?;
    let reviewer = EngineReviewer {
        args: args.clone(),
        pairs: pairs.clone(),
        events_dir,
    };
    let labels: Vec<PairLabel> = pairs.iter().map(|p| p.label.clone()).collect();
    let quiet = args.quiet;
    let mut on_progress = |progress: &crate::eval::run::Progress| {
        if !quiet {
            eprintln!("{}", progress.line());
        }
    };
    let rows = run_all(&cases, &labels, &reviewer, args.parallel, &mut on_progress).await;
    let mut report = build_report(&cases, &labels, rows);
    if let Some((path, baseline)) = baseline {
        report.baseline = Some(compare(&baseline, &report, &path));
    }
    Ok(report)
}

fn read_baseline(path: Option<&Path>) -> anyhow::Result<Option<(String, Report)>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let name = path.display().to_string();
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read --baseline {name}"))?;
    Ok(Some((name.clone(), parse_report(&text, &name)?)))
}

/// Every (strategy, model) pair asked, each checked by resolving its settings once
/// (without a repository's file: that is read per case), labelled with its model.
fn resolve_pairs(args: &EvalArgs) -> anyhow::Result<Vec<Pair>> {
    let or_default = |values: &[String]| -> Vec<Option<String>> {
        if values.is_empty() {
            vec![None]
        } else {
            values.iter().cloned().map(Some).collect()
        }
    };
    let mut pairs = Vec::new();
    for strategy in or_default(&args.strategies) {
        for model in or_default(&args.models) {
            let flags = pair_flags(args, &strategy, &model);
            let settings = local_settings(flags, "flag", None).with_context(|| {
                format!(
                    "strategy {}, model {}",
                    strategy.as_deref().unwrap_or("(configured)"),
                    model.as_deref().unwrap_or("(configured)")
                )
            })?;
            let label = PairLabel {
                strategy: strategy.clone().unwrap_or_else(|| "default".into()),
                model: settings.agent.model.clone(),
            };
            if pairs.iter().any(|p: &Pair| p.label == label) {
                continue;
            }
            pairs.push(Pair {
                strategy: strategy.clone(),
                model,
                label,
            });
        }
    }
    Ok(pairs)
}

fn pair_flags(args: &EvalArgs, strategy: &Option<String>, model: &Option<String>) -> SettingFlags {
    SettingFlags {
        model: model_args(args, model).flags(),
        limits: args.limits.flags(),
        max_steps: args.max_steps,
        strategy: strategy.clone(),
        ..SettingFlags::default()
    }
}

fn model_args(args: &EvalArgs, model: &Option<String>) -> ModelArgs {
    ModelArgs {
        provider: args.provider.clone(),
        model: model.clone(),
        base_url: args.base_url.clone(),
    }
}

/// `--events-dir`, else `eval/<time>` next to the runs directory; created now.
fn open_events_dir(dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    let dir = match dir {
        Some(dir) => dir.to_path_buf(),
        None => {
            let runs = runs_dir(&RunsArgs::default()).context("pass --events-dir")?;
            let state = runs.parent().unwrap_or(&runs).to_path_buf();
            let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
            state.join("eval").join(stamp)
        }
    };
    crate::agent::transcript::create_private_dir(&dir)
        .with_context(|| format!("cannot create the events directory {}", dir.display()))?;
    Ok(dir)
}

/// The cases of `--cases`, or mined with `--mine` (and saved with `--write-cases`).
fn gather_cases(args: &EvalArgs) -> anyhow::Result<Vec<Case>> {
    let Some(repo) = &args.mine else {
        let path = args.cases.as_deref().unwrap_or(Path::new(""));
        return Ok(read_cases(path)?);
    };
    let write_cases = OutputTarget::open(args.write_cases.as_deref())?;
    let cases = match mine_cases(repo, args) {
        Ok(cases) => cases,
        Err(error) => {
            write_cases.abandon();
            return Err(error);
        }
    };
    if args.write_cases.is_some() {
        write_cases.write(&cases_to_jsonl(&cases))?;
    } else {
        write_cases.abandon();
    }
    Ok(cases)
}

fn mine_options(args: &EvalArgs) -> anyhow::Result<MineOptions> {
    Ok(MineOptions {
        limit: args.limit,
        since: args.since.as_deref().map(parse_since).transpose()?,
        clean: args.clean,
        require_test: args.require_test,
    })
}

/// `--mine REPO --list`: the candidate fixes and the verdict on each; no model, no key,
/// nothing written to the repository.
fn list_candidates(args: &EvalArgs, format: ReportFormat) -> anyhow::Result<i32> {
    let options = mine_options(args)?;
    let repo = args.mine.as_deref().unwrap_or(Path::new("."));
    let output = OutputTarget::open(args.output.as_deref())?;
    let survey = match list(repo, &options).with_context(|| format!("mining {}", repo.display())) {
        Ok(survey) => survey,
        Err(error) => {
            output.abandon();
            return Err(error);
        }
    };
    output.write(&render_listing(&survey, format))?;
    if !args.quiet {
        eprintln!("{}", listing_summary(&survey));
    }
    Ok(EXIT_OK)
}

fn mine_cases(repo: &Path, args: &EvalArgs) -> anyhow::Result<Vec<Case>> {
    let options = mine_options(args)?;
    let started = std::time::Instant::now();
    let mined = mine(repo, &options).with_context(|| format!("mining {}", repo.display()))?;
    if !args.quiet {
        let clean = mined.cases.iter().filter(|c| c.clean).count();
        eprintln!(
            "mined {} fix cases and {clean} clean cases from {} commits in {:.2}s",
            mined.cases.len() - clean,
            mined.scanned,
            started.elapsed().as_secs_f64()
        );
    }
    if mined.cases.is_empty() {
        bail!("no case found in {}", repo.display());
    }
    Ok(mined.cases)
}

/// `YYYY-MM-DD` (midnight UTC) or an RFC 3339 time, as seconds since the epoch.
fn parse_since(text: &str) -> anyhow::Result<i64> {
    if let Ok(date) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(date.and_time(chrono::NaiveTime::MIN).and_utc().timestamp());
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp())
        .map_err(|_| anyhow::anyhow!("--since {text}: expected a date such as 2025-01-31"))
}

/// Reviews a case the way `redline review` does, its events in their own file.
struct EngineReviewer {
    args: EvalArgs,
    pairs: Vec<Pair>,
    events_dir: PathBuf,
}

#[async_trait::async_trait]
impl CaseReviewer for EngineReviewer {
    async fn review(&self, case: &Case, pair: usize) -> CaseRun {
        let Some(pair) = self.pairs.get(pair) else {
            return CaseRun {
                result: Err(format!("no pair {pair}")),
                events: None,
            };
        };
        let events = self.events_dir.join(events_file_name(case, &pair.label));
        let result = self
            .review_case(case, pair, &events)
            .await
            .map_err(|e| error_message(&e));
        CaseRun {
            result,
            events: Some(events.display().to_string()),
        }
    }
}

impl EngineReviewer {
    /// The `redline review` command line of this case under `pair`.
    fn review_args(&self, case: &Case, pair: &Pair) -> ReviewArgs {
        let args = &self.args;
        ReviewArgs {
            repo: Some(PathBuf::from(&case.repo)),
            base: Some(case.base.clone()),
            head: case.head.clone(),
            uncommitted: false,
            model: model_args(args, &pair.model),
            format: "json".into(),
            output: None,
            events: None,
            color: super::ColorWhen::Never,
            fail_on: None,
            max_steps: args.max_steps,
            strategy: pair.strategy.clone(),
            plan_only: false,
            plan: None,
            yes: true,
            parallel: None,
            tool_mode: None,
            config: args.config.clone(),
            verbose: false,
            quiet: true,
            limits: args.limits.clone(),
            runs: RunsArgs {
                no_transcript: true,
                ..RunsArgs::default()
            },
            // The case's stated intent; an expected range's description (the answer) never.
            intent: IntentArgs {
                title: case.title.clone(),
                description: case.body.clone(),
                description_file: None,
            },
        }
    }

    async fn review_case(
        &self,
        case: &Case,
        pair: &Pair,
        events_path: &Path,
    ) -> anyhow::Result<(Vec<Finding>, Stats)> {
        let args = self.review_args(case, pair);
        let prepared = tokio::task::spawn_blocking(move || prepare(&args))
            .await
            .context("preparing the review")??;
        let (events, rx) = EventSink::channel();
        let consumer = spawn_event_consumers(rx, Verbosity::Quiet, Some(events_path))
            .with_context(|| format!("cannot write {}", events_path.display()))?;
        let outcome = if prepared.workspace.changes.files.is_empty() {
            Ok(Default::default())
        } else {
            let model = model_client(&prepared.settings, &events);
            Orchestrator::new(model, prepared.workspace.clone(), prepared.agent.clone())
                .with_events(events.clone())
                .review()
                .await
        };
        drop(events);
        // Every event is in the file before the review counts as done.
        let _ = consumer.finish().await;
        let report = outcome?;
        let mut findings = report.findings;
        findings.extend(report.unanchored);
        Ok((findings, report.stats))
    }
}

/// `<case>--<strategy>--<model>.jsonl`, with anything but letters, digits, `.`, `_`
/// and `-` replaced (a model name may hold `/` or `:`). A part that had to change or is
/// long is cut and followed by a digest of the original, so two cases (or models) whose
/// names differ only in replaced characters never share a file, and the name stays
/// within file-system limits.
fn events_file_name(case: &Case, pair: &PairLabel) -> String {
    use sha2::{Digest, Sha256};
    const KEPT_CHARS: usize = 60;
    let clean = |text: &str| -> String {
        let safe: String = text
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if safe == text && safe.len() <= KEPT_CHARS {
            return safe;
        }
        let digest = hex::encode(Sha256::digest(text.as_bytes()));
        let kept: String = safe.chars().take(KEPT_CHARS).collect();
        format!("{kept}-{}", &digest[..12])
    };
    format!(
        "{}--{}--{}.jsonl",
        clean(&case.id),
        clean(&pair.strategy),
        clean(&pair.model)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_date_or_a_time() {
        assert_eq!(parse_since("2025-01-02").unwrap(), 1_735_776_000);
        assert_eq!(parse_since("2025-01-02T00:00:10Z").unwrap(), 1_735_776_010);
        assert!(parse_since("last week").is_err());
    }

    #[test]
    fn events_files_are_named_safely() {
        let case: Case = serde_json::from_str(
            r#"{"id":"fix-abc","repo":".","base":"a","head":"b","clean":true}"#,
        )
        .unwrap();
        let pair = PairLabel {
            strategy: "react".into(),
            model: "org/model:7b".into(),
        };
        let name = events_file_name(&case, &pair);
        assert!(
            name.starts_with("fix-abc--react--org_model_7b-") && name.ends_with(".jsonl"),
            "{name}"
        );
        assert!(!name.contains('/') && !name.contains(':'));
    }

    #[test]
    fn case_ids_that_differ_only_in_replaced_characters_get_their_own_events_file() {
        let case = |id: &str| -> Case {
            serde_json::from_value(serde_json::json!(
                {"id": id, "repo": ".", "base": "a", "head": "b", "clean": true}
            ))
            .unwrap()
        };
        let pair = PairLabel {
            strategy: "react".into(),
            model: "m".into(),
        };
        let slash = events_file_name(&case("bug/1"), &pair);
        let colon = events_file_name(&case("bug:1"), &pair);
        assert_ne!(slash, colon);
        assert_eq!(
            events_file_name(&case("fix-1"), &pair),
            "fix-1--react--m.jsonl"
        );
        let long = events_file_name(&case(&"x".repeat(5000)), &pair);
        assert!(long.len() < 200, "{}", long.len());
    }
}
