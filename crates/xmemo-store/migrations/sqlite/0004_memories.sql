-- Memories (SPEC §9): the current version of each memory, its history, its tags (for
-- filtering) and its Level 0-style full-text index.
CREATE TABLE memories (
    memory_id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(workspace_id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('preference', 'fact', 'decision', 'todo', 'progress', 'note')),
    title TEXT,
    content TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    -- JSON array of tag slugs, in the order given.
    tags TEXT NOT NULL,
    -- '' when the memory has no project scope (so the identical-content rule can index it).
    project TEXT NOT NULL,
    expires_at TEXT,
    status TEXT NOT NULL CHECK (status IN ('active', 'forgotten')),
    forgotten_reason TEXT,
    forgotten_at TEXT,
    version INTEGER NOT NULL,
    account_id TEXT NOT NULL,
    credential_id TEXT,
    client_profile TEXT,
    agent_id TEXT,
    agent_instance_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    -- Stable integer key of the memory's full-text row (see skills.search_key).
    search_key INTEGER UNIQUE
);
-- Identical active content in one workspace, project and kind exists once.
CREATE UNIQUE INDEX memories_identical ON memories(workspace_id, project, kind, content_hash) WHERE status = 'active';
CREATE INDEX memories_recent ON memories(workspace_id, updated_at);
CREATE INDEX memories_instance ON memories(agent_instance_id);
CREATE TRIGGER memories_search_key AFTER INSERT ON memories BEGIN
    UPDATE memories SET search_key = NEW.rowid WHERE memory_id = NEW.memory_id;
END;

CREATE TABLE memory_tags (
    memory_id TEXT NOT NULL REFERENCES memories(memory_id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (memory_id, tag)
);
CREATE INDEX memory_tags_tag ON memory_tags(tag);

CREATE TABLE memory_versions (
    memory_id TEXT NOT NULL REFERENCES memories(memory_id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    kind TEXT NOT NULL,
    title TEXT,
    content TEXT NOT NULL,
    tags TEXT NOT NULL,
    account_id TEXT NOT NULL,
    credential_id TEXT,
    client_profile TEXT,
    agent_id TEXT,
    agent_instance_id TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (memory_id, version)
);

-- rowid = memories.search_key; title and tags weigh more than the content.
CREATE VIRTUAL TABLE memories_fts USING fts5(
    title,
    content,
    tags,
    tokenize = 'porter unicode61'
);
