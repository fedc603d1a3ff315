//! Test databases and job builders.

use std::borrow::Cow;
use std::future::Future;
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use redline::queue::{
    Accepted, Clock, ForgeKind, JobId, JobKind, NewDelivery, NewJob, Queue, QueueOptions,
    ReviewTrigger,
};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::PgPool;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
use sqlx::{Executor, SqlSafeStr};
use tempfile::TempDir;

use crate::common::wait_until_async;

/// Where the optional PostgreSQL tests connect.
pub const POSTGRES_URL_VAR: &str = "REDLINE_TEST_POSTGRES_URL";

static NEXT_SCHEMA: AtomicU32 = AtomicU32::new(0);

/// A database private to one test: a temporary SQLite file, or a fresh PostgreSQL schema.
pub struct TestDb {
    url: String,
    _dir: Option<TempDir>,
    postgres: Option<(String, String)>,
}

impl TestDb {
    /// A new SQLite file in a temporary directory.
    pub fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("queue.db").display());
        TestDb {
            url,
            _dir: Some(dir),
            postgres: None,
        }
    }

    /// A new schema in the PostgreSQL database named by `REDLINE_TEST_POSTGRES_URL`, or `None`
    /// (after saying the test is skipped) when the variable is not set.
    pub async fn postgres(test: &str) -> Option<TestDb> {
        let Ok(base) = std::env::var(POSTGRES_URL_VAR) else {
            crate::common::skip(test, &format!("{POSTGRES_URL_VAR} is not set"));
            return None;
        };
        let schema = format!(
            "redline_test_{}_{}_{:04x}",
            std::process::id(),
            NEXT_SCHEMA.fetch_add(1, Ordering::Relaxed),
            rand::random::<u16>()
        );
        let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&base)
            .await
            .expect("connect to PostgreSQL");
        admin
            .execute(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
            .await
            .expect("create schema");
        let separator = if base.contains('?') { '&' } else { '?' };
        Some(TestDb {
            url: format!("{base}{separator}options[search_path]={schema}"),
            _dir: None,
            postgres: Some((base, schema)),
        })
    }

    /// The URL the queue connects to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether this is the PostgreSQL variant.
    pub fn is_postgres(&self) -> bool {
        self.postgres.is_some()
    }

    /// A new connection (pool) to this database with test-friendly options.
    pub async fn queue(&self) -> Queue {
        self.queue_with(test_options()).await
    }

    /// A new connection with `options`.
    pub async fn queue_with(&self, options: QueueOptions) -> Queue {
        Queue::connect_with(&self.url, options)
            .await
            .expect("connect queue")
    }

    /// Applies the queue's migrations up to `version` only, as a release of that time left
    /// the database (the files in `migrations/`, recorded as the queue records them).
    pub async fn migrate_to(&self, version: i64) {
        let backend = if self.is_postgres() {
            "postgres"
        } else {
            "sqlite"
        };
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("migrations")
            .join(backend);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("the migrations")
            .map(|entry| entry.expect("a migration").path())
            .collect();
        files.sort();
        let migrations = files
            .iter()
            .filter_map(|path| {
                let name = path.file_stem()?.to_str()?;
                let (number, description) = name.split_once('_')?;
                let number: i64 = number.parse().ok()?;
                (number <= version).then(|| {
                    let sql = std::fs::read_to_string(path).expect("migration text");
                    Migration::new(
                        number,
                        Cow::Owned(description.replace('_', " ")),
                        MigrationType::Simple,
                        sqlx::AssertSqlSafe(sql).into_sql_str(),
                        false,
                    )
                })
            })
            .collect::<Vec<_>>();
        assert_eq!(migrations.len() as i64, version, "migrations 1..={version}");
        let migrator = Migrator::with_migrations(migrations);
        if self.is_postgres() {
            let pool = PgPool::connect(&self.url).await.expect("connect");
            migrator.run(&pool).await.expect("old migrations");
            pool.close().await;
        } else {
            let pool = SqlitePool::connect_with(self.sqlite_options())
                .await
                .expect("open");
            migrator.run(&pool).await.expect("old migrations");
            pool.close().await;
        }
    }

    /// Runs `sql` (statements separated by `;`) on this database, outside any queue.
    pub async fn execute(&self, sql: &str) {
        let sql = sqlx::AssertSqlSafe(sql.to_string());
        if self.is_postgres() {
            let pool = PgPool::connect(&self.url).await.expect("connect");
            sqlx::raw_sql(sql).execute(&pool).await.expect("statements");
            pool.close().await;
        } else {
            let pool = SqlitePool::connect_with(self.sqlite_options())
                .await
                .expect("open");
            sqlx::raw_sql(sql).execute(&pool).await.expect("statements");
            pool.close().await;
        }
    }

    fn sqlite_options(&self) -> SqliteConnectOptions {
        SqliteConnectOptions::from_str(&self.url)
            .expect("an SQLite URL")
            .create_if_missing(true)
    }

    /// Drops the PostgreSQL schema (SQLite files go with the temporary directory).
    pub async fn cleanup(self) {
        if let Some((base, schema)) = &self.postgres {
            let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(base)
                .await
                .expect("connect to PostgreSQL");
            admin
                .execute(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
                .await
                .expect("drop schema");
        }
    }
}

