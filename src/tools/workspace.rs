//! What the tools work on during one review: the repository at the reviewed revision,
//! the change, and what is worked out from them once and kept for the whole review.
//!
//! Invariants: the moved code of the change is detected at most once per review, and the
//! view of the base revision is opened at most once per review once it opens (a failed
//! opening is not kept, so a later call tries again); clones of a workspace share them.
//! `repo` and `changes` are not changed after [`Workspace::new`]: what is kept is
//! worked out from them.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::OnceCell;

use super::ToolError;
use crate::context::moves::Moves;
use crate::repo::RepoView;
use crate::review::diff::ChangeSet;

/// What a tool works on: the repository at the reviewed revision and the change.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The files as they are at the reviewed revision (or in the work tree).
    pub repo: Arc<RepoView>,
    /// The change under review.
    pub changes: Arc<ChangeSet>,
    kept: Arc<Kept>,
}

/// How often a workspace worked out what it keeps for the review.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Derivations {
    /// Times the change's moved code was detected.
    pub moves_detected: usize,
    /// Times the base revision's view was opened (failed openings included).
    pub base_views_opened: usize,
}

/// What is worked out once per review, and how often it was.
#[derive(Debug, Default)]
struct Kept {
    moves: OnceLock<Moves>,
    base: OnceCell<RepoView>,
    moves_detected: AtomicUsize,
    base_views_opened: AtomicUsize,
}

impl Workspace {
    /// The workspace of a review of `changes` in `repo`.
    pub fn new(repo: RepoView, changes: ChangeSet) -> Self {
        Workspace {
            repo: Arc::new(repo),
            changes: Arc::new(changes),
            kept: Arc::default(),
        }
    }

    /// The code the change moves, detected on first use.
    pub(crate) fn moves(&self) -> &Moves {
        self.kept.moves.get_or_init(|| {
            self.kept.moves_detected.fetch_add(1, Ordering::Relaxed);
            Moves::detect(&self.changes)
        })
    }

    /// The files as they were at the base of the change, sharing the open repository;
    /// opened on first use.
    pub(crate) async fn base_view(&self) -> Result<RepoView, ToolError> {
        let view = self
            .kept
            .base
            .get_or_try_init(|| async {
                self.kept.base_views_opened.fetch_add(1, Ordering::Relaxed);
                let base = self.changes.base.clone();
                self.repo
                    .blocking(move |repo| repo.at_commit(&base).map_err(ToolError::from))
                    .await
                    .map_err(|e: ToolError| match e {
                        ToolError::Model(m) => ToolError::Model(format!("the base revision: {m}")),
                        fatal => fatal,
                    })
            })
            .await?;
        Ok(view.clone())
    }

    /// How often this review's moves and base view were worked out so far.
    pub fn derivations(&self) -> Derivations {
        Derivations {
            moves_detected: self.kept.moves_detected.load(Ordering::Relaxed),
            base_views_opened: self.kept.base_views_opened.load(Ordering::Relaxed),
        }
    }
}
