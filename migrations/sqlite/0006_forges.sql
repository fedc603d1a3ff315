-- The queue learns the forge (SQLite): deliveries and jobs of GitHub and GitLab never collide.
--
-- 1. A delivery id is unique per forge: `deliveries` is keyed by (forge, delivery_id).
-- 2. Jobs name their forge; a GitLab job has no App installation, so `installation_id` may be
--    NULL. The per-PR indexes (live jobs; one running job) are per (forge, repository,
--    number), so the supersede rule, the stop request and the one-running rule act within a
--    forge only.
-- Rows stored before are GitHub's. SQLite cannot change a primary key or drop NOT NULL in
-- place: both tables are rebuilt with the same rows, ids and indexes.

CREATE TABLE deliveries_next (
    forge TEXT NOT NULL CHECK (forge IN ('github', 'gitlab')),
    delivery_id TEXT NOT NULL,
    event TEXT NOT NULL,
    action TEXT,
    received_at BIGINT NOT NULL,
    PRIMARY KEY (forge, delivery_id)
) WITHOUT ROWID;

INSERT INTO deliveries_next (forge, delivery_id, event, action, received_at)
    SELECT 'github', delivery_id, event, action, received_at FROM deliveries;

DROP TABLE deliveries;

ALTER TABLE deliveries_next RENAME TO deliveries;

CREATE INDEX deliveries_received_at ON deliveries (received_at);

CREATE TABLE jobs_next (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id TEXT,
    forge TEXT NOT NULL CHECK (forge IN ('github', 'gitlab')),
    repo_full_name TEXT NOT NULL,
    installation_id BIGINT,
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

INSERT INTO jobs_next (id, delivery_id, forge, repo_full_name, installation_id, pr_number,
    head_sha, kind, strategy, payload, state, attempts, max_attempts, run_at, lease_owner,
    lease_until, cancel_requested, last_error, created_at, updated_at, finished_at)
SELECT id, delivery_id, 'github', repo_full_name, installation_id, pr_number,
    head_sha, kind, strategy, payload, state, attempts, max_attempts, run_at, lease_owner,
    lease_until, cancel_requested, last_error, created_at, updated_at, finished_at
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
CREATE INDEX jobs_live_by_pr ON jobs (forge, repo_full_name, pr_number)
    WHERE state IN ('queued', 'running');
CREATE UNIQUE INDEX jobs_one_running_per_pr ON jobs (forge, repo_full_name, pr_number)
    WHERE state = 'running';
