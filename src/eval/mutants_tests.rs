//! Tests of the mutation rules, one per language.

use super::*;

fn all_lines(text: &str) -> BTreeSet<u32> {
    (1..=text.lines().count() as u32).collect()
}

/// The mutants of `text` (all lines given) that parse: (kind, mutated text).
fn mutants(path: &str, text: &str) -> Vec<(MutantKind, String)> {
    let lang = Lang::of_path(path).unwrap();
    candidates(lang, text, &all_lines(text))
        .iter()
        .filter_map(|e| Some((e.kind, apply(lang, path, text, e)?)))
        .collect()
}

fn has(mutants: &[(MutantKind, String)], kind: MutantKind, expected: &str) -> bool {
    mutants.iter().any(|(k, t)| *k == kind && t == expected)
}

#[test]
fn python_rules() {
    let text = "async def f(items, n):\n    if not items:\n        return None\n    items = sorted(items)\n    await flush(n)\n    log(n)\n    return items[n - 1] if n > 0 and n in items else take(items, n)\n";
    let m = mutants("a.py", text);
    let with = |from: &str, to: &str| text.replacen(from, to, 1);
    assert!(has(
        &m,
        MutantKind::Negation,
        &with("if not items", "if items")
    ));
    assert!(has(
        &m,
        MutantKind::DeletedGuard,
        &with("    if not items:\n        return None\n", "")
    ));
    assert!(has(
        &m,
        MutantKind::IgnoredResult,
        &with("items = sorted(items)", "sorted(items)")
    ));
    assert!(has(
        &m,
        MutantKind::Await,
        &with("await flush(n)", "flush(n)")
    ));
    assert!(has(&m, MutantKind::DroppedCall, &with("    log(n)\n", "")));
    assert!(has(&m, MutantKind::OffByOne, &with("n - 1", "n")));
    assert!(has(&m, MutantKind::OffByOne, &with("n > 0", "n >= 0")));
    assert!(has(&m, MutantKind::Boolean, &with(" and ", " or ")));
    assert!(has(
        &m,
        MutantKind::Comparison,
        &with("n in items", "n not in items")
    ));
    assert!(has(
        &m,
        MutantKind::SwappedArguments,
        &with("take(items, n)", "take(n, items)")
    ));
    assert!(m.iter().all(|(_, t)| t != text));
}

#[test]
fn javascript_and_typescript_rules() {
    for path in ["a.js", "a.ts"] {
        let text = "async function f(a, b) {\n  if (!a) return;\n  const r = await load(a);\n  if (a.length === b && r) {\n    save(b, a);\n    done();\n  }\n}\n";
        let m = mutants(path, text);
        let with = |from: &str, to: &str| text.replacen(from, to, 1);
        assert!(
            has(&m, MutantKind::Await, &with("await load(a)", "load(a)")),
            "{path}"
        );
        assert!(
            has(&m, MutantKind::Comparison, &with("===", "!==")),
            "{path}"
        );
        assert!(has(&m, MutantKind::Boolean, &with("&&", "||")), "{path}");
        assert!(
            has(&m, MutantKind::Negation, &with("(!a)", "(a)")),
            "{path}"
        );
        assert!(
            has(
                &m,
                MutantKind::DeletedGuard,
                &with("  if (!a) return;\n", "")
            ),
            "{path}"
        );
        assert!(
            has(
                &m,
                MutantKind::SwappedArguments,
                &with("save(b, a)", "save(a, b)")
            ),
            "{path}"
        );
        assert!(
            has(&m, MutantKind::DroppedCall, &with("    save(b, a);\n", "")),
            "{path}"
        );
    }
}

#[test]
fn rust_rules() {
    let text = "async fn f(v: &[u8], i: usize) -> u8 {\n    if i >= v.len() {\n        return 0;\n    }\n    let s = trim(s);\n    g().await;\n    v[i..v.len() - 1].iter().sum()\n}\n";
    let m = mutants("a.rs", text);
    let with = |from: &str, to: &str| text.replacen(from, to, 1);
    assert!(has(&m, MutantKind::OffByOne, &with("i >= v", "i > v")));
    assert!(has(&m, MutantKind::OffByOne, &with("i..v", "i..=v")));
    assert!(has(
        &m,
        MutantKind::OffByOne,
        &with("v.len() - 1", "v.len()")
    ));
    assert!(has(
        &m,
        MutantKind::DeletedGuard,
        &with("    if i >= v.len() {\n        return 0;\n    }\n", "")
    ));
    assert!(has(
        &m,
        MutantKind::IgnoredResult,
        &with("let s = trim(s);", "trim(s);")
    ));
    assert!(has(&m, MutantKind::Await, &with("g().await", "g()")));
}

