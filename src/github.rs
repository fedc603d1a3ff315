//! GitHub integration: an authenticated REST client (token or GitHub App),
//! publishing a review on a pull request, and classifying webhook and Actions events
//! ([`event`], one set of rules for the App and the Action).
//!
//! Both the GitHub Action step and the GitHub App server publish through
//! [`publish_review`] (GitHub's side of [`crate::forge`]); see [`publish`] for what it
//! posts and how reruns stay idempotent.

pub(crate) mod action_event;
pub(crate) mod anchor;
pub mod auth;
pub(crate) mod check_run;
pub mod checkout;
pub mod client;
pub mod command;
pub mod dismissed;
pub mod error;
pub(crate) mod event;
pub mod fingerprint;
mod intent;
pub mod notice;
mod permission;
pub mod publish;
pub mod pull;
pub(crate) mod ratelimit;
pub(crate) mod summary;
pub mod thread;

pub(crate) use action_event::check_action_event;
pub use action_event::parse_action_event;
pub use auth::AppAuth;
pub use client::GitHubClient;
pub(crate) use client::{api_url_from_env, path_segment};
pub use command::{Command, USAGE};
pub use error::GitHubError;
pub use event::PayloadError;
pub use fingerprint::{fingerprint, marker, parse_markers};
pub use intent::{PullText, pull_intent};
pub(crate) use notice::post_notice_once;
pub(crate) use permission::has_read_access;
pub use permission::has_write_access;
pub(crate) use publish::record_dismissed;
pub use publish::{
    PublishConfig, PublishError, PublishOutcome, PublishRequest, last_reviewed_sha, publish_review,
};
pub(crate) use pull::PullInfo;
pub use pull::fetch_pull;
pub use ratelimit::{RateLimitPolicy, Sleeper};
