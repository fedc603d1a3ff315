//! Builds `FileChange`s from two texts for the tests: an LCS line diff with
//! three lines of context, numbered on both sides as git numbers them.

use redline::review::diff::{DiffLine, FileChange, FileStatus, Hunk, LineKind};

const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Same(usize, usize),
    Removed(usize),
    Added(usize),
}

/// The change from `old` to `new` at `path` (added when `old` is empty, deleted when `new` is).
pub fn file_change(path: &str, old: &str, new: &str) -> FileChange {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let status = match (a.is_empty(), b.is_empty()) {
        (true, false) => FileStatus::Added,
        (false, true) => FileStatus::Deleted,
        _ => FileStatus::Modified,
    };
    FileChange {
        path: path.into(),
        old_path: None,
        status,
        binary: false,
        hunks: hunks(&a, &b, &diff_ops(&a, &b)),
    }
}

fn diff_ops(a: &[&str], b: &[&str]) -> Vec<Op> {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut ops) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push(Op::Same(i, j));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(Op::Removed(i));
            i += 1;
        } else {
            ops.push(Op::Added(j));
            j += 1;
        }
    }
    ops
}

fn hunks(a: &[&str], b: &[&str], ops: &[Op]) -> Vec<Hunk> {
    let changed: Vec<usize> = (0..ops.len())
        .filter(|&k| !matches!(ops[k], Op::Same(..)))
        .collect();
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for &k in &changed {
        match groups.last_mut() {
            Some((_, end)) if k - *end <= 2 * CONTEXT + 1 => *end = k,
            _ => groups.push((k, k)),
        }
    }
    groups
        .into_iter()
        .map(|(first, last)| {
            let from = first.saturating_sub(CONTEXT);
            let to = (last + CONTEXT).min(ops.len() - 1);
            hunk(a, b, ops, from, to)
        })
        .collect()
}

fn hunk(a: &[&str], b: &[&str], ops: &[Op], from: usize, to: usize) -> Hunk {
    // Lines of each side before the hunk.
    let old_before = ops[..from]
        .iter()
        .filter(|op| !matches!(op, Op::Added(_)))
        .count() as u32;
    let new_before = ops[..from]
        .iter()
        .filter(|op| !matches!(op, Op::Removed(_)))
        .count() as u32;
    let lines: Vec<DiffLine> = ops[from..=to]
        .iter()
        .map(|op| match *op {
            Op::Same(i, j) => DiffLine {
                kind: LineKind::Context,
                old_line: Some(i as u32 + 1),
                new_line: Some(j as u32 + 1),
                text: b[j].into(),
            },
            Op::Removed(i) => DiffLine {
                kind: LineKind::Removed,
                old_line: Some(i as u32 + 1),
                new_line: None,
                text: a[i].into(),
            },
            Op::Added(j) => DiffLine {
                kind: LineKind::Added,
                old_line: None,
                new_line: Some(j as u32 + 1),
                text: b[j].into(),
            },
        })
        .collect();
    let old_lines = lines.iter().filter(|l| l.kind != LineKind::Added).count() as u32;
    let new_lines = lines.iter().filter(|l| l.kind != LineKind::Removed).count() as u32;
    Hunk {
        old_start: if old_lines == 0 {
            old_before
        } else {
            old_before + 1
        },
        old_lines,
        new_start: if new_lines == 0 {
            new_before
        } else {
            new_before + 1
        },
        new_lines,
        header: String::new(),
        lines,
    }
}

/// `n` numbered lines, `line 1` to `line n`.
pub fn numbered_lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn the_helper_numbers_hunks_like_git() {
    let old = numbered_lines(20);
    let new = old.replace("line 3\n", "three\n") + "line 21\n";
    let change = file_change("x", &old, &new);
    let ranges: Vec<(u32, u32, u32, u32)> = change
        .hunks
        .iter()
        .map(|h| (h.old_start, h.old_lines, h.new_start, h.new_lines))
        .collect();
    assert_eq!(ranges, vec![(1, 6, 1, 6), (18, 3, 18, 4)]);
    assert_eq!(change.additions(), 2);
    assert_eq!(change.deletions(), 1);
    let close = file_change(
        "x",
        &old,
        &old.replace("line 3\n", "three\n")
            .replace("line 9\n", "nine\n"),
    );
    assert_eq!(close.hunks.len(), 1, "changes 6 lines apart share a hunk");
}
