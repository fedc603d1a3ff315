//! One pull-request review flow for `redline action` and `redline serve`: get the
//! commits (the Action's checkout, deepened until base and head meet; the App's bare
//! mirror), work out what is new since the last reviewed commit, review it with the
//! resolved [`Settings`], and publish one review through the forge ([`Forge`]: a GitHub
//! pull request's review, or a GitLab merge request's discussions).
//!
//! Invariants: anchors are checked against the whole pull request (merge base to head);
//! only the commits since the last reviewed head are reviewed, and only when that head is
//! an ancestor of the new one (after a force-push the whole pull request is reviewed);
//! both entry points label and filter the change the same way, so the same pull request
//! gets the same model requests and the same published review.
//! Layering: used by `cli` and `server`; uses `agent`, `config`, `forge` (publishing),
//! [`super::checkout`], `repo`; never a forge's module.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::checkout::{ensure_merge_base, mirror};
use crate::agent::{AgentError, Orchestrator};
use crate::config::settings::Settings;
use crate::forge::Forge;
use crate::forge::anchor::anchor_line_text;
use crate::forge::dismissed::Dismissals;
use crate::forge::fingerprint;
use crate::forge::{PublishConfig, PublishError, PublishOutcome, PublishRequest};
use crate::guidelines::GuidelineSource;
use crate::intent::Intent;
use crate::llm::{ChatModel, Secret};
use crate::repo::{RepoView, ResolvedRange, load_change};
use crate::review::diff::ChangeSet;
use crate::review::finding::Finding;
use crate::review::report::ReviewReport;
use crate::text::short_sha;
use crate::tools::Workspace;

/// The summary of a run with nothing new to review.
const NOTHING_NEW: &str = "No reviewable changes since the last review.";

/// Where a pull request's commits come from.
#[derive(Debug, Clone, Copy)]
pub enum CommitSource<'a> {
    /// The Action's checkout (possibly shallow), fetched from `remote`.
    Checkout {
        /// The work tree.
        root: &'a Path,
        /// The remote to deepen from (`origin`).
        remote: &'a str,
    },
    /// The App's bare mirror of the repository, fetched from `clone_url`.
    Mirror {
        /// The mirror.
        path: &'a Path,
        /// Where GitHub says the repository is.
        clone_url: &'a str,
    },
}

