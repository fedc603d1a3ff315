//! `redline gitlab`: the GitLab CI job of a merge request pipeline. Reads the merge
//! request the pipeline's variables name, reviews what is new in `CI_PROJECT_DIR`
//! (deepening a shallow clone as `redline action` does), publishes discussions and one
//! summary note, and optionally writes a Code Quality report. Exit codes and `--fail-on`
//! are the Action's. The merge request's head gets the commit status `redline` (running,
//! then the review's conclusion; failed when the review fails), as `redline serve` sets it;
//! a status GitLab refuses is a warning, never the job's failure.

use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use tokio_util::sync::CancellationToken;

use super::ci_settings::ci_settings;
use super::review::model_client;
use super::{EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, GitlabArgs, error_message};
use crate::agent::events::EventSink;
use crate::flow;
use crate::flow::pull::{CommitSource, PullCommits, load_commits};
use crate::forge::Forge;
use crate::forge::PublishConfig;
use crate::forge::dismissed::Dismissals;
use crate::forge::publish::last_reviewed_sha;
use crate::forge::status::{ReviewStatus, StatusTarget};
use crate::gitlab::code_quality::code_quality_report;
use crate::gitlab::merge_request::{DiffRefs, MergeRequest, fetch_merge_request};
use crate::gitlab::{GitLabClient, GitLabMergeRequest, api_url_from_env};
use crate::llm::Secret;
use crate::review::render::{Format, render};
use crate::server::check_status::{reviewed, running};
use crate::text::short_sha;

/// Runs `redline gitlab` and returns the exit code.
pub async fn run(args: GitlabArgs) -> i32 {
    match gitlab(args).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", error_message(&error));
            EXIT_ERROR
        }
    }
}

fn required(name: &str) -> anyhow::Result<String> {
    crate::config::env_var(name).ok_or_else(|| {
        anyhow!("{name} is not set (is this running in a GitLab CI merge request pipeline?)")
    })
}

async fn gitlab(args: GitlabArgs) -> anyhow::Result<i32> {
    let Some(iid) = merge_request_iid()? else {
        println!(
            "Redline: nothing to review (not a merge request pipeline: CI_MERGE_REQUEST_IID is not set)"
        );
        return Ok(EXIT_OK);
    };
    check_variables()?;
    let project = required("CI_PROJECT_ID")?;
    let client = client_from_env()?;
    let merge_request = fetch_merge_request(&client, &project, iid)
        .await
        .map_err(|error| match error.status() {
            // The token is what GitLab refused: say which one and what it needs.
            Some(401) => anyhow::Error::new(error).context(
                "GitLab refused GITLAB_TOKEN (401 Unauthorized): it must be a project or group access token with the `api` scope, not expired nor revoked",
            ),
            _ => error.into(),
        })?;
    let (base, head) = pipeline_revisions(&merge_request)?;
    let forge = GitLabMergeRequest {
        client: &client,
        project: &project,
        iid,
        title: &merge_request.title,
        description: &merge_request.description,
        diff_refs: head_diff_refs(&merge_request, &head),
    };
    let last = last_reviewed_sha(&forge).await?;
    if last.as_deref() == Some(head.as_str()) {
        println!("Redline: {} was already reviewed", short_sha(&head));
        return Ok(EXIT_OK);
    }
    let commits = project_commits(&base, &head, last.as_deref()).await?;
    let status = CiStatus {
        forge: &forge,
        head: &head,
    };
    let reviewed = review_and_publish(&args, &forge, &head, &commits, &status).await;
    match &reviewed {
        Ok((_, shown)) => status.show(shown).await,
        Err(error) => {
            let reason = error_message(error);
            let failed = ReviewStatus::Failed {
                reason,
                timed_out: false,
            };
            status.show(&failed).await;
        }
    }
    reviewed.map(|(code, _)| code)
}

/// The commit status `redline` of the pipeline's commit.
struct CiStatus<'a> {
    forge: &'a GitLabMergeRequest<'a>,
    head: &'a str,
}

impl CiStatus<'_> {
    /// Sets the status; a refusal is a warning in the job's log.
    async fn show(&self, status: &ReviewStatus) {
        let target = StatusTarget {
            head: self.head,
            job: "gitlab-ci",
            id: None,
        };
        if let Err(error) = self.forge.show_status(&target, status).await {
            let hint = if error.is_denied() {
                " (GITLAB_TOKEN needs the Developer role or above)"
            } else {
                ""
            };
            println!("Redline: the commit status `redline` was not set{hint}: {error}");
        }
    }
}

/// The merge request's iid from `CI_MERGE_REQUEST_IID`; none outside a merge request pipeline.
fn merge_request_iid() -> anyhow::Result<Option<u64>> {
    let Some(iid) = crate::config::env_var("CI_MERGE_REQUEST_IID") else {
        return Ok(None);
    };
    iid.trim()
        .parse()
        .map(Some)
        .map_err(|_| anyhow!("CI_MERGE_REQUEST_IID is not a number: {iid}"))
}

/// A client of the job's GitLab API, with the token the job was given.
/// Every variable the job needs that is missing, named at once (not one run at a time).
fn check_variables() -> anyhow::Result<()> {
    let mut missing = Vec::new();
    if crate::config::env_var("CI_PROJECT_ID").is_none() {
        missing.push("CI_PROJECT_ID");
    }
    if api_url_from_env().is_none() {
        missing.push("CI_API_V4_URL (or GITLAB_API_URL)");
    }
    if crate::config::env_var("GITLAB_TOKEN").is_none() {
        missing.push("GITLAB_TOKEN (a project or group access token with the `api` scope)");
    }
    match missing.as_slice() {
        [] => Ok(()),
        [one] => Err(anyhow!(
            "{one} is not set (is this running in a GitLab CI merge request pipeline?)"
        )),
        several => Err(anyhow!(
            "these variables are not set: {} (is this running in a GitLab CI merge request pipeline?)",
            several.join(", ")
        )),
    }
}

