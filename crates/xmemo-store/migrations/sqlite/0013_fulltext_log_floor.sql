-- How far fulltext_log has been pruned (sql/fulltext.rs, `prune_log`): every entry numbered up
-- to pruned_through is gone. A node whose index applied less than that cannot catch up from
-- the log and rebuilds its indexes from the tables; an embedding worker whose position is
-- below it embeds every row again (rows whose text is unchanged keep their vector).
CREATE TABLE fulltext_log_floor (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    pruned_through BIGINT NOT NULL
);
INSERT INTO fulltext_log_floor (id, pruned_through) VALUES (1, 0);
