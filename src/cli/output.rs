//! Where `redline review` writes its result: stdout or `--output FILE`.
//!
//! Invariant: the file is opened (created when missing, never truncated; inside the
//! repository never through a link, see [`super::files`]) before the review starts, so
//! an unwritable path fails before any model call; it is emptied and written only when
//! there is a result, and a file this run created is removed again when the run ends
//! without one.

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
    /// Opens `path` for writing, or stdout without one. Inside `workspace` (the repository
    /// being reviewed or mined), never through a link ([`super::files::open_in_workspace`]).
    pub fn open(path: Option<&Path>, workspace: Option<&Path>) -> anyhow::Result<Self> {
        let Some(path) = path else {
            return Ok(OutputTarget { file: None });
        };
        let created = std::fs::symlink_metadata(path).is_err();
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(false);
        let file = match workspace {
            Some(workspace) => super::files::open_in_workspace(workspace, path, &mut options),
            None => options.open(path).map_err(anyhow::Error::from),
        }
        .with_context(|| format!("cannot write --output {}", path.display()))?;
        Ok(OutputTarget {
            file: Some(OpenedFile {
                path: path.to_path_buf(),
                file,
                created,
            }),
        })
    }

    /// Whether text written here is coloured under `when` (`auto`: the file or stdout is a
    /// terminal and `NO_COLOR` is not set).
    pub(crate) fn color(&self, when: super::color::ColorWhen) -> bool {
        match &self.file {
            Some(opened) => when.for_stream(&opened.file),
            None => when.for_stream(&std::io::stdout()),
        }
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
                let written = truncate
                    .and_then(|_| opened.file.write_all(text.as_bytes()))
                    .and_then(|_| opened.file.flush());
                match written {
                    Ok(()) => Ok(()),
                    // A full disk or a device that refuses writes: the review must not be
                    // lost, so it goes to stdout, and the run still fails.
                    Err(err) => {
                        let shown = write_stdout(text);
                        let fallback = match shown {
                            Ok(()) => "the result is on stdout instead",
                            Err(_) => "nor could the result be written to stdout",
                        };
                        Err(anyhow::Error::new(err).context(format!(
                            "cannot write --output {} ({fallback})",
                            opened.path.display()
                        )))
                    }
                }
            }
            None => write_stdout(text),
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

/// Whether `a` and `b` name the same regular file, whether it exists yet or not (`--events`
/// and `--output` must not: each would overwrite the other). Devices such as `/dev/null`
/// may be given for both.
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    let regular_or_missing =
        |path: &Path| std::fs::metadata(path).map_or(true, |meta| meta.is_file());
    if !regular_or_missing(a) || !regular_or_missing(b) {
        return false;
    }
    match (same_file_key(a), same_file_key(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
        .context("cannot write to stdout")
}

/// A path's directory (resolved) and file name: two paths that name the same file, whether
/// it exists yet or not, have the same key.
fn same_file_key(path: &Path) -> Option<(PathBuf, std::ffi::OsString)> {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let name = path.file_name()?.to_os_string();
    let parent = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Some((std::fs::canonicalize(&parent).unwrap_or(parent), name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_file_is_recognised_by_any_name_and_devices_are_not_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("out.json");
        let other = dir.path().join("events.jsonl");
        let roundabout = dir.path().join(".").join("out.json");
        assert!(same_file(&file, &roundabout), "not created yet");
        std::fs::write(&file, "{}").expect("write");
        assert!(same_file(&file, &roundabout));
        assert!(!same_file(&file, &other));
        #[cfg(unix)]
        assert!(!same_file(Path::new("/dev/null"), Path::new("/dev/null")));
    }
}
