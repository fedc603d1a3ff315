-- A group of deliveries in one round trip (PostgreSQL). The supersede rule keeps its one
-- definition in Rust (`src/queue/supersede.rs`): the intake works out what a group writes
-- (which pull requests' stored jobs it replaces, which new jobs it inserts and in what state)
-- and passes it here; this function decides nothing, it runs the group's statements in one
-- call, so a group costs one round trip instead of four (`BEGIN`, two statements, `COMMIT`).
--
-- A VOLATILE PL/pgSQL function takes a fresh snapshot for each statement it runs (READ
-- COMMITTED), so the jobs statement, which starts after the per-PR advisory locks are held,
-- sees every job a previous holder committed; one SQL statement could not (its snapshot is
-- taken before any lock). The locks are taken in one global order (by key), all before
-- anything is written, so the groups of two replicas cannot deadlock on them.
--
-- p_locks: `forge:repo#number` of the pull requests to lock until the transaction ends.
-- p_forges .. p_received_at: the deliveries to insert (one array per column); a delivery
--   stored already is skipped, and with p_require_new it fails the call (SQLSTATE 23505,
--   nothing kept): the caller planned the jobs as if every delivery were new.
-- p_pr_*: the pull requests whose queued jobs are superseded and running job asked to stop.
-- p_job_*: the new jobs, inserted in array order (their ids follow it).
-- Rows returned: ('delivery', forge, delivery_id) per delivery stored; ('replaced', forge,
-- state, repo, pr) per stored job touched (state as written); ('job', forge, delivery_id,
-- job_id) per job inserted. The replacement and the insertion read one snapshot, so the
-- replacement never sees the jobs inserted with it.
CREATE FUNCTION redline_store_group(
    p_locks TEXT[],
    p_forges TEXT[], p_delivery_ids TEXT[], p_events TEXT[], p_actions TEXT[],
    p_received_at BIGINT[], p_require_new BOOLEAN,
    p_pr_forges TEXT[], p_pr_repos TEXT[], p_pr_numbers BIGINT[],
    p_job_delivery_ids TEXT[], p_job_forges TEXT[], p_job_repos TEXT[],
    p_job_installations BIGINT[], p_job_prs BIGINT[], p_job_head_shas TEXT[],
    p_job_kinds TEXT[], p_job_strategies TEXT[], p_job_payloads TEXT[], p_job_states TEXT[],
    p_job_max_attempts BIGINT[], p_now BIGINT)
RETURNS TABLE (out_kind TEXT, out_forge TEXT, out_delivery_id TEXT, out_state TEXT,
    out_repo TEXT, out_pr BIGINT, out_job_id BIGINT)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    lock_key BIGINT;
    stored BIGINT;
BEGIN
    FOR lock_key IN
        SELECT DISTINCT hashtextextended(pr, 0) FROM unnest(p_locks) AS pr ORDER BY 1
    LOOP
        PERFORM pg_advisory_xact_lock(lock_key);
    END LOOP;
    RETURN QUERY
    WITH inserted AS (
        INSERT INTO deliveries (forge, delivery_id, event, action, received_at)
        SELECT * FROM unnest(p_forges, p_delivery_ids, p_events, p_actions, p_received_at)
        ON CONFLICT (forge, delivery_id) DO NOTHING
        RETURNING forge, delivery_id
    )
    SELECT 'delivery', i.forge, i.delivery_id, NULL::text, NULL::text, NULL::int8, NULL::int8
    FROM inserted AS i;
    GET DIAGNOSTICS stored = ROW_COUNT;
    IF p_require_new AND stored < coalesce(array_length(p_delivery_ids, 1), 0) THEN
        RAISE EXCEPTION 'a delivery of the group is stored already'
            USING ERRCODE = 'unique_violation';
    END IF;
    IF coalesce(array_length(p_job_delivery_ids, 1), 0) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH replaced AS (
        UPDATE jobs SET
            state = CASE WHEN jobs.state = 'queued' THEN 'superseded' ELSE jobs.state END,
            cancel_requested = CASE WHEN jobs.state = 'running' THEN TRUE
                ELSE jobs.cancel_requested END,
            finished_at = CASE WHEN jobs.state = 'queued' THEN p_now ELSE jobs.finished_at END,
            updated_at = p_now
        FROM unnest(p_pr_forges, p_pr_repos, p_pr_numbers) AS p(forge, repo, number)
        WHERE jobs.state IN ('queued', 'running') AND jobs.forge = p.forge
            AND jobs.repo_full_name = p.repo AND jobs.pr_number = p.number
        RETURNING jobs.state, jobs.forge, jobs.repo_full_name, jobs.pr_number
    ), inserted AS (
        INSERT INTO jobs (delivery_id, forge, repo_full_name, installation_id, pr_number,
            head_sha, kind, strategy, payload, state, attempts, max_attempts, run_at,
            cancel_requested, created_at, updated_at, finished_at)
        SELECT u.delivery_id, u.forge, u.repo, u.installation, u.pr, u.head_sha, u.kind,
            u.strategy, u.payload, u.state, 0, u.max_attempts, p_now, FALSE, p_now, p_now,
            CASE WHEN u.state = 'superseded' THEN p_now END
        FROM unnest(p_job_delivery_ids, p_job_forges, p_job_repos, p_job_installations,
            p_job_prs, p_job_head_shas, p_job_kinds, p_job_strategies, p_job_payloads,
            p_job_states, p_job_max_attempts) WITH ORDINALITY
            AS u(delivery_id, forge, repo, installation, pr, head_sha, kind, strategy,
                payload, state, max_attempts, position)
        ORDER BY u.position
        RETURNING jobs.id, jobs.forge, jobs.delivery_id
    )
    SELECT 'replaced', r.forge, NULL::text, r.state, r.repo_full_name, r.pr_number, NULL::int8
    FROM replaced AS r
    UNION ALL
    SELECT 'job', n.forge, n.delivery_id, NULL::text, NULL::text, NULL::int8, n.id
    FROM inserted AS n;
END;
$$;
