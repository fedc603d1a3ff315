//! What a planted bug is: its kind ([`MutantKind`]) and the edit that plants it ([`Edit`]).

use std::fmt;

use serde::Serialize;

/// What a mutant changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MutantKind {
    /// `==` and `!=` (and the like) swapped.
    Comparison,
    /// `&&` and `||` (`and`, `or`) swapped.
    Boolean,
    /// A bound moved by one.
    OffByOne,
    /// A `!` or `not` dropped.
    Negation,
    /// An `await` dropped.
    Await,
    /// A call statement deleted.
    DroppedCall,
    /// A call's result no longer assigned.
    IgnoredResult,
    /// Two arguments of a call swapped.
    SwappedArguments,
    /// An early-exit `if` deleted.
    DeletedGuard,
}

impl MutantKind {
    /// The kind's stable name (`comparison`, `off_by_one`, ...).
    pub fn code(self) -> &'static str {
        match self {
            MutantKind::Comparison => "comparison",
            MutantKind::Boolean => "boolean",
            MutantKind::OffByOne => "off_by_one",
            MutantKind::Negation => "negation",
            MutantKind::Await => "await",
            MutantKind::DroppedCall => "dropped_call",
            MutantKind::IgnoredResult => "ignored_result",
            MutantKind::SwappedArguments => "swapped_arguments",
            MutantKind::DeletedGuard => "deleted_guard",
        }
    }
}

impl fmt::Display for MutantKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// One edit of a text: bytes `start..end` become `replacement`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edit {
    /// First byte replaced.
    pub start: usize,
    /// End of the bytes replaced (exclusive).
    pub end: usize,
    /// What kind of bug it plants.
    pub kind: MutantKind,
    /// The new text of the range.
    pub replacement: String,
    /// The first line touched (1-based, in the original text).
    pub line: u32,
    /// Whether whole lines are removed (the bug is where they were).
    pub deletes_lines: bool,
    /// What was changed, for people and judges.
    pub description: String,
}
