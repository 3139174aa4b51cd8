-- xmemo schema, SQLite dialect. Timestamps are RFC 3339 UTC text.
CREATE TABLE accounts (
    account_id TEXT PRIMARY KEY,
    handle TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    is_admin INTEGER NOT NULL DEFAULT 0,
    password_hash TEXT,
    personal_workspace_id TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE workspaces (
    workspace_id TEXT PRIMARY KEY,
    handle TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('personal', 'team')),
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX workspaces_team_handle ON workspaces(handle) WHERE kind = 'team';

CREATE TABLE memberships (
    workspace_id TEXT NOT NULL REFERENCES workspaces(workspace_id) ON DELETE CASCADE,
    account_id TEXT NOT NULL REFERENCES accounts(account_id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    added_at TEXT NOT NULL,
    PRIMARY KEY (workspace_id, account_id)
);
CREATE INDEX memberships_account ON memberships(account_id);

CREATE TABLE api_keys (
    key_id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(account_id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    prefix TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    scopes TEXT NOT NULL,
    profile TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT
);
CREATE INDEX api_keys_account ON api_keys(account_id);

CREATE TABLE skills (
    skill_id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(workspace_id) ON DELETE CASCADE,
    slug TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    asset_status TEXT NOT NULL CHECK (asset_status IN ('active', 'archived')),
    latest_revision_number INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    -- Stable integer key of the skill's Level 0 row (the FTS5 rowid), copied from the rowid
    -- at insert time so VACUUM renumbering cannot detach it.
    search_key INTEGER UNIQUE,
    UNIQUE (workspace_id, slug)
);
CREATE INDEX skills_slug ON skills(slug);
CREATE TRIGGER skills_search_key AFTER INSERT ON skills BEGIN
    UPDATE skills SET search_key = NEW.rowid WHERE skill_id = NEW.skill_id;
END;

CREATE TABLE blobs (
    content_hash TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    bytes BLOB NOT NULL
);

CREATE TABLE revisions (
    revision_id TEXT PRIMARY KEY,
    skill_id TEXT NOT NULL REFERENCES skills(skill_id) ON DELETE CASCADE,
    revision_number INTEGER NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    instruction_body TEXT NOT NULL,
    metadata TEXT NOT NULL,
    canonical_hash TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('draft', 'proposed', 'published', 'deprecated')),
    review_note TEXT,
    account_id TEXT NOT NULL,
    credential_id TEXT,
    client_profile TEXT,
    agent_id TEXT,
    agent_instance_id TEXT,
    created_at TEXT NOT NULL,
    status_changed_at TEXT NOT NULL,
    UNIQUE (skill_id, revision_number)
);
-- At most one published revision per skill, enforced by the database.
CREATE UNIQUE INDEX revisions_one_published ON revisions(skill_id) WHERE status = 'published';

CREATE TABLE revision_components (
    revision_id TEXT NOT NULL REFERENCES revisions(revision_id) ON DELETE CASCADE,
    logical_path TEXT NOT NULL,
    path_folded TEXT NOT NULL,
    component_type TEXT NOT NULL,
    content_hash TEXT NOT NULL REFERENCES blobs(content_hash),
    size INTEGER NOT NULL,
    media_type TEXT NOT NULL,
    PRIMARY KEY (revision_id, logical_path),
    UNIQUE (revision_id, path_folded)
);

CREATE TABLE audit_log (
    seq INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    action TEXT NOT NULL,
    account_id TEXT NOT NULL,
    credential_id TEXT,
    client_profile TEXT,
    agent_id TEXT,
    agent_instance_id TEXT,
    workspace_id TEXT,
    skill_id TEXT,
    revision_id TEXT,
    details TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    entry_hash TEXT NOT NULL
);
CREATE INDEX audit_skill ON audit_log(skill_id);
CREATE INDEX audit_workspace ON audit_log(workspace_id);
-- The audit log is append-only.
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit_log BEGIN
    SELECT RAISE(ABORT, 'audit log is append-only');
END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit_log BEGIN
    SELECT RAISE(ABORT, 'audit log is append-only');
END;

-- Level 0 index: one row per active skill with a published revision; rowid = skills.search_key.
CREATE VIRTUAL TABLE skills_fts USING fts5(
    skill_id UNINDEXED,
    workspace_id UNINDEXED,
    slug,
    name,
    description,
    tokenize = 'porter unicode61'
);
