//! Queue and worker pool tests, run against SQLite always and against PostgreSQL when
//! `REDLINE_TEST_POSTGRES_URL` is set.

pub mod support;

mod checks;
mod connect;
mod forges;
mod intake;
mod intake_workers;
mod semantics;
mod threads;
mod workers;
