//! One process writes a transcript at a time.
//!
//! Invariants: a transcript is only written through a [`TranscriptLock`], which
//! holds an advisory exclusive lock (`flock`) on the transcript's own open file
//! for as long as it lives, so a second writer (two `--resume` of one run) is
//! refused instead of splicing its records into the first one's; the holder's
//! process id is written beside it (`<run>.pid`, removed when the lock is
//! dropped) so that the refusal can name it; the file is opened with `O_APPEND`,
//! so every write lands at the end of the file whatever another handle did, and
//! a transcript is created readable by its owner only (0600).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why a transcript could not be locked.
#[derive(Debug)]
pub(crate) enum LockError {
    /// Another open file holds the lock: its holder's process id, when written.
    Held(Option<u32>),
    /// The file could not be opened or locked.
    Io(std::io::Error),
}

impl LockError {
    /// Who holds the lock, for messages.
    pub(crate) fn holder(pid: Option<u32>) -> String {
        match pid {
            Some(pid) => format!("process {pid}"),
            None => "another process".into(),
        }
    }
}

impl From<LockError> for std::io::Error {
    fn from(error: LockError) -> Self {
        match error {
            LockError::Io(error) => error,
            LockError::Held(pid) => std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                format!(
                    "the transcript is being written by {}",
                    LockError::holder(pid)
                ),
            ),
        }
    }
}

/// An open transcript, locked for this process.
#[derive(Debug)]
pub(crate) struct TranscriptLock {
    file: File,
    pid_path: PathBuf,
}

impl TranscriptLock {
    /// Opens `path` for appending (creating it when `create`; it must not exist
    /// then) and locks it, without waiting.
    pub(crate) fn open(path: &Path, create: bool) -> Result<Self, LockError> {
        let mut options = OpenOptions::new();
        options.read(true).append(true);
        if create {
            options.create_new(true);
        }
        owner_only(&mut options);
        let file = options.open(path).map_err(LockError::Io)?;
        // Called by path: std's inherent `File::try_lock` needs Rust 1.89.
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => {}
            Err(fs4::TryLockError::WouldBlock) => return Err(LockError::Held(holder_of(path))),
            Err(fs4::TryLockError::Error(error)) => return Err(LockError::Io(error)),
        }
        let pid_path = pid_path(path);
        write_pid(&pid_path);
        Ok(TranscriptLock { file, pid_path })
    }

    /// The locked file (opened with `O_APPEND`).
    pub(crate) fn file(&self) -> &File {
        &self.file
    }
}

impl Drop for TranscriptLock {
    fn drop(&mut self) {
        // The lock itself goes with the file; the note of its holder first.
        let _ = std::fs::remove_file(&self.pid_path);
    }
}

/// `<run>.pid` beside `<run>.jsonl`.
pub(crate) fn pid_path(transcript: &Path) -> PathBuf {
    transcript.with_extension("pid")
}

/// The process id written beside a locked transcript, if any.
fn holder_of(transcript: &Path) -> Option<u32> {
    std::fs::read_to_string(pid_path(transcript))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn write_pid(path: &Path) {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    owner_only(&mut options);
    // Only a courtesy for the refusal's message: the lock holds without it.
    if let Ok(mut file) = options.open(path) {
        let _ = writeln!(file, "{}", std::process::id());
    }
}

/// Files created by `options` are readable and writable by their owner only.
pub(crate) fn owner_only(options: &mut OpenOptions) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = options;
}

/// Creates `dir` and its missing parents, new ones accessible by their owner only (0700).
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}
