//! Findings, the diff they are anchored on, checks, and output formats.

pub mod diff;
pub mod finding;
