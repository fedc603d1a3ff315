//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod cli;
pub mod git;
pub mod git_http;
pub mod github_mock;
pub mod gitlab_mock;
pub mod model_server;
pub mod wait;

pub use wait::{wait_until, wait_until_async, wait_until_blocking};

/// Says that `test` is skipped because `missing` is; on CI (`CI` set, as `.ci/run` runs)
/// a missing backend or tool is a failure instead, so a skip never passes silently there.
pub fn skip(test: &str, missing: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: {missing} on CI, where it is expected"
    );
    eprintln!("{test}: skipped: {missing}");
}
