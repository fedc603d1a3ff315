//! Where configuration files come from and how they combine: the user's own file
//! (`$XDG_CONFIG_HOME/redline/config.toml`, else `~/.config/redline/config.toml`) under a
//! repository's file (`.redline.toml` in the work tree or a commit, or `--config FILE`).
//!
//! Invariant: the keys that decide where credentials go ([`USER_ONLY_KEYS`]) are removed
//! from every [`Owner::Repository`] source when it is read, before anything can use
//! them; the source remembers which it removed so the caller can warn. Every source is
//! checked against the schema and the value ranges on its own, so errors name the file.

use std::path::{Path, PathBuf};

use super::{CONFIG_FILE, ConfigError, ConfigReadError, FileConfig};

/// Keys only the user may set (flags, environment, the user's config file): they choose
/// the endpoint and the wire protocol that receive the API key.
pub(crate) const USER_ONLY_KEYS: &[&str] = &["provider", "base_url"];

/// Who controls a config file, which decides what it may set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// The user's own file: may set everything a config file can.
    User,
    /// A repository's file (or `--config FILE`): may not set [`USER_ONLY_KEYS`].
    Repository,
}

/// One config file, checked, with the keys its owner may not set removed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ConfigSource {
    origin: String,
    text: String,
    table: toml::Table,
    ignored: Vec<String>,
}

