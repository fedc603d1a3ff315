//! Finding moves: anchor lines indexed by text, chained along the blocks they
//! share, then aligned line by line (see the invariants in [`super`]).

use std::collections::{BTreeMap, HashMap};

use crate::review::diff::{ChangeSet, FileChange, LineKind};

use super::{Edit, Move};

/// A text removed in more places than this is too common to anchor a move.
pub(crate) const MAX_POSTINGS: usize = 8;

/// Fewest lines of a move equal to the original.
pub(crate) const MIN_SAME_LINES: usize = 4;

/// Fewest distinctive lines ([`MIN_ANCHOR_CHARS`]) a move is found by.
pub(crate) const MIN_ANCHORS: usize = 3;

/// Non-blank characters a line needs to anchor a move: `}`, `else:`, `pass`
/// and their like are everywhere.
pub(crate) const MIN_ANCHOR_CHARS: usize = 6;

/// Share of a move's lines (of the longer side) equal to the original.
pub(crate) const MIN_SIMILARITY_PERCENT: usize = 60;

/// Share of a line's characters kept at its ends for it to count as the same
/// line edited ([`Equal::near`]) at the edge of a move.
pub(crate) const NEAR_PERCENT: usize = 70;

/// Most edit lines (`-` and `+`) a move may print, in percent of its head
/// lines: past that, the move and its edits cost more than the plain lines.
pub(crate) const MAX_EDIT_PERCENT: usize = 50;

/// Most lines between two anchors of one move, on either side: more and it is two moves.
pub(crate) const MAX_GAP: usize = 6;

/// A maximal run of consecutive added (or removed) lines of one file.
struct Run<'a> {
    /// Index of the file in the change.
    file: usize,
    /// Line number of the first line (head for added runs, base for removed).
    first: u32,
    /// The lines' text.
    texts: Vec<&'a str>,
    /// Removed runs: the head line they sit before; added runs: `first`.
    place: u32,
}

impl Run<'_> {
    fn number(&self, offset: usize) -> u32 {
        self.first + offset as u32
    }
}

/// Anchors shared by one added run and one removed run, in order: (added offset, removed offset).
struct Chain {
    added: usize,
    removed: usize,
    anchors: Vec<(usize, usize)>,
}

/// A chain aligned into a possible move.
struct Candidate {
    chain: Chain,
    ops: Vec<Op>,
    shift: i64,
    same: usize,
}

impl Candidate {
    fn of(chain: Chain, added: &[Run<'_>], removed: &[Run<'_>]) -> Option<Self> {
        let (a, r) = (&added[chain.added], &removed[chain.removed]);
        let shift = shift_of(a, r, &chain.anchors);
        let ops = align(a, r, &chain.anchors, shift)?;
        let same = ops.iter().filter(|op| matches!(op, Op::Same(..))).count();
        Some(Candidate {
            chain,
            ops,
            shift,
            same,
        })
    }
}

/// One step of an alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Same(usize, usize),
    Removed(usize),
    Added(usize),
}

/// Every move of `changes`, by destination file and line.
pub(super) fn detect(changes: &ChangeSet) -> Vec<Move> {
    let (added, removed) = collect_runs(changes);
    if added.is_empty() || removed.is_empty() {
        return Vec::new();
    }
    let index = index_removed(&removed);
    let mut candidates: Vec<Candidate> = added
        .iter()
        .enumerate()
        .flat_map(|(a, run)| chains_of(a, run, &removed, &index))
        .filter_map(|chain| Candidate::of(chain, &added, &removed))
        .collect();
    // Closest first: most equal lines, fewest edits, least re-indented; ties in
    // change order, so the result never depends on hashing.
    candidates.sort_by(|x, y| {
        y.same
            .cmp(&x.same)
            .then(x.ops.len().cmp(&y.ops.len()))
            .then(x.shift.abs().cmp(&y.shift.abs()))
            .then(x.chain.added.cmp(&y.chain.added))
            .then(x.chain.anchors.cmp(&y.chain.anchors))
            .then(x.chain.removed.cmp(&y.chain.removed))
    });
    let mut taken_added: HashMap<usize, Vec<(usize, usize)>> = HashMap::new();
    let mut taken_removed: HashMap<usize, Vec<(usize, usize)>> = HashMap::new();
    let mut moves = Vec::new();
    for Candidate { chain, ops, .. } in candidates {
        let (a, r) = (&added[chain.added], &removed[chain.removed]);
        let (a_span, r_span) = spans(&ops);
        let free = |taken: &HashMap<usize, Vec<(usize, usize)>>, run, span: (usize, usize)| {
            taken
                .get(&run)
                .is_none_or(|t| t.iter().all(|&(lo, hi)| span.1 < lo || hi < span.0))
        };
        if !free(&taken_added, chain.added, a_span) || !free(&taken_removed, chain.removed, r_span)
        {
            continue;
        }
        taken_added.entry(chain.added).or_default().push(a_span);
        taken_removed.entry(chain.removed).or_default().push(r_span);
        moves.push(to_move(changes, a, r, &ops, a_span, r_span));
    }
    moves.sort_by(|x, y| x.to_file.cmp(&y.to_file).then(x.to.cmp(&y.to)));
    moves
}