/// The queue's time in a test: it starts at the real time and moves only when the test moves
/// it, so a lease runs out or a retry falls due without a sleep.
#[derive(Clone)]
pub struct TestClock(Arc<Mutex<DateTime<Utc>>>);

impl TestClock {
    pub fn new() -> TestClock {
        TestClock(Arc::new(Mutex::new(Utc::now())))
    }

    /// The queue's view of this time.
    pub fn clock(&self) -> Clock {
        let now = Arc::clone(&self.0);
        Clock::from_fn(move || *now.lock().unwrap())
    }

    /// Moves the time forward by `by`.
    pub fn advance(&self, by: Duration) {
        *self.0.lock().unwrap() += chrono::Duration::from_std(by).unwrap();
    }

    /// [`test_options`] on this clock.
    pub fn options(&self) -> QueueOptions {
        QueueOptions {
            clock: self.clock(),
            ..test_options()
        }
    }
}

/// Millisecond retries, few connections.
pub fn test_options() -> QueueOptions {
    QueueOptions {
        retry_base: Duration::from_millis(1),
        retry_cap: Duration::from_millis(5),
        max_connections: 4,
        ..QueueOptions::default()
    }
}

/// A review job for `owner/repo#pr`.
pub fn review_job(pr: u64) -> NewJob {
    NewJob {
        forge: ForgeKind::GitHub,
        repo_full_name: "owner/repo".to_string(),
        installation_id: Some(42),
        pr_number: pr,
        head_sha: Some(format!("{pr:040x}")),
        kind: JobKind::Review { strategy: None },
        payload: serde_json::to_value(ReviewTrigger::PullRequest {
            action: "synchronize".into(),
            sender: Some("dev".into()),
            base_ref: "main".into(),
            head_ref: "feature".into(),
        })
        .expect("payload"),
    }
}

/// A review of PR `pr` asked for in a `/redline review` comment (not yet authorised).
pub fn requested_job(pr: u64) -> NewJob {
    NewJob {
        head_sha: None,
        kind: JobKind::Requested { strategy: None },
        payload: serde_json::to_value(ReviewTrigger::Command {
            commenter: "someone".into(),
            author_association: "NONE".into(),
            comment_id: 7,
            force: false,
        })
        .expect("payload"),
        ..review_job(pr)
    }
}

/// A delivery with a fresh id.
pub fn delivery() -> NewDelivery {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    NewDelivery {
        forge: ForgeKind::GitHub,
        delivery_id: format!(
            "delivery-{}-{:08x}",
            NEXT.fetch_add(1, Ordering::Relaxed),
            rand::random::<u32>()
        ),
        event: "pull_request".to_string(),
        action: Some("synchronize".to_string()),
        received_at: Utc::now(),
    }
}

/// Enqueues a review of PR `pr` and returns the job id.
pub async fn enqueue(queue: &Queue, pr: u64) -> JobId {
    match queue
        .accept_delivery(delivery(), Some(review_job(pr)))
        .await
        .expect("accept")
    {
        Accepted::Queued { job_id, .. } => job_id,
        other => panic!("expected a queued job, got {other:?}"),
    }
}

/// Waits until `check` holds ([`wait_until_async`]); fails the test if it never does.
pub async fn eventually<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    assert!(wait_until_async(check).await, "gave up waiting: {what}");
}

/// Runs each named `async fn(&TestDb)` as a test on SQLite and on PostgreSQL.
#[macro_export]
macro_rules! backend_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = $crate::queue::support::TestDb::sqlite();
                    super::$name(&db).await;
                    db.cleanup().await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(db) = $crate::queue::support::TestDb::postgres(stringify!($name)).await
                    else {
                        return;
                    };
                    super::$name(&db).await;
                    db.cleanup().await;
                }
            )*
        }
    };
}
