//! GitHub's steps of the thread-answer pipeline ([`crate::server::pipeline::answer`]): a review
//! comment is answered through its App installation (a comment without one is not
//! answered), the cheap checks are [`crate::github::thread::gate`]'s (read access, the
//! thread by its first comment), answers go in the thread of the first comment, the pull
//! request is read as GitHub has it when the answer needs a checkout, and claims, counts
//! and dismissals are kept under `owner/name`.

use async_trait::async_trait;

use super::runner::{GitHubChange, GitHubSteps, ReviewRunner};
use crate::forge::thread::{Gate, ThreadComment};
use crate::forge::{Forge, ForgeKind};
use crate::github::thread::gate;
use crate::github::{GitHubClient, GitHubPull};
use crate::queue::{JobError, Queue};
use crate::server::ThreadCommentHook;
use crate::server::pipeline::MirrorSource;
use crate::server::pipeline::answer::{AnswerError, AnswerSteps, AnswerWords, answer_hook};

/// The hook that answers review comments with `runner`'s checkout, model and settings,
/// recording claims and dismissals in `queue`.
pub(crate) fn thread_comment_hook(
    runner: std::sync::Arc<ReviewRunner>,
    queue: Queue,
) -> ThreadCommentHook {
    answer_hook(runner, queue)
}

/// A review comment and the installation client that answers it.
pub(crate) struct GitHubComment {
    /// The comment.
    comment: ThreadComment,
    /// Its installation.
    installation_id: u64,
    /// The installation's client.
    client: GitHubClient,
}

#[async_trait]
impl AnswerSteps for GitHubSteps {
    type Delivered = ThreadComment;
    type Note = GitHubComment;
    type Change = GitHubChange;

    const FORGE: ForgeKind = ForgeKind::GitHub;
    const WORDS: AnswerWords = AnswerWords {
        comment: "review comment",
        thread: "thread",
    };

    fn delivered_id(delivered: &ThreadComment) -> u64 {
        delivered.comment_id
    }

    async fn open(&self, comment: ThreadComment) -> Result<Option<GitHubComment>, AnswerError> {
        let Some(installation_id) = comment.installation_id else {
            return Ok(None);
        };
        let client = self.auth.installation_client(installation_id);
        Ok(Some(GitHubComment {
            comment,
            installation_id,
            client,
        }))
    }

    fn comment(note: &GitHubComment) -> &ThreadComment {
        &note.comment
    }

    fn key(note: &GitHubComment) -> String {
        format!("{}/{}", note.comment.owner, note.comment.repo)
    }

    fn thread_id(note: &GitHubComment) -> String {
        note.comment.root_id.to_string()
    }

    async fn gate(&self, note: &mut GitHubComment) -> Result<Gate, AnswerError> {
        let gate = gate(&note.client, &note.comment).await;
        gate.map_err(AnswerError::Thread)
    }

    async fn change(&self, note: &GitHubComment) -> Result<GitHubChange, AnswerError> {
        let comment = &note.comment;
        let (owner, repo) = (comment.owner.as_str(), comment.repo.as_str());
        let client = note.client.clone();
        let read = GitHubChange::read(
            client,
            note.installation_id,
            (owner, repo),
            comment.pr_number,
        );
        read.await.map_err(|e| AnswerError::Pull(e.into()))
    }

    fn seam<'a>(
        &'a self,
        note: &'a GitHubComment,
        change: Option<&'a GitHubChange>,
    ) -> Box<dyn Forge + 'a> {
        let comment = &note.comment;
        match change {
            Some(change) => Box::new(change.seam(comment.pr_number)),
            None => Box::new(GitHubPull::at(
                &note.client,
                &comment.owner,
                &comment.repo,
                comment.pr_number,
            )),
        }
    }

    async fn mirror(
        &self,
        note: &GitHubComment,
        change: &GitHubChange,
    ) -> Result<MirrorSource, JobError> {
        change.mirror(&self.auth, note.comment.pr_number).await
    }

    fn revisions(change: &GitHubChange) -> (&str, &str) {
        change.revisions()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::chain;
    use crate::github::GitHubError;

    #[test]
    fn a_failed_checkout_keeps_github_s_answer_in_the_chain() {
        let refused = GitHubError::Api {
            status: 404,
            method: "GET".into(),
            path: "/repos/o/r/pulls/1".into(),
            message: "Not Found".into(),
        };
        let error = AnswerError::Checkout(crate::server::github::runner::github_error(refused));
        let text = chain(&error);
        assert!(
            text.starts_with("could not check out the pull request: "),
            "{text}"
        );
        assert!(
            text.contains("GitHub answered 404 to GET /repos/o/r/pulls/1: Not Found"),
            "{text}"
        );
        let mut causes =
            std::iter::successors(Some(&error as &dyn std::error::Error), |e| e.source());
        assert!(causes.any(|cause| cause.downcast_ref::<GitHubError>().is_some()));
    }
}
