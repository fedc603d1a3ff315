//! GitHub integration: an authenticated REST client (token or GitHub App),
//! publishing a review on a pull request, and classifying webhook and Actions events
//! ([`event`], one set of rules for the App and the Action).
//!
//! Both the GitHub Action step and the GitHub App server publish through
//! [`publish_review`] (GitHub's side of [`crate::forge`]); see [`publish`] for what it
//! posts and how reruns stay idempotent.

pub(crate) mod action_event;
pub mod auth;
pub(crate) mod check_run;
pub mod checkout;
pub mod client;
pub mod error;
pub(crate) mod event;
mod forge;
mod intent;
mod permission;
pub mod publish;
pub mod pull;
mod pull_notice;
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
pub use intent::{PullText, pull_intent};
pub(crate) use permission::has_read_access;
pub use permission::has_write_access;
pub(crate) use publish::record_dismissed;
pub use publish::{last_reviewed_sha, publish_review};
pub(crate) use pull::PullInfo;
pub use pull::fetch_pull;
pub(crate) use pull_notice::post_notice_once;