impl ConfigSource {
    /// Parses and checks TOML text; `origin` names the file in errors and warnings.
    pub fn parse(text: &str, origin: &str, owner: Owner) -> Result<Self, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            origin: origin.to_string(),
            message,
        };
        // Every problem of the file at once, in file order, before serde stops at its first.
        let problems = super::validate::problems(text);
        if !problems.is_empty() {
            return Err(ConfigError::Problems {
                origin: origin.to_string(),
                problems,
            });
        }
        // Parsed as the schema: its errors carry the line and the key.
        FileConfig::parse(text, origin)?
            .check_ranges()
            .map_err(|e| match e {
                ConfigError::BadValue { key, message } => {
                    let at = super::key_position(text, &key).unwrap_or_default();
                    invalid(format!("{at}: {key}: {message}"))
                }
                other => invalid(format!(" {other}")),
            })?;
        let mut table: toml::Table =
            toml::from_str(text).map_err(|e| invalid(super::toml_error(&e, text)))?;
        let mut ignored = Vec::new();
        if owner == Owner::Repository {
            for key in USER_ONLY_KEYS {
                if table.remove(*key).is_some() {
                    ignored.push((*key).to_string());
                }
            }
        }
        Ok(ConfigSource {
            origin: origin.to_string(),
            text: text.to_string(),
            table,
            ignored,
        })
    }

    /// Whether the file sets `key` (dotted for nested keys: `reflection.max_rounds`,
    /// `pricing."gpt-4.1".input`), or the table the key is in.
    pub(crate) fn has_key(&self, key: &str) -> bool {
        let path = key_path(key);
        let Some((first, rest)) = path.split_first() else {
            return false;
        };
        let mut value = match self.table.get(first) {
            Some(value) => value,
            None => return false,
        };
        for part in rest {
            match value.get(part.as_str()) {
                Some(inner) => value = inner,
                None => return true,
            }
        }
        true
    }

    /// The value the file sets at exactly `key` (dotted, as for [`Self::has_key`]); `None`
    /// when the key, or a table on its way, is not in the file.
    pub(crate) fn value_at(&self, key: &str) -> Option<&toml::Value> {
        let path = key_path(key);
        let (first, rest) = path.split_first()?;
        let mut value = self.table.get(first)?;
        for part in rest {
            value = value.get(part.as_str())?;
        }
        Some(value)
    }

    /// The 1-based line where `key` (or the deepest table on its path) is written.
    pub(crate) fn line_of(&self, key: &str) -> Option<usize> {
        self.position_of(key)?.split(':').next()?.parse().ok()
    }

    /// `L:C`, the 1-based line and column where `key` (or the deepest table on its path)
    /// is written.
    pub(crate) fn position_of(&self, key: &str) -> Option<String> {
        let document = toml::de::DeTable::parse(&self.text).ok()?;
        let mut table = document.get_ref();
        let mut offset = None;
        for part in key_path(key) {
            let Some((name, value)) = table
                .iter()
                .find(|(name, _)| name.get_ref().as_ref() == part.as_str())
            else {
                break;
            };
            offset = Some(name.span().start);
            match value.get_ref() {
                toml::de::DeValue::Table(inner) => table = inner,
                _ => break,
            }
        }
        let before = self.text.get(..offset?)?;
        let line = before.matches('\n').count() + 1;
        let column = before
            .rsplit('\n')
            .next()
            .unwrap_or_default()
            .chars()
            .count()
            + 1;
        Some(format!("{line}:{column}"))
    }

    /// Whether both sources hold the same settings (wherever they came from).
    pub(crate) fn same_settings(&self, other: &ConfigSource) -> bool {
        self.table == other.table && self.ignored == other.ignored
    }

    /// Where this source came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    #[cfg(test)]
    /// The user-only keys the file set and that were dropped.
    pub(crate) fn ignored_keys(&self) -> &[String] {
        &self.ignored
    }

    /// One warning per dropped key, naming it (for stderr).
    pub(crate) fn warnings(&self) -> Vec<String> {
        self.ignored
            .iter()
            .map(|key| {
                format!(
                    "{} sets `{key}`, which is ignored: a repository's config cannot choose where your API key goes (use a flag, the environment or your own config file)",
                    self.origin
                )
            })
            .collect()
    }

    /// Reads a file that must exist and be a regular file (after symlinks) of at most
    /// [`MAX_CONFIG_BYTES`]: a device, a pipe or a huge file is an error, never a hang.
    pub fn read_file(path: &Path, owner: Owner) -> Result<Self, ConfigError> {
        let origin = path.display().to_string();
        let read_error = |source: ConfigReadError| ConfigError::Read {
            origin: origin.clone(),
            source,
        };
        let metadata = std::fs::metadata(path).map_err(|e| read_error(e.into()))?;
        if metadata.is_dir() {
            return Err(read_error(ConfigReadError::Directory));
        }
        if !metadata.is_file() {
            return Err(read_error(ConfigReadError::NotAFile));
        }
        let text = read_capped(path).map_err(read_error)?;
        Self::parse(&text, &origin, owner)
    }

    /// Reads a file when something exists at `path`; nothing there is `None`, anything
    /// there that cannot be read as a file is an error.
    pub(crate) fn read_optional(path: &Path, owner: Owner) -> Result<Option<Self>, ConfigError> {
        // `symlink_metadata`: a dangling symlink is there, and unreadable, not missing.
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            _ => Self::read_file(path, owner).map(Some),
        }
    }

    /// `.redline.toml` in a work tree, as a repository source. The file is the branch's:
    /// a symbolic link is followed only to a file inside the work tree, so a checked-out
    /// branch cannot make Redline read (and quote in errors) a file elsewhere.
    pub(crate) fn read_worktree(root: &Path) -> Result<Option<Self>, ConfigError> {
        let path = root.join(CONFIG_FILE);
        if let Ok(link) = std::fs::symlink_metadata(&path)
            && link.file_type().is_symlink()
        {
            let inside = match (path.canonicalize(), root.canonicalize()) {
                (Ok(target), Ok(root)) => target.starts_with(&root),
                _ => false,
            };
            if !inside {
                return Err(ConfigError::Read {
                    origin: path.display().to_string(),
                    source: ConfigReadError::LinkOutside,
                });
            }
        }
        Self::read_optional(&path, Owner::Repository)
    }

    /// A repository path as it is in commit `rev`, as a repository source; a missing
    /// path is `None`, a directory is an error.
    pub(crate) fn read_at_commit(
        root: &Path,
        rev: &str,
        path: &Path,
    ) -> Result<Option<Self>, ConfigError> {
        // Git's own `REV:PATH`, so errors read `main:.redline.toml:3:1: key: message`.
        let origin = format!("{rev}:{}", path.display());
        let read_error = |source: ConfigReadError| ConfigError::Read {
            origin: origin.clone(),
            source,
        };
        let git_error = |e: git2::Error| read_error(ConfigReadError::Git(e));
        let repo = git2::Repository::open(root).map_err(git_error)?;
        let tree = repo
            .revparse_single(rev)
            .and_then(|o| o.peel_to_tree())
            .map_err(git_error)?;
        let Ok(entry) = tree.get_path(path) else {
            return Ok(None);
        };
        if entry.kind() != Some(git2::ObjectType::Blob) {
            return Err(read_error(ConfigReadError::NotAFile));
        }
        // The size from the object's header, before the object is inflated.
        let (size, _) = repo
            .odb()
            .and_then(|odb| odb.read_header(entry.id()))
            .map_err(git_error)?;
        if size as u64 > MAX_CONFIG_BYTES {
            return Err(read_error(too_large()));
        }
        let blob = entry
            .to_object(&repo)
            .and_then(|o| o.peel_to_blob())
            .map_err(git_error)?;
        let text = std::str::from_utf8(blob.content()).map_err(|e| read_error(e.into()))?;
        Self::parse(text, &origin, Owner::Repository).map(Some)
    }

    /// The user's config file ([`user_config_path`]), when there is one.
    pub(crate) fn read_user(
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, ConfigError> {
        match user_config_path(env) {
            Some(path) => Self::read_optional(&path, Owner::User),
            None => Ok(None),
        }
    }
}

