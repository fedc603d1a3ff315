use super::*;
use crate::review::diff::{DiffLine, FileChange, FileStatus, Hunk, LineKind};

/// One hunk from marked lines (`' '`, `'+'`, `'-'`), numbered from the given starts.
fn hunk(old_start: u32, new_start: u32, lines: &[(char, String)]) -> Hunk {
    let (mut old, mut new) = (old_start, new_start);
    let mut out = Vec::new();
    for (mark, text) in lines {
        let (kind, old_line, new_line) = match mark {
            '+' => (LineKind::Added, None, Some(new)),
            '-' => (LineKind::Removed, Some(old), None),
            _ => (LineKind::Context, Some(old), Some(new)),
        };
        if old_line.is_some() {
            old += 1;
        }
        if new_line.is_some() {
            new += 1;
        }
        out.push(DiffLine {
            kind,
            old_line,
            new_line,
            text: text.clone(),
        });
    }
    Hunk {
        old_start,
        old_lines: old - old_start,
        new_start,
        new_lines: new - new_start,
        header: String::new(),
        lines: out,
    }
}

fn file(path: &str, hunks: Vec<Hunk>) -> FileChange {
    FileChange {
        path: path.into(),
        old_path: None,
        status: FileStatus::Modified,
        binary: false,
        hunks,
    }
}

fn change(files: Vec<FileChange>) -> ChangeSet {
    ChangeSet {
        base: "b".into(),
        head: Some("h".into()),
        files,
    }
}

/// A ten-line Python helper; `op` is the operator of its return line.
fn helper(indent: &str, op: &str) -> Vec<String> {
    [
        "def scale_total(values, factor):",
        "    \"\"\"Sum the values and scale them.\"\"\"",
        "    total = 0",
        "    for value in values:",
        "        if value is None:",
        "            continue",
        "        total += value",
        "    scaled = total * factor",
        "",
        &format!("    return scaled {op} 1"),
    ]
    .iter()
    .map(|l| {
        if l.is_empty() {
            String::new()
        } else {
            format!("{indent}{l}")
        }
    })
    .collect()
}

fn marked(mark: char, lines: &[String]) -> Vec<(char, String)> {
    lines.iter().map(|l| (mark, l.clone())).collect()
}

/// `util.py` loses the helper at base lines 20-29; `core.py` gains it, with
/// one token changed, at head lines 40-49.
fn across_files() -> ChangeSet {
    let mut removed = vec![(' ', "import os".to_string())];
    removed.extend(marked('-', &helper("", "+")));
    removed.push((' ', "def other():".into()));
    let mut added = vec![(' ', "class Core:".to_string())];
    added.extend(marked('+', &helper("", "-")));
    added.push((' ', "# end".into()));
    change(vec![
        file("pkg/core.py", vec![hunk(39, 39, &added)]),
        file("pkg/util.py", vec![hunk(19, 19, &removed)]),
    ])
}

#[test]
fn a_helper_moved_to_another_module_with_one_token_changed_is_one_move_and_one_edit() {
    let moves = Moves::detect(&across_files());
    assert_eq!(moves.count(), 1);
    let core = moves.of_file("pkg/core.py");
    let m = core.into[0];
    assert_eq!(
        (m.from_path.as_str(), m.from, m.to),
        ("pkg/util.py", (20, 29), (40, 49))
    );
    assert_eq!(
        m.edits,
        vec![
            Edit::Removed {
                line: 29,
                text: "    return scaled + 1".into()
            },
            Edit::Added {
                line: 49,
                text: "    return scaled - 1".into()
            },
        ]
    );
    assert_eq!(moves.of_file("pkg/util.py").out_of, vec![m]);
    assert_eq!(Moves::detect(&across_files()), moves, "deterministic");
}

