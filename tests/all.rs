//! Integration tests, one binary. Shared helpers live in `tests/common/`.

mod common;
mod queue;
mod server;
