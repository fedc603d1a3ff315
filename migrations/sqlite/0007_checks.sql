-- Each job's check beside the change (GitHub: the check run `Redline`; GitLab: the commit
-- status `redline`), so that a redelivery, a retry or another replica never makes a second
-- one and no check is left in progress (SQLite).
--
-- check_state: NULL (none shown), 'creating' (a process claimed its creation at check_at),
-- 'open' (shown, not completed), 'closed' (completed). check_id: GitHub's check-run id
-- (GitLab's statuses need none). check_sha: the commit it is on.
ALTER TABLE jobs ADD COLUMN check_state TEXT CHECK (check_state IN ('creating', 'open', 'closed'));
ALTER TABLE jobs ADD COLUMN check_id BIGINT;
ALTER TABLE jobs ADD COLUMN check_sha TEXT;
ALTER TABLE jobs ADD COLUMN check_at BIGINT;

-- The checks still to complete: few, whatever the number of jobs kept.
CREATE INDEX jobs_unsettled_checks ON jobs (check_state, id)
    WHERE check_state IN ('creating', 'open');
