//! The intent of a local change (`redline review`, `redline context`): the commit
//! messages of base..head, `--title` and `--description-file` (`-` for standard input).
//!
//! Invariants: read before any model call, so an unreadable description file is an error
//! that costs nothing; a description larger than [`MAX_DESCRIPTION_BYTES`] is read only up
//! to that size (the rendered section is bounded again by `intent_budget`).

use std::io::Read;
use std::path::Path;

use anyhow::Context;

use super::IntentArgs;
use crate::intent::Intent;
use crate::repo::ResolvedRange;

/// Bytes of a description read at most.
const MAX_DESCRIPTION_BYTES: u64 = 1024 * 1024;

/// What the author says the change in `range` of the repository at `root` does.
pub(crate) fn local_intent(
    args: &IntentArgs,
    root: &Path,
    range: &ResolvedRange,
) -> anyhow::Result<Intent> {
    let description = match &args.description_file {
        None => args.description.clone(),
        Some(path) if args.reads_stdin() => Some(read_bounded(std::io::stdin().lock(), path)?),
        Some(path) => {
            let file = std::fs::File::open(path)
                .with_context(|| format!("--description-file {}", path.display()))?;
            Some(read_bounded(file, path)?)
        }
    };
    let commits = crate::repo::commit_messages(root, &range.base, &range.head)?;
    Ok(Intent {
        title: args.title.clone(),
        description,
        issues: Vec::new(),
        commits,
    })
}

fn read_bounded(source: impl Read, path: &Path) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    source
        .take(MAX_DESCRIPTION_BYTES)
        .read_to_end(&mut bytes)
        .with_context(|| format!("--description-file {}", path.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
