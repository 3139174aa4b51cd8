-- Sign-in (SPEC §7 "console login") and the OAuth 2.1 authorization server for MCP clients;
-- mirrors migrations/sqlite/0005_sessions_oauth.sql. No secret is stored in clear: passwords
-- as argon2id PHC strings, session ids, codes, tokens and client secrets as lowercase hex
-- SHA-256.

-- One password per account (none until the operator sets one).
CREATE TABLE account_passwords (
    account_id TEXT COLLATE "C" PRIMARY KEY REFERENCES accounts(account_id) ON DELETE CASCADE,
    password_hash TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL
);

-- Server-side sessions of signed-in people. `session_hash` is the SHA-256 of the cookie value.
-- A session ends at the first of its idle and absolute expiries, or at logout.
CREATE TABLE web_sessions (
    session_hash TEXT COLLATE "C" PRIMARY KEY,
    account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts(account_id) ON DELETE CASCADE,
    created_at TEXT COLLATE "C" NOT NULL,
    idle_expires_at TEXT COLLATE "C" NOT NULL,
    absolute_expires_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX web_sessions_account ON web_sessions(account_id);
CREATE INDEX web_sessions_expiry ON web_sessions(absolute_expires_at);

-- Clients registered through RFC 7591 dynamic registration. Clients that use a Client ID
-- Metadata Document are not stored: their document is fetched (and cached in memory).
CREATE TABLE oauth_clients (
    client_id TEXT COLLATE "C" PRIMARY KEY,
    client_name TEXT COLLATE "C" NOT NULL,
    redirect_uris TEXT COLLATE "C" NOT NULL,
    token_endpoint_auth_method TEXT COLLATE "C" NOT NULL CHECK (token_endpoint_auth_method IN ('none', 'client_secret_basic', 'client_secret_post')),
    secret_hash TEXT COLLATE "C",
    metadata TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL
);

-- A grant is one approved consent: an account let a client act with these scopes on this
-- resource. Every code and token it leads to belongs to it, so revoking it (by the person,
-- or on a reused code or refresh token) ends them all at once.
CREATE TABLE oauth_grants (
    grant_id TEXT COLLATE "C" PRIMARY KEY,
    account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts(account_id) ON DELETE CASCADE,
    client_id TEXT COLLATE "C" NOT NULL,
    client_name TEXT COLLATE "C" NOT NULL,
    redirect_uri TEXT COLLATE "C" NOT NULL,
    scopes TEXT COLLATE "C" NOT NULL,
    resource TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    revoked_at TEXT COLLATE "C",
    revoked_reason TEXT COLLATE "C"
);
CREATE INDEX oauth_grants_account ON oauth_grants(account_id, created_at, grant_id);

-- Authorization codes: single use (`used_at`), short-lived, bound to the client, the
-- redirect_uri, the PKCE challenge (S256) and the resource of their grant.
CREATE TABLE oauth_codes (
    code_hash TEXT COLLATE "C" PRIMARY KEY,
    grant_id TEXT COLLATE "C" NOT NULL REFERENCES oauth_grants(grant_id) ON DELETE CASCADE,
    code_challenge TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL,
    used_at TEXT COLLATE "C"
);
CREATE INDEX oauth_codes_grant ON oauth_codes(grant_id);

-- Access and refresh tokens. A refresh token is exchanged once (`rotated_at`); presenting it
-- again revokes its grant.
CREATE TABLE oauth_tokens (
    token_hash TEXT COLLATE "C" PRIMARY KEY,
    grant_id TEXT COLLATE "C" NOT NULL REFERENCES oauth_grants(grant_id) ON DELETE CASCADE,
    kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('access', 'refresh')),
    scopes TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL,
    rotated_at TEXT COLLATE "C",
    revoked_at TEXT COLLATE "C"
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens(grant_id);
