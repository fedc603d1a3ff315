//! What the queue keeps about review threads: a comment is claimed once, whoever asks;
//! dismissed findings are kept per pull request.

use super::support::TestDb;

crate::backend_tests!(
    old_claims_are_pruned_and_dismissals_kept,
    a_comment_is_claimed_once_even_by_concurrent_callers,
    dismissals_are_kept_per_pull_request_and_idempotent,
    thread_answers_never_pass_the_cap_under_concurrency,
);

async fn thread_answers_never_pass_the_cap_under_concurrency(db: &TestDb) {
    // Two handles stand for two replicas sharing the database.
    let queue = db.queue().await;
    let other = db.queue().await;
    let reserves = (0..30).map(|n| {
        let queue = if n % 2 == 0 {
            queue.clone()
        } else {
            other.clone()
        };
        tokio::spawn(async move { queue.reserve_answer("o/r", 9, 5, 0).await.unwrap() })
    });
    let counted: usize = futures::future::join_all(reserves)
        .await
        .into_iter()
        .map(|counted| usize::from(counted.unwrap()))
        .sum();
    assert_eq!(counted, 5);
    assert!(!queue.reserve_answer("o/r", 9, 5, 0).await.unwrap());
    assert!(
        queue.reserve_answer("o/r", 9, 6, 0).await.unwrap(),
        "a higher cap allows more"
    );
    // Another thread, already holding answers posted on GitHub, starts from them.
    assert!(queue.reserve_answer("o/r", 10, 3, 2).await.unwrap());
    assert!(!queue.reserve_answer("o/r", 10, 3, 2).await.unwrap());
    assert!(!queue.reserve_answer("o/r", 11, 3, 3).await.unwrap());
    assert!(!queue.reserve_answer("o/r", 12, 0, 0).await.unwrap());
}

async fn a_comment_is_claimed_once_even_by_concurrent_callers(db: &TestDb) {
    let queue = db.queue().await;
    let other = db.queue().await;
    let claims = (0..8).map(|n| {
        let queue = if n % 2 == 0 {
            queue.clone()
        } else {
            other.clone()
        };
        tokio::spawn(async move { queue.claim_comment("o/r", 42).await.unwrap() })
    });
    let won: usize = futures::future::join_all(claims)
        .await
        .into_iter()
        .map(|claimed| usize::from(claimed.unwrap()))
        .sum();
    assert_eq!(won, 1);
    assert!(
        queue.claim_comment("o/other", 42).await.unwrap(),
        "per repository"
    );
}

async fn dismissals_are_kept_per_pull_request_and_idempotent(db: &TestDb) {
    let queue = db.queue().await;
    let keys = vec!["00ff".to_string(), "c-12ab".to_string()];
    queue.dismiss("o/r", 7, &keys).await.unwrap();
    queue.dismiss("o/r", 7, &keys[..1]).await.unwrap();
    assert_eq!(queue.dismissed("o/r", 7).await.unwrap(), keys);
    assert!(queue.dismissed("o/r", 8).await.unwrap().is_empty());
    assert!(queue.dismissed("o/x", 7).await.unwrap().is_empty());
}

async fn old_claims_are_pruned_and_dismissals_kept(db: &TestDb) {
    let queue = db.queue().await;
    assert!(queue.claim_comment("o/r", 1).await.unwrap());
    queue.dismiss("o/r", 7, &["00ff".into()]).await.unwrap();
    let later = chrono::Utc::now() + chrono::Duration::seconds(1);
    assert_eq!(queue.prune(later).await.unwrap(), 1);
    assert!(
        queue.claim_comment("o/r", 1).await.unwrap(),
        "claimable again"
    );
    assert_eq!(queue.dismissed("o/r", 7).await.unwrap(), ["00ff"]);
}
