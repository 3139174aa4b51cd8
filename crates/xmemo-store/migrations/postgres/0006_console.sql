-- The Memory Console (docs/console.md): when each API key was last used (written at most once a
-- minute per key by authentication), and the proposals an owner or admin must review,
-- found without reading every revision.
ALTER TABLE api_keys ADD COLUMN last_used_at TEXT COLLATE "C";
CREATE INDEX revisions_proposed ON revisions(skill_id) WHERE status = 'proposed';
