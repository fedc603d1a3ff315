//! Output formats and the fail-on threshold.

use redline::agent::events::Stats;
use redline::review::finding::{Category, Finding, Severity, Side};
use redline::review::render::json::from_json;
use redline::review::render::{Format, RenderOptions, render, render_with};
use redline::review::report::{FailOn, ReviewReport};
use redline::review::stats::VerificationStats;
use redline::review::verification::{DroppedFinding, FindingRef, MergedFinding};
use redline::review::walkthrough::Area;
use serde_json::{Value, json};

use super::finding;

fn report() -> ReviewReport {
    let mut with_fix = finding("src/lib.rs", 14, "Unchecked unwrap");
    with_fix.start_line = 13;
    with_fix.severity = Severity::Major;
    with_fix.suggestion = Some("    let value = input.parse()?;".into());
    with_fix.rule = Some("AGENTS.md".into());
    let mut removed = finding("src/old.rs", 3, "Validation removed");
    removed.side = Side::Left;
    removed.severity = Severity::Critical;
    removed.category = Category::Security;
    let mut nit = finding("a/inner.rs", 2, "Typo in comment");
    nit.severity = Severity::Nit;
    nit.category = Category::Style;
    ReviewReport {
        // Deliberately unordered: JSON and SARIF order by path, then line; text and
        // Markdown by file, most severe first.
        findings: vec![with_fix, removed, nit],
        summary: "Three things to look at.".into(),
        stats: Stats {
            strategy: "react".into(),
            steps: 4,
            model_calls: 5,
            tool_calls: 9,
            prompt_tokens: 1200,
            completion_tokens: 300,
            duration_ms: 12_345,
            ..Stats::default()
        },
        unanchored: Vec::new(),
        walkthrough: vec![Area {
            area: "Parsing".into(),
            files: vec!["src/lib.rs".into()],
            summary: "Parses input with `?` instead of unwrapping.".into(),
        }],
        ..ReviewReport::default()
    }
}

#[test]
fn json_has_exactly_the_version_1_shape() {
    let text = render(&report(), Format::Json);
    let value: Value = serde_json::from_str(&text).unwrap();
    let expected = json!({
        "version": 1,
        "walkthrough": [{"area": "Parsing", "files": ["src/lib.rs"],
                         "summary": "Parses input with `?` instead of unwrapping."}],
        "findings": [
            {"path": "a/inner.rs", "line": 2, "start_line": 2, "side": "RIGHT", "severity": "nit",
             "category": "style", "title": "Typo in comment", "body": "Body of Typo in comment."},
            {"path": "src/lib.rs", "line": 14, "start_line": 13, "side": "RIGHT", "severity": "major",
             "category": "bug", "title": "Unchecked unwrap", "body": "Body of Unchecked unwrap.",
             "suggestion": "    let value = input.parse()?;", "rule": "AGENTS.md"},
            {"path": "src/old.rs", "line": 3, "start_line": 3, "side": "LEFT", "severity": "critical",
             "category": "security", "title": "Validation removed", "body": "Body of Validation removed."}
        ],
        "unanchored": [],
        "dropped": [],
        "merged": [],
        "summary": "Three things to look at.",
        "stats": {"strategy": "react", "steps": 4, "model_calls": 5, "tool_calls": 9,
                  "prompt_tokens": 1200, "completion_tokens": 300, "cached_prompt_tokens": 0,
                  "cache_write_tokens": 0, "cost_usd": null, "cost_estimated": false,
                  "limit_reached": null, "duration_ms": 12345, "coverage": 0.0,
                  "compression": {"naive_tokens": 0, "shaped_tokens": 0, "pruned_tokens": 0,
                                  "summaries": 0, "dropped_turns": 0}}
    });
    assert_eq!(value, expected);
    // Top-level keys appear in the documented order.
    let keys = [
        "version",
        "walkthrough",
        "findings",
        "unanchored",
        "dropped",
        "merged",
        "summary",
        "stats",
    ];
    let positions: Vec<usize> = keys
        .iter()
        .map(|key| text.find(&format!("\n  \"{key}\":")).unwrap())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
}

