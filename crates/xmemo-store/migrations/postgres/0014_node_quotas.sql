-- The quotas each `xmemo serve` node enforces, recorded when it starts (issue #29), so that
-- `xmemo admin account usage` shows the quotas in force rather than the settings file's. One
-- row per node (`host:pid`); 0 is no quota of that kind (as with the --quota-* flags). Each
-- start keeps the newest rows only (sql/usage.rs, `record_node_quotas`).
CREATE TABLE node_quotas (
    node TEXT PRIMARY KEY,
    started_at TEXT NOT NULL,
    memories BIGINT NOT NULL,
    skills BIGINT NOT NULL,
    bytes BIGINT NOT NULL
);
