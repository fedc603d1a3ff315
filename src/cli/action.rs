//! `redline action`: the GitHub Action step. Reads the workflow's event, reviews
//! the pull request in `GITHUB_WORKSPACE` and publishes one review; on a read-only
//! token (fork pull requests) the findings go to the job summary and annotations.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use tokio_util::sync::CancellationToken;

use super::ci_settings::ci_settings;
use super::review::model_client;
use super::workflow::{
    escape_data, escape_property, is_missing_key, workflow_warning, workspace_commits,
};
use super::{ActionArgs, EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, error_message};
use crate::agent::events::EventSink;
use crate::config::settings::Settings;
use crate::flow;
use crate::flow::pull::PullCommits;
use crate::forge::Forge;
use crate::forge::command::already_reviewed;
use crate::forge::dismissed::Dismissals;
use crate::forge::notice::notice_once;
use crate::forge::publish::last_reviewed_sha;
use crate::forge::thread::ThreadComment;
use crate::forge::{ForgeEvent, IgnoreReason, PublishConfig, PublishError};
use crate::github::{
    GitHubClient, GitHubPull, PullText, api_url_from_env, check_action_event, fetch_pull,
    parse_action_event,
};
use crate::llm::Secret;
use crate::review::finding::{Finding, Severity};
use crate::review::render::{Format, render};
use crate::review::report::ReviewReport;
use crate::text::short_sha;

/// Runs `redline action` and returns the exit code.
pub async fn run(args: ActionArgs) -> i32 {
    match action(args).await {
        Ok(code) => code,
        Err(error) => {
            let message = error_message(&error);
            println!("::error::Redline: {}", escape_data(&message));
            eprintln!("error: {message}");
            EXIT_ERROR
        }
    }
}

/// The pull request to review.
pub(super) struct Target {
    pub(super) owner: String,
    pub(super) repo: String,
    pub(super) number: u64,
    pub(super) base_sha: String,
    pub(super) head_sha: String,
    pub(super) strategy: Option<String>,
    /// The pull request's title and description, as the author wrote them.
    pub(super) title: String,
    pub(super) body: String,
    /// A `/redline review` comment asked for the review (its asker is answered).
    pub(super) requested: bool,
    /// `/redline review --force`: the whole pull request, even when its head was reviewed.
    pub(super) force: bool,
}

pub(super) fn env(name: &str) -> anyhow::Result<String> {
    crate::config::env_var(name)
        .ok_or_else(|| anyhow!("{name} is not set (is this running in a GitHub Actions job?)"))
}

async fn action(args: ActionArgs) -> anyhow::Result<i32> {
    let event_name = env("GITHUB_EVENT_NAME")?;
    let event_path = env("GITHUB_EVENT_PATH")?;
    let text = std::fs::read_to_string(&event_path)
        .with_context(|| format!("cannot read GITHUB_EVENT_PATH {event_path}"))?;
    serde_json::from_str::<serde::de::IgnoredAny>(&text)
        .context("GITHUB_EVENT_PATH is not JSON")?;
    check_action_event(&event_name, text.as_bytes())
        .with_context(|| format!("GITHUB_EVENT_PATH {event_path} is not a `{event_name}` event"))?;
    let event = match parse_action_event(&event_name, text.as_bytes(), args.review_drafts) {
        Ok(ForgeEvent::Ignore(reason)) => return Ok(nothing_to_review(&reason.to_string())),
        Err(error) => return Ok(nothing_to_review(&error.to_string())),
        Ok(event) => event,
    };
    let token = Secret::new(env("GITHUB_TOKEN")?);
    let client = GitHubClient::with_token(&api_url_from_env(), token.clone())?;
    if let ForgeEvent::Thread(note) = event {
        let Some(comment) = ThreadComment::from_note(*note) else {
            return Ok(nothing_to_review(
                &IgnoreReason::RepositoryWithoutOwner.to_string(),
            ));
        };
        return super::action_thread::answer(&args, &client, &token, &comment).await;
    }
    // GitHub runs a fork's `pull_request` workflow without the repository's secrets.
    let without_secrets = event_name == "pull_request"
        && matches!(&event, ForgeEvent::Review(review) if review.is_fork);
    let Some(target) = resolve_target(&client, event).await? else {
        return Ok(EXIT_OK);
    };
    let text = PullText {
        owner: &target.owner,
        repo: &target.repo,
        title: &target.title,
        body: &target.body,
    };
    let forge = GitHubPull {
        client: &client,
        text,
        number: target.number,
    };
    let last = last_reviewed_sha(&forge).await?.filter(|_| !target.force);
    if last.as_deref() == Some(target.head_sha.as_str()) {
        if target.requested {
            // The person who asked is answered where they asked.
            let text = already_reviewed(short_sha(&target.head_sha), "pull request");
            notice_once(&forge, &text).await?;
        }
        println!(
            "::notice::Redline: {} was already reviewed",
            short_sha(&target.head_sha)
        );
        write_outputs(&Outputs {
            cost_usd: Some(0.0),
            ..Outputs::default()
        })?;
        return Ok(EXIT_OK);
    }
    let commits =
        workspace_commits(&target.base_sha, &target.head_sha, last.as_deref(), &token).await?;
    let strategy = target.strategy.as_deref();
    let settings = match ci_settings(&args.ci, &commits, strategy, &workflow_warning) {
        Err(error) if without_secrets && is_missing_key(&error) => {
            println!("::notice::Redline: {}", escape_data(FORK_WITHOUT_KEY));
            write_outputs(&Outputs::default())?;
            return Ok(EXIT_OK);
        }
        other => other?,
    };
    review_and_publish(&client, &target, &commits, &settings).await
}

