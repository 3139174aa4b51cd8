-- xmemo schema, PostgreSQL dialect. Mirrors migrations/sqlite/0001_init.sql: same tables, same
-- columns, timestamps as RFC 3339 UTC text (written by the application, so both backends return
-- identical strings), JSON as text (so it reads back byte for byte as written).
-- Identifier, handle, slug, path and timestamp columns use the "C" collation so that ORDER BY
-- sorts bytewise, exactly like SQLite, whatever the database's default collation is.
-- The whole file runs in one transaction under an advisory lock (see postgres/mod.rs).

CREATE TABLE accounts (
    account_id TEXT COLLATE "C" PRIMARY KEY,
    handle TEXT COLLATE "C" NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    is_admin BOOLEAN NOT NULL DEFAULT FALSE,
    password_hash TEXT,
    personal_workspace_id TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE workspaces (
    workspace_id TEXT COLLATE "C" PRIMARY KEY,
    handle TEXT COLLATE "C" NOT NULL,
    name TEXT NOT NULL,
    kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('personal', 'team')),
    created_at TEXT COLLATE "C" NOT NULL
);
CREATE UNIQUE INDEX workspaces_team_handle ON workspaces(handle) WHERE kind = 'team';

CREATE TABLE memberships (
    workspace_id TEXT COLLATE "C" NOT NULL REFERENCES workspaces(workspace_id) ON DELETE CASCADE,
    account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts(account_id) ON DELETE CASCADE,
    role TEXT COLLATE "C" NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    added_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (workspace_id, account_id)
);
CREATE INDEX memberships_account ON memberships(account_id);

CREATE TABLE api_keys (
    key_id TEXT COLLATE "C" PRIMARY KEY,
    account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts(account_id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    prefix TEXT NOT NULL,
    key_hash TEXT COLLATE "C" NOT NULL UNIQUE,
    scopes TEXT NOT NULL,
    profile TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C",
    revoked_at TEXT COLLATE "C"
);
CREATE INDEX api_keys_account ON api_keys(account_id);

CREATE TABLE skills (
    skill_id TEXT COLLATE "C" PRIMARY KEY,
    workspace_id TEXT COLLATE "C" NOT NULL REFERENCES workspaces(workspace_id) ON DELETE CASCADE,
    slug TEXT COLLATE "C" NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    asset_status TEXT COLLATE "C" NOT NULL CHECK (asset_status IN ('active', 'archived')),
    latest_revision_number BIGINT NOT NULL DEFAULT 0,
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    UNIQUE (workspace_id, slug)
);
CREATE INDEX skills_slug ON skills(slug);

CREATE TABLE blobs (
    content_hash TEXT COLLATE "C" PRIMARY KEY,
    size BIGINT NOT NULL,
    bytes BYTEA NOT NULL
);

CREATE TABLE revisions (
    revision_id TEXT COLLATE "C" PRIMARY KEY,
    skill_id TEXT COLLATE "C" NOT NULL REFERENCES skills(skill_id) ON DELETE CASCADE,
    revision_number BIGINT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    instruction_body TEXT NOT NULL,
    metadata TEXT NOT NULL,
    canonical_hash TEXT COLLATE "C" NOT NULL,
    status TEXT COLLATE "C" NOT NULL CHECK (status IN ('draft', 'proposed', 'published', 'deprecated')),
    review_note TEXT,
    account_id TEXT COLLATE "C" NOT NULL,
    credential_id TEXT COLLATE "C",
    client_profile TEXT COLLATE "C",
    agent_id TEXT,
    agent_instance_id TEXT,
    created_at TEXT COLLATE "C" NOT NULL,
    status_changed_at TEXT COLLATE "C" NOT NULL,
    UNIQUE (skill_id, revision_number)
);
-- At most one published revision per skill, enforced by the database.
CREATE UNIQUE INDEX revisions_one_published ON revisions(skill_id) WHERE status = 'published';

CREATE TABLE revision_components (
    revision_id TEXT COLLATE "C" NOT NULL REFERENCES revisions(revision_id) ON DELETE CASCADE,
    logical_path TEXT COLLATE "C" NOT NULL,
    path_folded TEXT COLLATE "C" NOT NULL,
    component_type TEXT COLLATE "C" NOT NULL,
    content_hash TEXT COLLATE "C" NOT NULL REFERENCES blobs(content_hash),
    size BIGINT NOT NULL,
    media_type TEXT NOT NULL,
    PRIMARY KEY (revision_id, logical_path),
    UNIQUE (revision_id, path_folded)
);
CREATE INDEX revision_components_hash ON revision_components(content_hash);

CREATE TABLE audit_log (
    seq BIGINT PRIMARY KEY,
    at TEXT COLLATE "C" NOT NULL,
    action TEXT COLLATE "C" NOT NULL,
    account_id TEXT COLLATE "C" NOT NULL,
    credential_id TEXT COLLATE "C",
    client_profile TEXT COLLATE "C",
    agent_id TEXT,
    agent_instance_id TEXT,
    workspace_id TEXT COLLATE "C",
    skill_id TEXT COLLATE "C",
    revision_id TEXT COLLATE "C",
    details TEXT NOT NULL,
    prev_hash TEXT COLLATE "C" NOT NULL,
    entry_hash TEXT COLLATE "C" NOT NULL
);
CREATE INDEX audit_skill ON audit_log(skill_id);
CREATE INDEX audit_workspace ON audit_log(workspace_id);
-- The audit log is append-only.
CREATE FUNCTION xmemo_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit log is append-only' USING ERRCODE = 'restrict_violation';
END;
$$;
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION xmemo_audit_append_only();
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION xmemo_audit_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION xmemo_audit_append_only();

-- Level 0 index (the counterpart of SQLite's skills_fts): one row per active skill with a
-- published revision. Text is split on anything but letters and digits, as the query side
-- (crate::search::terms) does, and indexed twice: 'simple' (exact words and prefixes, no stop
-- words dropped) and 'english' (stemmed, like SQLite's porter tokenizer). Weights: slug A,
-- name B, description C.
CREATE TABLE skill_search (
    skill_id TEXT COLLATE "C" PRIMARY KEY REFERENCES skills(skill_id) ON DELETE CASCADE,
    workspace_id TEXT COLLATE "C" NOT NULL,
    slug TEXT COLLATE "C" NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    document tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('simple'::regconfig, regexp_replace(slug, '[^[:alnum:]]+', ' ', 'g')), 'A') ||
        setweight(to_tsvector('english'::regconfig, regexp_replace(slug, '[^[:alnum:]]+', ' ', 'g')), 'A') ||
        setweight(to_tsvector('simple'::regconfig, regexp_replace(name, '[^[:alnum:]]+', ' ', 'g')), 'B') ||
        setweight(to_tsvector('english'::regconfig, regexp_replace(name, '[^[:alnum:]]+', ' ', 'g')), 'B') ||
        setweight(to_tsvector('simple'::regconfig, regexp_replace(description, '[^[:alnum:]]+', ' ', 'g')), 'C') ||
        setweight(to_tsvector('english'::regconfig, regexp_replace(description, '[^[:alnum:]]+', ' ', 'g')), 'C')
    ) STORED
);
CREATE INDEX skill_search_document ON skill_search USING GIN (document);
CREATE INDEX skill_search_workspace ON skill_search(workspace_id);