/// The largest config file read: far above any real one, and a bound on what a file
/// from a repository can make Redline hold.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

fn too_large() -> ConfigReadError {
    ConfigReadError::TooLarge {
        limit_kib: MAX_CONFIG_BYTES / 1024,
    }
}

/// The text of the file at `path`, read up to [`MAX_CONFIG_BYTES`] (a file that grows while
/// it is read is cut there and refused).
fn read_capped(path: &Path) -> Result<String, ConfigReadError> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|e| e.utf8_error().into())
}

/// The parts of a dotted key; quoted parts may hold dots.
fn key_path(key: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut quoted = false;
    for c in key.chars() {
        match c {
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(String::new()),
            c => parts.last_mut().into_iter().for_each(|p| p.push(c)),
        }
    }
    parts
}

/// `$XDG_CONFIG_HOME/redline/config.toml` (an absolute `XDG_CONFIG_HOME` only), else
/// `$HOME/.config/redline/config.toml`; `None` without either.
pub(crate) fn user_config_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let absolute = |name: &str| env(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let config_home =
        absolute("XDG_CONFIG_HOME").or_else(|| absolute("HOME").map(|h| h.join(".config")))?;
    Some(config_home.join("redline").join("config.toml"))
}

/// The settings of both files: the repository's over the user's, key by key (tables
/// such as `[prompts]` are merged, arrays replaced).
pub(crate) fn merge_sources(
    user: Option<&ConfigSource>,
    repo: Option<&ConfigSource>,
) -> Result<FileConfig, ConfigError> {
    let mut merged = toml::Table::new();
    let mut origins = Vec::new();
    for source in [user, repo].into_iter().flatten() {
        merge_table(&mut merged, &source.table);
        origins.push(source.origin.as_str());
    }
    merged
        .try_into()
        .map_err(|e: toml::de::Error| ConfigError::Invalid {
            origin: origins.join(" and "),
            // A merged table has no source text: the message names the key, not a line.
            message: e.message().trim_end().to_string(),
        })
}

