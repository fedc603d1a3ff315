//! The disk budget of the App's mirror cache: after a job, the least recently
//! used mirrors are removed until the cache fits.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Bytes under `path` (files only; links are not followed).
fn size_of(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(path)
        .map(|entries| entries.flatten().map(|e| size_of(&e.path())).sum())
        .unwrap_or(0)
}

/// The mirrors in the cache (`<owner>/<repo>.git`) with their size and last use.
fn mirrors(cache_dir: &Path) -> Vec<(PathBuf, u64, SystemTime)> {
    let mut found = Vec::new();
    let Ok(owners) = std::fs::read_dir(cache_dir) else {
        return found;
    };
    for owner in owners.flatten() {
        let Ok(repos) = std::fs::read_dir(owner.path()) else {
            continue;
        };
        for repo in repos.flatten() {
            let path = repo.path();
            // A fetch touches FETCH_HEAD; it marks when the mirror was last used.
            let used = std::fs::metadata(path.join("FETCH_HEAD"))
                .or_else(|_| std::fs::metadata(&path))
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((path.clone(), size_of(&path), used));
        }
    }
    found
}

/// Removes least recently used mirrors, never `keep`, until the cache is at most
/// `budget_bytes`. Returns the removed paths.
pub(crate) fn enforce_budget(cache_dir: &Path, budget_bytes: u64, keep: &Path) -> Vec<PathBuf> {
    let mut all = mirrors(cache_dir);
    let mut total: u64 = all.iter().map(|(_, size, _)| size).sum();
    all.sort_by_key(|(_, _, used)| *used);
    let mut removed = Vec::new();
    for (path, size, _) in all {
        if total <= budget_bytes {
            break;
        }
        if path == keep {
            continue;
        }
        if std::fs::remove_dir_all(&path).is_ok() {
            total = total.saturating_sub(size);
            removed.push(path);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mirror(root: &Path, name: &str, bytes: usize) -> PathBuf {
        let path = root.join("octo").join(name);
        std::fs::create_dir_all(&path).expect("dir");
        std::fs::write(path.join("pack"), vec![0u8; bytes]).expect("write");
        std::fs::write(path.join("FETCH_HEAD"), "x").expect("write");
        std::thread::sleep(std::time::Duration::from_millis(20));
        path
    }

    #[test]
    fn oldest_mirrors_go_first_and_the_current_one_stays() {
        let dir = tempfile::tempdir().expect("tmp");
        let old = mirror(dir.path(), "old.git", 1000);
        let mid = mirror(dir.path(), "mid.git", 1000);
        let current = mirror(dir.path(), "current.git", 1000);
        let removed = enforce_budget(dir.path(), 2100, &current);
        assert_eq!(removed, vec![old.clone()]);
        assert!(!old.exists() && mid.exists() && current.exists());
        let removed = enforce_budget(dir.path(), 0, &current);
        assert_eq!(removed, vec![mid]);
        assert!(current.exists(), "the mirror in use is never removed");
    }
}
