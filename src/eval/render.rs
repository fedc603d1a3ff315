//! The report as text (terminal), Markdown (a pull request comment) or JSON.
//!
//! Invariant: text and Markdown show the same tables (figures per pair, with cases and
//! bugs caught, the per-case matrix with each case's bugs caught, failures, the baseline
//! comparison); JSON is the [`Report`] itself.

use std::str::FromStr;

use super::mine::{Candidate, Skip, Survey};
use super::mutate::{Planted, per_kind};
use super::report::{BaselineDiff, Report};
use super::score::{PairSummary, ResultRow};

/// The format of `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReportFormat {
    /// Aligned columns.
    Text,
    /// Markdown tables.
    Markdown,
    /// The JSON report (`version: 1`).
    Json,
    /// One self-contained HTML file with charts.
    Html,
}

impl FromStr for ReportFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(ReportFormat::Text),
            "markdown" | "md" => Ok(ReportFormat::Markdown),
            "json" => Ok(ReportFormat::Json),
            "html" => Ok(ReportFormat::Html),
            other => Err(format!(
                "unknown format `{other}` (expected text, markdown, json or html)"
            )),
        }
    }
}

/// A table, rendered with aligned columns or as Markdown.
struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    fn text(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|i| {
                std::iter::once(&self.headers)
                    .chain(&self.rows)
                    .filter_map(|row| row.get(i))
                    .map(|cell| cell.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |row: &Vec<String>| {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, &width)| format!("{cell:<width$}"))
                .collect();
            cells.join("  ").trim_end().to_string() + "\n"
        };
        std::iter::once(&self.headers)
            .chain(&self.rows)
            .map(line)
            .collect()
    }

    fn markdown(&self) -> String {
        let line = |row: &Vec<String>| format!("| {} |\n", row.join(" | "));
        let rule = format!("|{}\n", "---|".repeat(self.headers.len()));
        line(&self.headers) + &rule + &self.rows.iter().map(line).collect::<String>()
    }

    fn render(&self, format: ReportFormat) -> String {
        match format {
            ReportFormat::Markdown => self.markdown(),
            _ => self.text(),
        }
    }
}

fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "-".into(), |v| format!("{:.1}%", v * 100.0))
}

fn number(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "-".into(), |v| format!("{v:.decimals$}"))
}

fn cost(value: Option<f64>) -> String {
    value.map_or_else(|| "?".into(), |v| format!("${v:.4}"))
}

fn pair_table(pairs: &[PairSummary]) -> Table {
    let mut table = Table::new(&[
        "strategy",
        "model",
        "caught",
        "recall",
        "bugs",
        "bug recall",
        "precision",
        "F1",
        "false/clean",
        "failed",
        "limited",
        "tokens/case",
        "cost/case",
        "s/case",
    ]);
    let judged = pairs.iter().any(|p| p.judge.is_some());
    if judged {
        table.headers.insert(6, "judged".into());
    }
    for p in pairs {
        let mut row = vec![
            p.strategy.clone(),
            p.model.clone(),
            format!("{}/{}", p.caught, p.bug_cases),
            percent(p.recall),
            format!("{}/{}", p.expected_caught, p.expected_total),
            percent(p.expected_recall),
            percent(p.precision),
            percent(p.f1),
            number(p.false_findings_per_clean_case, 2),
            p.failed.to_string(),
            p.limited.to_string(),
            number(p.tokens_per_case, 0),
            cost(p.cost_per_case),
            number(p.seconds_per_case, 1),
        ];
        if judged {
            let figure = match p.judged_caught {
                Some(caught) => {
                    format!("{caught}/{} {}", p.expected_total, percent(p.judged_recall))
                }
                None => "-".into(),
            };
            row.insert(6, figure);
        }
        table.rows.push(row);
    }
    table
}

