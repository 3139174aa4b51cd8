-- Sign-in (SPEC §7 "console login") and the OAuth 2.1 authorization server for MCP clients.
-- No secret is stored in clear: passwords as argon2id PHC strings, session ids, codes,
-- tokens and client secrets as lowercase hex SHA-256.

-- One password per account (none until the operator sets one).
CREATE TABLE account_passwords (
    account_id TEXT PRIMARY KEY REFERENCES accounts(account_id) ON DELETE CASCADE,
    password_hash TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- Server-side sessions of signed-in people. `session_hash` is the SHA-256 of the cookie value.
-- A session ends at the first of its idle and absolute expiries, or at logout.
CREATE TABLE web_sessions (
    session_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(account_id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    idle_expires_at TEXT NOT NULL,
    absolute_expires_at TEXT NOT NULL
);
CREATE INDEX web_sessions_account ON web_sessions(account_id);
CREATE INDEX web_sessions_expiry ON web_sessions(absolute_expires_at);

-- Clients registered through RFC 7591 dynamic registration. Clients that use a Client ID
-- Metadata Document are not stored: their document is fetched (and cached in memory).
CREATE TABLE oauth_clients (
    client_id TEXT PRIMARY KEY,
    client_name TEXT NOT NULL,
    redirect_uris TEXT NOT NULL,
    token_endpoint_auth_method TEXT NOT NULL CHECK (token_endpoint_auth_method IN ('none', 'client_secret_basic', 'client_secret_post')),
    secret_hash TEXT,
    metadata TEXT NOT NULL,
    created_at TEXT NOT NULL
);

-- A grant is one approved consent: an account let a client act with these scopes on this
-- resource. Every code and token it leads to belongs to it, so revoking it (by the person,
-- or on a reused code or refresh token) ends them all at once.
CREATE TABLE oauth_grants (
    grant_id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(account_id) ON DELETE CASCADE,
    client_id TEXT NOT NULL,
    client_name TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    scopes TEXT NOT NULL,
    resource TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    revoked_reason TEXT
);
CREATE INDEX oauth_grants_account ON oauth_grants(account_id, created_at, grant_id);

-- Authorization codes: single use (`used_at`), short-lived, bound to the client, the
-- redirect_uri, the PKCE challenge (S256) and the resource of their grant.
CREATE TABLE oauth_codes (
    code_hash TEXT PRIMARY KEY,
    grant_id TEXT NOT NULL REFERENCES oauth_grants(grant_id) ON DELETE CASCADE,
    code_challenge TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at TEXT
);
CREATE INDEX oauth_codes_grant ON oauth_codes(grant_id);

-- Access and refresh tokens. A refresh token is exchanged once (`rotated_at`); presenting it
-- again revokes its grant.
CREATE TABLE oauth_tokens (
    token_hash TEXT PRIMARY KEY,
    grant_id TEXT NOT NULL REFERENCES oauth_grants(grant_id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    scopes TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    rotated_at TEXT,
    revoked_at TEXT
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens(grant_id);
