-- The queue learns the forge (PostgreSQL): deliveries and jobs of GitHub and GitLab never
-- collide.
--
-- 1. A delivery id is unique per forge: `deliveries` is keyed by (forge, delivery_id).
-- 2. Jobs name their forge; a GitLab job has no App installation, so `installation_id` may be
--    NULL. The per-PR indexes (live jobs; one running job) are per (forge, repository,
--    number), and so are the intake's lock and supersede rule: they act within a forge only.
-- Rows stored before are GitHub's (the columns' default, dropped once they are filled: every
-- writer names the forge).

ALTER TABLE deliveries ADD COLUMN forge TEXT NOT NULL DEFAULT 'github'
    CONSTRAINT deliveries_forge_check CHECK (forge IN ('github', 'gitlab'));
ALTER TABLE deliveries ALTER COLUMN forge DROP DEFAULT;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_pkey;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_pkey PRIMARY KEY (forge, delivery_id);

ALTER TABLE jobs ADD COLUMN forge TEXT NOT NULL DEFAULT 'github'
    CONSTRAINT jobs_forge_check CHECK (forge IN ('github', 'gitlab'));
ALTER TABLE jobs ALTER COLUMN forge DROP DEFAULT;
ALTER TABLE jobs ALTER COLUMN installation_id DROP NOT NULL;

DROP INDEX jobs_by_pr;
CREATE INDEX jobs_by_pr ON jobs (forge, repo_full_name, pr_number, state)
    WHERE state IN ('queued', 'running');
DROP INDEX jobs_one_running_per_pr;
CREATE UNIQUE INDEX jobs_one_running_per_pr ON jobs (forge, repo_full_name, pr_number)
    WHERE state = 'running';

DROP FUNCTION redline_accept_deliveries(TEXT[], TEXT[], TEXT[], BIGINT[], TEXT[], BIGINT[],
    BIGINT[], TEXT[], TEXT[], TEXT[], TEXT[], BIGINT, BIGINT);
DROP FUNCTION redline_accept_delivery(TEXT, TEXT, TEXT, BIGINT, TEXT, BIGINT, BIGINT, TEXT,
    TEXT, TEXT, TEXT, BIGINT, BIGINT);

-- As in migration 4, with the forge: a delivery and its job (of the delivery's forge) in one
-- round trip; intake for one pull request of one forge is serialized (advisory lock).
CREATE FUNCTION redline_accept_delivery(
    p_forge TEXT, p_delivery_id TEXT, p_event TEXT, p_action TEXT, p_received_at BIGINT,
    p_repo TEXT, p_pr BIGINT, p_installation BIGINT, p_head_sha TEXT, p_kind TEXT,
    p_strategy TEXT, p_payload TEXT, p_max_attempts BIGINT, p_now BIGINT,
    OUT out_job_id BIGINT, OUT out_superseded BIGINT, OUT out_cancel_requested BIGINT)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO deliveries (forge, delivery_id, event, action, received_at)
    VALUES (p_forge, p_delivery_id, p_event, p_action, p_received_at)
    ON CONFLICT (forge, delivery_id) DO NOTHING;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(
        hashtextextended(p_forge || ':' || p_repo || '#' || p_pr::text, 0));
    out_superseded := 0;
    out_cancel_requested := 0;
    IF p_kind = 'review' THEN
        WITH replaced AS (
            UPDATE jobs SET
                state = CASE WHEN state = 'queued' THEN 'superseded' ELSE state END,
                cancel_requested = CASE WHEN state = 'running' THEN TRUE ELSE cancel_requested END,
                finished_at = CASE WHEN state = 'queued' THEN p_now ELSE finished_at END,
                updated_at = p_now
            WHERE forge = p_forge AND repo_full_name = p_repo AND pr_number = p_pr
                AND state IN ('queued', 'running')
            RETURNING state
        )
        SELECT count(*) FILTER (WHERE state = 'superseded'),
               count(*) FILTER (WHERE state <> 'superseded')
        INTO out_superseded, out_cancel_requested
        FROM replaced;
    END IF;
    INSERT INTO jobs (delivery_id, forge, repo_full_name, installation_id, pr_number, head_sha,
        kind, strategy, payload, state, attempts, max_attempts, run_at, cancel_requested,
        created_at, updated_at)
    VALUES (p_delivery_id, p_forge, p_repo, p_installation, p_pr, p_head_sha, p_kind,
        p_strategy, p_payload, 'queued', 0, p_max_attempts, p_now, FALSE, p_now, p_now)
    RETURNING id INTO out_job_id;
END;
$$;

-- As in migration 2, with the forge of each member.
CREATE FUNCTION redline_accept_deliveries(
    p_forges TEXT[], p_delivery_ids TEXT[], p_events TEXT[], p_actions TEXT[],
    p_received_at BIGINT[], p_repos TEXT[], p_prs BIGINT[], p_installations BIGINT[],
    p_head_shas TEXT[], p_kinds TEXT[], p_strategies TEXT[], p_payloads TEXT[],
    p_max_attempts BIGINT, p_now BIGINT)
RETURNS TABLE (out_stored BOOLEAN, out_job_id BIGINT, out_superseded BIGINT,
    out_cancel_requested BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
    lock_key BIGINT;
    accepted RECORD;
BEGIN
    FOR lock_key IN
        SELECT DISTINCT hashtextextended(u.forge || ':' || u.repo || '#' || u.pr::text, 0)
        FROM unnest(p_forges, p_repos, p_prs) AS u(forge, repo, pr)
        WHERE u.repo IS NOT NULL
        ORDER BY 1
    LOOP
        PERFORM pg_advisory_xact_lock(lock_key);
    END LOOP;
    FOR i IN 1 .. coalesce(array_length(p_delivery_ids, 1), 0) LOOP
        IF p_repos[i] IS NULL THEN
            INSERT INTO deliveries (forge, delivery_id, event, action, received_at)
            VALUES (p_forges[i], p_delivery_ids[i], p_events[i], p_actions[i], p_received_at[i])
            ON CONFLICT (forge, delivery_id) DO NOTHING;
            out_stored := FOUND;
            out_job_id := NULL;
            out_superseded := 0;
            out_cancel_requested := 0;
        ELSE
            SELECT * INTO accepted FROM redline_accept_delivery(
                p_forges[i], p_delivery_ids[i], p_events[i], p_actions[i], p_received_at[i],
                p_repos[i], p_prs[i], p_installations[i], p_head_shas[i], p_kinds[i],
                p_strategies[i], p_payloads[i], p_max_attempts, p_now);
            out_stored := accepted.out_job_id IS NOT NULL;
            out_job_id := accepted.out_job_id;
            out_superseded := coalesce(accepted.out_superseded, 0);
            out_cancel_requested := coalesce(accepted.out_cancel_requested, 0);
        END IF;
        RETURN NEXT;
    END LOOP;
END;
$$;
