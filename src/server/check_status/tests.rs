use super::shown::rerun_of_an_older_head;
use super::*;
use crate::forge::status::SkipReason;
use crate::queue::{JobKind, JobState, ReviewTrigger};

fn job(trigger: ReviewTrigger, head: Option<&str>) -> Job {
    let now = chrono::Utc::now();
    Job {
        id: JobId(3),
        delivery_id: None,
        forge: ForgeKind::GitHub,
        repo_full_name: "o/r".into(),
        installation_id: Some(9),
        pr_number: 7,
        head_sha: head.map(str::to_string),
        kind: JobKind::Requested { strategy: None },
        payload: serde_json::to_value(trigger).unwrap(),
        state: JobState::Running,
        attempts: 1,
        max_attempts: 3,
        run_at: now,
        lease_owner: None,
        lease_until: None,
        cancel_requested: false,
        last_error: None,
        created_at: now,
        finished_at: None,
    }
}

#[test]
fn a_re_run_of_an_older_commit_is_skipped_naming_the_head() {
    let rerun = || ReviewTrigger::Rerun {
        requested_by: "dev".into(),
    };
    let skipped = rerun_of_an_older_head(&job(rerun(), Some("old")), "new");
    assert_eq!(
        skipped,
        Some(ReviewStatus::Skipped {
            reason: SkipReason::NotTheHead { head: "new".into() },
            carried: None,
        })
    );
    assert_eq!(
        rerun_of_an_older_head(&job(rerun(), Some("new")), "new"),
        None
    );
    let command = ReviewTrigger::Command {
        commenter: "dev".into(),
        author_association: "MEMBER".into(),
        comment_id: 1,
        force: false,
    };
    assert_eq!(
        rerun_of_an_older_head(&job(command, Some("old")), "new"),
        None
    );
}

#[test]
fn a_server_not_set_up_for_a_forge_shows_nothing_there() {
    let checks = Checks::new(None, None, None);
    let rerun = ReviewTrigger::Rerun {
        requested_by: "dev".into(),
    };
    assert!(checks.for_job(&job(rerun, Some("a"))).is_none());
}
