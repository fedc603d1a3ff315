//! Answers in review threads and remembered rejections, for the App (`redline serve`,
//! the real binary) and the Action (`redline action`), against the mock GitHub (REST and
//! GraphQL) and a scripted model.

mod action;
mod app;
mod dismissals;
pub(crate) mod support;
