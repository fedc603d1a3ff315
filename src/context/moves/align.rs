//! Aligning a chain of anchors into a move: the lines between anchors by a
//! longest common subsequence, the block grown over equal lines at its ends,
//! and the thresholds a move must meet (see the invariants in [`super`]).

use std::collections::BTreeMap;

use super::detect::{
    MAX_EDIT_PERCENT, MIN_ANCHORS, MIN_SAME_LINES, MIN_SIMILARITY_PERCENT, NEAR_PERCENT, Run,
    distinctive, key, work,
};
use super::rename::{MAX_RENAMES, Renames, defines_renamed, renames_only};

/// One step of an alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Same(usize, usize),
    Removed(usize),
    Added(usize),
}

fn indentation(text: &str) -> i64 {
    (text.len() - text.trim_start().len()) as i64
}

/// Line equality within one move: same text once trimmed, and (when not blank)
/// indented by the move's own shift, so a line moved out of a block is an edit.
/// Under a renaming ([`Renames`]), a line equal once it is applied counts as equal.
struct Equal<'r, 'a> {
    added: &'r Run<'a>,
    removed: &'r Run<'a>,
    shift: i64,
    renames: &'r Renames,
}

impl Equal<'_, '_> {
    /// The same line with a small edit: most of its characters kept at its
    /// start and end (a token or two changed).
    fn near(&self, i: usize, j: usize) -> bool {
        work(1);
        let (a, r) = (key(self.added.texts[i]), key(self.removed.texts[j]));
        let longer = a.len().max(r.len());
        if !distinctive(a) || !distinctive(r) {
            return false;
        }
        let prefix = a.bytes().zip(r.bytes()).take_while(|(x, y)| x == y).count();
        let room = a.len().min(r.len()) - prefix;
        let suffix = a
            .bytes()
            .rev()
            .zip(r.bytes().rev())
            .take(room)
            .take_while(|(x, y)| x == y)
            .count();
        (prefix + suffix) * 100 >= longer * NEAR_PERCENT
    }

    fn at(&self, i: usize, j: usize) -> bool {
        work(1);
        let (a, r) = (self.added.texts[i], self.removed.texts[j]);
        let same_text = match self.renames.is_empty() {
            true => key(a) == key(r),
            false => self.renames.equal(key(r), key(a)),
        };
        same_text && (key(a).is_empty() || indentation(a) - indentation(r) == self.shift)
    }
}

/// The most common indentation shift of the anchors (the smallest on a tie).
pub(super) fn shift_of(added: &Run<'_>, removed: &Run<'_>, anchors: &[(usize, usize)]) -> i64 {
    let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
    for &(i, j) in anchors {
        *counts
            .entry(indentation(added.texts[i]) - indentation(removed.texts[j]))
            .or_default() += 1;
    }
    counts
        .into_iter()
        .max_by(|(sa, ca), (sb, cb)| ca.cmp(cb).then(sb.abs().cmp(&sa.abs())))
        .map(|(shift, _)| shift)
        .unwrap_or(0)
}

/// A chain aligned into a move: its steps, and the renaming its equal lines assume.
pub(super) struct Alignment {
    pub ops: Vec<Op>,
    pub renames: Renames,
}

/// The alignment of the block the anchors span, extended over equal lines at
/// both ends, under the renaming its paired lines agree on (if any); `None`
/// when it is not similar enough to be a move.
pub(super) fn align(
    added: &Run<'_>,
    removed: &Run<'_>,
    anchors: &[(usize, usize)],
    shift: i64,
) -> Option<Alignment> {
    let none = Renames::none();
    let plain = Equal {
        added,
        removed,
        shift,
        renames: &none,
    };
    let plain_ops = aligned(&plain, anchors)?;
    let mut ops = plain_ops.clone();
    let mut renames = Renames::none();
    // Each renaming found can bring the next line into the block (a renamed
    // call above the renamed `def`), so it is looked for again until it stays
    // the same: it only grows, by one name at least, so in a few rounds, each
    // linear in the block. Evidence that stops agreeing means no renaming.
    for _ in 0..=MAX_RENAMES {
        let found = renaming(&plain, &ops);
        if found == renames {
            break;
        }
        let realigned = Equal {
            renames: &found,
            ..plain
        };
        match aligned(&realigned, anchors) {
            Some(realigned) if found.extends(&renames) => (ops, renames) = (realigned, found),
            _ => {
                (ops, renames) = (plain_ops, Renames::none());
                break;
            }
        }
    }
    if !renames.is_empty() && !renames_whole_block(&renames, &ops, added, removed) {
        (ops, renames) = (aligned(&plain, anchors)?, Renames::none());
    }
    similar_enough(&ops, added).then_some(Alignment { ops, renames })
}

