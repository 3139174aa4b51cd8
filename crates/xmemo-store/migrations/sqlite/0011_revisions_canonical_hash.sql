-- Imports say when their content already exists in the workspace under another slug
-- (`same_content_as`, #24): one index lookup by canonical_hash instead of reading every
-- revision of the workspace. (Version 11: 10 is taken by a migration on another branch.)
CREATE INDEX revisions_canonical_hash ON revisions(canonical_hash);