fn client_from_env() -> anyhow::Result<GitLabClient> {
    let api_url = api_url_from_env()
        .ok_or_else(|| anyhow!("CI_API_V4_URL (or GITLAB_API_URL) is not set"))?;
    let token = Secret::new(
        required("GITLAB_TOKEN")
            .context("GITLAB_TOKEN must be a project or group access token with the `api` scope")?,
    );
    Ok(GitLabClient::new(&api_url, token)?)
}

/// The base and head to review: the pipeline's variables, else the merge request's diff.
fn pipeline_revisions(merge_request: &MergeRequest) -> anyhow::Result<(String, String)> {
    let refs = merge_request.diff_refs.as_ref();
    let head = crate::config::env_var("CI_COMMIT_SHA")
        .or_else(|| refs.map(|r| r.head_sha.clone()))
        .ok_or_else(|| anyhow!("CI_COMMIT_SHA is not set"))?;
    let base = crate::config::env_var("CI_MERGE_REQUEST_DIFF_BASE_SHA")
        .or_else(|| refs.map(|r| r.base_sha.clone()))
        .ok_or_else(|| anyhow!("CI_MERGE_REQUEST_DIFF_BASE_SHA is not set"))?;
    Ok((base, head))
}

/// The merge request's diff SHAs when its diff is of `head`. Positions name GitLab's diff
/// of the merge request's head: when the pipeline runs on another commit (a newer push),
/// lines of this diff could land on other code there, so the findings go to the summary.
fn head_diff_refs<'a>(merge_request: &'a MergeRequest, head: &str) -> Option<&'a DiffRefs> {
    let refs = merge_request
        .diff_refs
        .as_ref()
        .filter(|r| r.head_sha == head);
    if refs.is_none() {
        println!(
            "Redline: the pipeline's commit {} is not the merge request's head; the findings go to the summary note",
            short_sha(head)
        );
    }
    refs
}

/// Reviews the merge request, writes the Code Quality report when asked, publishes, and
/// returns the job's exit code and the review's status.
async fn review_and_publish(
    args: &GitlabArgs,
    forge: &GitLabMergeRequest<'_>,
    head: &str,
    commits: &PullCommits,
    status: &CiStatus<'_>,
) -> anyhow::Result<(i32, ReviewStatus)> {
    // `local_settings` shows each warning about the config file on stderr, which is the
    // job's log; GitLab reads no workflow commands (GitHub's `::warning::`) from it.
    let mut settings = ci_settings(&args.ci, commits, None, &|_| {})?;
    settings
        .agent
        .set_intent(&flow::pull::pull_intent(forge, commits).await);
    status.show(&running(&settings)).await;
    let model = model_client(&settings.model, &EventSink::discard());
    let report =
        flow::pull::review(model, &settings, commits, CancellationToken::new(), None).await?;
    // Written before publishing, so that the job's artifact is there whatever happens next.
    if let Some(path) = &args.code_quality {
        // Every finding: those anchored on the diff and those only in the summary.
        let all: Vec<_> = report
            .findings
            .iter()
            .chain(&report.unanchored)
            .cloned()
            .collect();
        write_code_quality(path, commits, &all)?;
    }
    let published = flow::pull::publish(
        forge,
        head,
        commits,
        &report,
        &settings,
        &PublishConfig::default(),
        &Dismissals::new(),
    )
    .await;
    print!("{}", render(&report, Format::Markdown));
    let outcome = published.context("publishing the review failed")?;
    println!(
        "Redline: {} discussion(s) posted, {} finding(s) in the summary note",
        outcome.inline_posted, outcome.in_summary
    );
    let code = if report.fails(settings.fail_on) {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    };
    Ok((code, reviewed(commits, &report, &outcome, &settings)))
}

/// The merge request's commits in the job's clone (`CI_PROJECT_DIR`, else the current
/// directory); a shallow clone is deepened from `origin` (whose URL carries the job's
/// token in GitLab CI) until base and head meet.
async fn project_commits(
    base: &str,
    head: &str,
    last: Option<&str>,
) -> anyhow::Result<PullCommits> {
    let dir = project_dir()?;
    let (base, head, last) = (base.to_string(), head.to_string(), last.map(str::to_string));
    // git's work (a fetch may deepen the clone), off the async workers.
    tokio::task::spawn_blocking(move || {
        let root = crate::repo::discover(&dir)?;
        let source = CommitSource::Checkout {
            root: &root,
            remote: "origin",
        };
        Ok(load_commits(source, &base, &head, last.as_deref(), None)?)
    })
    .await?
}

/// Writes every finding as GitLab Code Quality JSON to `path`.
fn write_code_quality(
    path: &Path,
    commits: &PullCommits,
    findings: &[crate::review::finding::Finding],
) -> anyhow::Result<()> {
    let report = code_quality_report(findings, |f| flow::pull::finding_fingerprint(commits, f));
    let text = serde_json::to_string_pretty(&report)?;
    // The job's clone is the repository's content: a link committed at the report's path
    // (or a directory on its way) must not carry the write outside it.
    super::files::write_in_workspace(&project_dir()?, path, &text)
}

/// The job's clone: `CI_PROJECT_DIR`, else the current directory.
fn project_dir() -> anyhow::Result<PathBuf> {
    Ok(crate::config::env_var("CI_PROJECT_DIR")
        .map(PathBuf::from)
        .map_or_else(std::env::current_dir, Ok)?)
}
