-- Level 0 and memory recall rank with the in-memory index (crate::fulltext, fed from the
-- tables themselves through fulltext_log): the FTS5 tables are no longer read, so they are no
-- longer kept either.
DROP TABLE skills_fts;
DROP TABLE memories_fts;
-- The FTS rows were keyed by skills.search_key and memories.search_key; nothing reads those
-- columns any more, so new rows no longer pay the trigger's UPDATE to fill them (the columns
-- stay: SQLite cannot drop a UNIQUE column without rebuilding the table).
DROP TRIGGER skills_search_key;
DROP TRIGGER memories_search_key;
