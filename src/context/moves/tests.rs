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