/// Says why the event asks for no review (the step succeeds).
fn nothing_to_review(reason: &str) -> i32 {
    println!("::notice::Redline: nothing to review ({reason})");
    EXIT_OK
}

/// Why a fork's pull request was not reviewed, and what reviews it.
const FORK_WITHOUT_KEY: &str = "not reviewed: this pull request comes from a fork, and GitHub gives a fork's workflow run no secrets, so there is no model API key. To review it, a maintainer comments `/redline review` on the pull request (that run has the secrets and only reads the fork's code), or install the Redline GitHub App, which reviews forks itself.";

/// Reviews what is new, publishes it (or, on a read-only token, annotates it) and sets
/// the step's outputs and exit code.
async fn review_and_publish(
    client: &GitHubClient,
    target: &Target,
    commits: &PullCommits,
    settings: &Settings,
) -> anyhow::Result<i32> {
    let model = model_client(&settings.model, &EventSink::discard());
    let text = PullText {
        owner: &target.owner,
        repo: &target.repo,
        title: &target.title,
        body: &target.body,
    };
    let mut settings = settings.clone();
    let forge = GitHubPull {
        client,
        text,
        number: target.number,
    };
    settings
        .agent
        .set_intent(&flow::pull::pull_intent(&forge, commits).await);
    let settings = &settings;
    let report =
        flow::pull::review(model, settings, commits, CancellationToken::new(), None).await?;
    // Written before publishing, so that a workflow can upload it whatever happens next; a
    // file that cannot be written costs the output, not the review.
    let sarif_file = write_sarif(&report)
        .inspect_err(|e| println!("::warning::Redline: {}", escape_data(&error_message(e))))
        .ok();
    let published = flow::pull::publish(
        &forge,
        &target.head_sha,
        commits,
        &report,
        settings,
        &PublishConfig::default(),
        &Dismissals::new(),
    )
    .await;
    write_job_summary(&report)?;
    let review_url = match published {
        Ok(outcome) => outcome.review_url,
        Err(PublishError::Forbidden { message }) => {
            println!(
                "::warning::Redline could not post the review ({message}); the findings are in the job summary and annotations"
            );
            annotate(&report.findings);
            None
        }
        Err(other) => {
            annotate(&report.findings);
            return Err(other).context("publishing the review failed");
        }
    };
    // No model call, no cost; otherwise the cost at the price table (empty when unknown).
    let cost = match report.stats.model_calls {
        0 => Some(0.0),
        _ => report.stats.cost_usd,
    };
    write_outputs(&Outputs {
        findings: report.findings.len(),
        review_url: review_url.as_deref(),
        highest: report.highest_severity(),
        cost_usd: cost,
        sarif_file: sarif_file.as_deref(),
    })?;
    Ok(if report.fails(settings.fail_on) {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    })
}