/// The added and the removed runs of every text file, in change order.
fn collect_runs(changes: &ChangeSet) -> (Vec<Run<'_>>, Vec<Run<'_>>) {
    let mut added = Vec::new();
    let mut removed = Vec::new();
    for (index, file) in changes.files.iter().enumerate() {
        if !file.binary {
            runs_of(index, file, &mut added, &mut removed);
        }
    }
    (added, removed)
}

fn runs_of<'a>(
    index: usize,
    file: &'a FileChange,
    added: &mut Vec<Run<'a>>,
    removed: &mut Vec<Run<'a>>,
) {
    for hunk in &file.hunks {
        let mut next_head = hunk.new_start.max(1);
        let mut open_added: Option<Run<'a>> = None;
        let mut open_removed: Option<Run<'a>> = None;
        for line in &hunk.lines {
            match (line.kind, line.new_line, line.old_line) {
                (LineKind::Added, Some(n), _) => {
                    match open_added.as_mut() {
                        Some(run) if run.number(run.texts.len()) == n => run.texts.push(&line.text),
                        _ => added.extend(open_added.replace(Run {
                            file: index,
                            first: n,
                            texts: vec![&line.text],
                            place: n,
                        })),
                    }
                    next_head = n + 1;
                }
                (LineKind::Removed, _, Some(n)) => match open_removed.as_mut() {
                    Some(run) if run.number(run.texts.len()) == n => run.texts.push(&line.text),
                    _ => removed.extend(open_removed.replace(Run {
                        file: index,
                        first: n,
                        texts: vec![&line.text],
                        place: next_head,
                    })),
                },
                _ => {
                    added.extend(open_added.take());
                    removed.extend(open_removed.take());
                    if let Some(n) = line.new_line {
                        next_head = n + 1;
                    }
                }
            }
        }
        added.extend(open_added);
        removed.extend(open_removed);
    }
}

/// A line's text for comparison: without the whitespace at its ends.
fn key(text: &str) -> &str {
    text.trim()
}

fn distinctive(key: &str) -> bool {
    key.chars().filter(|c| !c.is_whitespace()).count() >= MIN_ANCHOR_CHARS
        && key.chars().any(char::is_alphanumeric)
}

/// Where each distinctive removed text occurs: (removed run, offset).
type Index<'a> = HashMap<&'a str, Vec<(usize, usize)>>;

fn index_removed<'a>(removed: &[Run<'a>]) -> Index<'a> {
    let mut index: Index<'a> = HashMap::new();
    for (r, run) in removed.iter().enumerate() {
        for (j, text) in run.texts.iter().enumerate() {
            let key = key(text);
            if distinctive(key) {
                let postings = index.entry(key).or_default();
                // One past the cap is enough to know the text is too common.
                if postings.len() <= MAX_POSTINGS {
                    postings.push((r, j));
                }
            }
        }
    }
    index
}

/// A removal and an addition at the same place of one file: an edit in place.
fn same_place(added: &Run<'_>, removed: &Run<'_>) -> bool {
    added.file == removed.file
        && removed.place >= added.first
        && removed.place <= added.first + added.texts.len() as u32
}