#[test]
fn a_method_moved_within_a_file_and_dedented_is_a_move() {
    // Base: the method at lines 2-11 of a class; head: a module function at lines 30-39.
    let mut removed = vec![(' ', "class Old:".to_string())];
    removed.extend(marked('-', &helper("    ", "+")));
    let mut lines = removed;
    lines.extend((0..17).map(|i| (' ', format!("KEEP_{i} = {i}"))));
    lines.extend(marked('+', &helper("", "+")));
    let moves = Moves::detect(&change(vec![file("m.py", vec![hunk(1, 1, &lines)])]));
    assert_eq!(moves.count(), 1);
    let m = moves.of_file("m.py").into[0];
    assert_eq!((m.from, m.to), ((2, 11), (19, 28)));
    assert!(m.edits.is_empty(), "{:?}", m.edits);
}

#[test]
fn a_line_indented_into_another_block_is_an_edit_not_hidden() {
    let original = helper("", "+");
    let mut moved = original.clone();
    // Now inside the `if`, after `continue`: a real change, in indentation only.
    moved[6] = "            total += value".into();
    let moves = Moves::detect(&change(vec![
        file("a.py", vec![hunk(1, 1, &marked('-', &original))]),
        file("b.py", vec![hunk(0, 1, &marked('+', &moved))]),
    ]));
    let m = moves.of_file("b.py").into[0];
    assert_eq!(
        m.edits,
        vec![
            Edit::Removed {
                line: 7,
                text: original[6].clone()
            },
            Edit::Added {
                line: 7,
                text: moved[6].clone()
            },
        ]
    );
}

