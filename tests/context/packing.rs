//! Stage 1: ordering, packing into the budget, counts and the report.

use redline::context::{ShapeOptions, ShapeStatus};
use redline::llm::tokens::{Encoding, TokenCounter};
use redline::review::diff::LineKind;

use super::support::{Change, entry, function, section_opt, thousands};

#[test]
fn files_are_ordered_by_review_value() {
    let small_old = function("small", 5);
    let big_old = function("big", 20);
    let change = Change::default()
        .file("Cargo.toml", "[package]\n", "[package]\nname = \"x\"\n")
        .file("README.md", "# X\n", "# X\n\nMore.\n")
        .file("tests/cli.rs", "", &function("t", 40))
        .file(
            "src/small.rs",
            &small_old,
            &small_old.replace("v1 = 1", "v1 = 2"),
        )
        .file(
            "src/big.rs",
            &big_old,
            &big_old
                .replace("v1 = 1", "v1 = 2")
                .replace("v9 = 9", "v9 = 8"),
        );
    let shaped = change.shape(&ShapeOptions::default());
    let order: Vec<&str> = shaped.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        order,
        [
            "src/big.rs",
            "src/small.rs",
            "tests/cli.rs",
            "README.md",
            "Cargo.toml"
        ]
    );
    let positions: Vec<usize> = order
        .iter()
        .map(|p| {
            shaped
                .message
                .find(&format!("+++ b/{p}\n"))
                .unwrap_or(usize::MAX)
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
}

#[test]
fn what_does_not_fit_is_listed_with_its_size() {
    let mut change = Change::default();
    for i in 0..6 {
        change = change.file(
            &format!("src/m{i}.rs"),
            "",
            &function(&format!("m{i}"), 80 + i * 10),
        );
    }
    let opts = ShapeOptions {
        budget_tokens: 2_500,
        ..ShapeOptions::default()
    };
    let shaped = change.shape(&opts);
    assert!(shaped.shaped_tokens <= 2_500, "{}", shaped.shaped_tokens);
    let listed: Vec<_> = shaped
        .files
        .iter()
        .filter(|f| f.status == ShapeStatus::Listed)
        .collect();
    let shown = shaped
        .files
        .iter()
        .filter(|f| f.status == ShapeStatus::Shown)
        .count();
    assert!(shown >= 1 && !listed.is_empty(), "{:?}", shaped.files);
    assert!(shaped.message.contains("## Not shown: over budget"));
    assert!(shaped.message.contains("`diff` tool"));
    for file in listed {
        assert_eq!(file.reason.as_deref(), Some("over budget"));
        let line = format!(
            "- {} (+{} -0, {} tokens)\n",
            file.path,
            file.changed_lines,
            thousands(file.tokens)
        );
        assert!(
            shaped.message.contains(&line),
            "missing {line:?}:\n{}",
            shaped.message
        );
        assert!(!shaped.message.contains(&format!("+++ b/{}\n", file.path)));
    }
    // A budget large enough shows everything and lists nothing.
    let all = change.shape(&ShapeOptions::default());
    assert!(all.files.iter().all(|f| f.status == ShapeStatus::Shown));
    assert!(!all.message.contains("over budget"));
}

#[test]
fn one_huge_file_does_not_crowd_out_the_others() {
    let mut change = Change::default().file("src/huge.rs", "", &function("huge", 400));
    for i in 0..5 {
        change = change.file(
            &format!("src/small{i}.rs"),
            "",
            &function(&format!("s{i}"), 10),
        );
    }
    let opts = ShapeOptions {
        budget_tokens: 5_000,
        ..ShapeOptions::default()
    };
    let shaped = change.shape(&opts);
    assert_eq!(entry(&shaped, "src/huge.rs").status, ShapeStatus::Listed);
    for i in 0..5 {
        assert_eq!(
            entry(&shaped, &format!("src/small{i}.rs")).status,
            ShapeStatus::Shown
        );
    }
    // Alone, a file larger than a third of the budget is shown when it fits.
    let alone = Change::default()
        .file("src/big.rs", "", &function("big", 150))
        .shape(&opts);
    assert!(entry(&alone, "src/big.rs").tokens > 5_000 / 3);
    assert_eq!(entry(&alone, "src/big.rs").status, ShapeStatus::Shown);
}

#[test]
fn a_huge_change_is_measured_at_bounded_cost() {
    // About 2.5 MB of naive text: sampled, and far-over-budget sizes estimated.
    let mut change = Change::default();
    for i in 0..400 {
        change = change.file(
            &format!("src/m{}/f{i}.rs", i % 7),
            "",
            &function(&format!("f{i}"), 120),
        );
    }
    let opts = ShapeOptions {
        budget_tokens: 4_000,
        ..ShapeOptions::default()
    };
    let shaped = change.shape(&opts);
    assert!(!shaped.naive_exact);
    assert!(shaped.naive_tokens > 400 * 1_000, "{}", shaped.naive_tokens);
    assert!(shaped.shaped_tokens <= 4_000);
    assert!(
        shaped
            .files
            .iter()
            .filter(|f| f.status == ShapeStatus::Shown)
            .all(|f| f.tokens_exact)
    );
    assert!(shaped.files.iter().any(|f| !f.tokens_exact));
    assert!(
        shaped.message.contains(" ~"),
        "estimates are marked:\n{}",
        shaped.message
    );
    let named: usize = shaped.files.iter().map(|f| f.changed_lines).sum();
    assert_eq!(named, shaped.changed_lines_total);
    assert!(
        shaped
            .files
            .iter()
            .all(|f| f.status != ShapeStatus::Excluded)
    );
}

#[test]
fn changed_line_counts_are_exact_and_every_shown_line_is_numbered() {
    let old = function("f", 12);
    let new = old
        .replace(
            "    let v3 = 3;\n",
            "    let v3 = 30;\n\n    let extra = 1;\n",
        )
        .replace("    let v9 = 9;\n", "");
    let change = Change::default()
        .file("src/f.rs", &old, &new) // 2 non-blank added lines (+1 blank)
        .file("src/new.rs", "", "fn n() {\n\n    1\n}\n") // 3 non-blank
        .file("Cargo.lock", "", "a\nb\nc\n") // noise: not counted
        .file("src/gone.rs", "x\n", ""); // deleted: no head lines
    let shaped = change.shape(&ShapeOptions::default());
    assert_eq!(shaped.changed_lines_total, 5);
    assert_eq!(shaped.changed_lines_shown, 5);
    for file in &change.files {
        let Some(body) = section_opt(&shaped.message, &file.path) else {
            continue;
        };
        for line in file.hunks.iter().flat_map(|h| &h.lines) {
            if line.kind == LineKind::Added {
                let n = line.new_line.unwrap_or_default();
                let printed = format!("{n:>5} +{}\n", line.text);
                assert!(body.contains(&printed), "{printed:?} missing in\n{body}");
            }
        }
    }
    // Only some shown when the budget is tight: the count follows.
    let tight = ShapeOptions {
        budget_tokens: 700,
        ..ShapeOptions::default()
    };
    let big = Change::default()
        .file("src/a.rs", "", &function("a", 3))
        .file("src/b.rs", "", &function("b", 200));
    let shaped = big.shape(&tight);
    assert_eq!(shaped.changed_lines_total, 5 + 202);
    assert_eq!(shaped.changed_lines_shown, 5);
}

#[test]
fn the_json_report_has_the_documented_shape() {
    let change =
        Change::default()
            .file("src/a.rs", "", "fn a() {}\n")
            .file("Cargo.lock", "", "x = 1\n");
    let shaped = change.shape(&ShapeOptions::default());
    let json = shaped.to_json("gpt-4o", "o200k_base", 24_000);
    let a = entry(&shaped, "src/a.rs");
    let lock = entry(&shaped, "Cargo.lock");
    let expected = serde_json::json!({
        "version": 1,
        "model": "gpt-4o",
        "encoding": "o200k_base",
        "budget": 24000,
        "files": [
            {"path": "src/a.rs", "status": "shown", "reason": null, "tokens": a.tokens},
            {"path": "Cargo.lock", "status": "excluded", "reason": "lockfile", "tokens": lock.tokens},
        ],
        "tokens": {"naive": shaped.naive_tokens, "shaped": shaped.shaped_tokens},
        "changed_lines": {"total": 1, "shown": 1},
        "moves": {"blocks": 0, "lines": 0, "tokens": 0, "raw_tokens": 0},
    });
    assert_eq!(json, expected);
    assert!(a.tokens > 0 && lock.tokens > 0);
    let text = shaped.render_text();
    assert!(text.contains("changed lines: 1 of 1 shown"), "{text}");
    assert!(text.contains("excluded"));
}

#[test]
fn a_small_change_stays_cheap_and_the_header_says_why() {
    let old = function("handler", 60);
    let mut new = old.clone();
    for i in [5, 6, 7, 20, 21, 40, 41, 42] {
        new = new.replace(
            &format!("let v{i} = {i};"),
            &format!("let v{i} = compute({i}, \"label {i}\");"),
        );
    }
    let shaped = Change::default()
        .file("src/handler.rs", &old, &new)
        .shape(&ShapeOptions::default());
    assert!(shaped.message.starts_with("# Change under review\n"));
    assert!(
        shaped
            .message
            .contains("Shaped to fit a 24,000-token budget")
    );
    assert!(
        shaped.shaped_tokens < 1_500,
        "{} tokens:\n{}",
        shaped.shaped_tokens,
        shaped.message
    );
    assert_eq!(
        shaped.shaped_tokens,
        TokenCounter::new(Encoding::O200kBase).count(&shaped.message)
    );
    assert!(shaped.naive_tokens > shaped.shaped_tokens);
}

#[test]
fn a_38_line_change_costs_well_under_2_900_tokens() {
    // Ten functions of 28 lines of ordinary code; 19 lines modified (38 changed
    // lines: 19 removed, 19 added) in six places, deep inside the functions.
    let body_line = |f: usize, k: usize| match k % 4 {
        0 => format!("    let v{k} = state.get(\"k{f}_{k}\").copied().unwrap_or({k});"),
        1 => format!(
            "    if v{} > limit {{ return Err(Error::TooLarge({f})); }}",
            k - 1
        ),
        2 => format!("    total += v{} * {f};", k - 2),
        _ => format!("    log::debug!(\"step {f}.{k}: {{total}}\");"),
    };
    let mut old = String::from("use std::collections::HashMap;\n\n");
    for f in 0..10 {
        old.push_str(&format!(
            "pub fn step_{f}(state: &HashMap<String, u64>, limit: u64) -> Result<u64> {{\n"
        ));
        old.push_str("    let mut total = 0;\n");
        for k in 0..28 {
            old.push_str(&body_line(f, k));
            old.push('\n');
        }
        old.push_str("    Ok(total)\n}\n\n");
    }
    let mut new = old.clone();
    let edits = [
        (1, 20, 4),
        (3, 21, 4),
        (4, 5, 3),
        (6, 18, 3),
        (8, 22, 3),
        (9, 10, 2),
    ];
    for (f, from, count) in edits {
        for k in from..from + count {
            let line = format!("{}\n", body_line(f, k));
            new = new.replacen(&line, &format!("    let w{k} = checked(v{k}, {f})?;\n"), 1);
        }
    }
    let shaped = Change::default()
        .file("src/steps.rs", &old, &new)
        .shape(&ShapeOptions::default());
    assert_eq!(shaped.changed_lines_total, 19);
    assert_eq!(shaped.changed_lines_shown, 19);
    assert!(
        shaped.shaped_tokens < 2_200,
        "{} tokens:\n{}",
        shaped.shaped_tokens,
        shaped.message
    );
    assert!(
        shaped.naive_tokens > 2 * shaped.shaped_tokens,
        "{} vs {}",
        shaped.naive_tokens,
        shaped.shaped_tokens
    );
}
