-- SQLite's 0015 indexes the published revisions' names and descriptions for Level 0 (issue
-- #29, defect 8). Not here: a PostgreSQL B-tree entry holds at most ~2.7 kB, less than a
-- description of 1,024 characters can take, and PostgreSQL keeps its own shared buffers.
SELECT 1;
