-- Durable review queue (PostgreSQL). Timestamps are Unix milliseconds (UTC).

CREATE TABLE deliveries (
    delivery_id TEXT PRIMARY KEY NOT NULL,
    event TEXT NOT NULL,
    action TEXT,
    received_at BIGINT NOT NULL
);

CREATE INDEX deliveries_received_at ON deliveries (received_at);

CREATE TABLE jobs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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

-- Partial: finished jobs leave these indexes, which stay as small as the live work (SQLite,
-- whose planner would not use them for the claim query, keeps full indexes).
CREATE INDEX jobs_runnable ON jobs (state, run_at, id) WHERE state IN ('queued', 'running');
CREATE INDEX jobs_by_pr ON jobs (repo_full_name, pr_number, state)
    WHERE state IN ('queued', 'running');
-- One review at a time per pull request, enforced by the database itself: two workers that
-- race to claim jobs of the same PR cannot both commit.
CREATE UNIQUE INDEX jobs_one_running_per_pr ON jobs (repo_full_name, pr_number)
    WHERE state = 'running';

-- Records a delivery and enqueues its job in one round trip. Intake for one pull request is
-- serialized (advisory lock) so that each new job sees, and replaces, the one before it; each
-- statement of a PL/pgSQL function takes a fresh snapshot, so the UPDATE below sees a job
-- committed by whoever held the lock before. out_job_id is NULL for a redelivery.
CREATE FUNCTION redline_accept_delivery(
    p_delivery_id TEXT, p_event TEXT, p_action TEXT, p_received_at BIGINT,
    p_repo TEXT, p_pr BIGINT, p_installation BIGINT, p_head_sha TEXT, p_kind TEXT,
    p_strategy TEXT, p_payload TEXT, p_max_attempts BIGINT, p_now BIGINT,
    OUT out_job_id BIGINT, OUT out_superseded BIGINT, OUT out_cancel_requested BIGINT)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO deliveries (delivery_id, event, action, received_at)
    VALUES (p_delivery_id, p_event, p_action, p_received_at)
    ON CONFLICT (delivery_id) DO NOTHING;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended(p_repo || '#' || p_pr::text, 0));
    WITH replaced AS (
        UPDATE jobs SET
            state = CASE WHEN state = 'queued' THEN 'superseded' ELSE state END,
            cancel_requested = CASE WHEN state = 'running' THEN TRUE ELSE cancel_requested END,
            finished_at = CASE WHEN state = 'queued' THEN p_now ELSE finished_at END,
            updated_at = p_now
        WHERE repo_full_name = p_repo AND pr_number = p_pr AND state IN ('queued', 'running')
        RETURNING state
    )
    SELECT count(*) FILTER (WHERE state = 'superseded'),
           count(*) FILTER (WHERE state <> 'superseded')
    INTO out_superseded, out_cancel_requested
    FROM replaced;
    INSERT INTO jobs (delivery_id, repo_full_name, installation_id, pr_number, head_sha, kind,
        strategy, payload, state, attempts, max_attempts, run_at, cancel_requested,
        created_at, updated_at)
    VALUES (p_delivery_id, p_repo, p_installation, p_pr, p_head_sha, p_kind, p_strategy,
        p_payload, 'queued', 0, p_max_attempts, p_now, FALSE, p_now, p_now)
    RETURNING id INTO out_job_id;
END;
$$;
