-- Which full-text rows changed, in commit order: every node ranks Level 0 searches and memory
-- recalls with an in-memory index (crate::fulltext) and, before each query, re-reads the rows
-- named here since the last change it applied (sql/fulltext.rs). kind 0 = skill (key =
-- skill_id), 1 = memory (key = memory_id). AUTOINCREMENT: a number is never reused, even
-- after the newest rows are pruned.
CREATE TABLE fulltext_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind INTEGER NOT NULL,
    key TEXT NOT NULL
);
