//! Edits in place: the run a removed (or added) run is replaced by at its own
//! place in its file, and how many of its lines that counterpart keeps.
//!
//! Near-identical siblings (`get_u16_le` and `get_u16_be`) edited alike in one
//! change (both re-indented, say) each show as lines removed and added at their
//! own place. Each sibling's removed lines then match the other's added lines
//! about as well as its own, and since a removal and an addition at the same
//! place are never a move, the siblings were paired with each other as moves.
//! A run whose counterpart at its own place keeps at least as many of its lines
//! as a candidate move would is an edit in place, not the end of a move.
//!
//! Cost: runs are indexed by place once; each run's counterpart is found by two
//! lookups and compared once (a multiset of its lines), so the work stays
//! linear in the changed lines.

use std::collections::HashMap;

use super::detect::{Run, key, work};

/// The runs of the change by place, and the kept lines of each run's counterpart.
pub(super) struct InPlace {
    /// Added runs by (file, first head line) and by (file, one past their last).
    added_at: HashMap<(usize, u32), Vec<usize>>,
    /// Removed runs by (file, the head line they sit before).
    removed_at: HashMap<(usize, u32), Vec<usize>>,
    /// Memo: lines of removed run `r` kept by its counterpart.
    removed_kept: HashMap<usize, usize>,
    /// Memo: lines of added run `a` kept from its counterpart.
    added_kept: HashMap<usize, usize>,
}

impl InPlace {
    pub(super) fn new(added: &[Run<'_>], removed: &[Run<'_>]) -> Self {
        let mut added_at: HashMap<(usize, u32), Vec<usize>> = HashMap::new();
        for (a, run) in added.iter().enumerate() {
            work(1);
            added_at.entry((run.file, run.first)).or_default().push(a);
            added_at.entry((run.file, run.end())).or_default().push(a);
        }
        let mut removed_at: HashMap<(usize, u32), Vec<usize>> = HashMap::new();
        for (r, run) in removed.iter().enumerate() {
            work(1);
            removed_at.entry((run.file, run.place)).or_default().push(r);
        }
        InPlace {
            added_at,
            removed_at,
            removed_kept: HashMap::new(),
            added_kept: HashMap::new(),
        }
    }

    /// Whether removed run `r` or added run `a` is rather an edit in place:
    /// its counterpart at its own place keeps at least `same` of its lines.
    pub(super) fn is_edit_in_place(
        &mut self,
        (a, r): (usize, usize),
        same: usize,
        added: &[Run<'_>],
        removed: &[Run<'_>],
    ) -> bool {
        let Self {
            added_at,
            removed_at,
            removed_kept,
            added_kept,
        } = self;
        let removed_run = &removed[r];
        let kept_of_removed = *removed_kept.entry(r).or_insert_with(|| {
            let at = (removed_run.file, removed_run.place);
            best_kept(removed_run, added_at.get(&at), added)
        });
        if kept_of_removed >= same {
            return true;
        }
        let added_run = &added[a];
        let kept_of_added = *added_kept.entry(a).or_insert_with(|| {
            let starts = removed_at.get(&(added_run.file, added_run.first));
            let ends = removed_at.get(&(added_run.file, added_run.end()));
            best_kept(added_run, starts, removed).max(best_kept(added_run, ends, removed))
        });
        kept_of_added >= same
    }
}

/// The most non-blank lines of `run` that one of `others` (runs of the other
/// side at its place) holds too, each line counted once.
fn best_kept(run: &Run<'_>, others: Option<&Vec<usize>>, side: &[Run<'_>]) -> usize {
    others
        .into_iter()
        .flatten()
        .map(|&other| kept(run, &side[other]))
        .max()
        .unwrap_or(0)
}

/// Non-blank lines of `run` also in `other` (as a multiset, whitespace at the ends ignored).
fn kept(run: &Run<'_>, other: &Run<'_>) -> usize {
    work(run.texts.len() + other.texts.len());
    let mut available: HashMap<&str, usize> = HashMap::new();
    for text in &other.texts {
        *available.entry(key(text)).or_default() += 1;
    }
    run.texts
        .iter()
        .map(|text| key(text))
        .filter(|key| !key.is_empty())
        .filter(|key| match available.get_mut(key) {
            Some(count) if *count > 0 => {
                *count -= 1;
                true
            }
            _ => false,
        })
        .count()
}
