//! Deliveries and jobs of two forges: a GitHub and a GitLab pull (merge) request with the same
//! repository name and number are different requests, and the same delivery id sent by both
//! forges is two deliveries.

use std::time::Duration;

use redline::queue::{Accepted, ForgeKind, JobId, JobState, NewJob, Queue, QueueError};

use super::support::{TestDb, delivery, review_job};

const LONG: Duration = Duration::from_secs(60);

crate::backend_tests!(
    the_forges_jobs_for_one_name_and_number_are_separate_live_jobs,
    the_forges_jobs_in_one_group_replace_only_their_own,
    the_same_delivery_id_on_two_forges_is_two_deliveries,
    a_job_of_another_forge_than_its_delivery_is_refused,
    an_old_database_migrates_and_its_rows_become_github,
);

/// A review of `owner/repo#pr` on GitLab (no App installation).
fn gitlab_job(pr: u64) -> NewJob {
    NewJob {
        forge: ForgeKind::GitLab,
        installation_id: None,
        ..review_job(pr)
    }
}

/// Queues `job` from a fresh delivery of its forge: (job id, superseded, asked to stop).
async fn queue_job(queue: &Queue, job: NewJob) -> (JobId, u64, u64) {
    let delivery = redline::queue::NewDelivery {
        forge: job.forge,
        ..delivery()
    };
    match queue.accept_delivery(delivery, Some(job)).await.unwrap() {
        Accepted::Queued {
            job_id,
            superseded,
            cancel_requested,
        } => (job_id, superseded, cancel_requested),
        other => panic!("expected a queued job, got {other:?}"),
    }
}

async fn state(queue: &Queue, id: JobId) -> (JobState, bool) {
    let job = queue.job(id).await.unwrap().expect("stored");
    (job.state, job.cancel_requested)
}

async fn the_forges_jobs_for_one_name_and_number_are_separate_live_jobs(db: &TestDb) {
    let queue = db.queue().await;
    let (github_running, ..) = queue_job(&queue, review_job(1)).await;
    assert_eq!(
        queue.claim("w", LONG).await.unwrap().map(|job| job.id),
        Some(github_running)
    );

    // GitLab's `owner/repo!1` neither supersedes nor stops GitHub's `owner/repo#1`, and the
    // running GitHub job does not keep it from running.
    let (gitlab_first, superseded, stopped) = queue_job(&queue, gitlab_job(1)).await;
    assert_eq!((superseded, stopped), (0, 0));
    assert_eq!(
        state(&queue, github_running).await,
        (JobState::Running, false)
    );
    let claimed = queue
        .claim("w", LONG)
        .await
        .unwrap()
        .expect("the GitLab job");
    assert_eq!(claimed.id, gitlab_first);
    assert_eq!(
        (claimed.forge, claimed.installation_id),
        (ForgeKind::GitLab, None)
    );

    // Each forge's next review replaces its own forge's jobs only.
    let (gitlab_queued, superseded, stopped) = queue_job(&queue, gitlab_job(1)).await;
    assert_eq!((superseded, stopped), (0, 1));
    assert_eq!(state(&queue, gitlab_first).await, (JobState::Running, true));
    assert_eq!(
        state(&queue, github_running).await,
        (JobState::Running, false)
    );
    let (github_queued, superseded, stopped) = queue_job(&queue, review_job(1)).await;
    assert_eq!((superseded, stopped), (0, 1));
    assert_eq!(
        state(&queue, gitlab_queued).await,
        (JobState::Queued, false)
    );
    let (_, superseded, _) = queue_job(&queue, gitlab_job(1)).await;
    assert_eq!(superseded, 1, "only GitLab's queued job");
    assert_eq!(
        state(&queue, gitlab_queued).await,
        (JobState::Superseded, false)
    );
    assert_eq!(
        state(&queue, github_queued).await,
        (JobState::Queued, false)
    );

    let github = queue
        .jobs_for_pr(ForgeKind::GitHub, "owner/repo", 1)
        .await
        .unwrap();
    let gitlab = queue
        .jobs_for_pr(ForgeKind::GitLab, "owner/repo", 1)
        .await
        .unwrap();
    assert_eq!((github.len(), gitlab.len()), (2, 3));
    assert!(
        github
            .iter()
            .all(|job| job.forge == ForgeKind::GitHub && job.installation_id == Some(42))
    );
    assert!(
        gitlab
            .iter()
            .all(|job| job.forge == ForgeKind::GitLab && job.installation_id.is_none())
    );
}

async fn the_forges_jobs_in_one_group_replace_only_their_own(db: &TestDb) {
    let queue = db.queue().await;
    let (stored_github, ..) = queue_job(&queue, review_job(1)).await;
    let (stored_gitlab, ..) = queue_job(&queue, gitlab_job(1)).await;
    // Handed over together, so that they most likely share a transaction; the outcome is
    // the same in any order or grouping.
    let (github, gitlab) = tokio::join!(
        queue_job(&queue, review_job(1)),
        queue_job(&queue, gitlab_job(1))
    );
    assert_eq!((github.1, github.2), (1, 0));
    assert_eq!((gitlab.1, gitlab.2), (1, 0));
    assert_eq!(state(&queue, stored_github).await.0, JobState::Superseded);
    assert_eq!(state(&queue, stored_gitlab).await.0, JobState::Superseded);
    assert_eq!(state(&queue, github.0).await.0, JobState::Queued);
    assert_eq!(state(&queue, gitlab.0).await.0, JobState::Queued);
    assert_eq!(queue.depth().await.unwrap(), 2);
}

