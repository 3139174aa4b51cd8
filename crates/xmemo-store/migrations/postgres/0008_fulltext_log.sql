-- Which full-text rows changed, in commit order: every node ranks Level 0 searches and memory
-- recalls with an in-memory index (crate::fulltext) and, before each query, re-reads the rows
-- named here since the last change it applied (sql/fulltext.rs). kind 0 = skill (key =
-- skill_id), 1 = memory (key = memory_id). Appends take the audit-chain lock first, so
-- numbers are handed out in commit order across nodes and a reader never skips one.
CREATE TABLE fulltext_log (
    seq BIGSERIAL PRIMARY KEY,
    kind BIGINT NOT NULL,
    key TEXT COLLATE "C" NOT NULL
);
