//! GitLab's part of the server: its webhook ([`webhook`]: each project's token, its
//! classifier, who answers notes) and its steps of the job and thread-answer pipelines
//! ([`runner`], [`notes`]). The pipelines and the intake are the server's, for every forge.

pub(crate) mod notes;
pub mod runner;
pub(crate) mod webhook;
