//! GitLab's steps of `redline serve`'s job pipeline ([`crate::server::pipeline`]): a merge
//! request is read as GitLab has it now, a `/redline review` note runs only for a
//! commenter with the Developer role or above, the mirror lives under `<cache>/@gitlab/`
//! and is fetched with the server's token, dismissals are kept under [`gitlab_key`], and a
//! failure is told in a note. Its state is shown as the head's commit status
//! ([`crate::server::check_status`]).
//!
//! Invariants: positions name the merge request's `diff_refs` as GitLab has them when the
//! job runs (a head GitLab has moved past is reviewed as GitLab has it now; a newer push
//! queues its own job anyway); dismissals and thread caps are kept under the key
//! [`gitlab_key`], so a GitHub repository of the same name never shares them; mirrors
//! live under `<cache>/@gitlab/`, a name no GitHub owner can have.

use std::path::PathBuf;

use async_trait::async_trait;

use crate::forge::PublishConfig;
use crate::forge::command::{Command, parse_command};
use crate::forge::{Forge, ForgeKind};
use crate::gitlab::discussion::clone_url;
use crate::gitlab::merge_request::{
    DiffRefs, MergeRequest, fetch_merge_request, merge_request_path,
};
use crate::gitlab::{GitLabClient, GitLabError, GitLabMergeRequest, path_segment};
use crate::llm::Secret;
use crate::queue::{Job, JobError, ReviewTrigger};
use crate::server::pipeline::{JobSteps, MirrorSource, Pipeline, publish_error};

/// Runs GitLab merge request jobs.
pub type GitLabRunner = Pipeline<GitLabSteps>;

/// GitLab's steps of a review job: its API client and token.
#[derive(Clone)]
pub struct GitLabSteps {
    /// The API client (`GITLAB_API_URL`, `GITLAB_TOKEN`).
    pub(crate) client: GitLabClient,
    /// The token, for fetching over HTTPS.
    pub(crate) token: Secret,
}

/// A merge request as GitLab has it when the job runs, with its diff's SHAs.
pub(crate) struct GitLabChange {
    /// The project's full path.
    pub(crate) project: String,
    /// Its iid.
    pub(crate) iid: u64,
    /// The merge request.
    pub(crate) mr: MergeRequest,
}

impl GitLabChange {
    /// The merge request as the forge seam has it.
    pub(crate) fn seam<'a>(&'a self, client: &'a GitLabClient) -> GitLabMergeRequest<'a> {
        GitLabMergeRequest {
            client,
            project: &self.project,
            iid: self.iid,
            title: &self.mr.title,
            description: &self.mr.description,
            diff_refs: self.mr.diff_refs.as_ref(),
        }
    }

    /// Its diff's SHAs; none while GitLab is still preparing the diff (a retry waits for it).
    pub(crate) fn refs(&self) -> Result<DiffRefs, JobError> {
        self.mr.diff_refs.clone().ok_or_else(|| {
            let (project, iid) = (&self.project, self.iid);
            JobError::Retryable(format!("GitLab has no diff of {project}!{iid} yet").into())
        })
    }
}

/// A merge request with its diff, ready to review.
pub(crate) struct DiffedChange {
    /// The merge request.
    change: GitLabChange,
    /// Its diff's SHAs.
    refs: DiffRefs,
}

impl GitLabSteps {
    /// Merge request `iid` of `project` as GitLab has it now.
    pub(crate) async fn read(&self, project: &str, iid: u64) -> Result<GitLabChange, GitLabError> {
        let mr = fetch_merge_request(&self.client, project, iid).await?;
        Ok(GitLabChange {
            project: project.to_string(),
            iid,
            mr,
        })
    }

    /// Where the merge request's mirror is and how it is fetched.
    pub(crate) async fn mirror_of(&self, project: &str) -> Result<MirrorSource, JobError> {
        let clone_url = clone_url(&self.client, project)
            .await
            .map_err(gitlab_error)?
            .ok_or_else(|| {
                JobError::Permanent(format!("project {project} has no clone URL").into())
            })?;
        Ok(MirrorSource {
            path: PathBuf::from("@gitlab").join(mirror_dir_name(project)),
            clone_url,
            token: self.token.clone(),
        })
    }
}

#[async_trait]
impl JobSteps for GitLabSteps {
    type Change = DiffedChange;

    const FORGE: ForgeKind = ForgeKind::GitLab;
    const NOUN: &'static str = "merge request";

    async fn open(&self, job: &Job) -> Result<Option<DiffedChange>, JobError> {
        let read = self.read(&job.repo_full_name, job.pr_number);
        let change = read.await.map_err(gitlab_error)?;
        if !may_request(job, &change.seam(&self.client)).await? {
            return Ok(None);
        }
        let refs = change.refs()?;
        Ok(Some(DiffedChange { change, refs }))
    }

    fn revisions(change: &DiffedChange) -> (&str, &str) {
        (&change.refs.base_sha, &change.refs.head_sha)
    }

