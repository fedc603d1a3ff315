//! Opening files that a repository or a shared directory may have placed
//! traps at: symbolic links and FIFOs.
//!
//! Invariant: a file opened here is a regular file reached without following a
//! symbolic link at its last component, and opening it never blocks (a FIFO
//! is refused, not waited on).

use std::fs::{File, OpenOptions};
use std::path::Path;

/// Opens `path` with `options`, not following a symbolic link (`O_NOFOLLOW`)
/// and not waiting on a FIFO (`O_NONBLOCK`); anything but a regular file is refused.
pub(crate) fn open_no_follow(options: &mut OpenOptions, path: &Path) -> std::io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn links_and_fifos_are_refused_regular_files_open() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let fifo = dir.path().join("fifo");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let mut write = OpenOptions::new();
        write.write(true);
        assert!(open_no_follow(&mut write, &link).is_err());
        assert!(open_no_follow(OpenOptions::new().read(true), &fifo).is_err());
        assert!(open_no_follow(&mut write, &fifo).is_err(), "never waits");
        assert!(open_no_follow(&mut write, &target).is_ok());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "x");
    }
}