/// The pull request an event names; `None` when there is nothing to review (the
/// commenter may not ask for one, or the event asks for a usage reply).
async fn resolve_target(
    client: &GitHubClient,
    event: ForgeEvent,
) -> anyhow::Result<Option<Target>> {
    let Some((owner, repo)) = event.change().and_then(|change| change.owner_and_name()) else {
        return Ok(None);
    };
    let (owner, repo) = (owner.to_string(), repo.to_string());
    match event {
        ForgeEvent::Review(review) => Ok(Some(Target {
            owner,
            repo,
            number: review.change.number,
            base_sha: review.base.sha,
            head_sha: review.head.sha,
            strategy: review.strategy,
            title: review.title,
            body: review.description,
            requested: false,
            force: false,
        })),
        ForgeEvent::Command(command) => {
            let number = command.change.number;
            let requested_by = command.comment.author;
            let pull = GitHubPull::at(client, &owner, &repo, number);
            if !pull.may_write(&requested_by).await? {
                println!(
                    "::notice::Redline: {requested_by} has no write access; review request ignored"
                );
                return Ok(None);
            }
            let pull = fetch_pull(client, &owner, &repo, number).await?;
            Ok(Some(Target {
                owner,
                repo,
                number,
                base_sha: pull.base_sha,
                head_sha: pull.head_sha,
                strategy: command.strategy,
                title: pull.title,
                body: pull.body,
                requested: true,
                force: command.force,
            }))
        }
        ForgeEvent::Usage(usage) => {
            let number = usage.change.number;
            let pull = GitHubPull::at(client, &owner, &repo, number);
            if pull.may_write(&usage.comment.author).await? {
                notice_once(&pull, &usage.text).await?;
            }
            println!("::notice::Redline: malformed /redline command; replied with the usage");
            Ok(None)
        }
        // Skipped or answered before (`parse_action_event`, the thread's answer).
        _ => Ok(None),
    }
}

/// Appends the review, as Markdown, to the job summary.
fn write_job_summary(report: &ReviewReport) -> anyhow::Result<()> {
    let Some(path) = crate::config::env_var("GITHUB_STEP_SUMMARY") else {
        return Ok(());
    };
    append(&path, &render(report, Format::Markdown))
}

/// One workflow annotation per finding.
fn annotate(findings: &[Finding]) {
    for f in findings {
        let level = if f.severity >= Severity::Major {
            "warning"
        } else {
            "notice"
        };
        println!(
            "::{level} file={},line={},endLine={},title={}::{}",
            escape_property(&f.path),
            f.start_line,
            f.line,
            escape_property(&format!("{} ({})", f.title, f.severity)),
            escape_data(&f.body)
        );
    }
}

/// The step's outputs (`GITHUB_OUTPUT`).
#[derive(Default)]
struct Outputs<'a> {
    findings: usize,
    review_url: Option<&'a str>,
    highest: Option<Severity>,
    cost_usd: Option<f64>,
    /// Empty when no review ran (the head was already reviewed) or the file could not be written.
    sarif_file: Option<&'a Path>,
}

fn write_outputs(outputs: &Outputs<'_>) -> anyhow::Result<()> {
    let Some(path) = crate::config::env_var("GITHUB_OUTPUT") else {
        return Ok(());
    };
    let text = format!(
        "findings={}\nreview-url={}\nhighest-severity={}\ncost-usd={}\nsarif-file={}\n",
        outputs.findings,
        outputs.review_url.unwrap_or_default(),
        outputs.highest.map(|s| s.as_str()).unwrap_or("none"),
        outputs
            .cost_usd
            .map(|c| format!("{c:.6}"))
            .unwrap_or_default(),
        outputs
            .sarif_file
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
    append(&path, &text)
}

/// Writes the run's findings as SARIF to `redline.sarif` in `RUNNER_TEMP` (the job's
/// scratch directory; the system's temporary directory outside Actions) and returns its path.
fn write_sarif(report: &ReviewReport) -> anyhow::Result<PathBuf> {
    let dir = std::env::var_os("RUNNER_TEMP")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let path = dir.join("redline.sarif");
    // Not through a link a step before this one left at the name.
    super::files::write_in_workspace(&dir, &path, &render(report, Format::Sarif))?;
    Ok(path)
}

fn append(path: &str, text: &str) -> anyhow::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot write {path}"))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {path}"))
}
