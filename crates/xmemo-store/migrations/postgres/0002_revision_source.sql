-- Provenance of imported revisions (SPEC §6): JSON text such as
-- {"kind": "github", "url": …, "commit": …, "archive_sha256": …}; NULL for ordinary saves.
-- Text like `metadata`, so it reads back byte for byte as written on both backends.
ALTER TABLE revisions ADD COLUMN source TEXT;
