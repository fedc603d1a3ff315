//! Findings, the diff they are anchored on, checks, the walkthrough, and output formats.

pub mod anchor;
pub mod diff;
pub(crate) mod excerpt;
pub mod file_kind;
pub mod finding;
pub mod parse;
pub mod render;
pub mod report;
pub mod stats;
pub mod verification;
pub mod walkthrough;
