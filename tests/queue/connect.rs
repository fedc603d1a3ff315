//! Start-up against a PostgreSQL that cannot be used: the error names the cause, promptly.

use std::time::Duration;

use redline::queue::{Queue, QueueError};

use super::support::POSTGRES_URL_VAR;

/// Far longer than start-up may take; only guards against a hang.
const BOUND: Duration = Duration::from_secs(20);

async fn connect_error(url: &str) -> QueueError {
    tokio::time::timeout(BOUND, Queue::connect(url))
        .await
        .expect("start-up gave up within the bound")
        .expect_err("the database cannot be used")
}

#[tokio::test]
async fn a_refused_postgres_connection_is_named_at_start() {
    // Nothing listens on port 1 of the loopback.
    let err = connect_error("postgres://postgres:hunter2@127.0.0.1:1/test").await;
    assert!(matches!(err, QueueError::Connect(_)), "{err:?}");
    let text = err.to_string().to_lowercase();
    assert!(text.contains("connection refused"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}

/// `postgres://...host/NAME[?query]` with another database name.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let (server, _) = base.rsplit_once('/').expect("URL has a database");
    match query {
        Some(query) => format!("{server}/{name}?{query}"),
        None => format!("{server}/{name}"),
    }
}

#[tokio::test]
async fn an_unknown_postgres_database_is_named_at_start() {
    let Ok(base) = std::env::var(POSTGRES_URL_VAR) else {
        crate::common::skip(
            "an_unknown_postgres_database_is_named_at_start",
            &format!("{POSTGRES_URL_VAR} is not set"),
        );
        return;
    };
    let err = connect_error(&with_database(&base, "redline_no_such_database")).await;
    assert!(matches!(err, QueueError::Connect(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("redline_no_such_database"), "{text}");
    assert!(text.contains("does not exist"), "{text}");
}
