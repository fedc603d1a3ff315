//! The intent of a local change: the commit messages of base..head, a title and a
//! description (text, a file, or standard input).
//!
//! Invariants: read before any model call, so an unreadable description is an error that
//! costs nothing; a description larger than [`MAX_DESCRIPTION_BYTES`] is read only up to
//! that size (the rendered section is bounded again by `intent_budget`).

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{Description, IntentSources, LocalError};
use crate::intent::Intent;
use crate::repo::ResolvedRange;

/// Bytes of a description read at most.
pub const MAX_DESCRIPTION_BYTES: u64 = 1024 * 1024;

/// What the author says the change in `range` of the repository at `root` does.
pub(super) fn read(
    sources: &IntentSources,
    root: &Path,
    range: &ResolvedRange,
) -> Result<Intent, LocalError> {
    let description = match &sources.description {
        None => None,
        Some(Description::Text(text)) => Some(text.clone()),
        Some(Description::Stdin) => Some(read_bounded(std::io::stdin().lock(), Path::new("-"))?),
        Some(Description::File(path)) => {
            let file = std::fs::File::open(path).map_err(description_error(path))?;
            Some(read_bounded(file, path)?)
        }
    };
    let commits = crate::repo::commit_messages(root, &range.base, &range.head)?;
    Ok(Intent {
        title: sources.title.clone(),
        description,
        issues: Vec::new(),
        commits,
    })
}

fn description_error(path: &Path) -> impl FnOnce(std::io::Error) -> LocalError + use<> {
    let path = PathBuf::from(path);
    move |source| LocalError::Description { path, source }
}

/// The first [`MAX_DESCRIPTION_BYTES`] of `source`, invalid UTF-8 replaced.
pub(super) fn read_bounded(source: impl Read, path: &Path) -> Result<String, LocalError> {
    let mut bytes = Vec::new();
    source
        .take(MAX_DESCRIPTION_BYTES)
        .read_to_end(&mut bytes)
        .map_err(description_error(path))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
