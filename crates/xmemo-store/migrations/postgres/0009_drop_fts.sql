-- Level 0 and memory recall rank with the in-memory index (crate::fulltext, fed from the
-- tables themselves through fulltext_log): the tsvector index is no longer read, so it is no
-- longer kept either.
DROP TABLE skill_search;
DROP INDEX memories_document;
ALTER TABLE memories DROP COLUMN document;
