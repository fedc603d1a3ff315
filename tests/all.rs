//! Integration tests, one binary (`autotests = false` in Cargo.toml). Shared
//! helpers live in `tests/common/`.

mod action_cli;
mod check_cli;
mod common;
mod compression_cli;
mod config_cli;
mod context;
mod coverage;
mod discovery_cli;
mod events_cli;
mod github;
mod guidelines_cli;
mod init_cli;
mod install_script;
mod limits_cli;
mod llm;
mod llm_limits;
mod model_server_cache;
mod pr_flow;
mod queue;
mod review;
mod review_cli;
mod runs_cli;
mod serve_cli;
mod serve_limits;
mod serve_logs;
mod serve_memory;
mod serve_retention;
mod server;
mod settings;
mod strategies;
mod task_cost;
mod text_mode;
mod tools;
