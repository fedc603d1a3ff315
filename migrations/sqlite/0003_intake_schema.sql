-- Fewer B-trees per delivery (SQLite). Every delivery the intake stores inserts a delivery
-- and a job and supersedes the pull request's previous job; each B-tree those rows touch costs
-- work and, at commit, dirty pages in the write-ahead log.
--
-- 1. `deliveries` is keyed by its id alone (WITHOUT ROWID): the deduplication key is the
--    table itself, rather than a rowid table plus a unique index on the id.
-- 2. The per-PR index holds only live jobs (queued or running), not every job ever stored:
--    superseding a job removes its entry instead of moving it, and the index stays as small
--    as the live work. The intake's supersede statement names it (INDEXED BY), so it is
--    looked up by pull request however many jobs are queued.

CREATE TABLE deliveries_by_id (
    delivery_id TEXT PRIMARY KEY NOT NULL,
    event TEXT NOT NULL,
    action TEXT,
    received_at BIGINT NOT NULL
) WITHOUT ROWID;

INSERT INTO deliveries_by_id (delivery_id, event, action, received_at)
    SELECT delivery_id, event, action, received_at FROM deliveries;

DROP TABLE deliveries;

ALTER TABLE deliveries_by_id RENAME TO deliveries;

CREATE INDEX deliveries_received_at ON deliveries (received_at);

DROP INDEX jobs_by_pr;

CREATE INDEX jobs_live_by_pr ON jobs (repo_full_name, pr_number)
    WHERE state IN ('queued', 'running');
