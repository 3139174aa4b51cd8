-- Level 0's exact-name lookup (the query typed as a skill's name finds it first): by index on
-- the published revisions' lowercased names, not by a phrase match in the full-text index,
-- which reads every row holding the name's words (30–45 ms for a common word at 100k skills).
CREATE INDEX revisions_published_name ON revisions(lower(name)) WHERE status = 'published';
