-- The supersede rule has one definition, in Rust (`src/queue/supersede.rs`), for both
-- backends: the intake computes what a group of deliveries writes and runs plain statements in
-- one transaction. The PL/pgSQL copies of the rule (migrations 2, 4 and 6) are gone.
DROP FUNCTION redline_accept_deliveries(TEXT[], TEXT[], TEXT[], TEXT[], BIGINT[], TEXT[],
    BIGINT[], BIGINT[], TEXT[], TEXT[], TEXT[], TEXT[], BIGINT, BIGINT);
DROP FUNCTION redline_accept_delivery(TEXT, TEXT, TEXT, TEXT, BIGINT, TEXT, BIGINT, BIGINT,
    TEXT, TEXT, TEXT, TEXT, BIGINT, BIGINT);
