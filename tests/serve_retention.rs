//! Delivery retention: the prune `redline serve` runs on a schedule, driven with a fixed "now".

use std::time::Duration;

use chrono::{TimeZone, Utc};
use redline::queue::{Accepted, ForgeKind, NewDelivery};
use redline::server::retention::prune_once;

use crate::queue::support::TestDb;

fn delivery(id: &str, received_at: chrono::DateTime<Utc>) -> NewDelivery {
    NewDelivery {
        forge: ForgeKind::GitHub,
        delivery_id: id.to_string(),
        event: "ping".to_string(),
        action: None,
        received_at,
    }
}

#[tokio::test]
async fn deliveries_older_than_the_retention_are_pruned_and_recent_ones_kept() {
    let db = TestDb::sqlite();
    let queue = db.queue().await;
    let now = Utc.with_ymd_and_hms(2026, 3, 10, 12, 0, 0).unwrap();
    let day = chrono::Duration::days(1);
    for (id, age) in [
        ("old-10d", day * 10),
        ("old-8d", day * 8),
        ("recent-6d", day * 6),
        ("recent-1d", day),
    ] {
        let accepted = queue
            .accept_delivery(delivery(id, now - age), None)
            .await
            .unwrap();
        assert_eq!(accepted, Accepted::Recorded);
    }
    let retention = Duration::from_secs(7 * 24 * 3600);
    let deleted = prune_once(&queue, retention, now).await.unwrap();
    assert_eq!(deleted, 2);
    assert_eq!(queue.delivery_count().await.unwrap(), 2);
    // The kept ones still dedupe a redelivery; the pruned ones are forgotten.
    for (id, kept) in [
        ("recent-6d", true),
        ("recent-1d", true),
        ("old-8d", false),
        ("old-10d", false),
    ] {
        let again = queue
            .accept_delivery(delivery(id, now), None)
            .await
            .unwrap();
        assert_eq!(again == Accepted::Duplicate, kept, "{id}");
    }
    assert_eq!(
        prune_once(&queue, retention, now).await.unwrap(),
        0,
        "nothing is old any more"
    );
}