#[test]
fn go_rules() {
    let text = "package a\n\nfunc f(a []int, n int) int {\n\tif n < 0 || !ok(a) {\n\t\treturn 0\n\t}\n\tn = clamp(n, a)\n\treturn a[n-1]\n}\n";
    let m = mutants("a.go", text);
    let with = |from: &str, to: &str| text.replacen(from, to, 1);
    assert!(has(&m, MutantKind::Boolean, &with("||", "&&")));
    assert!(has(&m, MutantKind::OffByOne, &with("n < 0", "n <= 0")));
    assert!(has(&m, MutantKind::Negation, &with("!ok(a)", "ok(a)")));
    assert!(has(
        &m,
        MutantKind::IgnoredResult,
        &with("n = clamp(n, a)", "clamp(n, a)")
    ));
    assert!(has(
        &m,
        MutantKind::SwappedArguments,
        &with("clamp(n, a)", "clamp(a, n)")
    ));
    assert!(has(&m, MutantKind::OffByOne, &with("a[n-1]", "a[n]")));
    assert!(has(
        &m,
        MutantKind::DeletedGuard,
        &with("\tif n < 0 || !ok(a) {\n\t\treturn 0\n\t}\n", "")
    ));
}

#[test]
fn only_given_lines_are_mutated_and_every_mutant_parses() {
    let text = "def f(a, b):\n    x = a == b\n    y = a != b\n    return x and y\n";
    let lang = Lang::Python;
    let edits = candidates(lang, text, &BTreeSet::from([3]));
    assert!(!edits.is_empty());
    assert!(edits.iter().all(|e| e.line == 3), "{edits:?}");
    // A deletion never empties a block, and an edit that does not parse is refused.
    let only = "def f():\n    g()\n";
    let edits = candidates(lang, only, &all_lines(only));
    assert!(
        edits.iter().all(|e| e.kind != MutantKind::DroppedCall),
        "{edits:?}"
    );
    let broken = Edit {
        start: 5,
        end: 6,
        kind: MutantKind::Comparison,
        replacement: ")".into(),
        line: 1,
        deletes_lines: false,
        description: String::new(),
    };
    assert_eq!(apply(lang, "a.py", only, &broken), None);
    // A text that does not parse has no candidates.
    assert!(candidates(lang, "def f(:\n", &all_lines("def f(:\n")).is_empty());
}

/// A Rust function of `levels` nested `if a == b {` blocks around one call.
fn nested_rust(levels: usize) -> String {
    format!(
        "pub fn f(a: u8, b: u8) {{\n{}g(a, b);\n{}}}\n",
        "if a == b {\n".repeat(levels),
        "}\n".repeat(levels)
    )
}

#[test]
fn the_walk_is_linear_in_the_tree_on_deeply_nested_code() {
    let mut costs = Vec::new();
    for levels in [500, 2000] {
        let text = nested_rust(levels);
        let (edits, cost) = candidates_with_cost(Lang::Rust, &text, &all_lines(&text));
        let comparisons = edits
            .iter()
            .filter(|e| e.kind == MutantKind::Comparison)
            .count();
        assert_eq!(comparisons, levels, "one `==` per level");
        let tree = parse(Lang::Rust, &text).unwrap();
        let nodes = tree.root_node().descendant_count();
        // Each node visited once; each cursor move goes down, across or up once per node.
        assert_eq!(cost.visits, nodes);
        assert!(cost.moves <= 3 * nodes, "{cost:?} for {nodes} nodes");
        assert!(cost.counted <= nodes, "{cost:?} for {nodes} nodes");
        assert!(cost.depth > levels, "{cost:?}");
        costs.push((nodes, cost.visits + cost.moves + cost.counted));
    }
    // Four times the levels: about four times the nodes and the work, not sixteen.
    let (small, large) = (costs[0], costs[1]);
    let work_ratio = large.1 as f64 / small.1 as f64;
    let node_ratio = large.0 as f64 / small.0 as f64;
    assert!(work_ratio <= node_ratio * 1.1, "{costs:?}");
}

#[test]
fn statements_of_a_long_block_are_counted_once() {
    // 3,000 call statements in one block: "not the only statement" is asked of each.
    let body = "    log(a);\n".repeat(3000);
    let text = format!("fn f(a: u8) {{\n{body}}}\n");
    let (edits, cost) = candidates_with_cost(Lang::Rust, &text, &all_lines(&text));
    let dropped = edits
        .iter()
        .filter(|e| e.kind == MutantKind::DroppedCall)
        .count();
    assert_eq!(dropped, 3000);
    assert!(cost.counted <= 3000 + 10, "{cost:?}");
}

#[test]
fn no_edit_replaces_more_than_the_limit_on_a_minified_line() {
    // One line: every node is "on one line", nested negations of growing size.
    let text = format!(
        "function f(a) {{ return {}a{}; }}\n",
        "!(".repeat(4000),
        ")".repeat(4000)
    );
    let edits = candidates(Lang::JavaScript, &text, &all_lines(&text));
    assert!(!edits.is_empty());
    for edit in &edits {
        assert!(
            edit.end - edit.start <= MAX_EDIT_BYTES,
            "{}",
            edit.end - edit.start
        );
        assert!(edit.replacement.len() <= MAX_EDIT_BYTES);
    }
}
