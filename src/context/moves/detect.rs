//! Finding moves: anchor lines indexed by text, chained along the blocks they
//! share, then aligned line by line (see the invariants in [`super`]).

use std::collections::{BTreeMap, HashMap};

use crate::review::diff::{ChangeSet, FileChange, LineKind};

use super::align::{Alignment, Op, align, shift_of, spans};
use super::in_place::InPlace;
use super::rename::Renames;
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
/// line edited (`Equal::near` in `align`) at the edge of a move.
pub(crate) const NEAR_PERCENT: usize = 70;

/// Most edit lines (`-` and `+`) a move may print, in percent of its head
/// lines: past that, the move and its edits cost more than the plain lines.
pub(crate) const MAX_EDIT_PERCENT: usize = 50;

/// Most lines between two anchors of one move, on either side: more and it is two moves.
pub(crate) const MAX_GAP: usize = 6;

#[cfg(test)]
thread_local! {
    /// Units of detection work done on this thread (tests only).
    static WORK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `units` of detection work: a line indexed or looked up, an open
/// chain or a candidate's taken spans consulted, a pair of lines compared. The
/// scaling test reads it (`work_of`); other builds count nothing.
#[inline]
pub(super) fn work(units: usize) {
    #[cfg(test)]
    WORK.with(|w| w.set(w.get() + units as u64));
    #[cfg(not(test))]
    let _ = units;
}

/// The detection work `f` does (tests only).
#[cfg(test)]
pub(super) fn work_of<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = WORK.with(std::cell::Cell::get);
    let out = f();
    (out, WORK.with(std::cell::Cell::get) - before)
}

/// A maximal run of consecutive added (or removed) lines of one file.
pub(super) struct Run<'a> {
    /// Index of the file in the change.
    pub file: usize,
    /// Line number of the first line (head for added runs, base for removed).
    pub first: u32,
    /// The lines' text.
    pub texts: Vec<&'a str>,
    /// Removed runs: the head line they sit before; added runs: `first`.
    pub place: u32,
}

impl Run<'_> {
    fn number(&self, offset: usize) -> u32 {
        self.first + offset as u32
    }

    /// One past the last line's number.
    pub(super) fn end(&self) -> u32 {
        self.number(self.texts.len())
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
    renames: Renames,
    shift: i64,
    same: usize,
}

impl Candidate {
    fn of(chain: Chain, added: &[Run<'_>], removed: &[Run<'_>]) -> Option<Self> {
        let (a, r) = (&added[chain.added], &removed[chain.removed]);
        let shift = shift_of(a, r, &chain.anchors);
        let Alignment { ops, renames } = align(a, r, &chain.anchors, shift)?;
        let same = ops.iter().filter(|op| matches!(op, Op::Same(..))).count();
        Some(Candidate {
            chain,
            ops,
            renames,
            shift,
            same,
        })
    }
}

/// The spans of each run already in a move, by first offset. Spans never
/// overlap, so only the one starting last at or before a span's end can
/// overlap it: one lookup per candidate, whatever the number of moves.
#[derive(Default)]
struct Taken {
    spans: HashMap<usize, BTreeMap<usize, usize>>,
}

impl Taken {
    fn is_free(&self, run: usize, span: (usize, usize)) -> bool {
        work(1);
        self.spans.get(&run).is_none_or(|spans| {
            spans
                .range(..=span.1)
                .next_back()
                .is_none_or(|(_, &hi)| hi < span.0)
        })
    }

    fn take(&mut self, run: usize, span: (usize, usize)) {
        self.spans.entry(run).or_default().insert(span.0, span.1);
    }
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
    // Closest first: most equal lines, fewest edits, no renaming before one,
    // least re-indented; ties in change order, so the result never depends on hashing.
    candidates.sort_by(|x, y| {
        y.same
            .cmp(&x.same)
            .then(x.ops.len().cmp(&y.ops.len()))
            .then(x.renames.pairs().len().cmp(&y.renames.pairs().len()))
            .then(x.shift.abs().cmp(&y.shift.abs()))
            .then(x.chain.added.cmp(&y.chain.added))
            .then(x.chain.anchors.cmp(&y.chain.anchors))
            .then(x.chain.removed.cmp(&y.chain.removed))
    });
    let mut taken_added = Taken::default();
    let mut taken_removed = Taken::default();
    let mut in_place = InPlace::new(&added, &removed);
    let mut moves = Vec::new();
    for candidate in candidates {
        let chain = &candidate.chain;
        let (a_span, r_span) = spans(&candidate.ops);
        if !taken_added.is_free(chain.added, a_span)
            || !taken_removed.is_free(chain.removed, r_span)
        {
            continue;
        }
        // Siblings edited alike match each other as well as their own new
        // text: neither is a move ([`InPlace`]).
        let runs = (chain.added, chain.removed);
        if in_place.is_edit_in_place(runs, candidate.same, &added, &removed) {
            continue;
        }
        taken_added.take(chain.added, a_span);
        taken_removed.take(chain.removed, r_span);
        let runs = (&added[chain.added], &removed[chain.removed]);
        moves.push(to_move(changes, runs, candidate, a_span, r_span));
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
pub(super) fn key(text: &str) -> &str {
    text.trim()
}

pub(super) fn distinctive(key: &str) -> bool {
    key.chars().filter(|c| !c.is_whitespace()).count() >= MIN_ANCHOR_CHARS
        && key.chars().any(char::is_alphanumeric)
}

/// Where each distinctive removed text occurs: (removed run, offset).
type Index<'a> = HashMap<&'a str, Vec<(usize, usize)>>;

fn index_removed<'a>(removed: &[Run<'a>]) -> Index<'a> {
    let mut index: Index<'a> = HashMap::new();
    for (r, run) in removed.iter().enumerate() {
        work(run.texts.len());
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
        work(1 + open.len());
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
            work(1 + open.len());
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

fn to_move(
    changes: &ChangeSet,
    (added, removed): (&Run<'_>, &Run<'_>),
    candidate: Candidate,
    a_span: (usize, usize),
    r_span: (usize, usize),
) -> Move {
    let from = &changes.files[removed.file];
    let to = &changes.files[added.file];
    let edits = candidate
        .ops
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
        renames: candidate.renames.pairs().to_vec(),
        edits,
    }
}
