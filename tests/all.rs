//! Integration tests, one binary (`autotests = false` in Cargo.toml). Shared
//! helpers live in `tests/common/`.

mod action_cli;
mod common;
mod compression_cli;
mod context;
mod github;
mod llm;
mod model_server_cache;
mod queue;
mod review;
mod review_cli;
mod serve_cli;
mod server;
mod strategies;
mod text_mode;
mod tools;