/// The chains of anchors one added run shares with removed runs, each with at least [`MIN_ANCHORS`].
fn chains_of(a: usize, run: &Run<'_>, removed: &[Run<'_>], index: &Index<'_>) -> Vec<Chain> {
    let mut open: Vec<Chain> = Vec::new();
    let mut done: Vec<Chain> = Vec::new();
    for (i, text) in run.texts.iter().enumerate() {
        let Some(postings) = index.get(key(text)) else {
            continue;
        };
        if postings.len() > MAX_POSTINGS {
            continue;
        }
        let (stale, live): (Vec<Chain>, Vec<Chain>) = open.into_iter().partition(|c| {
            c.anchors
                .last()
                .is_some_and(|&(li, _)| i - li > MAX_GAP + 1)
        });
        done.extend(stale.into_iter().filter(|c| c.anchors.len() >= MIN_ANCHORS));
        open = live;
        for &(r, j) in postings {
            if same_place(run, &removed[r]) {
                continue;
            }
            let extendable = open
                .iter_mut()
                .filter(|c| c.removed == r)
                .filter(|c| {
                    c.anchors
                        .last()
                        .is_some_and(|&(li, lj)| li < i && lj < j && j - lj <= MAX_GAP + 1)
                })
                .min_by_key(|c| {
                    let (li, lj) = c.anchors.last().copied().unwrap_or_default();
                    (j - lj).abs_diff(i - li)
                });
            match extendable {
                Some(chain) => chain.anchors.push((i, j)),
                None => open.push(Chain {
                    added: a,
                    removed: r,
                    anchors: vec![(i, j)],
                }),
            }
        }
    }
    done.extend(open.into_iter().filter(|c| c.anchors.len() >= MIN_ANCHORS));
    done
}

fn indentation(text: &str) -> i64 {
    (text.len() - text.trim_start().len()) as i64
}

/// Line equality within one move: same text once trimmed, and (when not blank)
/// indented by the move's own shift, so a line moved out of a block is an edit.
struct Equal<'r, 'a> {
    added: &'r Run<'a>,
    removed: &'r Run<'a>,
    shift: i64,
}

impl Equal<'_, '_> {
    /// The same line with a small edit: most of its characters kept at its
    /// start and end (a token or two changed).
    fn near(&self, i: usize, j: usize) -> bool {
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
        let (a, r) = (self.added.texts[i], self.removed.texts[j]);
        key(a) == key(r) && (key(a).is_empty() || indentation(a) - indentation(r) == self.shift)
    }
}

/// The most common indentation shift of the anchors (the smallest on a tie).
fn shift_of(added: &Run<'_>, removed: &Run<'_>, anchors: &[(usize, usize)]) -> i64 {
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

/// The alignment of the block the anchors span, extended over equal lines at
/// both ends; `None` when it is not similar enough to be a move.
fn align(
    added: &Run<'_>,
    removed: &Run<'_>,
    anchors: &[(usize, usize)],
    shift: i64,
) -> Option<Vec<Op>> {
    let equal = Equal {
        added,
        removed,
        shift,
    };
    let mut ops = Vec::new();
    for (k, &(ai, aj)) in anchors.iter().enumerate() {
        if k > 0 {
            let (pi, pj) = anchors[k - 1];
            ops.extend(gap_ops(&equal, pi + 1..ai, pj + 1..aj));
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
    let ops = extend(&equal, &ops[start..=end]);
    let same = ops.iter().filter(|op| matches!(op, Op::Same(..))).count();
    let (a_span, r_span) = spans(&ops);
    let longer = (a_span.1 - a_span.0 + 1).max(r_span.1 - r_span.0 + 1);
    let distinct = ops
        .iter()
        .filter(|op| matches!(op, Op::Same(i, _) if distinctive(key(added.texts[*i]))))
        .count();
    let edits = ops.len() - same;
    (same >= MIN_SAME_LINES
        && distinct >= MIN_ANCHORS
        && same * 100 >= longer * MIN_SIMILARITY_PERCENT
        && edits * 100 <= (a_span.1 - a_span.0 + 1) * MAX_EDIT_PERCENT)
        .then_some(ops)
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
/// subsequence (the gaps are at most [`MAX_GAP`] lines on each side).
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
fn spans(ops: &[Op]) -> ((usize, usize), (usize, usize)) {
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

fn to_move(
    changes: &ChangeSet,
    added: &Run<'_>,
    removed: &Run<'_>,
    ops: &[Op],
    a_span: (usize, usize),
    r_span: (usize, usize),
) -> Move {
    let from = &changes.files[removed.file];
    let to = &changes.files[added.file];
    let edits = ops
        .iter()
        .filter_map(|op| match *op {
            Op::Same(..) => None,
            Op::Removed(j) => Some(Edit::Removed {
                line: removed.number(j),
                text: removed.texts[j].to_string(),
            }),
            Op::Added(i) => Some(Edit::Added {
                line: added.number(i),
                text: added.texts[i].to_string(),
            }),
        })
        .collect();
    Move {
        from_file: from.path.clone(),
        from_path: from.old_path.clone().unwrap_or_else(|| from.path.clone()),
        from: (removed.number(r_span.0), removed.number(r_span.1)),
        to_file: to.path.clone(),
        to: (added.number(a_span.0), added.number(a_span.1)),
        edits,
    }
}
