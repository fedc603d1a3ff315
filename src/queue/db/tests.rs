use sqlx::Executor;

use super::*;

/// A database left by an earlier release (migrations 1 and 2), with a delivery, a queued job
/// and a finished job of one pull request.
async fn sqlite_at_version_2(url: &str) {
    let pool = connect_sqlite(url, &QueueOptions::default())
        .await
        .expect("open");
    migrator(&SQLITE_MIGRATIONS[..2])
        .run(&pool)
        .await
        .expect("migrations 1-2");
    pool.execute(
        "INSERT INTO deliveries (delivery_id, event, action, received_at) \
           VALUES ('d-old', 'pull_request', 'opened', 1000); \
         INSERT INTO jobs (delivery_id, repo_full_name, installation_id, pr_number, kind, \
           payload, state, max_attempts, run_at, created_at, updated_at) VALUES \
           ('d-done', 'o/r', 1, 7, 'review', '{}', 'succeeded', 3, 1, 1, 1), \
           ('d-old', 'o/r', 1, 7, 'review', '{}', 'queued', 3, 1, 1, 1)",
    )
    .await
    .expect("rows of the earlier release");
    pool.close().await;
}

#[tokio::test]
async fn sqlite_intake_schema_migration_keeps_deliveries_and_indexes_only_live_jobs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("queue.db").display());
    sqlite_at_version_2(&url).await;

    let Db::Sqlite(pool) = Db::connect(&url, &QueueOptions::default())
        .await
        .expect("migrate to the current schema")
    else {
        panic!("an SQLite URL opens SQLite");
    };
    let kept: (String, i64) = sqlx::query_as("SELECT delivery_id, received_at FROM deliveries")
        .fetch_one(&pool)
        .await
        .expect("the stored delivery");
    assert_eq!(kept, ("d-old".to_string(), 1000));
    let without_rowid: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM sqlite_schema WHERE name = 'deliveries' AND sql LIKE '%WITHOUT ROWID%'",
    )
    .fetch_one(&pool)
    .await
    .expect("schema");
    assert_eq!(without_rowid, 1, "deliveries is keyed by its id alone");
    // The live-jobs index holds the queued job, not the finished one.
    let live: Vec<String> = sqlx::query_scalar(
        "SELECT state FROM jobs INDEXED BY jobs_live_by_pr \
         WHERE repo_full_name = 'o/r' AND pr_number = 7 AND state IN ('queued', 'running')",
    )
    .fetch_all(&pool)
    .await
    .expect("the live jobs' index");
    assert_eq!(live, vec!["queued".to_string()]);
    let old_index: i64 =
        sqlx::query_scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'jobs_by_pr'")
            .fetch_one(&pool)
            .await
            .expect("schema");
    assert_eq!(old_index, 0, "the full per-PR index is gone");
}

#[tokio::test]
async fn after_the_intake_schema_migration_the_queue_dedupes_and_supersedes_older_rows() {
    use crate::queue::{Accepted, ForgeKind, JobKind, NewDelivery, NewJob, Queue};

    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("queue.db").display());
    sqlite_at_version_2(&url).await;
    let queue = Queue::connect(&url).await.expect("open and migrate");
    let delivery = |id: &str| NewDelivery {
        forge: ForgeKind::GitHub,
        delivery_id: id.to_string(),
        event: "pull_request".to_string(),
        action: Some("synchronize".to_string()),
        received_at: chrono::Utc::now(),
    };
    let job = || NewJob {
        forge: ForgeKind::GitHub,
        repo_full_name: "o/r".to_string(),
        installation_id: Some(1),
        pr_number: 7,
        head_sha: None,
        kind: JobKind::Review { strategy: None },
        payload: serde_json::json!({}),
    };

    let again = queue.accept_delivery(delivery("d-old"), Some(job())).await;
    assert!(matches!(again, Ok(Accepted::Duplicate)), "{again:?}");
    let fresh = queue.accept_delivery(delivery("d-new"), Some(job())).await;
    assert!(
        matches!(
            fresh,
            Ok(Accepted::Queued {
                superseded: 1,
                cancel_requested: 0,
                ..
            })
        ),
        "the new job replaces the queued one stored before the migration: {fresh:?}"
    );
}

#[tokio::test]
async fn the_requested_jobs_migration_keeps_rows_and_never_reuses_a_job_id() {
    use crate::queue::{Accepted, ForgeKind, JobKind, NewDelivery, NewJob, Queue};

    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("queue.db").display());
    sqlite_at_version_2(&url).await;
    // The newest job was pruned before the upgrade: its id must not come back.
    let pool = connect_sqlite(&url, &QueueOptions::default())
        .await
        .expect("open");
    pool.execute("DELETE FROM jobs WHERE delivery_id = 'd-old'")
        .await
        .expect("prune");
    pool.close().await;

    let queue = Queue::connect(&url).await.expect("open and migrate");
    let kept = queue.job(crate::queue::JobId(1)).await.expect("read");
    assert_eq!(kept.map(|job| job.delivery_id), Some(Some("d-done".into())));
    let accepted = queue
        .accept_delivery(
            NewDelivery {
                forge: ForgeKind::GitHub,
                delivery_id: "d-comment".into(),
                event: "issue_comment".into(),
                action: Some("created".into()),
                received_at: chrono::Utc::now(),
            },
            Some(NewJob {
                forge: ForgeKind::GitHub,
                repo_full_name: "o/r".into(),
                installation_id: Some(1),
                pr_number: 7,
                head_sha: None,
                kind: JobKind::Requested { strategy: None },
                payload: serde_json::json!({}),
            }),
        )
        .await;
    let Ok(Accepted::Queued { job_id, .. }) = accepted else {
        panic!("a requested review is stored: {accepted:?}");
    };
    assert_eq!(job_id.0, 3, "ids continue after the pruned job 2");
}
