//! The local review flow: a change in a repository on this machine, as `redline review`,
//! `redline eval` (each case), `redline context` and `redline replay` ask for it. A
//! [`LocalRequest`] names the repository, the change (base..head, with or without the work
//! tree's uncommitted changes), the settings given on top of the config files, where the
//! author's words come from and what is wanted; [`LocalRequest::prepare`] resolves it
//! (blocking: git and files) into a [`LocalReview`] ready for the engine.
//!
//! Invariants: everything is resolved before any model call, so a bad setting, config
//! file, revision or description file costs nothing; the repository's `.redline.toml` is
//! read from the base revision unless a config file is given or the work tree is reviewed,
//! so a checked-out branch cannot change its own review rules, and the project guidelines
//! come from the same place; `include` narrows the change before anything is shaped; what
//! the flow has to say on the way (keys a repository's file may not set, which file was
//! used, guidelines left out) goes to the caller's [`Notice`] sink, never to a stream.
//! Layering: used by `cli`; uses `agent`, `config`, `guidelines`, `intent`, `repo`,
//! `review` and `tools`.

mod intent_sources;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::events::Stats;
use crate::agent::plan::Plan;
use crate::agent::{AgentError, Orchestrator};
use crate::config::limits::LimitFlags;
use crate::config::settings::{self, Scope, SettingFlags, Settings, SettingsInput};
use crate::config::{CONFIG_FILE, ConfigError, ConfigSource, ModelFlags, Owner};
use crate::guidelines::GuidelineSource;
use crate::llm::ChatModel;
use crate::repo::{RepoError, ResolvedRange};
use crate::review::render::Format;
use crate::review::report::ReviewReport;
use crate::tools::Workspace;

pub use intent_sources::MAX_DESCRIPTION_BYTES;

/// A review (or the shaping) of a change in a local repository, as plain data.
#[derive(Debug, Clone)]
pub struct LocalRequest {
    /// A directory inside the repository (`None`: the current directory).
    pub repository: Option<PathBuf>,
    /// Which change.
    pub change: ChangeSelection,
    /// The settings given on top of the config files.
    pub settings: SettingsChoice,
    /// What the author says the change does, besides its commit messages.
    pub intent: IntentSources,
    /// What the change is resolved for.
    pub purpose: Purpose,
    /// What the caller wants out of the review.
    pub output: OutputWants,
}

/// Which change of the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeSelection {
    /// The base revision (`None`: the merge base of `HEAD` with `origin/HEAD`, else `main`,
    /// else `master`).
    pub base: Option<String>,
    /// The head revision.
    pub head: String,
    /// Also the staged, unstaged and untracked changes of the work tree (whose
    /// `.redline.toml` and guidelines are then used).
    pub uncommitted: bool,
}

impl Default for ChangeSelection {
    fn default() -> Self {
        ChangeSelection {
            base: None,
            head: "HEAD".into(),
            uncommitted: false,
        }
    }
}

/// Settings that win over the config files (`None` leaves a key to them); values as
/// typed, checked when the request is prepared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// Provider, model and API root.
    pub model: ModelFlags,
    /// Cost, token and time limits.
    pub limits: LimitFlags,
    /// Model turns before the model must conclude.
    pub max_steps: Option<u32>,
    /// `auto`, `react`, `plan` or `reflect`.
    pub strategy: Option<String>,
    /// `native`, `text` or `auto`.
    pub tool_mode: Option<String>,
    /// Plan-and-execute tasks run at once.
    pub parallel: Option<usize>,
    /// The severity from which findings fail the run.
    pub fail_on: Option<String>,
    /// `Some(false)`: the findings are not verified (`--no-verify`).
    pub verify: Option<bool>,
}

impl Overrides {
    /// As the flags of the one settings resolution.
    pub(crate) fn flags(&self) -> SettingFlags {
        SettingFlags {
            model: self.model.clone(),
            limits: self.limits.clone(),
            max_steps: self.max_steps,
            strategy: self.strategy.clone(),
            tool_mode: self.tool_mode.clone(),
            parallel: self.parallel,
            fail_on: self.fail_on.clone(),
            max_comments: None,
            verify: self.verify,
            verify_model: None,
        }
    }
}

/// Where the settings come from besides the defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsChoice {
    /// What wins over every file.
    pub overrides: Overrides,
    /// A config file read instead of the repository's `.redline.toml`.
    pub config_file: Option<PathBuf>,
    /// Whether the user's own config file is read (`$XDG_CONFIG_HOME/redline/config.toml`).
    pub user_file: bool,
}

impl Default for SettingsChoice {
    fn default() -> Self {
        SettingsChoice {
            overrides: Overrides::default(),
            config_file: None,
            user_file: true,
        }
    }
}

/// What the author says the change does, besides the commit messages of base..head.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IntentSources {
    /// The change's title, as a pull request's would be.
    pub title: Option<String>,
    /// The change's description.
    pub description: Option<Description>,
}

impl IntentSources {
    /// Whether the description is read from standard input (which then holds nothing to
    /// answer a question with).
    pub fn reads_stdin(&self) -> bool {
        matches!(self.description, Some(Description::Stdin))
    }
}