/// A report after verification: one finding dropped with its reason, one duplicate merged,
/// one kept without a verdict.
fn verified_report() -> ReviewReport {
    let mut report = report();
    report.findings[0].unverified = true;
    let dropped = finding("src/lib.rs", 20, "Rename this variable");
    let duplicate = finding("src/lib.rs", 13, "Unwrap may panic");
    report.dropped = vec![DroppedFinding {
        finding: dropped,
        reason: "naming only".into(),
    }];
    report.merged = vec![MergedFinding {
        finding: duplicate,
        into: FindingRef::of(&report.findings[0]),
    }];
    report.stats.verification = Some(Box::new(VerificationStats {
        model: "verifier-model".into(),
        findings: 4,
        batches: 1,
        kept: 2,
        dropped: 1,
        unverified: 1,
        merged: 1,
        model_calls: 1,
        prompt_tokens: 900,
        completion_tokens: 40,
        ..VerificationStats::default()
    }));
    report
}

#[test]
fn json_lists_dropped_and_merged_findings_and_marks_unverified_ones() {
    let report = verified_report();
    let value: Value = serde_json::from_str(&render(&report, Format::Json)).unwrap();
    let dropped = &value["dropped"][0];
    assert_eq!(dropped["path"], "src/lib.rs");
    assert_eq!(dropped["line"], 20);
    assert_eq!(dropped["title"], "Rename this variable");
    assert_eq!(dropped["reason"], "naming only");
    let merged = &value["merged"][0];
    assert_eq!(merged["title"], "Unwrap may panic");
    assert_eq!(
        merged["into"],
        json!({"path": "src/lib.rs", "start_line": 13, "line": 14, "side": "RIGHT",
               "title": "Unchecked unwrap"})
    );
    let unverified: Vec<&Value> = value["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f.get("unverified").is_some())
        .collect();
    assert_eq!(unverified.len(), 1, "only a marked finding says so");
    assert_eq!(unverified[0]["unverified"], true);
    assert_eq!(unverified[0]["title"], "Unchecked unwrap");
    assert_eq!(value["stats"]["verification"]["dropped"], 1);
    assert_eq!(value["stats"]["verification"]["model"], "verifier-model");
    // Everything reads back.
    let read = from_json(&render(&report, Format::Json)).unwrap();
    assert_eq!(read.dropped, report.dropped);
    assert_eq!(read.merged, report.merged);
    assert_eq!(read.stats.verification, report.stats.verification);
    assert!(read.findings.iter().any(|f| f.unverified));
}

#[test]
fn text_and_markdown_say_what_verification_dropped() {
    let report = verified_report();
    let markdown = render(&report, Format::Markdown);
    assert!(
        markdown.contains("_Verification: 2 kept, 1 dropped, 1 unverified; 1 duplicate merged · 940 tokens · dropped findings are listed in the JSON report._"),
        "{markdown}"
    );
    assert!(
        markdown.contains("· **major** · bug · unverified\n"),
        "{markdown}"
    );
    assert!(!markdown.contains("Rename this variable"), "{markdown}");
    let text = render(&report, Format::Text);
    assert!(text.contains("Verification: 2 kept, 1 dropped"), "{text}");
    assert!(!text.contains("Rename this variable"), "{text}");
    let sarif = render(&report, Format::Sarif);
    assert!(!sarif.contains("Rename this variable"), "{sarif}");
    // Without verification nothing is said of it.
    assert!(!render(&self::report(), Format::Markdown).contains("Verification"));
}

#[test]
fn json_round_trips() {
    let original = report();
    let read = from_json(&render(&original, Format::Json)).unwrap();
    let mut sorted = original.findings.clone();
    sorted.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    assert_eq!(read.findings, sorted);
    assert_eq!(
        (read.summary, read.stats, read.walkthrough),
        (original.summary, original.stats, original.walkthrough)
    );
    // A report written before the walkthrough and `unanchored` existed still reads.
    let mut older: Value = serde_json::from_str(&render(&report(), Format::Json)).unwrap();
    older.as_object_mut().unwrap().remove("walkthrough");
    older.as_object_mut().unwrap().remove("unanchored");
    let read_older = from_json(&older.to_string()).unwrap();
    assert!(read_older.walkthrough.is_empty() && read_older.unanchored.is_empty());
    // Unanchored findings round-trip as data.
    let mut with_unanchored = report();
    with_unanchored.unanchored = vec![finding("src/far.rs", 90, "Off the diff")];
    let read = from_json(&render(&with_unanchored, Format::Json)).unwrap();
    assert_eq!(read.unanchored, with_unanchored.unanchored);
}

fn sarif() -> Value {
    serde_json::from_str(&render(&report(), Format::Sarif)).unwrap()
}

/// What GitHub code scanning requires of each rule (`fullDescription`, `help`), for every
/// category, and an absolute `informationUri` whenever the build knows one.
#[test]
fn sarif_rules_carry_what_code_scanning_requires() {
    let all = [
        Category::Bug,
        Category::Security,
        Category::Performance,
        Category::Maintainability,
        Category::Style,
        Category::Test,
    ];
    let findings = all
        .iter()
        .enumerate()
        .map(|(i, category)| Finding {
            category: *category,
            ..finding("src/lib.rs", 10 + i as u32, "A finding")
        })
        .collect();
    let report = ReviewReport {
        findings,
        ..report()
    };
    let log: Value = serde_json::from_str(&render(&report, Format::Sarif)).unwrap();
    let driver = &log["runs"][0]["tool"]["driver"];
    let rules = driver["rules"].as_array().unwrap();
    assert_eq!(rules.len(), all.len());
    let text = |value: &Value| value.as_str().is_some_and(|t| !t.trim().is_empty());
    for rule in rules {
        assert!(text(&rule["name"]), "{rule}");
        assert!(text(&rule["shortDescription"]["text"]), "{rule}");
        assert!(text(&rule["fullDescription"]["text"]), "{rule}");
        assert_ne!(
            rule["fullDescription"]["text"], rule["shortDescription"]["text"],
            "the full description says more: {rule}"
        );
        assert!(text(&rule["help"]["text"]), "{rule}");
        assert!(text(&rule["help"]["markdown"]), "{rule}");
    }
    // The repository the build names, else Cargo.toml's `repository`.
    let expected = option_env!("REDLINE_REPOSITORY_URL")
        .filter(|uri| uri.starts_with("https://") || uri.starts_with("http://"))
        .unwrap_or(env!("CARGO_PKG_REPOSITORY"));
    assert_eq!(
        redline::review::render::sarif::information_uri(),
        Some(expected)
    );
    assert_eq!(driver["informationUri"], expected);
    if let Some(uri) = driver.get("informationUri") {
        let parsed = url::Url::parse(uri.as_str().unwrap()).unwrap();
        assert!(["http", "https"].contains(&parsed.scheme()), "{uri}");
    }
}

#[test]
fn sarif_has_the_required_structure() {
    let log = sarif();
    assert_eq!(
        log["$schema"],
        "https://json.schemastore.org/sarif-2.1.0.json"
    );
    assert_eq!(log["version"], "2.1.0");
    let runs = log["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let driver = &runs[0]["tool"]["driver"];
    assert_eq!(driver["name"], "redline");
    assert_eq!(driver["semanticVersion"], env!("CARGO_PKG_VERSION"));
    if let Some(uri) = driver.get("informationUri") {
        assert!(uri.as_str().unwrap().starts_with("http"), "{uri}");
    }
    let rules = driver["rules"].as_array().unwrap();
    let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["redline/bug", "redline/security", "redline/style"]);
    for rule in rules {
        assert!(
            rule["shortDescription"]["text"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        );
    }
    let results = runs[0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for result in results {
        let index = result["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(result["ruleId"], rules[index]["id"]);
        assert!(["error", "warning", "note"].contains(&result["level"].as_str().unwrap()));
        assert!(
            result["message"]["text"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        );
        let locations = result["locations"].as_array().unwrap();
        assert_eq!(locations.len(), 1);
        let artifact = &locations[0]["physicalLocation"]["artifactLocation"];
        assert!(artifact["uri"].is_string());
        assert_eq!(artifact["uriBaseId"], "%SRCROOT%");
        let fingerprints = result["partialFingerprints"].as_object().unwrap();
        assert!(fingerprints["redlineFindingHash/v1"].is_string());
        assert!(result["properties"]["severity"].is_string());
        assert!(result["properties"]["category"].is_string());
    }
}

#[test]
fn sarif_results_map_levels_regions_and_base_lines() {
    let log = sarif();
    let results = log["runs"][0]["results"].as_array().unwrap();
    let by_path = |path: &str| {
        results
            .iter()
            .find(|r| r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == path)
            .unwrap()
    };
    let lib = by_path("src/lib.rs");
    assert_eq!(lib["level"], "error");
    assert_eq!(
        lib["locations"][0]["physicalLocation"]["region"],
        json!({"startLine": 13, "endLine": 14})
    );
    assert!(
        lib["message"]["text"]
            .as_str()
            .unwrap()
            .starts_with("Unchecked unwrap\n\nBody")
    );
    assert_eq!(lib["properties"]["rule"], "AGENTS.md", "{lib}");
    assert!(
        lib["message"]["text"]
            .as_str()
            .unwrap()
            .contains("\n\nProject guideline: AGENTS.md\n\nSuggested code:")
    );
    assert_eq!(
        lib["ruleId"], "redline/bug",
        "SARIF's rule stays the category"
    );
    let removed = by_path("src/old.rs");
    assert_eq!(removed["level"], "error");
    assert!(
        removed["locations"][0]["physicalLocation"]
            .get("region")
            .is_none()
    );
    assert!(
        removed["message"]["text"]
            .as_str()
            .unwrap()
            .contains("line 3 of the base version")
    );
    let nit = by_path("a/inner.rs");
    assert_eq!(nit["level"], "note");
    assert_eq!(
        nit["properties"],
        json!({"severity": "nit", "category": "style"})
    );
}

#[test]
fn sarif_fingerprints_survive_moves_and_rewording_of_case_and_punctuation() {
    use redline::review::render::sarif::fingerprint;
    let a = finding("src/lib.rs", 14, "Unchecked unwrap!");
    let b = Finding {
        line: 30,
        start_line: 30,
        title: "unchecked   UNWRAP".into(),
        ..a.clone()
    };
    assert_eq!(fingerprint(&a), fingerprint(&b));
    let other_file = Finding {
        path: "src/x.rs".into(),
        ..a.clone()
    };
    assert_ne!(fingerprint(&a), fingerprint(&other_file));
}

#[test]
fn markdown_fits_a_pull_request_comment() {
    let text = render(&report(), Format::Markdown);
    assert!(
        text.starts_with(
            "## Redline review\n\n### Walkthrough\n\n- **Parsing** (`src/lib.rs`): Parses input with `?` instead of unwrapping.\n\n**3 findings**"
        ),
        "{text}"
    );
    assert!(
        text.contains("**3 findings**: 1 critical, 1 major, 0 minor, 1 nit"),
        "{text}"
    );
    assert!(
        text.contains("```suggestion\n    let value = input.parse()?;\n```"),
        "{text}"
    );
    assert!(
        text.contains("`src/lib.rs:13-14` · **major** · bug"),
        "{text}"
    );
    assert!(
        text.contains("`src/old.rs:3` (base version, removed lines) · **critical** · security")
    );
    assert!(text.contains("### Summary\n\nThree things to look at."));
    // By file, the file with the most severe finding first.
    let critical = text.find("src/old.rs").unwrap();
    let major = text.find("src/lib.rs:13-14").unwrap();
    let nit = text.find("a/inner.rs").unwrap();
    assert!(critical < major && major < nit, "{text}");
    let empty = render(&ReviewReport::default(), Format::Markdown);
    assert!(empty.contains("No findings."));
}

#[test]
fn text_is_one_diagnostic_per_finding_without_colour() {
    let text = render(&report(), Format::Text);
    assert!(
        text.starts_with(
            "Walkthrough:\n    Parsing (src/lib.rs): Parses input with `?` instead of unwrapping.\n\n"
        ),
        "{text}"
    );
    assert!(!text.contains('\x1b'));
    // Without the files' text, each finding is shown by its location.
    assert!(
        text.contains("major[bug]: Unchecked unwrap\n --> src/lib.rs:13\n  = Body of Unchecked unwrap.\n  = rule: AGENTS.md\nhelp: suggested change\n   |\n13 +     let value = input.parse()?;\n   |\n"),
        "{text}"
    );
    assert!(text.contains("critical[security]: Validation removed\n --> src/old.rs:3\n  = note: these lines are in the base version"), "{text}");
    // Most severe first: the critical finding's file, then the major's, then the nit's.
    let critical = text.find("critical[security]").unwrap();
    let major = text.find("major[bug]").unwrap();
    let nit = text.find("nit[style]").unwrap();
    assert!(critical < major && major < nit, "{text}");
    assert!(text.contains("Summary:\n    Three things to look at.\n"));
    assert!(
        text.contains("3 findings (1 critical, 1 major, 0 minor, 1 nit) · react · 4 steps"),
        "{text}"
    );
}

/// `src/lib.rs` at head and `src/old.rs` at base, as a review's repository would give them.
fn sources(path: &str, side: Side) -> Option<String> {
    match (path, side) {
        ("src/lib.rs", Side::Right) => Some(
            (1..=11)
                .map(|n| format!("// line {n}\n"))
                .collect::<String>()
                + "fn parse(input: &str) -> u32 {\n    let value = input.parse()\n        .unwrap();\n    value\n}\n",
        ),
        ("src/old.rs", Side::Left) => Some(
            "fn check(x: u32) {\n    if x > 10 {\n        panic!(\"too big\");\n    }\n}\n".into(),
        ),
        _ => None,
    }
}

#[test]
fn a_finding_shows_its_lines_marked_and_its_suggestion_as_a_diff() {
    let options = RenderOptions {
        color: false,
        sources: &sources,
    };
    let report = report();
    let major = ReviewReport {
        findings: vec![report.findings[0].clone()],
        ..ReviewReport::default()
    };
    let text = render_with(&major, Format::Text, &options);
    let expected = "\
major[bug]: Unchecked unwrap
  --> src/lib.rs:13:5
   |
12 |   fn parse(input: &str) -> u32 {
13 | /     let value = input.parse()
14 | |         .unwrap();
   | |__________________^
15 |       value
   |
   = Body of Unchecked unwrap.
   = rule: AGENTS.md
help: suggested change
   |
13 -     let value = input.parse()
14 -         .unwrap();
13 +     let value = input.parse()?;
   |

1 finding (0 critical, 1 major, 0 minor, 0 nit) · 0 steps · 0 model calls · 0 tool calls · 0 prompt + 0 completion tokens · $0.0000 · 0.0s
";
    assert_eq!(text, expected, "\n{text}");
}

#[test]
fn a_removed_line_is_shown_from_the_base_version() {
    let options = RenderOptions {
        color: false,
        sources: &sources,
    };
    let text = render_with(&report(), Format::Text, &options);
    assert!(
        text.contains(" --> src/old.rs:3:9\n  |\n2 |     if x > 10 {\n3 |         panic!(\"too big\");\n  |         ^^^^^^^^^^^^^^^^^^\n"),
        "{text}"
    );
}

#[test]
fn colour_is_ansi_only_when_asked_and_never_from_the_findings() {
    let mut report = report();
    report.findings[0].title = "Unchecked\x1b[2J unwrap".into();
    report.findings[0].body = "Body\x1b]0;pwned\x07 text".into();
    let plain = render_with(
        &report,
        Format::Text,
        &RenderOptions {
            color: false,
            sources: &sources,
        },
    );
    assert!(
        !plain.contains('\x1b') && !plain.contains('\x07'),
        "{plain}"
    );
    assert!(plain.contains("major[bug]: Unchecked[2J unwrap"), "{plain}");
    let coloured = render_with(
        &report,
        Format::Text,
        &RenderOptions {
            color: true,
            sources: &sources,
        },
    );
    assert!(coloured.contains("\x1b["), "{coloured}");
    // The escape sequences are the renderer's own: the title's was removed.
    assert!(!coloured.contains("\x1b[2J") && !coloured.contains('\x07'));
    // Colour changes nothing but the escape codes.
    assert_eq!(strip_ansi(&coloured), plain);
    for format in [Format::Markdown, Format::Json, Format::Sarif] {
        let options = RenderOptions {
            color: true,
            sources: &sources,
        };
        assert_eq!(
            render_with(&report, format, &options),
            render(&report, format),
            "{format}"
        );
    }
}

/// `text` without ANSI SGR sequences (`ESC [ ... m`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn fail_on_thresholds() {
    let report = report();
    assert!(report.fails(FailOn::At(Severity::Critical)));
    assert!(!report.fails(FailOn::Never));
    assert_eq!(report.highest_severity(), Some(Severity::Critical));
    let nits = ReviewReport {
        findings: vec![Finding {
            severity: Severity::Nit,
            ..finding("a.rs", 1, "t")
        }],
        ..ReviewReport::default()
    };
    assert!(!nits.fails("minor".parse().unwrap()));
    assert!(nits.fails("nit".parse().unwrap()));
    assert!("sometimes".parse::<FailOn>().is_err());
}