    fn seam<'a>(&'a self, _job: &'a Job, change: &'a DiffedChange) -> Box<dyn Forge + 'a> {
        Box::new(change.change.seam(&self.client))
    }

    async fn mirror(&self, job: &Job, _change: &DiffedChange) -> Result<MirrorSource, JobError> {
        self.mirror_of(&job.repo_full_name).await
    }

    fn key(job: &Job) -> String {
        gitlab_key(&job.repo_full_name)
    }

    /// A note on the merge request.
    async fn post_failure(&self, job: &Job, text: &str, publish: &PublishConfig) {
        let path = format!(
            "{}/notes",
            merge_request_path(&job.repo_full_name, job.pr_number)
        );
        let body = serde_json::json!({ "body": text });
        let interval = publish.min_write_interval;
        let posted = self
            .client
            .write_json(reqwest::Method::POST, &path, &body, interval);
        if let Err(error) = posted.await {
            tracing::warn!(job = %job.id, %error, "could not post a note on the merge request");
        }
    }
}

/// Whether the job may run: a `/redline review` note needs the Developer role or above.
async fn may_request(job: &Job, forge: &GitLabMergeRequest<'_>) -> Result<bool, JobError> {
    let trigger = job.trigger().ok();
    let commenter = match trigger {
        Some(ReviewTrigger::Command { comment_id, .. }) => {
            match command_author(forge, comment_id).await? {
                Ok(author) => author,
                Err(reason) => {
                    tracing::info!(job = %job.id, note = comment_id, %reason, "review request ignored");
                    return Ok(false);
                }
            }
        }
        Some(trigger) => match trigger.into_requester() {
            Some(requester) => requester,
            None => return Ok(true),
        },
        None => return Ok(true),
    };
    let allowed = forge.may_write(&commenter).await.map_err(publish_error)?;
    if !allowed {
        tracing::info!(job = %job.id, commenter = %crate::text::logged(&commenter),
            "review requested without the Developer role; ignored");
    }
    Ok(allowed)
}

/// The key GitLab project `project`'s dismissals, claimed notes and answer counts are kept
/// under (GitHub's are kept under `owner/name`, which has no colon).
pub(crate) fn gitlab_key(project: &str) -> String {
    format!("gitlab:{project}")
}

/// The longest mirror directory name (file systems take 255 bytes).
const MAX_MIRROR_NAME: usize = 200;

/// The directory name of `project`'s mirror: its path made one segment, and when that is
/// too long, a readable prefix of it and a hash of the whole path (at most
/// [`MAX_MIRROR_NAME`] bytes either way; distinct paths keep distinct names).
pub(crate) fn mirror_dir_name(project: &str) -> String {
    let whole = format!("{}.git", path_segment(project));
    if whole.len() <= MAX_MIRROR_NAME {
        return whole;
    }
    use sha2::{Digest, Sha256};
    let hash = hex::encode(Sha256::digest(project.as_bytes()));
    let prefix = crate::text::prefix_at_char_boundary(&whole, MAX_MIRROR_NAME - 64 - 6);
    format!("{prefix}-{hash}.git")
}

/// The author of the `/redline review` note `note_id` as GitLab has it (never the
/// delivery's word), or why it asks nothing: gone, or not such a command.
async fn command_author(
    forge: &GitLabMergeRequest<'_>,
    note_id: u64,
) -> Result<Result<String, &'static str>, JobError> {
    let path = format!(
        "{}/notes/{note_id}",
        merge_request_path(forge.project, forge.iid)
    );
    let note = match forge.client.get_json(&path).await {
        Ok(note) => note,
        Err(error) if error.status() == Some(404) => return Ok(Err("the note does not exist")),
        Err(error) => return Err(gitlab_error(error)),
    };
    let body = note["body"].as_str().unwrap_or_default();
    if !matches!(parse_command(body), Ok(Some(Command::Review { .. }))) {
        return Ok(Err("the note is no review request"));
    }
    match note["author"]["username"].as_str() {
        Some(author) if !author.is_empty() => Ok(Ok(author.to_string())),
        _ => Ok(Err("the note names no author")),
    }
}

/// A GitLab failure as a job error: what a retry cannot mend is permanent.
pub(crate) fn gitlab_error(e: GitLabError) -> JobError {
    match e.status() {
        Some(400) | Some(401) | Some(403) | Some(404) | Some(422) => JobError::Permanent(e.into()),
        _ => JobError::Retryable(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mirror_name_is_short_whatever_the_project_path() {
        assert_eq!(mirror_dir_name("group/app"), "group%2Fapp.git");
        let long = format!("group/{}", "sub-group-name/".repeat(40));
        let name = mirror_dir_name(&long);
        assert!(name.len() <= MAX_MIRROR_NAME, "{}", name.len());
        assert!(name.starts_with("group%2Fsub-group-name") && name.ends_with(".git"));
        assert_ne!(name, mirror_dir_name(&format!("{long}x")));
    }
}
