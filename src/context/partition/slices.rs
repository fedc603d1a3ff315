//! Filling plan-and-execute slices with units (whole file sections or parts).
//!
//! Invariants: a slice never holds more than the budget (a unit larger than
//! the budget is the caller's to cut first); with [`Packing::Shared`] no new
//! slice is opened while an open one has room for the unit (first fit), so no
//! two slices could have been one; with [`Packing::PerGroup`] units go only into
//! the last slice, as the plan's groups are kept apart by the caller.

use super::{Packing, Slice, Unit};

/// The slices being filled.
pub(super) struct Slices {
    budget: usize,
    packing: Packing,
    all: Vec<Slice>,
    /// Slices before this index take no more units.
    open_from: usize,
}

impl Slices {
    /// No slices yet.
    pub fn new(budget: usize, packing: Packing) -> Self {
        Slices {
            budget,
            packing,
            all: Vec::new(),
            open_from: 0,
        }
    }

    /// The slices, in the order they were opened.
    pub(crate) fn into_slices(self) -> Vec<Slice> {
        self.all
    }

    /// Closes every slice: later units start new ones.
    pub(crate) fn close_all(&mut self) {
        self.open_from = self.all.len();
    }

    /// The most room left in an open slice (0 when none is open).
    pub(crate) fn most_room(&self) -> usize {
        self.all[self.open_from..]
            .iter()
            .map(|s| self.budget.saturating_sub(s.tokens))
            .max()
            .unwrap_or(0)
    }

    /// Adds a unit of `group`. Shared packing puts it into the first open slice
    /// with room for it (first fit: every slice is filled before a new task pays
    /// the fixed part of a first message again); per-group packing only into the
    /// last slice, closing it when the unit does not fit.
    pub fn place(&mut self, group: usize, unit: Unit) {
        let fits = |s: &Slice| s.tokens + unit.tokens <= self.budget;
        let target = match self.packing {
            Packing::Shared => self.all[self.open_from..].iter().position(fits),
            Packing::PerGroup => self.all[self.open_from..]
                .last()
                .filter(|s| fits(s))
                .map(|_| self.all.len() - 1 - self.open_from),
        };
        let index = match target {
            Some(i) => self.open_from + i,
            None => {
                if self.packing == Packing::PerGroup {
                    self.close_all();
                }
                self.all.push(Slice {
                    groups: Vec::new(),
                    files: Vec::new(),
                    text: String::new(),
                    tokens: 0,
                    lines: Vec::new(),
                });
                self.all.len() - 1
            }
        };
        let slice = &mut self.all[index];
        if !slice.groups.contains(&group) {
            slice.groups.push(group);
        }
        slice.files.push(unit.label);
        slice.text.push_str(&unit.text);
        slice.tokens += unit.tokens;
        slice.lines.push((unit.path, unit.added));
    }
}
