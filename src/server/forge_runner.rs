//! The job runner of `redline serve`: each job goes to its forge's pipeline
//! ([`super::pipeline`], with [`super::github::runner`]'s or [`super::gitlab::runner`]'s
//! steps). Kept apart from the pipeline, which knows no forge.

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::github::runner::ReviewRunner;
use super::gitlab::runner::GitLabRunner;
use crate::forge::ForgeKind;
use crate::queue::{Job, JobError, JobRunner, RunOutcome};

/// Hands each job to its forge's pipeline; a job of a forge the server was not set up for
/// fails for good (its settings are missing, a retry cannot help).
pub struct ForgeRunner {
    /// GitHub's pipeline, when the App is configured.
    pub github: Option<Arc<ReviewRunner>>,
    /// GitLab's pipeline, when GitLab is configured.
    pub gitlab: Option<Arc<GitLabRunner>>,
}

#[async_trait]
impl JobRunner for ForgeRunner {
    async fn run(&self, job: &Job, cancel: CancellationToken) -> Result<RunOutcome, JobError> {
        let runner: Option<&dyn JobRunner> = match job.forge {
            ForgeKind::GitHub => self.github.as_deref().map(|r| r as &dyn JobRunner),
            ForgeKind::GitLab => self.gitlab.as_deref().map(|r| r as &dyn JobRunner),
        };
        match runner {
            Some(runner) => runner.run(job, cancel).await,
            None => Err(JobError::Permanent(
                format!("this server is not set up for {} jobs", job.forge).into(),
            )),
        }
    }
}
