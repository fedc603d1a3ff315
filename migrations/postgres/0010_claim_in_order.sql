-- The claim reads the live jobs in (run_at, id) order through an index scan that stops at
-- the first it can take. The index it replaces began with `state`, so the claim's two cases
-- (queued; running with an expired lease) were a bitmap scan of both and a sort. A bitmap
-- scan never marks the index entries of dead row versions, and every superseded or finished
-- job leaves one: under a burst of pushes each claim visited all of them until autovacuum came
-- (45,000 entries and 5 ms a claim after 60,000 deliveries). A plain index scan marks them
-- dead as it passes, so the next claim skips them.
CREATE INDEX jobs_runnable_in_order ON jobs (run_at, id) WHERE state IN ('queued', 'running');
DROP INDEX jobs_runnable;