/// Where a change's description is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Description {
    /// This text.
    Text(String),
    /// A file, read up to [`MAX_DESCRIPTION_BYTES`].
    File(PathBuf),
    /// Standard input, read up to [`MAX_DESCRIPTION_BYTES`].
    Stdin,
}

/// What the change is resolved for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Purpose {
    /// A review: the settings of a model call (a key or a local server), the project
    /// guidelines added to the engine's settings.
    #[default]
    Review,
    /// Only the shape of the first message (`redline context`): no key needed, no model
    /// server looked for, no guidelines read.
    Shape,
}

/// What the caller wants out of the review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputWants {
    /// How the report (or plan) is rendered.
    pub format: Format,
    /// A review, a plan only, or a review following a given plan.
    pub plan: PlanChoice,
}

impl Default for OutputWants {
    fn default() -> Self {
        OutputWants {
            format: Format::Text,
            plan: PlanChoice::Review,
        }
    }
}

/// How the plan of a review is had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanChoice {
    /// The engine decides (plan-and-execute plans for itself).
    Review,
    /// Only the plan: no review.
    PlanOnly,
    /// Plan-and-execute with this plan (printed by a plan-only run, possibly edited).
    Given(Plan),
}

/// What the flow says on the way, for the caller to show (or not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Something to fix, such as a key a repository's file may not set: always worth showing.
    Warning(String),
    /// What was chosen on the way (which config file, guidelines left out).
    Note(String),
}