fn merge_table(into: &mut toml::Table, over: &toml::Table) {
    for (key, value) in over {
        match (into.get_mut(key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(over_inner)) => {
                merge_table(inner, over_inner)
            }
            _ => {
                into.insert(key.clone(), value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_sources_lose_user_only_keys_and_say_so() {
        let text = "provider = \"anthropic\"\nbase_url = \"http://attacker/v1\"\nmodel = \"m\"\n";
        let repo = ConfigSource::parse(text, ".redline.toml", Owner::Repository).unwrap();
        assert_eq!(repo.ignored_keys(), ["provider", "base_url"]);
        let warnings = repo.warnings().join("\n");
        assert!(
            warnings.contains("`base_url`") && warnings.contains("`provider`"),
            "{warnings}"
        );
        let merged = merge_sources(None, Some(&repo)).unwrap();
        assert_eq!(merged.base_url, None);
        assert_eq!(merged.provider, None);
        assert_eq!(merged.model.as_deref(), Some("m"));

        let user = ConfigSource::parse(text, "config.toml", Owner::User).unwrap();
        assert!(user.ignored_keys().is_empty());
        let merged = merge_sources(Some(&user), Some(&repo)).unwrap();
        assert_eq!(merged.base_url.as_deref(), Some("http://attacker/v1"));
    }

    #[test]
    fn repository_settings_win_key_by_key() {
        let user = ConfigSource::parse(
            "model = \"user-model\"\nmax_steps = 7\n[prompts]\nsystem = \"user system\"\n[reflection]\ntarget = 9.0\n",
            "user",
            Owner::User,
        )
        .unwrap();
        let repo = ConfigSource::parse(
            "model = \"repo-model\"\n[reflection]\nmax_rounds = 2\n",
            "repo",
            Owner::Repository,
        )
        .unwrap();
        let merged = merge_sources(Some(&user), Some(&repo)).unwrap();
        assert_eq!(merged.model.as_deref(), Some("repo-model"));
        assert_eq!(merged.max_steps, Some(7));
        assert_eq!(merged.reflection.max_rounds, 2);
        assert_eq!(merged.reflection.target, 9.0);
        assert_eq!(
            merged.prompts,
            FileConfig::parse("[prompts]\nsystem = \"user system\"\n", "t")
                .unwrap()
                .prompts
        );
    }

    /// The committed file (what `redline serve` and the Action read) and the work tree's
    /// both lose the keys when merged.
    #[test]
    fn committed_repository_files_lose_user_only_keys() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "base_url = \"http://attacker/v1\"\nprovider = \"anthropic\"\ninstructions = \"be brief\"\n",
        )
        .unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new(CONFIG_FILE)).unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "c", &tree, &[])
            .unwrap();
        let committed =
            ConfigSource::read_at_commit(dir.path(), "HEAD", Path::new(CONFIG_FILE)).unwrap();
        let file = merge_sources(None, committed.as_ref()).unwrap();
        assert_eq!((file.base_url, file.provider), (None, None));
        assert_eq!(file.instructions.as_deref(), Some("be brief"));
        let worktree = ConfigSource::read_worktree(dir.path()).unwrap();
        let file = merge_sources(None, worktree.as_ref()).unwrap();
        assert_eq!((file.base_url, file.provider), (None, None));
    }

    #[test]
    fn user_config_path_prefers_an_absolute_xdg_config_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            user_config_path(&env(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")])),
            Some(PathBuf::from("/x/redline/config.toml"))
        );
        assert_eq!(
            user_config_path(&env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.config/redline/config.toml"))
        );
        assert_eq!(user_config_path(&env(&[])), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_work_tree_file_links_only_inside_the_repository() {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.txt");
        std::fs::write(&secret, "db_password = \"hunter2-SECRETLINE\"\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join(CONFIG_FILE);
        for target in [secret.as_path(), Path::new("/dev/zero")] {
            let _ = std::fs::remove_file(&config);
            std::os::unix::fs::symlink(target, &config).unwrap();
            let err = ConfigSource::read_worktree(dir.path())
                .unwrap_err()
                .to_string();
            assert!(err.contains("outside the repository"), "{err}");
            assert!(!err.contains("hunter2"), "{err}");
        }
        std::fs::write(dir.path().join("shared.toml"), "model = \"m\"\n").unwrap();
        let _ = std::fs::remove_file(&config);
        std::os::unix::fs::symlink("shared.toml", &config).unwrap();
        let linked = ConfigSource::read_worktree(dir.path()).unwrap().unwrap();
        assert!(linked.has_key("model"));
    }

    #[cfg(unix)]
    #[test]
    fn devices_pipes_and_huge_files_are_refused_without_reading_them_whole() {
        let err = ConfigSource::read_file(Path::new("/dev/zero"), Owner::Repository)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a regular file"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let huge = dir.path().join("huge.toml");
        let line = "# padding padding padding padding padding padding padding padding\n";
        std::fs::write(&huge, line.repeat(20_000)).unwrap();
        let err = ConfigSource::read_file(&huge, Owner::User)
            .unwrap_err()
            .to_string();
        assert!(err.contains("larger than 1024 KiB"), "{err}");
    }

    #[test]
    fn directories_and_out_of_range_values_are_errors_naming_the_cause() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(CONFIG_FILE)).unwrap();
        let err = ConfigSource::read_worktree(dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("directory"), "{err}");
        assert_eq!(
            ConfigSource::read_worktree(&dir.path().join("none")).unwrap(),
            None
        );
        #[cfg(unix)]
        {
            let linked = dir.path().join("linked");
            std::fs::create_dir(&linked).unwrap();
            std::os::unix::fs::symlink("/nonexistent/redline.toml", linked.join(CONFIG_FILE))
                .unwrap();
            assert!(ConfigSource::read_worktree(&linked).is_err());
        }
        for (text, key) in [
            ("temperature = 99.0", "temperature"),
            ("max_output_tokens = 0", "max_output_tokens"),
            ("context_window = 0", "context_window"),
            ("max_steps = 0", "max_steps"),
            ("keep_tool_results = 0", "keep_tool_results"),
            ("intent_budget = 99999", "intent_budget"),
            ("[reflection]\ntarget = 11.0", "reflection.target"),
        ] {
            let err = ConfigSource::parse(text, "f.toml", Owner::User)
                .unwrap_err()
                .to_string();
            assert!(err.contains(key) && err.contains("f.toml"), "{text}: {err}");
        }
    }
}
