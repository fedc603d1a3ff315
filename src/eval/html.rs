//! The report as one self-contained HTML file (`--format html`): inline CSS and SVG
//! charts, no script, no font, no URL of anything outside the file.
//!
//! Charts, one bar per (strategy, model) pair: recall (proximity, and judged when a
//! judge was asked), findings per clean case, cost per case, and bug recall by change
//! size (the cases bucketed by their changed lines). Tables below give the figures (precision
//! as posted, after verification), what verification did (findings checked, kept, dropped,
//! dropped true positives, bugs lost, merged duplicates, unverified, the verifier's tokens
//! and cost) with the judge's grades, and the per-case matrix (with each case's drops).
//!
//! Invariant: every text that comes from the cases or the models is escaped; figures
//! come from the [`Report`] only (computed by [`super::score::summarize`]).

use std::fmt::Write;

use super::report::Report;
use super::score::{PairSummary, ResultRow};

/// Change-size buckets (changed lines, inclusive upper bounds) and their labels.
const SIZE_BUCKETS: &[(usize, &str)] = &[
    (60, "≤ 60 lines"),
    (300, "61–300 lines"),
    (1000, "301–1000 lines"),
    (usize::MAX, "> 1000 lines"),
];

const COLORS: &[&str] = &[
    "#2f6fb3", "#e07b24", "#3a9a5b", "#8a55c9", "#c0392b", "#7f8c8d",
];

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1d2330;background:#fff;max-width:1100px}\
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}p.meta{color:#555;margin:0 0 16px}\
table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #d5d9e0;padding:4px 8px;text-align:left}\
th{background:#f1f3f7}td.num{text-align:right;font-variant-numeric:tabular-nums}\
.charts{display:flex;flex-wrap:wrap;gap:16px}.chart{border:1px solid #e1e4ea;border-radius:6px;padding:8px}\
.legend span{display:inline-block;margin-right:14px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}\
.caught{color:#1e7b3a}.missed{color:#b03a2e}.failed{color:#777}";

/// Escapes text for HTML element content and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn label(p: &PairSummary) -> String {
    format!("{}/{}", p.strategy, p.model)
}

fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "–".into(), |v| format!("{:.1}%", v * 100.0))
}

/// One series of a bar chart: its name and one value per group (with its label).
struct Series {
    name: String,
    values: Vec<(Option<f64>, String)>,
}

/// A horizontal grouped bar chart: one group per entry of `groups`, one bar per series.
fn bar_chart(title: &str, groups: &[String], series: &[Series], max: f64) -> String {
    const WIDTH: f64 = 520.0;
    const LABEL: f64 = 190.0;
    const BAR: f64 = 16.0;
    let plot = WIDTH - LABEL - 70.0;
    let group_height = BAR * series.len() as f64 + 10.0;
    let height = 34.0 + group_height * groups.len() as f64;
    let mut svg = format!(
        "<svg width=\"{WIDTH}\" height=\"{height}\" role=\"img\" aria-label=\"{t}\"><text x=\"0\" y=\"16\" font-size=\"14\" font-weight=\"600\">{t}</text>",
        t = escape(title)
    );
    let max = if max > 0.0 { max } else { 1.0 };
    for (g, group) in groups.iter().enumerate() {
        let top = 28.0 + group_height * g as f64;
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"12\">{}</text>",
            top + group_height / 2.0,
            escape(&shorten(group, 28))
        );
        for (s, one) in series.iter().enumerate() {
            let y = top + BAR * s as f64;
            let (value, text) = &one.values[g];
            let width = value.map_or(0.0, |v| (v / max).clamp(0.0, 1.0) * plot);
            let _ = write!(
                svg,
                "<rect x=\"{LABEL}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}: {}</title></rect><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{}</text>",
                BAR - 3.0,
                COLORS[s % COLORS.len()],
                escape(&one.name),
                escape(text),
                LABEL + width + 4.0,
                y + BAR - 5.0,
                escape(text)
            );
        }
    }
    svg.push_str("</svg>");
    let legend: String = series
        .iter()
        .enumerate()
        .map(|(s, one)| {
            format!(
                "<span><i style=\"background:{}\"></i>{}</span>",
                COLORS[s % COLORS.len()],
                escape(&one.name)
            )
        })
        .collect();
    format!("<div class=\"chart\">{svg}<div class=\"legend\">{legend}</div></div>")
}

fn shorten(text: &str, most: usize) -> String {
    if text.chars().count() <= most {
        return text.to_string();
    }
    let kept: String = text.chars().take(most - 1).collect();
    kept + "…"
}

