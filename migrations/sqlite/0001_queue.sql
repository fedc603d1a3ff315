-- Durable review queue (SQLite). Timestamps are Unix milliseconds (UTC).

CREATE TABLE deliveries (
    delivery_id TEXT PRIMARY KEY NOT NULL,
    event TEXT NOT NULL,
    action TEXT,
    received_at BIGINT NOT NULL
);

CREATE INDEX deliveries_received_at ON deliveries (received_at);

CREATE TABLE jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id TEXT,
    repo_full_name TEXT NOT NULL,
    installation_id BIGINT NOT NULL,
    pr_number BIGINT NOT NULL,
    head_sha TEXT,
    kind TEXT NOT NULL CHECK (kind IN ('review')),
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

CREATE INDEX jobs_runnable ON jobs (state, run_at, id);
CREATE INDEX jobs_by_pr ON jobs (repo_full_name, pr_number, state);
-- One review at a time per pull request, enforced by the database itself: two workers that
-- race to claim jobs of the same PR cannot both commit.
CREATE UNIQUE INDEX jobs_one_running_per_pr ON jobs (repo_full_name, pr_number)
    WHERE state = 'running';