#[test]
fn short_common_lines_never_form_a_move() {
    let common: Vec<String> = ["    }", "    return None", "}", "", "    else:", "    pass"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let moves = Moves::detect(&change(vec![
        file("a.py", vec![hunk(1, 1, &marked('-', &common))]),
        file("b.py", vec![hunk(0, 1, &marked('+', &common))]),
    ]));
    assert_eq!(moves.count(), 0);
}

#[test]
fn an_edit_in_place_is_not_a_move() {
    let mut lines = marked('-', &helper("", "+"));
    lines.extend(marked('+', &helper("", "-")));
    let moves = Moves::detect(&change(vec![file("a.py", vec![hunk(1, 1, &lines)])]));
    assert_eq!(moves.count(), 0);
}

#[test]
fn a_rewrite_sharing_a_few_lines_is_not_a_move() {
    let original = helper("", "+");
    let mut rewritten = original.clone();
    // Three lines kept: fewer than a move needs.
    for (i, line) in rewritten.iter_mut().enumerate().skip(3) {
        *line = format!("    step_{i} = compute_something_else({i})");
    }
    let moves = Moves::detect(&change(vec![
        file("a.py", vec![hunk(1, 1, &marked('-', &original))]),
        file("b.py", vec![hunk(0, 1, &marked('+', &rewritten))]),
    ]));
    assert_eq!(moves.count(), 0, "{moves:?}");
}

#[test]
fn a_text_removed_in_many_places_anchors_nothing_and_each_line_moves_once() {
    // The same helper removed from twelve modules and added once: too common
    // to anchor, so no move (and no module claims it).
    let mut files: Vec<FileChange> = (0..12)
        .map(|i| {
            file(
                &format!("m{i:02}.py"),
                vec![hunk(1, 1, &marked('-', &helper("", "+")))],
            )
        })
        .collect();
    files.push(file(
        "new.py",
        vec![hunk(0, 1, &marked('+', &helper("", "+")))],
    ));
    assert_eq!(Moves::detect(&change(files)).count(), 0);
    // Removed twice, added twice: two moves, each original used once.
    let files = vec![
        file("a.py", vec![hunk(1, 1, &marked('-', &helper("", "+")))]),
        file("b.py", vec![hunk(1, 1, &marked('-', &helper("", "+")))]),
        file("c.py", vec![hunk(0, 1, &marked('+', &helper("", "+")))]),
        file("d.py", vec![hunk(0, 1, &marked('+', &helper("", "+")))]),
    ];
    let moves = Moves::detect(&change(files));
    assert_eq!(moves.count(), 2);
    let sources: Vec<&str> = ["c.py", "d.py"]
        .iter()
        .map(|f| moves.of_file(f).into[0].from_file.as_str())
        .collect();
    assert_eq!(sources, vec!["a.py", "b.py"]);
}

#[test]
fn move_lines_render_and_read_back_as_their_head_span() {
    let moves = Moves::detect(&across_files());
    let m = moves.of_file("pkg/core.py").into[0];
    let mut out = String::new();
    render::move_block(m, render::Numbers::Aligned, &mut out);
    assert_eq!(
        out,
        "40-49 ~ moved from `pkg/util.py:20-29`, edited (- original, + now):\n   \
         29 -    return scaled + 1\n   49 +    return scaled - 1\n"
    );
    assert_eq!(
        span_of(out.lines().next().unwrap_or_default()),
        Some((40, 49))
    );
    assert_eq!(span_of("   40 +x ~ moved from `a`"), None);
    assert_eq!(span_of("[lines 4-9 of base removed]"), None);
    assert_eq!(
        render::moved_away(m),
        "[lines 20-29 of base moved to `pkg/core.py:40-49`]"
    );
}

#[test]
fn the_diff_tool_layout_shows_the_move_and_its_one_edit() {
    let changes = across_files();
    let moves = Moves::detect(&changes);
    let core = render::render_numbered(&changes.files[0], &moves.of_file("pkg/core.py"));
    assert_eq!(
        core,
        "--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -39,2 +39,12 @@\n   39  class Core:\n\
         40-49 ~ moved from `pkg/util.py:20-29`, edited (- original, + now):\n   \
         29 -    return scaled + 1\n   49 +    return scaled - 1\n   50  # end\n"
    );
    let util = render::render_numbered(&changes.files[1], &moves.of_file("pkg/util.py"));
    assert!(
        util.contains("   19  import os\n      [lines 20-29 of base moved to `pkg/core.py:40-49`]\n   20  def other():\n"),
        "{util}"
    );
    assert!(!util.contains("-def scale_total"), "{util}");
}

/// A seven-line helper: `name` is its own name, `clean` the helper it calls,
/// `low` the lowest port it accepts.
fn port_helper(name: &str, clean: &str, low: &str) -> Vec<String> {
    [
        format!("def {name}(text, default):"),
        format!("    value = {clean}(text)"),
        "    if not value:".into(),
        "        return default".into(),
        "    port = int(value, 10)".into(),
        format!("    if port < {low} or port > 65535:"),
        "        raise ValueError(\"port out of range: %s\" % value)".into(),
    ]
    .to_vec()
}

/// `util.py` loses `parse_port` (base lines 11-17) between other code;
/// `net.py` gains it as `read_port` (head lines 21-27), calling `unquote`
/// instead of `strip_quotes`, with `1` turned into `0`.
fn renamed_helper(added_helper: Vec<String>) -> ChangeSet {
    let mut removed: Vec<(char, String)> =
        (1..=10).map(|i| (' ', format!("A_{i} = {i}"))).collect();
    removed.extend(marked('-', &port_helper("parse_port", "strip_quotes", "1")));
    removed.push((' ', "B = 2".into()));
    let mut added: Vec<(char, String)> = (1..=20).map(|i| (' ', format!("C_{i} = {i}"))).collect();
    added.push(('+', "LIMIT = 10".into()));
    added.extend(marked('+', &added_helper));
    added.push(('+', "DEFAULT_TIMEOUT = 30".into()));
    added.push((' ', "D = 4".into()));
    change(vec![
        file("pkg/net.py", vec![hunk(1, 1, &added)]),
        file("pkg/util.py", vec![hunk(1, 1, &removed)]),
    ])
}

#[test]
fn a_renamed_short_helper_moved_to_another_file_is_a_move_with_its_one_edit() {
    let changes = renamed_helper(port_helper("read_port", "unquote", "0"));
    let moves = Moves::detect(&changes);
    assert_eq!(moves.count(), 1, "{moves:?}");
    let m = moves.of_file("pkg/net.py").into[0];
    assert_eq!((m.from, m.to), ((11, 17), (22, 28)), "{m:?}");
    assert_eq!(
        m.renames,
        vec![
            ("parse_port".to_string(), "read_port".to_string()),
            ("strip_quotes".to_string(), "unquote".to_string())
        ]
    );
    assert_eq!(
        m.edits,
        vec![
            Edit::Removed {
                line: 16,
                text: "    if port < 1 or port > 65535:".into()
            },
            Edit::Added {
                line: 27,
                text: "    if port < 0 or port > 65535:".into()
            },
        ]
    );
    let mut out = String::new();
    render::move_block(m, render::Numbers::Aligned, &mut out);
    assert!(
        out.starts_with(
            "22-28 ~ moved from `pkg/util.py:11-17`, renamed `parse_port` to `read_port` and \
             `strip_quotes` to `unquote`, edited (- original, + now):\n"
        ),
        "{out}"
    );
    assert_eq!(
        span_of(out.lines().next().unwrap_or_default()),
        Some((22, 28))
    );
    assert_eq!(Moves::detect(&changes), moves, "deterministic");
}

#[test]
fn renamings_stay_small_and_consistent() {
    // Three names changed: no renaming explains the block, and the lines left
    // equal are too few for a move.
    let mut three = port_helper("read_port", "unquote", "1");
    three[4] = "    port = to_int(value, 10)".into();
    three[3] = "        return fallback(default)".into();
    assert_eq!(Moves::detect(&renamed_helper(three)).count(), 0);
    // The old name kept in a line equal as it is: not a renaming, an edit.
    let mut kept = port_helper("read_port", "strip_quotes", "1");
    kept[6] = "        raise ValueError(\"port out of range: %s\" % parse_port)".into();
    let moves = Moves::detect(&renamed_helper(kept));
    assert!(
        moves
            .of_file("pkg/net.py")
            .into
            .iter()
            .all(|m| m.renames.is_empty()),
        "{moves:?}"
    );
}

#[test]
fn unrelated_blocks_of_the_same_shape_never_pair() {
    let shape = |name: &str, clean: &str, word: &str| -> Vec<String> {
        [
            format!("def {name}(text, default):"),
            format!("    {word} = {clean}(text)"),
            format!("    if not {word}:"),
            "        return default".into(),
            format!("    {word}_number = int({word}, 10)"),
            format!("    if {word}_number < 1 or {word}_number > 65535:"),
            format!("        raise ValueError(\"{word} out of range: %s\" % {word})"),
        ]
        .to_vec()
    };
    let changes = change(vec![
        file(
            "a.py",
            vec![hunk(
                1,
                1,
                &marked('-', &shape("parse_port", "strip", "value")),
            )],
        ),
        file(
            "b.py",
            vec![hunk(
                0,
                1,
                &marked('+', &shape("read_count", "clean", "amount")),
            )],
        ),
    ]);
    assert_eq!(Moves::detect(&changes).count(), 0);
}

/// `blocks` eight-line functions removed from `a.py` and added to `b.py` in a
/// shuffled order (a fixed permutation), like a large module split and reordered.
fn shuffled_moves(blocks: usize) -> ChangeSet {
    let block = |b: usize| -> Vec<String> {
        let mut lines = vec![format!("def step_{b}(source):")];
        lines.extend((0..6).map(|k| format!("    value_{b}_{k} = compute_{k}(source, {b})")));
        lines.push(format!("    return value_{b}_5"));
        lines
    };
    let removed: Vec<String> = (0..blocks).flat_map(block).collect();
    // 7919 is prime and no size below shares a factor with it: a permutation.
    let added: Vec<String> = (0..blocks).flat_map(|b| block(b * 7919 % blocks)).collect();
    change(vec![
        file("a.py", vec![hunk(1, 0, &marked('-', &removed))]),
        file("b.py", vec![hunk(0, 1, &marked('+', &added))]),
    ])
}

#[test]
fn detection_work_grows_linearly_with_the_moved_lines() {
    let (small, small_work) = detect::work_of(|| Moves::detect(&shuffled_moves(1_000)));
    let (large, large_work) = detect::work_of(|| Moves::detect(&shuffled_moves(4_000)));
    assert_eq!((small.count(), large.count()), (1_000, 4_000));
    // Four times the lines, four times the work (within a tenth): no step
    // costs more per line when there are more lines.
    assert!(
        large_work * 10 <= small_work * 44,
        "{small_work} units for 8,000 lines, {large_work} for 32,000"
    );
    assert!(small_work > 8_000, "{small_work}");
}

/// The body of a `get_u16_le`/`get_u16_be`-style sibling, `indent`ed: the twins
/// differ in one token.
fn sibling_body(endian: &str, indent: &str) -> Vec<String> {
    [
        "let size = core::mem::size_of::<u16>();",
        "let mut buf = [0u8; 2];",
        "let chunk = self.chunk();",
        "if chunk.len() >= size {",
        "    buf.copy_from_slice(&chunk[..size]);",
        "} else {",
        "    self.copy_to_slice(&mut buf);",
        "}",
        "self.advance_by(size);",
        &format!("u16::from_{endian}_bytes(buf)"),
    ]
    .iter()
    .map(|l| format!("{indent}{l}"))
    .collect()
}

/// One file with two sibling functions whose bodies the change wraps in a
/// block: each body is removed and added again, re-indented, at its own place.
/// `extra` lines are added at the end of the second sibling's new body.
fn siblings_wrapped(extra: &[&str]) -> ChangeSet {
    let mut lines = Vec::new();
    for endian in ["le", "be"] {
        lines.push((' ', format!("fn get_u16_{endian}(&mut self) -> u16 {{")));
        lines.extend(marked('-', &sibling_body(endian, "    ")));
        lines.push(('+', "    with_guard(|| {".to_string()));
        lines.extend(marked('+', &sibling_body(endian, "        ")));
        if endian == "be" {
            lines.extend(extra.iter().map(|l| ('+', format!("        {l}"))));
        }
        lines.push(('+', "    })".to_string()));
        lines.push((' ', "}".to_string()));
        lines.push((' ', String::new()));
    }
    change(vec![file("src/buf/buf_impl.rs", vec![hunk(1, 1, &lines)])])
}

#[test]
fn siblings_edited_alike_in_place_are_not_moves_of_each_other() {
    let moves = Moves::detect(&siblings_wrapped(&[]));
    assert_eq!(moves.count(), 0, "{moves:?}");
    // Nor when one sibling gains lines its twin does not.
    let moves = Moves::detect(&siblings_wrapped(&[
        "debug_assert!(size == 2);",
        "let _ = size;",
    ]));
    assert_eq!(moves.count(), 0, "{moves:?}");
}

#[test]
fn a_move_whose_place_gets_other_code_is_still_a_move() {
    let mut removed = vec![(' ', "import os".to_string())];
    removed.extend(marked('-', &helper("", "+")));
    removed.extend(marked(
        '+',
        &[
            "def scale_total(values, factor):".to_string(),
            "    return core.scale_total(values, factor)".to_string(),
        ],
    ));
    removed.push((' ', "def other():".into()));
    let mut added = vec![(' ', "class Core:".to_string())];
    added.extend(marked('+', &helper("", "+")));
    let moves = Moves::detect(&change(vec![
        file("pkg/core.py", vec![hunk(39, 39, &added)]),
        file("pkg/util.py", vec![hunk(19, 19, &removed)]),
    ]));
    assert_eq!(moves.count(), 1, "{moves:?}");
    let m = moves.of_file("pkg/core.py").into[0];
    assert_eq!((m.from, m.to), ((20, 29), (40, 49)));
}
