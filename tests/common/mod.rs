//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod cli;
pub mod git;
pub mod github_mock;
pub mod gitlab_mock;
pub mod model_server;
