//! One settings resolution for every entry point: every key of the book's
//! configuration table changes what `redline serve` does, and a broken repository
//! config is reported (a comment from the App, an annotation and exit 2 from the Action);
//! the App's job for a `/redline review` comment on a head it already reviewed.

mod broken_config;
mod mirror_cache;
mod review_command;
mod serve_guidelines;
mod serve_keys;
pub mod support;