/// What verification dropped and merged and what it cost, and the judge's grades of the
/// findings that match no expected bug; `None` when no pair was verified or graded.
fn noise_table(pairs: &[PairSummary]) -> Option<Table> {
    let graded = pairs.iter().any(|p| p.noise.actionable_share.is_some());
    let verified = pairs.iter().any(|p| {
        p.noise
            .verification_tokens_per_case
            .is_some_and(|t| t > 0.0)
    });
    if !graded && !verified {
        return None;
    }
    let mut table = Table::new(&[
        "strategy",
        "model",
        "dropped",
        "dropped on bugs",
        "bugs lost",
        "merged",
        "unverified",
        "review tok/case",
        "verify tok/case",
        "verify share",
        "verify cost/case",
    ]);
    if graded {
        table.headers.extend(
            [
                "defect",
                "worth a look",
                "not worth",
                "actionable",
                "not worth/clean",
            ]
            .map(String::from),
        );
    }
    for p in pairs {
        let n = &p.noise;
        let mut row = vec![p.strategy.clone(), p.model.clone()];
        row.extend(n.verification_cells(graded, "-"));
        table.rows.push(row);
    }
    Some(table)
}

/// The judge's own calls, tokens and cost, apart from the pairs'.
fn judge_line(report: &Report) -> Option<String> {
    let model = report.judge_model.as_ref()?;
    let (mut calls, mut failures, mut tokens, mut cost) = (0, 0, 0, Some(0.0));
    for judge in report.pairs.iter().filter_map(|p| p.judge.as_ref()) {
        calls += judge.calls;
        failures += judge.failures;
        tokens += judge.tokens;
        cost = cost.zip(judge.cost_usd).map(|(a, b)| a + b);
    }
    // The grading of the findings that match no expected bug.
    for grades in report.results.iter().filter_map(|r| r.grades.as_ref()) {
        calls += grades.calls;
        failures += grades.findings.iter().filter(|f| f.grade.is_none()).count();
        tokens += grades.tokens;
        cost = cost.zip(grades.cost_usd).map(|(a, b)| a + b);
    }
    Some(format!(
        "Judge {model}: {}, {failures} unanswered, {tokens} tokens, {} (not in the pairs' cost)\n",
        super::run::count(calls, "call"),
        match cost {
            Some(cost) => format!("${cost:.4}"),
            None => "cost ?".into(),
        }
    ))
}

fn cell(row: Option<&ResultRow>) -> String {
    let Some(row) = row else {
        return "-".into();
    };
    if row.failed() {
        return "FAILED".into();
    }
    let verdict = match (row.clean, row.caught) {
        (true, _) => "clean".to_string(),
        (false, Some(true)) => format!("caught {}", super::run::bugs(row)),
        _ => format!("missed {}", super::run::bugs(row)),
    };
    let limit = row
        .limit_reached
        .as_ref()
        .map_or_else(String::new, |limit| format!(", {limit} limit"));
    let dropped = match row.screening.dropped.len() {
        0 => String::new(),
        n => format!(", {n} dropped"),
    };
    format!(
        "{verdict}, {}{dropped}, {} tok{limit}",
        super::run::count(row.findings, "finding"),
        row.tokens
    )
}

fn case_matrix(report: &Report) -> Table {
    let labels: Vec<String> = report
        .pairs
        .iter()
        .map(|p| format!("{}/{}", p.strategy, p.model))
        .collect();
    let mut headers = vec!["case", "kind"];
    headers.extend(labels.iter().map(String::as_str));
    let mut table = Table::new(&headers);
    for case in &report.cases {
        let mut row = vec![
            case.id.clone(),
            if case.clean { "clean" } else { "bug" }.to_string(),
        ];
        for pair in &report.pairs {
            row.push(cell(report.results.iter().find(|r| {
                r.case == case.id && r.strategy == pair.strategy && r.model == pair.model
            })));
        }
        table.rows.push(row);
    }
    table
}