fn recall_chart(report: &Report) -> String {
    let groups: Vec<String> = report.pairs.iter().map(label).collect();
    let mut series = vec![Series {
        name: "bug recall (proximity)".into(),
        values: report
            .pairs
            .iter()
            .map(|p| {
                let text = format!(
                    "{} ({}/{})",
                    percent(p.expected_recall),
                    p.expected_caught,
                    p.expected_total
                );
                (p.expected_recall, text)
            })
            .collect(),
    }];
    if report.pairs.iter().any(|p| p.judged_recall.is_some()) {
        series.push(Series {
            name: "judged recall".into(),
            values: report
                .pairs
                .iter()
                .map(|p| {
                    let caught = p
                        .judged_caught
                        .map_or_else(|| "–".into(), |c| c.to_string());
                    let text = format!(
                        "{} ({caught}/{})",
                        percent(p.judged_recall),
                        p.expected_total
                    );
                    (p.judged_recall, text)
                })
                .collect(),
        });
    }
    bar_chart("Recall", &groups, &series, 1.0)
}

fn per_pair_chart(
    report: &Report,
    title: &str,
    name: &str,
    figure: impl Fn(&PairSummary) -> Option<f64>,
    text: impl Fn(Option<f64>) -> String,
) -> String {
    let groups: Vec<String> = report.pairs.iter().map(label).collect();
    let values: Vec<(Option<f64>, String)> = report
        .pairs
        .iter()
        .map(|p| (figure(p), text(figure(p))))
        .collect();
    let max = values.iter().filter_map(|(v, _)| *v).fold(0.0, f64::max);
    let series = [Series {
        name: name.into(),
        values,
    }];
    bar_chart(title, &groups, &series, max)
}

/// The bucket index of a change size.
fn bucket(lines: usize) -> usize {
    SIZE_BUCKETS
        .iter()
        .position(|(most, _)| lines <= *most)
        .unwrap_or(SIZE_BUCKETS.len() - 1)
}

/// Bug recall per (pair, size bucket) over the finished bug reviews whose case size is
/// known: (caught, bugs).
fn by_size(report: &Report, pair: &PairSummary) -> Vec<(usize, usize)> {
    let mut cells = vec![(0, 0); SIZE_BUCKETS.len()];
    let rows = report.results.iter().filter(|r| {
        r.strategy == pair.strategy && r.model == pair.model && !r.clean && !r.failed()
    });
    for row in rows {
        let size = report
            .cases
            .iter()
            .find(|c| c.id == row.case)
            .and_then(|c| c.changed_lines);
        if let Some(size) = size {
            let cell = &mut cells[bucket(size)];
            cell.0 += row.expected_caught;
            cell.1 += row.expected_total;
        }
    }
    cells
}

fn size_chart(report: &Report) -> String {
    let used: Vec<usize> = (0..SIZE_BUCKETS.len())
        .filter(|&b| report.pairs.iter().any(|p| by_size(report, p)[b].1 > 0))
        .collect();
    if used.is_empty() {
        return "<p>No change sizes known.</p>".into();
    }
    let groups: Vec<String> = used
        .iter()
        .map(|&b| SIZE_BUCKETS[b].1.to_string())
        .collect();
    let series: Vec<Series> = report
        .pairs
        .iter()
        .map(|p| {
            let cells = by_size(report, p);
            Series {
                name: label(p),
                values: used
                    .iter()
                    .map(|&b| {
                        let (caught, total) = cells[b];
                        let share = (total > 0).then(|| caught as f64 / total as f64);
                        (share, format!("{} ({caught}/{total})", percent(share)))
                    })
                    .collect(),
            }
        })
        .collect();
    bar_chart("Bug recall by change size", &groups, &series, 1.0)
}

fn pair_rows(report: &Report) -> String {
    let mut out = String::from(
        "<table><tr><th>strategy/model</th><th>bug cases caught</th><th>bug recall</th><th>judged recall</th><th>precision (as posted)</th><th>findings per clean case</th><th>failed</th><th>tokens/case</th><th>cost/case</th></tr>",
    );
    for p in &report.pairs {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}/{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&label(p)),
            p.caught,
            p.bug_cases,
            percent(p.expected_recall),
            percent(p.judged_recall),
            percent(p.precision),
            p.false_findings_per_clean_case
                .map_or_else(|| "–".into(), |v| format!("{v:.2}")),
            p.failed,
            p.tokens_per_case
                .map_or_else(|| "–".into(), |v| format!("{v:.0}")),
            cost(p.cost_per_case),
        );
    }
    out.push_str("</table>");
    out
}

fn cost(value: Option<f64>) -> String {
    value.map_or_else(|| "?".into(), |v| format!("${v:.4}"))
}