/// Why the commits could not be had.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// Fetching failed (a later attempt may succeed).
    #[error("fetching the pull request's commits failed")]
    Fetch(#[source] super::checkout::CheckoutError),
    /// The commits are there but cannot be reviewed.
    #[error("the pull request's commits cannot be reviewed")]
    Commits(#[source] crate::repo::RepoError),
}

/// A pull request's commits, ready to review.
#[derive(Debug, Clone)]
pub struct PullCommits {
    /// The repository they are in.
    pub root: PathBuf,
    /// The head's files.
    pub view: RepoView,
    /// The whole pull request: merge base to head (anchors are checked against it).
    pub pr_changes: ChangeSet,
    /// What is reviewed: from the last reviewed head, else the merge base, to head.
    pub changes: ChangeSet,
    /// The first commit of what is reviewed (exclusive).
    pub from: String,
    /// The pull request's base commit: where the project guidelines are read.
    pub base: String,
}

/// Gets the commits of `base..head` and the change since `last` (blocking: git).
pub fn load_commits(
    source: CommitSource<'_>,
    base: &str,
    head: &str,
    last: Option<&str>,
    token: Option<&Secret>,
) -> Result<PullCommits, FlowError> {
    let fetch = FlowError::Fetch;
    let (root, merge_base) = match source {
        CommitSource::Checkout { root, remote } => (
            root.to_path_buf(),
            ensure_merge_base(root, remote, base, head, token).map_err(fetch)?,
        ),
        CommitSource::Mirror { path, clone_url } => {
            mirror(path, clone_url, &[base, head], token).map_err(fetch)?;
            (path.to_path_buf(), merge_base_of(path, base, head)?)
        }
    };
    let from = last
        .filter(|sha| is_ancestor(&root, sha, head))
        .map_or_else(|| merge_base.clone(), str::to_string);
    let range = |from: &str| ResolvedRange {
        base: from.to_string(),
        head: head.to_string(),
        base_label: format!("{}..{}", short_sha(from), short_sha(head)),
    };
    let commits_error = FlowError::Commits;
    let (view, pr_changes) =
        load_change(&root, &range(&merge_base), false).map_err(commits_error)?;
    let (_, changes) = load_change(&root, &range(&from), false).map_err(commits_error)?;
    Ok(PullCommits {
        root,
        view,
        pr_changes,
        changes,
        from,
        base: base.to_string(),
    })
}

fn merge_base_of(root: &Path, base: &str, head: &str) -> Result<String, FlowError> {
    let commits = |e: git2::Error| FlowError::Commits(e.into());
    let repo = git2::Repository::open(root).map_err(commits)?;
    let oid = |s: &str| git2::Oid::from_str(s).map_err(commits);
    Ok(repo
        .merge_base(oid(base)?, oid(head)?)
        .map_err(commits)?
        .to_string())
}

fn is_ancestor(root: &Path, ancestor: &str, head: &str) -> bool {
    let Ok(repo) = git2::Repository::open(root) else {
        return false;
    };
    match (git2::Oid::from_str(ancestor), git2::Oid::from_str(head)) {
        (Ok(a), Ok(h)) => repo.graph_descendant_of(h, a).unwrap_or(false),
        _ => false,
    }
}

/// What the author says the pull request does: its title, description and linked issues
/// ([`Forge::intent`]), and the messages of the reviewed commits (from the last reviewed
/// head, else the merge base; read from git, so the same on every forge). Never fails:
/// what cannot be read is left out.
pub(crate) async fn pull_intent(forge: &dyn Forge, commits: &PullCommits) -> Intent {
    let head = commits.changes.head.clone().unwrap_or_default();
    let (root, from) = (commits.root.clone(), commits.from.clone());
    let messages =
        tokio::task::spawn_blocking(move || crate::repo::commit_messages(&root, &from, &head))
            .await;
    let messages = match messages {
        Ok(Ok(messages)) => messages,
        Ok(Err(error)) => {
            tracing::warn!(%error, "commit messages not read");
            Vec::new()
        }
        Err(error) => {
            tracing::warn!(%error, "commit messages not read");
            Vec::new()
        }
    };
    forge.intent(messages).await
}

/// Reviews what is new (the `include` globs applied); nothing new is no model call.
/// With a `recorder`, the run is written to (and continued from) its transcript. What the
/// author says the change does is `settings.agent.intent` ([`pull_intent`], set by the caller
/// before the transcript's header is written).
pub async fn review(
    model: Arc<dyn ChatModel>,
    settings: &Settings,
    commits: &PullCommits,
    cancel: CancellationToken,
    recorder: Option<Arc<crate::agent::transcript::Recorder>>,
) -> Result<ReviewReport, AgentError> {
    let mut changes = commits.changes.clone();
    settings.include.apply(&mut changes);
    if changes.files.is_empty() {
        return Ok(ReviewReport {
            summary: NOTHING_NEW.into(),
            ..ReviewReport::default()
        });
    }
    // The rules come from the base commit, as `.redline.toml` does: a pull request
    // cannot write its own.
    let mut agent = settings.agent.clone();
    let guidelines = base_guidelines(settings, commits, &changes).await;
    crate::guidelines::append_section(&guidelines, &mut agent);
    for omitted in &guidelines.omitted {
        tracing::info!(path = %omitted.path, reason = %omitted.reason, "guideline not used");
    }
    let workspace = Workspace::new(commits.view.clone(), changes);
    let mut orchestrator = Orchestrator::new(model, workspace, agent).with_cancel(cancel);
    if let Some(recorder) = recorder {
        orchestrator = orchestrator.with_recorder(recorder);
    }
    orchestrator.review().await
}

/// The project guidelines at the pull request's base commit for `changes` (git reads
/// run off the async workers: a glob may walk a large tree).
async fn base_guidelines(
    settings: &Settings,
    commits: &PullCommits,
    changes: &ChangeSet,
) -> crate::guidelines::Guidelines {
    let config = settings.guidelines.clone();
    let model = settings.agent.model.clone();
    let (root, base) = (commits.root.clone(), commits.base.clone());
    let changed: Vec<String> = changes.files.iter().map(|f| f.path.clone()).collect();
    let read = tokio::task::spawn_blocking(move || {
        let changed: Vec<&str> = changed.iter().map(String::as_str).collect();
        let source = GuidelineSource::Commit {
            root: &root,
            rev: &base,
        };
        crate::guidelines::load_for_model(&config, source, &changed, &model)
    });
    read.await.unwrap_or_else(|e| {
        tracing::warn!("project guidelines not read: {e}");
        crate::guidelines::Guidelines::default()
    })
}

/// Line `n` of a file at the head of `commits` (for fingerprints).
fn head_line_reader(commits: &PullCommits) -> impl Fn(&str, u32) -> Option<String> + Sync + use<> {
    let view = commits.view.clone();
    move |path: &str, line: u32| {
        let text = view.read_text(path).ok()?;
        text.lines()
            .nth(line.checked_sub(1)? as usize)
            .map(str::to_string)
    }
}

/// The fingerprint `finding`'s comment carries on every forge (the anchor line's text at
/// head, else in the pull request's diff).
pub(crate) fn finding_fingerprint(commits: &PullCommits, finding: &Finding) -> String {
    let head_line_text = head_line_reader(commits);
    let line_text = anchor_line_text(finding, &commits.pr_changes, &head_line_text);
    fingerprint(&finding.path, &line_text, finding.category, &finding.title)
}

/// Publishes `report` with the settings' `max_comments`, `request_changes` and
/// `resolve_outdated` over `base`; `dismissed` findings (the App's database) are not raised.
pub(crate) async fn publish(
    forge: &dyn Forge,
    head_sha: &str,
    commits: &PullCommits,
    report: &ReviewReport,
    settings: &Settings,
    base: &PublishConfig,
    dismissed: &Dismissals,
) -> Result<PublishOutcome, PublishError> {
    let config = PublishConfig {
        max_comments: settings.max_comments,
        request_changes_at: settings.request_changes_at,
        inline_at: settings.inline_at,
        ..base.clone()
    };
    let head_line_text = head_line_reader(commits);
    let request = PublishRequest {
        head_sha,
        findings: &report.findings,
        summary: &report.summary,
        walkthrough: &report.walkthrough,
        stats: Some(&report.stats),
        changes: &commits.pr_changes,
        head_line_text: &head_line_text,
        config: &config,
        reviewed_range: Some((commits.from.clone(), head_sha.to_string())),
        dismissed,
        resolve_outdated: settings.threads.resolve_outdated,
    };
    crate::forge::publish::publish(forge, request).await
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn a_failed_look_up_keeps_git_s_cause() {
        let dir = tempfile::tempdir().unwrap();
        let error = merge_base_of(dir.path(), "HEAD", "HEAD").unwrap_err();
        let FlowError::Commits(cause) = &error else {
            panic!("expected Commits, got {error:?}");
        };
        assert!(matches!(cause, crate::repo::RepoError::Git(_)), "{cause:?}");
        let source = error.source().expect("the cause is kept as the source");
        assert_eq!(source.to_string(), cause.to_string());
    }
}