fn baseline_section(diff: &BaselineDiff, format: ReportFormat) -> String {
    let mut table = Table::new(&["strategy", "model", "figure", "before", "after", "change"]);
    for pair in &diff.pairs {
        if pair.figures.is_empty() {
            table.rows.push(vec![
                pair.strategy.clone(),
                pair.model.clone(),
                "(not in the baseline)".into(),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
        for figure in &pair.figures {
            let change = figure
                .change
                .map_or_else(|| "-".into(), |c| format!("{c:+.3}"));
            table.rows.push(vec![
                pair.strategy.clone(),
                pair.model.clone(),
                figure.name.clone(),
                number(figure.before, 3),
                number(figure.after, 3),
                change,
            ]);
        }
    }
    let list = |changes: &[super::report::CaseChange]| {
        if changes.is_empty() {
            return "none".to_string();
        }
        changes
            .iter()
            .map(|c| format!("{} ({}/{})", c.case, c.strategy, c.model))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "{}Compared with {}\n\n{}\nNewly caught: {}\nLost: {}\n",
        heading(format),
        diff.path,
        table.render(format),
        list(&diff.newly_caught),
        list(&diff.lost)
    )
}

fn heading(format: ReportFormat) -> &'static str {
    match format {
        ReportFormat::Markdown => "### ",
        _ => "",
    }
}

/// The report in `format`.
pub(crate) fn render_report(report: &Report, format: ReportFormat) -> String {
    match format {
        ReportFormat::Json => {
            return serde_json::to_string_pretty(report).unwrap_or_default() + "\n";
        }
        ReportFormat::Html => return super::html::render_html(report),
        _ => {}
    }
    let bugs = report.cases.iter().filter(|c| !c.clean).count();
    let mut out = format!(
        "{}redline eval: {} ({} bug, {} clean), {}\n\n",
        match format {
            ReportFormat::Markdown => "## ",
            _ => "",
        },
        super::run::count(report.cases.len(), "case"),
        bugs,
        report.cases.len() - bugs,
        super::run::count(report.pairs.len(), "strategy/model pair")
    );
    out.push_str(&pair_table(&report.pairs).render(format));
    if let Some(table) = noise_table(&report.pairs) {
        out.push_str(&format!(
            "\n{}Verification and noise (findings as posted; dropped ones are listed per case in the JSON report)\n\n",
            heading(format)
        ));
        out.push_str(&table.render(format));
    }
    if let Some(line) = judge_line(report) {
        out.push('\n');
        out.push_str(&line);
    }
    out.push_str(&format!("\n{}Cases\n\n", heading(format)));
    out.push_str(&case_matrix(report).render(format));
    let failures: Vec<&ResultRow> = report.results.iter().filter(|r| r.failed()).collect();
    if !failures.is_empty() {
        out.push_str(&format!("\n{}Failed reviews\n\n", heading(format)));
        for row in failures {
            out.push_str(&format!(
                "- {} ({}/{}): {}\n",
                row.case,
                row.strategy,
                row.model,
                row.error.as_deref().unwrap_or_default()
            ));
        }
    }
    if let Some(diff) = &report.baseline {
        out.push('\n');
        out.push_str(&baseline_section(diff, format));
    }
    out
}

/// One candidate of `--list --format json`.
#[derive(Debug, Clone, serde::Serialize)]
struct ListedCandidate<'a> {
    commit: &'a str,
    short: &'a str,
    subject: &'a str,
    kept: bool,
    with_test: bool,
    sources: &'a [String],
    /// Why it is skipped (a sentence); `null` when kept.
    reason: Option<String>,
    /// The skip reason's stable name (`formatting`, `no_source`, ...); `null` when kept.
    skip: Option<&'static str>,
    /// The case id it becomes; `null` when skipped.
    case: Option<String>,
}

fn short_id(commit: &str) -> &str {
    &commit[..commit.len().min(7)]
}

fn status(candidate: &Candidate) -> String {
    match (&candidate.skip, candidate.with_test) {
        (Some(skip), _) => format!("skipped: {skip}"),
        (None, true) => "kept, with a test".into(),
        (None, false) => "kept".into(),
    }
}

/// The candidates of `--mine --list`: one line each (short id, kept or skipped and why,
/// subject), or a JSON array with `--format json`.
pub(crate) fn render_listing(survey: &Survey, format: ReportFormat) -> String {
    if format == ReportFormat::Json {
        let entries: Vec<ListedCandidate<'_>> = survey
            .candidates
            .iter()
            .map(|c| ListedCandidate {
                commit: &c.commit,
                short: short_id(&c.commit),
                subject: &c.subject,
                kept: c.skip.is_none(),
                with_test: c.with_test,
                sources: &c.sources,
                reason: c.skip.as_ref().map(ToString::to_string),
                skip: c.skip.as_ref().map(Skip::code),
                case: c.skip.is_none().then(|| c.case_id()),
            })
            .collect();
        return serde_json::to_string_pretty(&entries).unwrap_or_default() + "\n";
    }
    let mut table = Table::new(&["commit", "verdict", "subject"]);
    for candidate in &survey.candidates {
        table.rows.push(vec![
            short_id(&candidate.commit).to_string(),
            status(candidate),
            candidate.subject.clone(),
        ]);
    }
    table.render(format)
}

/// One line for stderr: candidates, kept, and skipped by reason.
pub(crate) fn listing_summary(survey: &Survey) -> String {
    let kept: Vec<&Candidate> = survey
        .candidates
        .iter()
        .filter(|c| c.skip.is_none())
        .collect();
    let tested = kept.iter().filter(|c| c.with_test).count();
    let mut reasons: Vec<(&'static str, usize)> = Vec::new();
    for skip in survey.candidates.iter().filter_map(|c| c.skip.as_ref()) {
        match reasons.iter_mut().find(|(code, _)| *code == skip.code()) {
            Some((_, n)) => *n += 1,
            None => reasons.push((skip.code(), 1)),
        }
    }
    let reasons: Vec<String> = reasons.iter().map(|(c, n)| format!("{c} {n}")).collect();
    format!(
        "{} in {} commits: {} kept ({tested} with a test), {} skipped ({})",
        super::run::count(survey.candidates.len(), "candidate"),
        survey.scanned,
        kept.len(),
        survey.candidates.len() - kept.len(),
        if reasons.is_empty() {
            "none".to_string()
        } else {
            reasons.join(", ")
        }
    )
}

/// The mutants of `--mutate --list`: one line each (kind, place, what changed), or a
/// JSON array with `--format json`.
pub(crate) fn render_mutants(planted: &Planted, format: ReportFormat) -> String {
    if format == ReportFormat::Json {
        return serde_json::to_string_pretty(&planted.mutants).unwrap_or_default() + "\n";
    }
    let mut table = Table::new(&["#", "kind", "place", "what changed"]);
    for (index, mutant) in planted.mutants.iter().enumerate() {
        table.rows.push(vec![
            (index + 1).to_string(),
            mutant.kind.to_string(),
            format!("{}:{}", mutant.path, mutant.line),
            mutant
                .description
                .split(" (line ")
                .next()
                .unwrap_or_default()
                .to_string(),
        ]);
    }
    table.render(format)
}

/// One line for stderr: mutants chosen, per kind, of how many candidates.
pub(crate) fn planted_summary(planted: &Planted) -> String {
    let kinds: Vec<String> = per_kind(&planted.mutants)
        .iter()
        .map(|(kind, n)| format!("{kind} {n}"))
        .collect();
    format!(
        "{} from {} on the added lines of {}..{} ({} changed lines): {}",
        super::run::count(planted.mutants.len(), "mutant"),
        super::run::count(planted.candidates, "candidate"),
        short_id(&planted.base),
        short_id(&planted.head),
        planted.changed_lines,
        if kinds.is_empty() {
            "none".to_string()
        } else {
            kinds.join(", ")
        }
    ) + &skipped_files(planted)
}

/// The files not looked at, each with its reason (`; skipped a.js: too large…`).
fn skipped_files(planted: &Planted) -> String {
    planted
        .skipped
        .iter()
        .map(|file| format!("; skipped {}: {}", file.path, file.reason))
        .collect()
}
