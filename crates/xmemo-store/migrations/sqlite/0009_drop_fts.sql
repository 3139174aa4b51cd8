-- Level 0 and memory recall rank with the in-memory index (crate::fulltext, fed from the
-- tables themselves through fulltext_log): the FTS5 tables are no longer read, so they are no
-- longer kept either.
DROP TABLE skills_fts;
DROP TABLE memories_fts;