/// Whether the renaming is a bijection over the whole block and used: no
/// line of the block's original holds a new name, no head line an old one,
/// and some line is equal only under it.
fn renames_whole_block(renames: &Renames, ops: &[Op], added: &Run<'_>, removed: &Run<'_>) -> bool {
    let (a_span, r_span) = spans(ops);
    let used = ops
        .iter()
        .any(|op| matches!(*op, Op::Same(i, j) if key(added.texts[i]) != key(removed.texts[j])));
    used && renames.clean(
        &removed.texts[r_span.0..=r_span.1],
        &added.texts[a_span.0..=a_span.1],
    )
}

/// The anchors' block, from its first to its last equal line, extended.
fn aligned(equal: &Equal<'_, '_>, anchors: &[(usize, usize)]) -> Option<Vec<Op>> {
    let mut ops = Vec::new();
    for (k, &(ai, aj)) in anchors.iter().enumerate() {
        if k > 0 {
            let (pi, pj) = anchors[k - 1];
            ops.extend(gap_ops(equal, pi + 1..ai, pj + 1..aj));
        }
        if equal.at(ai, aj) {
            ops.push(Op::Same(ai, aj));
        } else {
            ops.extend([Op::Removed(aj), Op::Added(ai)]);
        }
    }
    // The anchors' block starts and ends with lines equal to the original...
    let start = ops.iter().position(|op| matches!(op, Op::Same(..)))?;
    let end = ops.iter().rposition(|op| matches!(op, Op::Same(..)))?;
    Some(extend(equal, &ops[start..=end]))
}

/// The renaming the lines an alignment pairs one to one agree on: lines
/// equal only under an earlier renaming, and each run of edits between equal
/// lines with as many `-` as `+` lines (paired in order); and above the block,
/// a few lines that differ only in names when they reach up to the renamed
/// definition heading it (a renamed `def` and the renamed call under it).
/// Nothing past the block's end: the lines after a block are often the next
/// definition, which a renaming must not pull in. Lines equal as they are
/// must keep its names.
fn renaming(equal: &Equal<'_, '_>, ops: &[Op]) -> Renames {
    let (added, removed) = (equal.added, equal.removed);
    let text = |i: usize, j: usize| (key(removed.texts[j]), key(added.texts[i]));
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let mut kept: Vec<&str> = Vec::new();
    let mut gone: Vec<usize> = Vec::new();
    let mut new: Vec<usize> = Vec::new();
    let mut first_same: Option<(usize, usize)> = None;
    for op in ops {
        match *op {
            Op::Removed(j) => gone.push(j),
            Op::Added(i) => new.push(i),
            Op::Same(i, j) => {
                if first_same.is_some() && gone.len() == new.len() {
                    pairs.extend(new.iter().copied().zip(gone.iter().copied()));
                }
                first_same.get_or_insert((i, j));
                gone.clear();
                new.clear();
                match text(i, j) {
                    (r, a) if r == a => kept.push(r),
                    _ => pairs.push((i, j)),
                }
            }
        }
    }
    if let Some((i, j)) = first_same {
        pairs.extend(heading_definition(equal, i, j));
    }
    Renames::derive(pairs.into_iter().map(|(i, j)| text(i, j)), kept)
}

/// The lines just above `(i, j)` up to a definition renamed in place, when
/// every one of them differs from its original only in names (at most
/// [`MAX_RENAMES`] + 1 lines); none otherwise.
fn heading_definition(equal: &Equal<'_, '_>, i: usize, j: usize) -> Vec<(usize, usize)> {
    let mut lines = Vec::new();
    for up in 1..=(MAX_RENAMES + 1).min(i).min(j) {
        let (i, j) = (i - up, j - up);
        let (r, a) = (key(equal.removed.texts[j]), key(equal.added.texts[i]));
        if !renames_only(r, a) {
            break;
        }
        lines.push((i, j));
        if defines_renamed(r, a) {
            return lines;
        }
    }
    Vec::new()
}

