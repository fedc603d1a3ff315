-- Reviews asked for in a `/redline review` comment are jobs of their own kind, `requested`:
-- anyone who can comment can send one, and only the worker checks that the commenter may ask
-- for a review, so queueing one supersedes nothing and stops nothing. Only a `review` job (a
-- push, an opened or reopened pull request) replaces the pull request's earlier jobs.
ALTER TABLE jobs DROP CONSTRAINT jobs_kind_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_kind_check CHECK (kind IN ('review', 'requested'));

CREATE OR REPLACE FUNCTION redline_accept_delivery(
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
    out_superseded := 0;
    out_cancel_requested := 0;
    IF p_kind = 'review' THEN
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
    END IF;
    INSERT INTO jobs (delivery_id, repo_full_name, installation_id, pr_number, head_sha, kind,
        strategy, payload, state, attempts, max_attempts, run_at, cancel_requested,
        created_at, updated_at)
    VALUES (p_delivery_id, p_repo, p_installation, p_pr, p_head_sha, p_kind, p_strategy,
        p_payload, 'queued', 0, p_max_attempts, p_now, FALSE, p_now, p_now)
    RETURNING id INTO out_job_id;
END;
$$;
