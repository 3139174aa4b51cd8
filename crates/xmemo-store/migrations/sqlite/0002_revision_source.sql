-- Provenance of imported revisions (SPEC §6): JSON text such as
-- {"kind": "github", "url": …, "commit": …, "archive_sha256": …}; NULL for ordinary saves.
ALTER TABLE revisions ADD COLUMN source TEXT;
