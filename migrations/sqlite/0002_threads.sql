-- Review threads (SQLite): comments Redline answered (or decided not to), and findings a
-- pull request's people dismissed. Timestamps are Unix milliseconds (UTC).

-- A comment id is claimed here before it is answered, so a redelivery or a second
-- replica never answers it twice.
CREATE TABLE answered_comments (
    repo_full_name TEXT NOT NULL,
    comment_id BIGINT NOT NULL,
    answered_at BIGINT NOT NULL,
    PRIMARY KEY (repo_full_name, comment_id)
);

-- Keys (fingerprints and concern keys) of findings not to raise again on a pull request.
CREATE TABLE dismissed_findings (
    repo_full_name TEXT NOT NULL,
    pr_number BIGINT NOT NULL,
    finding_key TEXT NOT NULL,
    dismissed_at BIGINT NOT NULL,
    PRIMARY KEY (repo_full_name, pr_number, finding_key)
);
