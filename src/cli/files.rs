//! Opening files that a repository or a shared directory may have placed
//! traps at: symbolic links and FIFOs; and writing Redline's own files (reports, `init`'s
//! files) into a workspace that a repository's content fills.
//!
//! Invariants: a file opened by [`open_no_follow`] is a regular file reached without
//! following a symbolic link at its last component, and opening it never blocks (a FIFO
//! is refused, not waited on). A file written into a workspace ([`open_in_workspace`],
//! [`write_in_workspace`]) is never reached through a link: when its path lies inside the
//! workspace (the repository's root, or a GitLab job's `CI_PROJECT_DIR`), no directory
//! on its way may really lie outside the workspace (a committed `reports -> /home/me`),
//! the file itself may be neither a link nor anything but a regular file, and it is
//! opened without following a link; otherwise nothing is written and the error names
//! the path. A path outside the workspace was chosen by the user, not by the
//! repository's content, and is opened as given (`--output /dev/stdout` works).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

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

/// Opens `path`, a file Redline writes, with `options`: inside `workspace` only after
/// [`check_inside`] and without following a link; outside it as given.
pub(crate) fn open_in_workspace(
    workspace: &Path,
    path: &Path,
    options: &mut OpenOptions,
) -> anyhow::Result<File> {
    let path = &normalized(path)?;
    let opened = match relative_in(workspace, path)? {
        Some((root, real_root, relative)) => {
            check_inside(&root, &real_root, &relative)?;
            open_no_follow(options, path)
        }
        None => options.open(path),
    };
    opened.with_context(|| format!("cannot write {}", path.display()))
}

/// Writes `text` to `path` (created, or emptied first), with the checks of
/// [`open_in_workspace`]; the directories it needs inside the workspace are created.
pub(crate) fn write_in_workspace(workspace: &Path, path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let path = &normalized(path)?;
    if let Some((root, real_root, relative)) = relative_in(workspace, path)? {
        // Checked first: no directory is created through a link leading outside.
        if let Some(dirs) = relative.parent() {
            walk_inside(&root, &real_root, dirs)?;
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
    }
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    let mut file = open_in_workspace(workspace, path, &mut options)?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// `path` made absolute with `.` and `..` folded as written (so `reports/../../x` is
/// seen for what it names, and what is checked is what is opened).
fn normalized(path: &Path) -> anyhow::Result<PathBuf> {
    use std::path::Component;
    let absolute =
        std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))?;
    let mut out = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// When `path` lies inside `workspace` (as written, or as the workspace really is):
/// the workspace's absolute path, its resolved path, and `path` relative to it.
fn relative_in(
    workspace: &Path,
    path: &Path,
) -> anyhow::Result<Option<(PathBuf, PathBuf, PathBuf)>> {
    let root = normalized(workspace)?;
    let Ok(real_root) = std::fs::canonicalize(&root) else {
        // No workspace there: nothing of a repository's content to fear.
        return Ok(None);
    };
    for prefix in [&root, &real_root] {
        if let Ok(relative) = path.strip_prefix(prefix) {
            let relative = relative.to_path_buf();
            return Ok(Some((prefix.clone(), real_root.clone(), relative)));
        }
    }
    Ok(None)
}

/// Refuses `root/relative` when it or a directory on its way really lies outside
/// `real_root` (the root's resolved path), or when it is a link or not a regular file.
/// A missing component ends the check: it is created inside a directory already checked.
pub(crate) fn check_inside(root: &Path, real_root: &Path, relative: &Path) -> anyhow::Result<()> {
    let Some(last) = walk_inside(root, real_root, relative)? else {
        return Ok(());
    };
    let meta = last.symlink_metadata()?;
    if meta.file_type().is_symlink() {
        bail!(
            "{} is a symbolic link; nothing was written (replace it with a file)",
            last.display()
        );
    }
    if !meta.file_type().is_file() {
        bail!(
            "{} is not a regular file; nothing was written",
            last.display()
        );
    }
    Ok(())
}

/// Checks that each existing component of `root/relative` really lies inside `real_root`;
/// the whole path when it exists, `None` when a component is missing.
fn walk_inside(root: &Path, real_root: &Path, relative: &Path) -> anyhow::Result<Option<PathBuf>> {
    let mut path = root.to_path_buf();
    for component in relative.components() {
        path.push(component);
        if path.symlink_metadata().is_err() {
            return Ok(None);
        }
        let real = std::fs::canonicalize(&path).ok();
        if !real.as_ref().is_some_and(|r| r.starts_with(real_root)) {
            let target = real
                .map(|r| format!(" ({})", r.display()))
                .unwrap_or_default();
            bail!(
                "{} leads outside the repository{target}; nothing was written",
                path.display()
            );
        }
    }
    Ok(Some(path))
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

    #[cfg(unix)]
    #[test]
    fn a_workspace_file_is_never_written_through_a_link() {
        let workspace = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let ws = workspace.path();
        // A link at the file, a link to a directory outside, a link inside the workspace.
        std::os::unix::fs::symlink(&victim, ws.join("report.json")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.join("reports")).unwrap();
        std::fs::write(ws.join("real.json"), "x").unwrap();
        std::os::unix::fs::symlink(ws.join("real.json"), ws.join("inner.json")).unwrap();
        for (path, why) in [
            (ws.join("report.json"), "leads outside"),
            (ws.join("reports/new.json"), "leads outside"),
            (ws.join("reports/victim"), "leads outside"),
            (ws.join("inner.json"), "is a symbolic link"),
            (ws.join("sub/../reports/../reports/victim"), "leads outside"),
        ] {
            let error = write_in_workspace(ws, &path, "{}").unwrap_err();
            let text = format!("{error:#}");
            assert!(
                text.contains(why) && text.contains("nothing was written"),
                "{path:?}: {text}"
            );
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
        assert_eq!(std::fs::read_to_string(ws.join("real.json")).unwrap(), "x");
        // Relative to the workspace's real path too (a workspace reached through a link).
        let alias = outside.path().join("alias");
        std::os::unix::fs::symlink(ws, &alias).unwrap();
        assert!(write_in_workspace(&alias, &ws.join("report.json"), "{}").is_err());
        // A regular file, and new directories, inside: written.
        write_in_workspace(ws, &ws.join("real.json"), "new").unwrap();
        assert_eq!(
            std::fs::read_to_string(ws.join("real.json")).unwrap(),
            "new"
        );
        write_in_workspace(ws, &ws.join("out/dir/r.json"), "r").unwrap();
        assert_eq!(
            std::fs::read_to_string(ws.join("out/dir/r.json")).unwrap(),
            "r"
        );
        // `..` is folded as written: this names a file outside, the caller's choice.
        let up = Path::new("sub/../..")
            .join(outside.path().file_name().unwrap())
            .join("up.json");
        write_in_workspace(ws, &ws.join(up), "u").unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.path().join("up.json")).unwrap(),
            "u"
        );
        assert!(!ws.join("sub").exists());
        // Outside the workspace: the caller's own choice, written as given.
        let chosen = outside.path().join("chosen.json");
        write_in_workspace(ws, &chosen, "c").unwrap();
        assert_eq!(std::fs::read_to_string(&chosen).unwrap(), "c");
    }
}
