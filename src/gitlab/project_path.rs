//! Which full path a GitLab project id has (`GET /projects/:id`), so that a delivery
//! naming project A's id (whose token it carries) and project B's path acts on nothing of
//! B's: it is refused before it is stored, and supersedes none of B's jobs.
//!
//! Invariants: a path is taken as the project's only when GitLab said so for that id; a
//! remembered path that differs is asked again once (the project may have moved); at most
//! [`MAX_REMEMBERED`] projects are remembered (then the memory starts afresh).

use std::collections::HashMap;
use std::sync::Mutex;

use super::client::{GitLabClient, GitLabError};

/// Projects whose path is remembered at most.
const MAX_REMEMBERED: usize = 4096;

/// Project paths by id, as GitLab gave them.
#[derive(Debug)]
pub(crate) struct ProjectPaths {
    client: GitLabClient,
    known: Mutex<HashMap<u64, String>>,
}

impl ProjectPaths {
    /// Paths read through `client`.
    pub(crate) fn new(client: GitLabClient) -> ProjectPaths {
        ProjectPaths {
            client,
            known: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `path` is project `id`'s full path.
    pub(crate) async fn is_path_of(&self, id: u64, path: &str) -> Result<bool, GitLabError> {
        if self.remembered(id).as_deref() == Some(path) {
            return Ok(true);
        }
        let project = self.client.get_json(&format!("/projects/{id}")).await;
        let project = match project {
            Ok(project) => project,
            Err(error) if error.status() == Some(404) => return Ok(false),
            Err(error) => return Err(error),
        };
        let Some(actual) = project["path_with_namespace"].as_str() else {
            return Ok(false);
        };
        let matches = actual == path;
        self.remember(id, actual.to_string());
        Ok(matches)
    }

    fn remembered(&self, id: u64) -> Option<String> {
        let known = self
            .known
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        known.get(&id).cloned()
    }

    fn remember(&self, id: u64, path: String) {
        let mut known = self
            .known
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if known.len() >= MAX_REMEMBERED {
            known.clear();
        }
        known.insert(id, path);
    }
}
