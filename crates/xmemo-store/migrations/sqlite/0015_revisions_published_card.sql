-- What a Level 0 search shows of each hit (name, description) in an index of its own (issue
-- #29, defect 8): the hydration reads this small index instead of the revisions' rows, whose
-- instruction bodies spread them over many pages (most of a search's page-cache misses).
-- The search names it (`INDEXED BY`): the planner otherwise takes the unique index on
-- skill_id and reads the row.
CREATE INDEX revisions_published_card ON revisions(skill_id, name, description)
    WHERE status = 'published';