/// Why a local request cannot be prepared.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// No repository given and the current directory is unreadable.
    #[error("cannot read the current directory")]
    CurrentDirectory(#[source] std::io::Error),
    /// The repository, a revision or the change cannot be read.
    #[error(transparent)]
    Repository(#[from] RepoError),
    /// A config file or a setting is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The description cannot be read (named as the flag that gives it: `-` is
    /// standard input).
    #[error("--description-file {}", path.display())]
    Description {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A prepared local review: settings, change and workspace, before any model call.
#[derive(Debug, Clone)]
pub struct LocalReview {
    /// The repository's root.
    pub root: PathBuf,
    /// The reviewed commits.
    pub range: ResolvedRange,
    /// The resolved settings; the engine's carry the intent and the project guidelines.
    pub settings: Settings,
    /// The files and the change (narrowed by `include`).
    pub workspace: Workspace,
    /// Changed files left out by `include`.
    pub skipped: Vec<String>,
    /// Nothing to review, but the work tree's uncommitted changes would give something.
    pub uncommitted_would_review: bool,
    /// What the caller wants out of the review.
    pub output: OutputWants,
}

/// What a local review came to.
#[derive(Debug, Clone)]
pub enum LocalOutcome {
    /// The checked findings.
    Report(Box<ReviewReport>),
    /// The plan, when only the plan was wanted.
    Plan(Plan),
}

impl LocalOutcome {
    /// A report, boxed.
    pub fn report(report: ReviewReport) -> Self {
        LocalOutcome::Report(Box::new(report))
    }
}

impl LocalRequest {
    /// Resolves the request: the repository, the commits, the config files, the settings,
    /// the intent, the change and (for a review) the project guidelines. Blocking.
    pub fn prepare(&self, notices: &mut dyn FnMut(Notice)) -> Result<LocalReview, LocalError> {
        let start = match &self.repository {
            Some(path) => path.clone(),
            None => std::env::current_dir().map_err(LocalError::CurrentDirectory)?,
        };
        let root = crate::repo::discover(&start)?;
        let change = &self.change;
        let range = crate::repo::resolve_range(&root, change.base.as_deref(), &change.head)?;
        let config_file = self.settings.config_file.as_deref();
        let repository =
            repository_config(&root, config_file, change.uncommitted, &range.base, notices)?;
        let mut settings = self.resolve_settings(repository, notices)?;
        let intent = intent_sources::read(&self.intent, &root, &range)?;
        settings.agent.set_intent(&intent);

        let (view, mut changes) = crate::repo::load_change(&root, &range, change.uncommitted)?;
        let reviewing = self.purpose == Purpose::Review;
        let uncommitted_would_review = reviewing
            && !change.uncommitted
            && changes.files.is_empty()
            && crate::repo::load_change(&root, &range, true)
                .is_ok_and(|(_, c)| !c.files.is_empty());
        // `exclude` keeps files in the change but lists them as noise (stage 1); `include`
        // narrows the change.
        let skipped = settings.include.apply(&mut changes);
        if reviewing {
            let source = GuidelineSource::of_review(&root, &range.base, change.uncommitted);
            let rules = crate::guidelines::apply(
                &settings.guidelines,
                source,
                &changes,
                &mut settings.agent,
            );
            for omitted in &rules.omitted {
                notices(Notice::Note(omitted.to_string()));
            }
        }
        Ok(LocalReview {
            root,
            range,
            settings,
            workspace: Workspace::new(view, changes),
            skipped,
            uncommitted_would_review,
            output: self.output.clone(),
        })
    }

    /// The settings: the overrides, the user's file (when read), the repository's.
    fn resolve_settings(
        &self,
        repository: Option<ConfigSource>,
        notices: &mut dyn FnMut(Notice),
    ) -> Result<Settings, ConfigError> {
        let user = if self.settings.user_file {
            ConfigSource::read_user(&crate::config::env_var)?
        } else {
            None
        };
        let scope = match self.purpose {
            Purpose::Review => Scope::Local,
            Purpose::Shape => Scope::Offline,
        };
        let flags = self.settings.overrides.flags();
        settings_from_sources(flags, "flag", repository, user, scope, notices)
    }
}

/// The one settings resolution of a run on this machine, with the warnings about every
/// key the repository's file may not set going to `notices`.
pub(crate) fn settings_from_sources(
    flags: SettingFlags,
    flags_origin: &str,
    repository: Option<ConfigSource>,
    user: Option<ConfigSource>,
    scope: Scope,
    notices: &mut dyn FnMut(Notice),
) -> Result<Settings, ConfigError> {
    if let Some(source) = &repository {
        for warning in source.warnings() {
            notices(Notice::Warning(warning));
        }
    }
    let env = crate::config::env_var;
    settings::resolve(SettingsInput {
        flags,
        flags_origin,
        env: &env,
        user,
        repository,
        scope,
    })
}

/// The repository's config for a local run: `config_file`, else `.redline.toml` of the
/// work tree with `uncommitted`, else `.redline.toml` as it is at the `base` revision (so a
/// checked-out branch cannot change its own review rules). Notes which was used.
pub(crate) fn repository_config(
    root: &Path,
    config_file: Option<&Path>,
    uncommitted: bool,
    base: &str,
    notices: &mut dyn FnMut(Notice),
) -> Result<Option<ConfigSource>, ConfigError> {
    if let Some(path) = config_file {
        notices(Notice::Note(format!(
            "using the config file {} (--config)",
            path.display()
        )));
        return ConfigSource::read_file(path, Owner::Repository).map(Some);
    }
    let worktree = ConfigSource::read_worktree(root);
    if uncommitted {
        let worktree = worktree?;
        if worktree.is_some() {
            notices(Notice::Note(format!(
                "using {CONFIG_FILE} from the work tree (--uncommitted)"
            )));
        }
        return Ok(worktree);
    }
    let at_base = ConfigSource::read_at_commit(root, base, Path::new(CONFIG_FILE))?;
    let differs = match &worktree {
        Ok(Some(w)) => at_base.as_ref().is_none_or(|b| !b.same_settings(w)),
        Ok(None) => false,
        Err(_) => true,
    };
    if differs {
        notices(Notice::Note(format!(
            "{CONFIG_FILE} in the work tree differs from the base revision's, which is used (pass --uncommitted or --config {CONFIG_FILE} to use the work tree's)"
        )));
    }
    Ok(at_base)
}

impl LocalReview {
    /// Whether anything is left to review.
    pub fn has_changes(&self) -> bool {
        !self.workspace.changes.files.is_empty()
    }

    /// The engine for this review with `model` (no events, no transcript: the caller's).
    pub fn orchestrator(&self, model: Arc<dyn ChatModel>) -> Orchestrator {
        Orchestrator::new(model, self.workspace.clone(), self.settings.agent.clone())
    }

    /// Runs `orchestrator` as [`OutputWants::plan`] asks.
    pub async fn run(&self, orchestrator: &Orchestrator) -> Result<LocalOutcome, AgentError> {
        match &self.output.plan {
            PlanChoice::Given(plan) => orchestrator
                .review_with_plan(plan.clone(), Stats::default())
                .await
                .map(LocalOutcome::report),
            PlanChoice::PlanOnly => orchestrator
                .plan()
                .await
                .map(|(plan, _)| LocalOutcome::Plan(plan)),
            PlanChoice::Review => orchestrator.review().await.map(LocalOutcome::report),
        }
    }

    /// The whole review with `model`: the report of a change with nothing to review
    /// ([`LocalReview::empty_report`], no model call), else the engine's as
    /// [`OutputWants::plan`] asks (no events, no transcript: a command adds its own).
    pub async fn review(&self, model: Arc<dyn ChatModel>) -> Result<LocalOutcome, AgentError> {
        if !self.has_changes() {
            return Ok(LocalOutcome::report(self.empty_report()));
        }
        self.run(&self.orchestrator(model)).await
    }

    /// The report of a change with nothing to review: says against what, why files were
    /// left out, and whether the work tree has something.
    pub fn empty_report(&self) -> ReviewReport {
        let mut summary = format!("No changes to review against {}.", self.range.base_label);
        if self.uncommitted_would_review {
            summary.push_str(
                " The work tree has uncommitted changes: `redline review --uncommitted` reviews them.",
            );
        }
        if !self.skipped.is_empty() {
            summary.push_str(&format!(
                " Files left out by the config's path filters: {}.",
                self.skipped.join(", ")
            ));
        }
        ReviewReport {
            findings: Vec::new(),
            summary,
            stats: Stats {
                strategy: "react".into(),
                coverage: 1.0,
                ..Stats::default()
            },
            ..ReviewReport::default()
        }
    }
}
