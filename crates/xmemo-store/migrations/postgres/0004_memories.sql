-- Memories (SPEC §9), the PostgreSQL counterpart of sqlite/0004_memories.sql: same tables and
-- columns; the full-text index is a generated tsvector (title and tags A, content B, each both
-- as plain words and stemmed, like skill_search) with a GIN index.
CREATE TABLE memories (
    memory_id TEXT COLLATE "C" PRIMARY KEY,
    workspace_id TEXT COLLATE "C" NOT NULL REFERENCES workspaces(workspace_id) ON DELETE CASCADE,
    kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('preference', 'fact', 'decision', 'todo', 'progress', 'note')),
    title TEXT,
    content TEXT NOT NULL,
    content_hash TEXT COLLATE "C" NOT NULL,
    tags TEXT NOT NULL,
    project TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C",
    status TEXT COLLATE "C" NOT NULL CHECK (status IN ('active', 'forgotten')),
    forgotten_reason TEXT,
    forgotten_at TEXT COLLATE "C",
    version BIGINT NOT NULL,
    account_id TEXT COLLATE "C" NOT NULL,
    credential_id TEXT COLLATE "C",
    client_profile TEXT COLLATE "C",
    agent_id TEXT,
    agent_instance_id TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    document tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('simple'::regconfig, regexp_replace(coalesce(title, ''), '[^[:alnum:]]+', ' ', 'g')), 'A') ||
        setweight(to_tsvector('english'::regconfig, regexp_replace(coalesce(title, ''), '[^[:alnum:]]+', ' ', 'g')), 'A') ||
        setweight(to_tsvector('simple'::regconfig, regexp_replace(tags, '[^[:alnum:]]+', ' ', 'g')), 'A') ||
        setweight(to_tsvector('simple'::regconfig, regexp_replace(content, '[^[:alnum:]]+', ' ', 'g')), 'B') ||
        setweight(to_tsvector('english'::regconfig, regexp_replace(content, '[^[:alnum:]]+', ' ', 'g')), 'B')
    ) STORED
);
CREATE UNIQUE INDEX memories_identical ON memories(workspace_id, project, kind, content_hash) WHERE status = 'active';
CREATE INDEX memories_recent ON memories(workspace_id, updated_at);
CREATE INDEX memories_instance ON memories(agent_instance_id);
CREATE INDEX memories_document ON memories USING GIN (document);

CREATE TABLE memory_tags (
    memory_id TEXT COLLATE "C" NOT NULL REFERENCES memories(memory_id) ON DELETE CASCADE,
    tag TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (memory_id, tag)
);
CREATE INDEX memory_tags_tag ON memory_tags(tag);

CREATE TABLE memory_versions (
    memory_id TEXT COLLATE "C" NOT NULL REFERENCES memories(memory_id) ON DELETE CASCADE,
    version BIGINT NOT NULL,
    kind TEXT COLLATE "C" NOT NULL,
    title TEXT,
    content TEXT NOT NULL,
    tags TEXT NOT NULL,
    account_id TEXT COLLATE "C" NOT NULL,
    credential_id TEXT COLLATE "C",
    client_profile TEXT COLLATE "C",
    agent_id TEXT,
    agent_instance_id TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (memory_id, version)
);
