//! What a verified delivery asks for, as the App reads it.
//!
//! GitHub's classifier ([`crate::github::event`]) decides what a delivery asks for; the
//! App adds the one rule only it has: it acts through an installation, so a request naming
//! a change without one asks nothing of it ([`IgnoreReason::NoInstallation`]), and a draft
//! without one is shown to no check. The [`ForgeEvent`] that comes out is what the intake
//! ([`crate::server::intake`]) acts on, for every forge
//! ([`crate::server::delivery_job::job_of`] is the job it queues).

pub(crate) use crate::forge::Classified;
use crate::forge::{ChangeRef, ForgeEvent, IgnoreReason};
use crate::github;
use crate::github::event::ClassifyOptions;
pub(crate) use crate::github::event::PayloadError;
use crate::server::ServerConfig;

/// A reply to a `/redline` command that does not follow the grammar, for the hook that
/// posts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandReply {
    /// The installation that can post it.
    pub installation_id: u64,
    /// `owner/name`.
    pub repo_full_name: String,
    /// The pull request commented on.
    pub pr_number: u64,
    /// The commenter (only users with write access get a reply).
    pub commenter: String,
    /// The reply: what is wrong and the usage.
    pub text: String,
}

/// Reads the raw `body` of GitHub event `event` with GitHub's classifier (one typed
/// reading, a well-formed `pull_request` payload in a single pass), under the App's rule:
/// a request without an installation is ignored.
pub(crate) fn classify_app_delivery(
    event: &str,
    body: &[u8],
    config: &ServerConfig,
) -> Result<Classified, PayloadError> {
    let options = ClassifyOptions {
        review_drafts: config.review_drafts,
        mention: config.app_slug.as_ref().map(|slug| format!("@{slug}")),
        app_slug: config.app_slug.clone(),
    };
    let classified = github::event::classify_github_event(event, body, &options)?;
    Ok(Classified {
        action: classified.action,
        event: through_installation(classified.event),
    })
}

/// The App can act only through an installation: without one, a request asks nothing of
/// it, and a draft is only ignored (no check can show it skipped).
fn through_installation(event: ForgeEvent) -> ForgeEvent {
    let installed = |change: &ChangeRef| change.ids.installation.is_some();
    match event {
        ForgeEvent::Draft(review) if !installed(&review.change) => {
            ForgeEvent::Ignore(IgnoreReason::Draft)
        }
        event => match event.change() {
            Some(change) if !installed(change) => ForgeEvent::Ignore(IgnoreReason::NoInstallation),
            _ => event,
        },
    }
}

#[cfg(test)]
mod agreement;
#[cfg(test)]
mod tests;
