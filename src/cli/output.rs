//! Where `redline review` writes its result: stdout or `--output FILE`.
//!
//! Invariant: the file is opened (created when missing, never truncated) before the
//! review starts, so an unwritable path fails before any model call; it is emptied and
//! written only when there is a result, and a file this run created is removed again
//! when the run ends without one.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// The opened destination of the result.
#[derive(Debug)]
pub(crate) struct OutputTarget {
    file: Option<OpenedFile>,
}

#[derive(Debug)]
struct OpenedFile {
    path: PathBuf,
    file: File,
    created: bool,
}

impl OutputTarget {
    /// Opens `path` for writing, or stdout without one.
    pub fn open(path: Option<&Path>) -> anyhow::Result<Self> {
        let Some(path) = path else {
            return Ok(OutputTarget { file: None });
        };
        let created = std::fs::symlink_metadata(path).is_err();
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .with_context(|| format!("cannot write --output {}", path.display()))?;
        Ok(OutputTarget {
            file: Some(OpenedFile {
                path: path.to_path_buf(),
                file,
                created,
            }),
        })
    }

    /// Writes the result, replacing what the file held.
    pub fn write(self, text: &str) -> anyhow::Result<()> {
        match self.file {
            Some(mut opened) => {
                let is_regular = opened.file.metadata().is_ok_and(|m| m.is_file());
                let truncate = if is_regular {
                    opened.file.set_len(0)
                } else {
                    Ok(())
                };
                truncate
                    .and_then(|_| opened.file.write_all(text.as_bytes()))
                    .and_then(|_| opened.file.flush())
                    .with_context(|| format!("cannot write {}", opened.path.display()))
            }
            None => {
                let mut stdout = std::io::stdout().lock();
                stdout
                    .write_all(text.as_bytes())
                    .and_then(|_| stdout.flush())
                    .context("cannot write to stdout")
            }
        }
    }

    /// Ends without a result: a file this run created is removed, an existing one is left as it was.
    pub(crate) fn abandon(self) {
        if let Some(opened) = self.file
            && opened.created
        {
            drop(opened.file);
            let _ = std::fs::remove_file(&opened.path);
        }
    }
}
