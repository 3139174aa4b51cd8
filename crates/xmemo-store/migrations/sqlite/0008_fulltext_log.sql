-- Which full-text rows changed, in commit order: every node ranks Level 0 searches and memory
-- recalls with an in-memory index (crate::fulltext) and, before each query, re-reads the rows
-- named here since the last change it applied (sql/fulltext.rs). kind 0 = skill (key =
-- skill_id), 1 = memory (key = memory_id). AUTOINCREMENT: a number is never reused, so a
-- node's "applied up to seq N" stays true whatever rows are deleted. Old entries are pruned
-- (migration 0013, fulltext_log_floor; docs/decisions.md).
CREATE TABLE fulltext_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind INTEGER NOT NULL,
    key TEXT NOT NULL
);
