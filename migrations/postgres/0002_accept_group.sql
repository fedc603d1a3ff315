-- Group commit of the intake: stores several deliveries (and their jobs) in one statement, so
-- one transaction. Members are applied in array order, each seeing those before it (a
-- redelivery within the group is a duplicate; a later job supersedes an earlier one of the
-- same pull request). A NULL repository means the delivery has no job.
--
-- The pull requests of the group are locked first, in one global order, so that the groups of
-- two replicas cannot deadlock on the per-PR locks of redline_accept_delivery (which takes
-- them again; advisory locks are re-entrant).
CREATE FUNCTION redline_accept_deliveries(
    p_delivery_ids TEXT[], p_events TEXT[], p_actions TEXT[], p_received_at BIGINT[],
    p_repos TEXT[], p_prs BIGINT[], p_installations BIGINT[], p_head_shas TEXT[],
    p_kinds TEXT[], p_strategies TEXT[], p_payloads TEXT[], p_max_attempts BIGINT, p_now BIGINT)
RETURNS TABLE (out_stored BOOLEAN, out_job_id BIGINT, out_superseded BIGINT,
    out_cancel_requested BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
    lock_key BIGINT;
    accepted RECORD;
BEGIN
    FOR lock_key IN
        SELECT DISTINCT hashtextextended(u.repo || '#' || u.pr::text, 0)
        FROM unnest(p_repos, p_prs) AS u(repo, pr)
        WHERE u.repo IS NOT NULL
        ORDER BY 1
    LOOP
        PERFORM pg_advisory_xact_lock(lock_key);
    END LOOP;
    FOR i IN 1 .. coalesce(array_length(p_delivery_ids, 1), 0) LOOP
        IF p_repos[i] IS NULL THEN
            INSERT INTO deliveries (delivery_id, event, action, received_at)
            VALUES (p_delivery_ids[i], p_events[i], p_actions[i], p_received_at[i])
            ON CONFLICT (delivery_id) DO NOTHING;
            out_stored := FOUND;
            out_job_id := NULL;
            out_superseded := 0;
            out_cancel_requested := 0;
        ELSE
            SELECT * INTO accepted FROM redline_accept_delivery(
                p_delivery_ids[i], p_events[i], p_actions[i], p_received_at[i], p_repos[i],
                p_prs[i], p_installations[i], p_head_shas[i], p_kinds[i], p_strategies[i],
                p_payloads[i], p_max_attempts, p_now);
            out_stored := accepted.out_job_id IS NOT NULL;
            out_job_id := accepted.out_job_id;
            out_superseded := coalesce(accepted.out_superseded, 0);
            out_cancel_requested := coalesce(accepted.out_cancel_requested, 0);
        END IF;
        RETURN NEXT;
    END LOOP;
END;
$$;