/// Findings the verifier saw and kept over the finished reviews of `pair`: (checked, kept).
fn checked_and_kept(report: &Report, pair: &PairSummary) -> (usize, usize) {
    report
        .results
        .iter()
        .filter(|r| r.strategy == pair.strategy && r.model == pair.model && !r.failed())
        .filter(|r| r.screening.verified)
        .fold((0, 0), |(checked, kept), r| {
            let posted = r.screening.posted.len();
            (checked + posted + r.screening.dropped.len(), kept + posted)
        })
}

/// What verification did per pair, and the judge's grades of the findings that match no
/// expected bug; a sentence when no review was verified or graded (`--no-verify`).
fn screening_rows(report: &Report) -> String {
    let graded = report
        .pairs
        .iter()
        .any(|p| p.noise.actionable_share.is_some());
    let verified = report.results.iter().any(|r| r.screening.verified);
    if !graded && !verified {
        return "<p>No finding was verified (<code>--no-verify</code>, or nothing to verify): the findings are scored as reviewed.</p>".into();
    }
    let mut out = String::from(
        "<table><tr><th>strategy/model</th><th>checked</th><th>kept</th><th>dropped</th><th>dropped true positives</th><th>bugs lost</th><th>merged duplicates</th><th>unverified</th><th>review tokens/case</th><th>verifier tokens/case</th><th>verifier share</th><th>verifier cost/case</th>",
    );
    if graded {
        out.push_str("<th>defect</th><th>worth a look</th><th>not worth posting</th><th>actionable</th><th>not worth posting/clean case</th>");
    }
    out.push_str("</tr>");
    for p in &report.pairs {
        let n = &p.noise;
        let (checked, kept) = checked_and_kept(report, p);
        let mut cells = vec![checked.to_string(), kept.to_string()];
        cells.extend(n.verification_cells(graded, "–"));
        let _ = write!(out, "<tr><td>{}</td>", escape(&label(p)));
        for cell in cells {
            let _ = write!(out, "<td class=\"num\">{}</td>", escape(&cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

fn cell(row: Option<&ResultRow>) -> String {
    let Some(row) = row else {
        return "<td>–</td>".into();
    };
    let (class, verdict) = match (row.failed(), row.clean, row.caught) {
        (true, _, _) => ("failed", "failed".to_string()),
        (false, true, _) => ("", "clean".to_string()),
        (false, false, Some(true)) => ("caught", format!("caught {}", super::run::bugs(row))),
        _ => ("missed", format!("missed {}", super::run::bugs(row))),
    };
    let judged = row.judge.map_or_else(String::new, |j| {
        format!(", judged {}/{}", j.caught, row.expected_total)
    });
    let dropped = match row.screening.dropped.len() {
        0 => String::new(),
        n => format!(", {n} dropped"),
    };
    format!(
        "<td class=\"{class}\">{}, {}{dropped}{judged}</td>",
        escape(&verdict),
        escape(&super::run::count(row.findings, "finding"))
    )
}

fn case_rows(report: &Report) -> String {
    let mut out = String::from("<table><tr><th>case</th><th>kind</th><th>changed lines</th>");
    for p in &report.pairs {
        let _ = write!(out, "<th>{}</th>", escape(&label(p)));
    }
    out.push_str("</tr>");
    for case in &report.cases {
        let _ = write!(
            out,
            "<tr><td title=\"{}\">{}</td><td>{}</td><td class=\"num\">{}</td>",
            escape(&case.source),
            escape(&case.id),
            if case.clean { "clean" } else { "bug" },
            case.changed_lines
                .map_or_else(|| "?".into(), |n| n.to_string())
        );
        for p in &report.pairs {
            out.push_str(&cell(report.results.iter().find(|r| {
                r.case == case.id && r.strategy == p.strategy && r.model == p.model
            })));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

/// The report as one self-contained HTML document.
pub(crate) fn render_html(report: &Report) -> String {
    let bugs = report.cases.iter().filter(|c| !c.clean).count();
    let judge = report
        .judge_model
        .as_ref()
        .map_or_else(String::new, |m| format!("; judge: {}", escape(m)));
    let charts = [
        recall_chart(report),
        per_pair_chart(
            report,
            "Findings per clean case",
            "findings per clean case",
            |p| p.false_findings_per_clean_case,
            |v| v.map_or_else(|| "no clean case".into(), |v| format!("{v:.2}")),
        ),
        per_pair_chart(
            report,
            "Cost per case",
            "cost per case (USD)",
            |p| p.cost_per_case,
            |v| v.map_or_else(|| "price unknown".into(), |v| format!("${v:.4}")),
        ),
        size_chart(report),
    ];
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>redline eval</title><style>{STYLE}</style></head><body>\
<h1>redline eval</h1><p class=\"meta\">{} ({bugs} bug, {} clean), {}{judge}. Recall by proximity: a finding within 3 lines of a bug's range{}.</p>\
<div class=\"charts\">{}</div><h2>Figures</h2>{}<h2>Verification</h2>{}<h2>Cases</h2>{}</body></html>\n",
        super::run::count(report.cases.len(), "case"),
        report.cases.len() - bugs,
        super::run::count(report.pairs.len(), "strategy/model pair"),
        if judge.is_empty() {
            ""
        } else {
            "; judged: the judge says a near finding describes the bug"
        },
        charts.join(""),
        pair_rows(report),
        screening_rows(report),
        case_rows(report),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::cases::Case;
    use crate::eval::noise::Screening;
    use crate::eval::report::build_report;
    use crate::eval::run::PairLabel;
    use crate::review::finding::{Category, Finding, Severity, Side};
    use crate::review::verification::DroppedFinding;

    fn finding(line: u32, title: &str) -> Finding {
        Finding {
            path: "a.rs".into(),
            line,
            start_line: line,
            side: Side::Right,
            severity: Severity::Nit,
            category: Category::Style,
            title: title.into(),
            body: "b".into(),
            suggestion: None,
            rule: None,
            unverified: false,
        }
    }

    fn row(case: &str, screening: Screening) -> ResultRow {
        ResultRow {
            case: case.into(),
            strategy: "react".into(),
            model: "m".into(),
            clean: false,
            caught: Some(true),
            findings: screening.posted.len(),
            true_positives: 1,
            expected_total: 1,
            expected_caught: 1,
            expected_recall: Some(1.0),
            tokens: 1_000,
            cost_usd: None,
            seconds: 1.0,
            limit_reached: None,
            error: None,
            events: None,
            judge: None,
            screening,
            grades: None,
        }
    }

    fn report(verified: bool) -> Report {
        let case: Case = serde_json::from_value(serde_json::json!({
            "id": "fix-a", "repo": ".", "base": "a", "head": "b",
            "expected": [{"path": "a.rs", "start_line": 1, "end_line": 1}]
        }))
        .unwrap();
        let mut unverified = finding(1, "real");
        unverified.unverified = verified;
        let screening = Screening {
            verified,
            posted: vec![unverified, finding(2, "also real")],
            dropped: match verified {
                true => vec![DroppedFinding {
                    finding: finding(1, "<nit>"),
                    reason: "cosmetic".into(),
                }],
                false => Vec::new(),
            },
            dropped_true_positives: usize::from(verified),
            unverified: usize::from(verified),
            review_tokens: 800,
            verification_tokens: if verified { 200 } else { 0 },
            verification_cost_usd: verified.then_some(0.002),
            ..Screening::default()
        };
        let pairs = [PairLabel {
            strategy: "react".into(),
            model: "m".into(),
        }];
        build_report(&[case], &pairs, vec![row("fix-a", screening)])
    }

    #[test]
    fn the_report_shows_what_verification_did() {
        let html = render_html(&report(true));
        let section = html
            .split("<h2>Verification</h2>")
            .nth(1)
            .and_then(|rest| rest.split("<h2>").next())
            .unwrap_or_else(|| panic!("no verification section: {html}"));
        for header in [
            "checked",
            "kept",
            "dropped true positives",
            "merged duplicates",
            "unverified",
            "verifier tokens/case",
            "verifier cost/case",
        ] {
            assert!(
                section.contains(&format!("<th>{header}</th>")),
                "{header}: {section}"
            );
        }
        // checked 3, kept 2, dropped 1 (a true positive), 0 bugs lost, 0 merged, 1
        // unverified, 800 and 200 tokens (25%), $0.0020.
        let cells: Vec<&str> = section
            .split("<td class=\"num\">")
            .skip(1)
            .filter_map(|cell| cell.split("</td>").next())
            .collect();
        assert_eq!(
            cells,
            [
                "3", "2", "1", "1", "0", "0", "1", "800", "200", "25.0%", "$0.0020"
            ],
            "{section}"
        );
        assert!(html.contains("<th>precision (as posted)</th>"), "{html}");
        assert!(html.contains("1 dropped"), "the case's cell: {html}");
        assert!(
            !html.contains("<nit>"),
            "dropped titles are not shown unescaped"
        );
    }

    #[test]
    fn an_unverified_run_says_so() {
        let html = render_html(&report(false));
        assert!(html.contains("No finding was verified"), "{html}");
        assert!(!html.contains("<th>checked</th>"), "{html}");
        assert!(!html.contains("dropped"), "{html}");
    }
}
