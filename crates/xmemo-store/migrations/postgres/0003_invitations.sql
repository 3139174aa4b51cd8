-- Team invitations (SPEC §7 "invites users"): adding someone to a team is a pending
-- invitation that only the invitee can accept; no membership row exists before that.
-- Mirrors migrations/sqlite/0003_invitations.sql. `invitee` is the handle or account id
-- exactly as the inviter wrote it; `account_id` is the account it named when it was created,
-- or NULL when it named none (stored and listed like any other, so the answer does not tell
-- which handles exist, but it can never reach anyone: the invitee side reads by
-- `account_id` only).
CREATE TABLE invitations (
    invitation_id TEXT COLLATE "C" PRIMARY KEY,
    workspace_id TEXT COLLATE "C" NOT NULL REFERENCES workspaces(workspace_id) ON DELETE CASCADE,
    invitee TEXT COLLATE "C" NOT NULL,
    account_id TEXT COLLATE "C" REFERENCES accounts(account_id) ON DELETE CASCADE,
    role TEXT COLLATE "C" NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    status TEXT COLLATE "C" NOT NULL CHECK (status IN ('pending', 'accepted', 'declined', 'revoked')),
    invited_by TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    responded_at TEXT COLLATE "C"
);
-- One pending invitation per team and invitee spelling.
CREATE UNIQUE INDEX invitations_one_pending ON invitations(workspace_id, invitee) WHERE status = 'pending';
CREATE INDEX invitations_workspace ON invitations(workspace_id, created_at);
CREATE INDEX invitations_account ON invitations(account_id, created_at);
