//! The GitHub App's part of the server: its webhook ([`webhook`]: the signature, its
//! classifier, who hears of thread comments and malformed commands), its reading of
//! events under the App's rule ([`events`]), and its steps of the job and thread-answer
//! pipelines ([`runner`], [`answers`]). The pipelines and the intake are the server's, for
//! every forge.

pub(crate) mod answers;
pub(crate) mod events;
pub mod runner;
pub(crate) mod webhook;