async fn the_same_delivery_id_on_two_forges_is_two_deliveries(db: &TestDb) {
    let queue = db.queue().await;
    let github = delivery();
    let gitlab = redline::queue::NewDelivery {
        forge: ForgeKind::GitLab,
        ..github.clone()
    };
    assert!(matches!(
        queue
            .accept_delivery(github.clone(), Some(review_job(1)))
            .await
            .unwrap(),
        Accepted::Queued { .. }
    ));
    assert!(matches!(
        queue
            .accept_delivery(gitlab.clone(), Some(gitlab_job(1)))
            .await
            .unwrap(),
        Accepted::Queued { .. }
    ));
    for redelivery in [github.clone(), gitlab.clone()] {
        let forge = redelivery.forge;
        let job = NewJob {
            forge,
            ..review_job(1)
        };
        assert_eq!(
            queue.accept_delivery(redelivery, Some(job)).await.unwrap(),
            Accepted::Duplicate,
            "{forge}"
        );
    }
    // Within one group too.
    let shared = delivery();
    let (first, second) = tokio::join!(
        queue.accept_delivery(shared.clone(), None),
        queue.accept_delivery(
            redline::queue::NewDelivery {
                forge: ForgeKind::GitLab,
                ..shared
            },
            None
        )
    );
    assert_eq!(
        (first.unwrap(), second.unwrap()),
        (Accepted::Recorded, Accepted::Recorded)
    );
    assert_eq!(queue.delivery_count().await.unwrap(), 4);
    assert_eq!(queue.depth().await.unwrap(), 2);
}

async fn a_job_of_another_forge_than_its_delivery_is_refused(db: &TestDb) {
    let queue = db.queue().await;
    let refused = queue.accept_delivery(delivery(), Some(gitlab_job(1))).await;
    assert!(
        matches!(&refused, Err(QueueError::InvalidJob { reason }) if reason.contains("gitlab")),
        "{refused:?}"
    );
    assert_eq!(queue.delivery_count().await.unwrap(), 0);
}

async fn an_old_database_migrates_and_its_rows_become_github(db: &TestDb) {
    // The last schema before forges, with a delivery, a queued and a running job of
    // `o/r#7` (the SQL is the same on both backends).
    db.migrate_to(5).await;
    db.execute(
        "INSERT INTO deliveries (delivery_id, event, action, received_at) \
           VALUES ('d-old', 'pull_request', 'opened', 1000); \
         INSERT INTO jobs (delivery_id, repo_full_name, installation_id, pr_number, kind, \
           payload, state, max_attempts, run_at, lease_owner, lease_until, created_at, \
           updated_at) VALUES \
           ('d-run', 'o/r', 5, 7, 'review', '{}', 'running', 3, 1, 'w', 9000000000000, 1, 1), \
           ('d-old', 'o/r', 5, 7, 'review', '{}', 'queued', 3, 1, NULL, NULL, 1, 1)",
    )
    .await;

    let queue = db.queue().await;
    let old = queue
        .jobs_for_pr(ForgeKind::GitHub, "o/r", 7)
        .await
        .unwrap();
    assert_eq!(old.len(), 2, "{old:?}");
    assert!(
        old.iter()
            .all(|job| job.forge == ForgeKind::GitHub && job.installation_id == Some(5))
    );
    let redelivered = redline::queue::NewDelivery {
        delivery_id: "d-old".into(),
        ..delivery()
    };
    let old_job = || NewJob {
        repo_full_name: "o/r".into(),
        pr_number: 7,
        ..review_job(7)
    };
    assert_eq!(
        queue
            .accept_delivery(redelivered.clone(), Some(old_job()))
            .await
            .unwrap(),
        Accepted::Duplicate,
        "the stored delivery is GitHub's"
    );
    // GitLab's `o/r!7` leaves the old jobs alone; GitHub's next push replaces them.
    let gitlab_redelivery = redline::queue::NewDelivery {
        forge: ForgeKind::GitLab,
        ..redelivered
    };
    let gitlab = NewJob {
        forge: ForgeKind::GitLab,
        installation_id: None,
        ..old_job()
    };
    assert!(matches!(
        queue
            .accept_delivery(gitlab_redelivery, Some(gitlab))
            .await
            .unwrap(),
        Accepted::Queued {
            superseded: 0,
            cancel_requested: 0,
            ..
        }
    ));
    let (_, superseded, stopped) = queue_job(&queue, old_job()).await;
    assert_eq!((superseded, stopped), (1, 1));
    assert_eq!(queue.delivery_count().await.unwrap(), 3);
}
