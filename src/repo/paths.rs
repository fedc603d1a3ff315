//! Confining paths to the repository: every path a tool receives goes through
//! [`normalize_path`] before it touches git or the disk.

use super::RepoError;

/// Turns a user- or model-supplied path into a clean `/`-separated path relative
/// to the repository root (`""` is the root itself).
///
/// Strips `./` and empty components, resolves `..` that stays inside, and refuses
/// absolute paths, `..` that climbs above the root, and NUL bytes.
pub(crate) fn normalize_path(input: &str) -> Result<String, RepoError> {
    if input.contains('\0') {
        return Err(RepoError::InvalidPath {
            path: input.replace('\0', "\\0"),
            reason: "it contains a NUL byte".into(),
        });
    }
    if input.starts_with('/') || input.starts_with('\\') || has_drive_prefix(input) {
        return Err(outside(input));
    }
    let mut parts: Vec<&str> = Vec::new();
    for component in input.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(outside(input));
                }
            }
            name => parts.push(name),
        }
    }
    Ok(parts.join("/"))
}

/// Resolves a symbolic link's target, read from the link at `link_path`
/// (already normalized), to a normalized repository path; targets that leave
/// the repository are refused.
pub(crate) fn resolve_link_target(link_path: &str, target: &str) -> Result<String, RepoError> {
    if target.starts_with('/') || target.contains('\0') {
        return Err(outside(link_path));
    }
    let dir = link_path.rsplit_once('/').map_or("", |(dir, _)| dir);
    let joined = if dir.is_empty() {
        target.to_string()
    } else {
        format!("{dir}/{target}")
    };
    normalize_path(&joined).map_err(|_| outside(link_path))
}

/// Whether the normalized path lies in a git directory (the repository's own or a
/// nested one), which is never content: git itself refuses to track such paths.
pub(crate) fn is_git_dir(normalized: &str) -> bool {
    normalized.split('/').any(|c| c == ".git")
}

fn has_drive_prefix(input: &str) -> bool {
    let bytes = input.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

fn outside(path: &str) -> RepoError {
    RepoError::OutsideRepository {
        path: path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_dots_and_resolves_inner_parent_steps() {
        assert_eq!(normalize_path("./src/lib.rs").unwrap(), "src/lib.rs");
        assert_eq!(normalize_path("src//a/../lib.rs").unwrap(), "src/lib.rs");
        assert_eq!(normalize_path(".").unwrap(), "");
        assert_eq!(normalize_path("").unwrap(), "");
        assert_eq!(normalize_path("dir/").unwrap(), "dir");
    }

    #[test]
    fn refuses_escapes_absolute_paths_and_nul() {
        for bad in ["../x", "a/../../x", "/etc/passwd", "C:/x", "\\x"] {
            assert!(
                matches!(
                    normalize_path(bad),
                    Err(RepoError::OutsideRepository { .. })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            normalize_path("a\0b"),
            Err(RepoError::InvalidPath { .. })
        ));
    }

    #[test]
    fn link_targets_resolve_from_the_link_directory() {
        assert_eq!(resolve_link_target("a/b/l", "../c").unwrap(), "a/c");
        assert_eq!(resolve_link_target("l", "src/x").unwrap(), "src/x");
        assert!(resolve_link_target("a/l", "../../x").is_err());
        assert!(resolve_link_target("a/l", "/etc/passwd").is_err());
    }

    #[test]
    fn recognises_the_git_directory() {
        assert!(is_git_dir(".git") && is_git_dir(".git/config") && is_git_dir("sub/.git/x"));
        assert!(!is_git_dir(".github/x") && !is_git_dir("src/.gitignore"));
    }
}
