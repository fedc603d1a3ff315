//! `redline eval`: gathers the cases (a file, or mined from a repository), reviews each
//! under every (strategy, model) pair through the local review flow of `redline review`
//! ([`crate::flow::local`]), and writes the scored report. The work itself is in
//! [`crate::eval`]; this file resolves the flags and supplies the engine.
//!
//! Invariants: every flag, the output files, the baseline and the events directory are
//! checked before any model call; each review resolves its settings exactly as
//! `redline review --repo R --base B --head H` would (same flags, config files, limits)
//! and writes its events to its own JSON Lines file.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::output::OutputTarget;
use super::progress::{Verbosity, spawn_event_consumers};
use super::review::{local_settings, model_client, notices_on_stderr};
use super::signals::StopSignals;
use super::transcripts::runs_dir;
use super::{EXIT_ERROR, EXIT_OK, EvalArgs, ModelArgs, RunsArgs, error_message};
use crate::agent::events::EventSink;
use crate::eval::cases::{Case, cases_to_jsonl, read_cases};
use crate::eval::grade::{Grader, Grades};
use crate::eval::judge::{Judge, JudgeTally};
use crate::eval::mine::{MineOptions, change_size, list, mine};
use crate::eval::mutate::{MutateOptions, mutate, plant};
use crate::eval::render::{
    ReportFormat, listing_summary, planted_summary, render_listing, render_mutants, render_report,
};
use crate::eval::report::{Report, build_report, compare, parse_report};
use crate::eval::run::{CaseError, CaseReviewer, CaseRun, PairLabel, Reviewed, run_all};
use crate::eval::score::{distinct, overlaps};
use crate::flow::local::{
    ChangeSelection, Description, IntentSources, LocalRequest, OutputWants, Overrides, PlanChoice,
    Purpose, SettingsChoice,
};
use crate::review::finding::Finding;
use crate::review::render::Format;

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
        if let Some(repo) = &args.mutate {
            return list_mutants(repo, &args, format);
        }
        return list_candidates(&args, format);
    }
    let output = OutputTarget::open(args.output.as_deref(), source_repo(&args))?;
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
    let judge = resolve_judge(args, &pairs)?;
    let judge_model = judge.as_ref().map(|j| j.name.clone());
    let events_dir = open_events_dir(args.events_dir.as_deref())?;
    let cases = gather_cases(args)?;
    let reviewer = EngineReviewer {
        args: args.clone(),
        pairs: pairs.clone(),
        events_dir,
        judge,
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
    report.judge_model = judge_model;
    for (info, case) in report.cases.iter_mut().zip(&cases) {
        info.changed_lines = change_size(Path::new(&case.repo), &case.base, &case.head);
    }
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
            let flags = pair_overrides(args, &strategy, &model).flags();
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

/// The settings every review of the pair is given: `redline review`'s with the pair's
/// strategy and model and the eval's provider, API root, steps and limits.
fn pair_overrides(args: &EvalArgs, strategy: &Option<String>, model: &Option<String>) -> Overrides {
    Overrides {
        model: model_args(args, model).flags(),
        limits: args.limits.flags(),
        max_steps: args.max_steps,
        strategy: strategy.clone(),
        verify: args.no_verify.then_some(false),
        ..Overrides::default()
    }
}

fn model_args(args: &EvalArgs, model: &Option<String>) -> ModelArgs {
    ModelArgs {
        provider: args.provider.clone(),
        model: model.clone(),
        base_url: args.base_url.clone(),
    }
}

/// The judge's client (`--judge`): `--judge-model`, else the first evaluated model,
/// with the pairs' provider and API root; its settings are checked now.
fn resolve_judge(args: &EvalArgs, pairs: &[Pair]) -> anyhow::Result<Option<JudgeClient>> {
    if !args.judge {
        return Ok(None);
    }
    let model = args
        .judge_model
        .clone()
        .or_else(|| pairs.first().map(|p| p.label.model.clone()));
    let flags = pair_overrides(args, &None, &model).flags();
    let settings = local_settings(flags, "flag", None).context("--judge-model")?;
    Ok(Some(JudgeClient {
        model: model_client(&settings.model, &EventSink::discard()),
        name: settings.agent.model.clone(),
        price: settings.agent.price,
    }))
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

/// The repository whose content the run reads (`--mine`, `--mutate`): Redline's files
/// written inside it are never written through a link it holds.
fn source_repo(args: &EvalArgs) -> Option<&Path> {
    args.mine.as_deref().or(args.mutate.as_deref())
}

/// The cases of `--cases`, mined with `--mine` or planted with `--mutate` (and saved
/// with `--write-cases`).
fn gather_cases(args: &EvalArgs) -> anyhow::Result<Vec<Case>> {
    if args.mine.is_none() && args.mutate.is_none() {
        let path = args.cases.as_deref().unwrap_or(Path::new(""));
        return Ok(read_cases(path)?);
    }
    let write_cases = OutputTarget::open(args.write_cases.as_deref(), source_repo(args))?;
    let generated = match (&args.mine, &args.mutate) {
        (Some(repo), _) => mine_cases(repo, args),
        (None, Some(repo)) => mutate_cases(repo, args),
        (None, None) => Ok(Vec::new()),
    };
    let cases = match generated {
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
    let output = OutputTarget::open(args.output.as_deref(), Some(repo))?;
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

fn mutate_options(args: &EvalArgs) -> anyhow::Result<MutateOptions> {
    if args.mutants == 0 {
        bail!("--mutants must be at least 1");
    }
    Ok(MutateOptions {
        base: args.base.clone().unwrap_or_default(),
        head: args.head.clone().unwrap_or_default(),
        mutants: args.mutants,
        seed: args.seed,
    })
}

/// `--mutate REPO`: one case per planted bug, each commit under the eval namespace.
fn mutate_cases(repo: &Path, args: &EvalArgs) -> anyhow::Result<Vec<Case>> {
    let options = mutate_options(args)?;
    let (planted, cases) =
        mutate(repo, &options).with_context(|| format!("--mutate {}", repo.display()))?;
    if !args.quiet {
        eprintln!("{}", planted_summary(&planted));
    }
    if cases.is_empty() {
        bail!(
            "no mutant found in the added source lines of {}..{}",
            options.base,
            options.head
        );
    }
    Ok(cases)
}

/// `--mutate REPO --list`: the mutants that would be planted; nothing written.
fn list_mutants(repo: &Path, args: &EvalArgs, format: ReportFormat) -> anyhow::Result<i32> {
    let options = mutate_options(args)?;
    let output = OutputTarget::open(args.output.as_deref(), Some(repo))?;
    let planted = match git2::Repository::discover(repo)
        .map_err(crate::eval::EvalError::from)
        .and_then(|r| plant(&r, &options))
        .with_context(|| format!("--mutate {}", repo.display()))
    {
        Ok(planted) => planted,
        Err(error) => {
            output.abandon();
            return Err(error);
        }
    };
    output.write(&render_mutants(&planted, format))?;
    if !args.quiet {
        eprintln!("{}", planted_summary(&planted));
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
    judge: Option<JudgeClient>,
}

/// The judge's model, name and price.
struct JudgeClient {
    model: std::sync::Arc<dyn crate::llm::ChatModel>,
    name: String,
    price: Option<crate::llm::pricing::Price>,
}

#[async_trait::async_trait]
impl CaseReviewer for EngineReviewer {
    async fn review(&self, case: &Case, pair: usize) -> CaseRun {
        let Some(pair) = self.pairs.get(pair) else {
            return CaseRun {
                result: Err(CaseError::NoPair(pair)),
                events: None,
                judged: None,
                graded: None,
            };
        };
        let events = self.events_dir.join(events_file_name(case, &pair.label));
        let result = self
            .review_case(case, pair, &events)
            .await
            .map_err(|e| CaseError::Review(error_message(&e)));
        let (judged, graded) = match (&self.judge, &result) {
            (Some(judge), Ok(reviewed)) => judge.judge(case, &reviewed.findings).await,
            _ => (None, None),
        };
        CaseRun {
            result,
            events: Some(events.display().to_string()),
            judged,
            graded,
        }
    }
}

impl JudgeClient {
    /// Whether the findings near each bug describe it (bug cases), and the grades of the
    /// findings that match no expected bug (every case).
    async fn judge(
        &self,
        case: &Case,
        findings: &[Finding],
    ) -> (Option<JudgeTally>, Option<Grades>) {
        let judge = Judge {
            model: self.model.as_ref(),
            name: &self.name,
            price: self.price,
        };
        let judged = match case.clean {
            true => None,
            false => Some(judge.judge_case(case, findings).await),
        };
        let grader = Grader {
            model: self.model.as_ref(),
            name: &self.name,
            price: self.price,
        };
        let unmatched: Vec<Finding> = distinct(findings)
            .into_iter()
            .filter(|f| !case.expected.iter().any(|e| overlaps(f, e)))
            .cloned()
            .collect();
        (judged, Some(grader.grade(case, &unmatched).await))
    }
}

impl EngineReviewer {
    /// The local request of this case under `pair`: what
    /// `redline review --repo R --base B --head H --format json --quiet --yes --no-transcript`
    /// with the pair's flags asks for.
    fn case_request(&self, case: &Case, pair: &Pair) -> LocalRequest {
        LocalRequest {
            repository: Some(PathBuf::from(&case.repo)),
            change: ChangeSelection {
                base: Some(case.base.clone()),
                head: case.head.clone(),
                uncommitted: false,
            },
            settings: SettingsChoice {
                overrides: pair_overrides(&self.args, &pair.strategy, &pair.model),
                config_file: self.args.config.clone(),
                user_file: true,
            },
            // The case's stated intent; an expected range's description (the answer) never.
            intent: IntentSources {
                title: case.title.clone(),
                description: case.body.clone().map(Description::Text),
            },
            purpose: Purpose::Review,
            output: OutputWants {
                format: Format::Json,
                plan: PlanChoice::Review,
            },
        }
    }

    async fn review_case(
        &self,
        case: &Case,
        pair: &Pair,
        events_path: &Path,
    ) -> anyhow::Result<Reviewed> {
        let request = self.case_request(case, pair);
        let prepared =
            tokio::task::spawn_blocking(move || request.prepare(&mut notices_on_stderr(true)))
                .await
                .context("preparing the review")??;
        let (events, rx) = EventSink::channel();
        // In eval's own runs directory, not in the repository: created as given.
        let file = std::fs::File::create(events_path)
            .with_context(|| format!("cannot write {}", events_path.display()))?;
        let consumer = spawn_event_consumers(rx, Verbosity::Quiet, Some(file), false);
        let outcome = if prepared.has_changes() {
            let model = model_client(&prepared.settings.model, &events);
            prepared
                .orchestrator(model)
                .with_events(events.clone())
                .review()
                .await
        } else {
            Ok(Default::default())
        };
        drop(events);
        // Every event is in the file before the review counts as done.
        let _ = consumer.finish().await;
        let report = outcome?;
        let mut findings = report.findings;
        findings.extend(report.unanchored);
        Ok(Reviewed {
            findings,
            dropped: report.dropped,
            merged: report.merged,
            stats: report.stats,
        })
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
mod tests;
