-- Hardening round 2 (issue #23): what the sign-in budgets, the per-account quotas, the
-- invitation bounds and the expiry of unused OAuth clients need.

-- The addresses (as the service counts them: IPv4, or an IPv6 /64) each account signed in
-- from, its latest few: the per-account sign-in ceiling never refuses them, so guessing from
-- elsewhere cannot lock the owner out.
CREATE TABLE signin_addresses (
    account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts(account_id) ON DELETE CASCADE,
    address TEXT COLLATE "C" NOT NULL,
    last_signed_in_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (account_id, address)
);

-- An operator's unlock of an account's sign-in budgets (`xmemo admin account unlock`); every
-- node applies it when it next refuses a sign-in of the account.
CREATE TABLE signin_unlocks (
    account_id TEXT COLLATE "C" PRIMARY KEY REFERENCES accounts(account_id) ON DELETE CASCADE,
    unlocked_at TEXT COLLATE "C" NOT NULL
);

-- What each account has written, for its quotas: memories and skills it created, and bytes
-- (every memory version's content and title; every revision's body, metadata and files).
-- Charged by a conditional UPDATE in the writing transaction (its row lock serialises an
-- account's writes across nodes).
CREATE TABLE account_usage (
    account_id TEXT COLLATE "C" PRIMARY KEY REFERENCES accounts(account_id) ON DELETE CASCADE,
    memories BIGINT NOT NULL DEFAULT 0,
    skills BIGINT NOT NULL DEFAULT 0,
    bytes BIGINT NOT NULL DEFAULT 0
);
INSERT INTO account_usage (account_id, memories, skills, bytes)
SELECT a.account_id,
       (SELECT COUNT(*) FROM memories m WHERE m.account_id = a.account_id),
       (SELECT COUNT(*) FROM revisions r WHERE r.account_id = a.account_id AND r.revision_number = 1),
       COALESCE((SELECT SUM(octet_length(v.content) + COALESCE(octet_length(v.title), 0))
                 FROM memory_versions v WHERE v.account_id = a.account_id), 0)
     + COALESCE((SELECT SUM(octet_length(r.instruction_body) + octet_length(r.metadata::text))
                 FROM revisions r WHERE r.account_id = a.account_id), 0)
     + COALESCE((SELECT SUM(c.size) FROM revision_components c
                 JOIN revisions r ON r.revision_id = c.revision_id WHERE r.account_id = a.account_id), 0)
FROM accounts a;

-- One pending invitation per team and person, whether it was addressed by handle or by
-- account id (the spelling index of 0003 cannot see that both name one person). Duplicates
-- from before are revoked, the oldest kept.
UPDATE invitations i SET status = 'revoked',
       responded_at = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
WHERE i.status = 'pending' AND i.account_id IS NOT NULL AND EXISTS (
    SELECT 1 FROM invitations o
    WHERE o.workspace_id = i.workspace_id AND o.account_id = i.account_id
      AND o.status = 'pending'
      AND (o.created_at < i.created_at
           OR (o.created_at = i.created_at AND o.invitation_id < i.invitation_id)));
CREATE UNIQUE INDEX invitations_one_pending_account ON invitations(workspace_id, account_id)
    WHERE status = 'pending' AND account_id IS NOT NULL;
-- Pending invitations of one invitee (the per-invitee bound).
CREATE INDEX invitations_invitee_pending ON invitations(invitee) WHERE status = 'pending';

-- Registered clients that never got a grant expire: found by age, then by their grants.
CREATE INDEX oauth_clients_created ON oauth_clients(created_at);
CREATE INDEX oauth_grants_client ON oauth_grants(client_id);
