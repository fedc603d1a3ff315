//! `redline eval`: measures review quality on real bugs. Behaviour fixes of a
//! repository's history are found ([`mine`], with [`crate::review::file_kind`] and [`crate::syntax`]
//! telling behaviour from formatting, comments and non-source files), their source
//! files are put back as before the fix ([`revert`]), each such change is reviewed as
//! one that re-introduces the bug ([`run`]), and findings are scored per bug against
//! the lines put back ([`score`]); ordinary commits serve as clean cases that measure
//! false findings. A third source plants one realistic bug at a time in a real change
//! ([`mutate`], with the tree-sitter rules of [`mutants`]). A judge model may say
//! whether a finding near a bug describes it ([`judge`]) and grade every finding that
//! matches no expected bug after reading the repository ([`grade`]); what verification
//! dropped and merged, its tokens, and the graded noise are [`noise`]. [`report`] renders the
//! figures (text, Markdown, JSON, or self-contained HTML charts, [`html`]) and compares
//! them with a baseline.
//!
//! Invariants: mining never changes the user's branches, `HEAD`, index or work tree
//! (revert and mutant commits live under [`mine::REF_NAMESPACE`] only); nothing of a fix's message
//! and no expected range's description reaches the reviewer; scoring and rendering are
//! pure functions of the cases and the review results; a case whose review fails is
//! reported as failed and left out of the scores, never counted as a miss or a catch.
//! Layering: used by `cli`; uses `review` (findings, stats), `llm` (the judge), `tools` and
//! `repo` (the grader's read-only tools) and git2. The engine run
//! itself is given by the caller through [`run::CaseReviewer`], so this module never
//! depends on the command line.

pub mod cases;
pub mod grade;
pub(crate) mod html;
pub mod judge;
pub mod mine;
pub mod mutants;
pub mod mutate;
pub mod noise;
pub(crate) mod render;
pub(crate) mod report;
pub(crate) mod revert;
pub(crate) mod run;
pub mod score;
pub mod verdict;

/// Largest source file (in bytes) that mining and mutation parse: a larger one (generated
/// or minified code, a vendored bundle) is skipped with the reason, so time and memory
/// stay bounded per file.
pub const MAX_PARSED_BYTES: usize = 512 * 1024;

/// Why an evaluation step failed.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A git operation failed.
    #[error("git: {0}")]
    Git(String),
    /// The cases file cannot be read or written.
    #[error("{path}: {message}")]
    CasesFile {
        /// The file.
        path: String,
        /// What is wrong (with the line number when it is a line).
        message: String,
    },
    /// A baseline report cannot be used.
    #[error("baseline {path}: {message}")]
    Baseline {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A value given by the user is not valid.
    #[error("{0}")]
    Invalid(String),
}

impl From<git2::Error> for EvalError {
    fn from(error: git2::Error) -> Self {
        EvalError::Git(error.message().to_string())
    }
}
