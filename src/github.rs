//! GitHub integration: an authenticated REST client (token or GitHub App), GitHub's side
//! of the forge seam ([`GitHubPull`], implementing [`crate::forge::Forge`]: reviews, the
//! summary comment, review threads over GraphQL, the check run), and classifying webhook
//! and Actions events ([`event`], one set of rules for the App and the Action).
//!
//! What is posted is decided in [`crate::forge::publish`]; [`publish`] is how GitHub
//! posts it (see there for how reruns stay idempotent).
//! Layering: uses `forge` (the forge-neutral core: anchors, fingerprints, summary,
//! dismissals, commands, notices, rate limits) and `intent`; never `gitlab`.

pub(crate) mod action_event;
pub mod auth;
pub(crate) mod check_run;
pub mod client;
pub mod error;
pub(crate) mod event;
mod forge;
mod permission;
pub mod publish;
pub mod pull;
mod pull_intent;
mod review_comment;
pub(crate) mod review_threads;
pub mod thread;

pub(crate) use action_event::check_action_event;
pub use action_event::parse_action_event;
pub use auth::AppAuth;
pub use client::GitHubClient;
pub(crate) use client::{api_url_from_env, path_segment};
pub use error::GitHubError;
pub use event::PayloadError;
pub(crate) use forge::GitHubPull;
pub(crate) use permission::has_read_access;
pub use permission::has_write_access;
pub(crate) use publish::record_dismissed;
pub use publish::{publish_review, pull_last_reviewed_sha};
pub(crate) use pull::PullInfo;
pub use pull::fetch_pull;
pub use pull_intent::{PullText, fetch_pull_intent};
