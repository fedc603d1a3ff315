-- Reviews asked for in a `/redline review` comment are jobs of their own kind, `requested`:
-- anyone who can comment can send one, and only the worker checks that the commenter may ask
-- for a review, so queueing one must not supersede or stop the pull request's other jobs (the
-- intake decides that by kind). SQLite cannot change a CHECK constraint in place: the table
-- is rebuilt with the same columns, rows, ids and indexes.

CREATE TABLE jobs_next (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id TEXT,
    repo_full_name TEXT NOT NULL,
    installation_id BIGINT NOT NULL,
    pr_number BIGINT NOT NULL,
    head_sha TEXT,
    kind TEXT NOT NULL CHECK (kind IN ('review', 'requested')),
    strategy TEXT,
    payload TEXT NOT NULL,
    state TEXT NOT NULL
        CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'superseded')),
    attempts BIGINT NOT NULL DEFAULT 0,
    max_attempts BIGINT NOT NULL,
    run_at BIGINT NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    finished_at BIGINT
);

INSERT INTO jobs_next (id, delivery_id, repo_full_name, installation_id, pr_number, head_sha,
    kind, strategy, payload, state, attempts, max_attempts, run_at, lease_owner, lease_until,
    cancel_requested, last_error, created_at, updated_at, finished_at)
SELECT id, delivery_id, repo_full_name, installation_id, pr_number, head_sha,
    kind, strategy, payload, state, attempts, max_attempts, run_at, lease_owner, lease_until,
    cancel_requested, last_error, created_at, updated_at, finished_at
FROM jobs;

-- Ids are never reused, even those of pruned jobs: the new table continues the old sequence.
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'jobs_next', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'jobs_next');
UPDATE sqlite_sequence
    SET seq = (SELECT max(seq) FROM sqlite_sequence WHERE name IN ('jobs', 'jobs_next'))
    WHERE name = 'jobs_next';

DROP TABLE jobs;

ALTER TABLE jobs_next RENAME TO jobs;

CREATE INDEX jobs_runnable ON jobs (state, run_at, id);
CREATE INDEX jobs_live_by_pr ON jobs (repo_full_name, pr_number)
    WHERE state IN ('queued', 'running');
CREATE UNIQUE INDEX jobs_one_running_per_pr ON jobs (repo_full_name, pr_number)
    WHERE state = 'running';