/// The thresholds of a move (see the invariants in [`super`]).
fn similar_enough(ops: &[Op], added: &Run<'_>) -> bool {
    let same = ops.iter().filter(|op| matches!(op, Op::Same(..))).count();
    let (a_span, r_span) = spans(ops);
    let longer = (a_span.1 - a_span.0 + 1).max(r_span.1 - r_span.0 + 1);
    let distinct = ops
        .iter()
        .filter(|op| matches!(op, Op::Same(i, _) if distinctive(key(added.texts[*i]))))
        .count();
    let edits = ops.len() - same;
    same >= MIN_SAME_LINES
        && distinct >= MIN_ANCHORS
        && same * 100 >= longer * MIN_SIMILARITY_PERCENT
        && edits * 100 <= (a_span.1 - a_span.0 + 1) * MAX_EDIT_PERCENT
}

/// `ops` (starting and ending with equal lines) extended at both ends over
/// equal lines, and over a single line edited in place (a renamed `def`, a
/// changed `return`) when the next one is equal again or the block ends.
fn extend(equal: &Equal<'_, '_>, ops: &[Op]) -> Vec<Op> {
    let (Some(&Op::Same(fi, fj)), Some(&Op::Same(li, lj))) = (ops.first(), ops.last()) else {
        return ops.to_vec();
    };
    let step = |i: usize, j: usize, back: bool| -> Option<(usize, usize)> {
        match back {
            true => Some((i.checked_sub(1)?, j.checked_sub(1)?)),
            false => (i + 1 < equal.added.texts.len() && j + 1 < equal.removed.texts.len())
                .then_some((i + 1, j + 1)),
        }
    };
    let mut grown: [Vec<Op>; 2] = [Vec::new(), Vec::new()];
    for (side, back, from) in [(0, true, (fi, fj)), (1, false, (li, lj))] {
        let mut at = from;
        let mut pending: Option<(usize, usize)> = None;
        while let Some((i, j)) = step(at.0, at.1, back) {
            if equal.at(i, j) {
                if let Some((pi, pj)) = pending.take() {
                    grown[side].extend([Op::Removed(pj), Op::Added(pi)]);
                }
                grown[side].push(Op::Same(i, j));
            } else if pending.is_none() && equal.near(i, j) {
                pending = Some((i, j));
            } else {
                break;
            }
            at = (i, j);
        }
        // A near line at the very end of the runs belongs to the block too.
        if let Some((pi, pj)) = pending
            && step(pi, pj, back).is_none()
        {
            grown[side].extend([Op::Removed(pj), Op::Added(pi)]);
        }
    }
    let [before, after] = grown;
    let mut out: Vec<Op> = before.into_iter().rev().collect();
    // Walking back, an edit pair was pushed as (Removed, Added): restore the order.
    for k in 1..out.len() {
        if let (Op::Added(_), Op::Removed(_)) = (out[k - 1], out[k]) {
            out.swap(k - 1, k);
        }
    }
    out.extend_from_slice(ops);
    out.extend(after);
    out
}

/// The alignment of the lines between two anchors: a longest common
/// subsequence (the gaps are at most [`MAX_GAP`](super::detect::MAX_GAP) lines on each side).
fn gap_ops(
    equal: &Equal<'_, '_>,
    added: std::ops::Range<usize>,
    removed: std::ops::Range<usize>,
) -> Vec<Op> {
    let (n, m) = (added.len(), removed.len());
    // lcs[x][y]: longest common subsequence of added[x..] and removed[y..].
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for x in (0..n).rev() {
        for y in (0..m).rev() {
            lcs[x][y] = if equal.at(added.start + x, removed.start + y) {
                lcs[x + 1][y + 1] + 1
            } else {
                lcs[x + 1][y].max(lcs[x][y + 1])
            };
        }
    }
    let (mut x, mut y) = (0, 0);
    let mut ops = Vec::with_capacity(n + m);
    while x < n || y < m {
        let (i, j) = (added.start + x, removed.start + y);
        if x < n && y < m && equal.at(i, j) {
            ops.push(Op::Same(i, j));
            x += 1;
            y += 1;
        } else if y < m && (x == n || lcs[x][y + 1] >= lcs[x + 1][y]) {
            ops.push(Op::Removed(j));
            y += 1;
        } else {
            ops.push(Op::Added(i));
            x += 1;
        }
    }
    ops
}

/// First and last offsets of the added and the removed side an alignment covers.
pub(super) fn spans(ops: &[Op]) -> ((usize, usize), (usize, usize)) {
    let mut a = (usize::MAX, 0);
    let mut r = (usize::MAX, 0);
    for op in ops {
        if let Op::Same(i, _) | Op::Added(i) = *op {
            a = (a.0.min(i), a.1.max(i));
        }
        if let Op::Same(_, j) | Op::Removed(j) = *op {
            r = (r.0.min(j), r.1.max(j));
        }
    }
    (a, r)
}
