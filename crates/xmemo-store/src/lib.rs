//! The storage trait of xmemo and its implementations. Callers (the service layer) depend only
//! on [`Store`]; each backend keeps its own migrations and SQL dialect.
#![forbid(unsafe_code)]

mod background;
pub mod error;
pub mod migrate;
pub mod model;
pub mod postgres;
pub mod search;
pub mod signin;
pub mod snapshot;
pub mod sql;
pub mod sqlite;

use async_trait::async_trait;
pub use error::{LimitReached, StoreError};
pub use model::*;
pub use signin::*;
pub use sql::{Record, SqlStore};
use std::collections::BTreeMap;
use xmemo_core::{AssetStatus, InvitationStatus, Role};

pub type StoreResult<T> = Result<T, StoreError>;

/// Everything the service layer needs from persistence. Every method is one atomic unit:
/// multi-row writes happen in one transaction inside the implementation.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Backend name for diagnostics (`sqlite`, `postgres`).
    fn backend(&self) -> &'static str;
    async fn ping(&self) -> StoreResult<()>;
    /// SQL statements this store has run so far: tests and diagnostics bound the work of one
    /// request with it.
    fn statements_run(&self) -> u64;
    /// Write transactions that have carried skill saves so far. Concurrent saves share one
    /// (group commit), so under load this grows slower than the number of saves.
    fn save_transactions(&self) -> u64;
    /// Saves waiting for their group commit to start (tests and diagnostics).
    fn queued_saves(&self) -> usize;

    // Audit drafts are the caller's: the store fills in only the identifiers it allocates
    // (the new account's `account_id` and personal workspace, a new key's `key_id`).

    // ---- accounts, workspaces, memberships ----
    /// Creates the account, its personal workspace and its owner membership.
    async fn create_account(&self, new: NewAccount, audit: AuditDraft) -> StoreResult<Account>;
    async fn get_account(&self, account_id: &str) -> StoreResult<Option<Account>>;
    /// The account a presented credential belongs to, for authentication: the same row as
    /// [`Store::get_account`], which an implementation may serve from a short-lived cache
    /// (the SQL stores do; see `sql::cache`). Other lookups use `get_account`, so whether an
    /// account was recently active never changes the work of a request about it.
    async fn account_of_credential(&self, account_id: &str) -> StoreResult<Option<Account>> {
        self.get_account(account_id).await
    }
    async fn find_account_by_handle(&self, handle: &str) -> StoreResult<Option<Account>>;
    async fn list_accounts(&self) -> StoreResult<Vec<Account>>;
    /// Removes the account and everything only it owns, in one transaction (see
    /// [`AccountDeletion`]); its audit entries stay, and `audit` is appended. Refused with
    /// `Conflict` when the account is the only owner of a team or the last server
    /// administrator, checked in that transaction under locks on those teams (and on the
    /// administrators), so two owners deleting themselves at once cannot both succeed.
    async fn delete_account(
        &self,
        account_id: &str,
        audit: AuditDraft,
    ) -> StoreResult<AccountDeletion>;
    // Listings come whole (for operators and internal checks) and as keyset pages (for
    // clients: every list a client can ask for is paged).
    /// One page of accounts in `(created_at, account_id)` order.
    async fn list_accounts_page(&self, page: &KeysetPage<CreationKey>)
    -> StoreResult<Vec<Account>>;
    async fn count_accounts(&self) -> StoreResult<u64>;

    async fn create_team(&self, new: NewTeam, audit: AuditDraft) -> StoreResult<Workspace>;
    async fn get_workspace(&self, workspace_id: &str) -> StoreResult<Option<Workspace>>;
    async fn find_team_by_handle(&self, handle: &str) -> StoreResult<Option<Workspace>>;
    /// Every workspace the account belongs to, with its role there.
    async fn memberships(&self, account_id: &str) -> StoreResult<Vec<Membership>>;
    /// One page of the account's workspaces in `(kind, handle, workspace_id)` order
    /// (personal first).
    async fn memberships_page(
        &self,
        account_id: &str,
        page: &KeysetPage<WorkspaceKey>,
    ) -> StoreResult<Vec<Membership>>;
    async fn list_members(&self, workspace_id: &str) -> StoreResult<Vec<Member>>;
    /// One page of members in handle order.
    async fn list_members_page(
        &self,
        workspace_id: &str,
        page: &KeysetPage<String>,
    ) -> StoreResult<Vec<Member>>;
    /// Changes the role of an existing member (`NotFound` when the account is not one; an
    /// account becomes a member only by accepting an invitation). Refused with `Conflict`
    /// when it would leave the workspace without an owner, checked under a lock on the
    /// workspace so concurrent changes cannot both pass.
    async fn set_member_role(
        &self,
        workspace_id: &str,
        account_id: &str,
        role: Role,
        audit: AuditDraft,
    ) -> StoreResult<()>;
    /// The operator's repair of a team without an owner: the account becomes an owner (a
    /// member already, or added), audited. `NotFound` for an unknown team or account.
    async fn make_team_owner(
        &self,
        workspace_id: &str,
        account_id: &str,
        audit: AuditDraft,
    ) -> StoreResult<()>;
    /// Teams that have no owner (none can be made over the API; the operator repairs them).
    async fn ownerless_teams(&self) -> StoreResult<Vec<Workspace>>;
    /// What the account has used of its quota.
    async fn account_usage(&self, account_id: &str) -> StoreResult<Usage>;
    /// Records the quotas a starting `xmemo serve` node enforces (its earlier row replaced;
    /// the newest 16 nodes' rows kept), for the operator's `xmemo admin account usage`.
    async fn record_node_quotas(&self, record: &NodeQuotas) -> StoreResult<()>;
    /// The quotas nodes recorded when they started, the newest start first.
    async fn node_quotas(&self) -> StoreResult<Vec<NodeQuotas>>;
    /// Removes a member; false when the account is not one (nothing audited). Refused with
    /// `Conflict` when it would remove the last owner, under the same lock.
    async fn remove_member(
        &self,
        workspace_id: &str,
        account_id: &str,
        audit: AuditDraft,
    ) -> StoreResult<bool>;

    // ---- invitations ----
    /// Stores a pending invitation (`Conflict` when one for the same invitee spelling is
    /// already pending in that workspace); the audit draft gets the new `invitation_id`.
    async fn create_invitation(
        &self,
        new: NewInvitation,
        audit: AuditDraft,
    ) -> StoreResult<Invitation>;
    async fn get_invitation(&self, invitation_id: &str) -> StoreResult<Option<Invitation>>;
    /// A workspace's invitations, oldest first; only those with `status` when given.
    async fn workspace_invitations(
        &self,
        workspace_id: &str,
        status: Option<InvitationStatus>,
    ) -> StoreResult<Vec<Invitation>>;
    /// The pending invitations addressed to an account, oldest first.
    async fn account_invitations(&self, account_id: &str) -> StoreResult<Vec<Invitation>>;
    /// Atomically: the invitation, pending and addressed to `account_id`, becomes accepted or
    /// declined (else `NotFound`); accepting also inserts the membership with the
    /// invitation's role (`Conflict` when the account is already a member); plus the audit
    /// entry. Nothing is written when any step fails.
    async fn answer_invitation(
        &self,
        invitation_id: &str,
        account_id: &str,
        answer: InvitationAnswer,
        audit: AuditDraft,
    ) -> StoreResult<Invitation>;
    /// A pending invitation of this workspace becomes revoked (else `NotFound`), audited.
    async fn revoke_invitation(
        &self,
        workspace_id: &str,
        invitation_id: &str,
        audit: AuditDraft,
    ) -> StoreResult<Invitation>;

    // ---- API keys ----
    async fn create_api_key(&self, new: NewApiKey, audit: AuditDraft) -> StoreResult<ApiKey>;
    async fn find_api_key_by_hash(&self, key_hash: &str) -> StoreResult<Option<ApiKey>>;
    async fn list_api_keys(&self, account_id: &str) -> StoreResult<Vec<ApiKey>>;
    /// One page of the account's keys in `(created_at, key_id)` order.
    async fn list_api_keys_page(
        &self,
        account_id: &str,
        page: &KeysetPage<CreationKey>,
    ) -> StoreResult<Vec<ApiKey>>;
    /// Marks the key revoked; false when the account has no such live key.
    /// Sets the key's `last_used_at` to `at` unless it is already `since` or later; whether
    /// it changed.
    async fn touch_api_key(&self, key_id: &str, at: &str, since: &str) -> StoreResult<bool>;
    async fn revoke_api_key(
        &self,
        account_id: &str,
        key_id: &str,
        audit: AuditDraft,
    ) -> StoreResult<bool>;

    // ---- sign-in (SPEC §7 console login) ----
    /// Sets (or replaces) the account's argon2id password hash, ends the account's sessions,
    /// audited. `NotFound` for an unknown account.
    async fn set_password(
        &self,
        account_id: &str,
        password_hash: &str,
        audit: AuditDraft,
    ) -> StoreResult<()>;
    async fn password_hash(&self, account_id: &str) -> StoreResult<Option<String>>;
    /// Every account's password hash, by account id (snapshots).
    async fn list_passwords(&self) -> StoreResult<Vec<PasswordRow>>;
    /// Stores a new session, deleting the one it `replaces` (rotation at sign-in) and every
    /// expired session, audited.
    /// `origins` (the client's address as the service counts it, and its device as
    /// `device:` + the SHA-256 of its device cookie) are remembered as ones the account
    /// signed in from; the latest 20 of each kind are kept.
    async fn create_session(
        &self,
        new: NewWebSession,
        replaces: Option<&str>,
        origins: &[&str],
        audit: AuditDraft,
    ) -> StoreResult<WebSession>;
    /// Whether the account signed in from `address` (one of its latest few addresses or
    /// devices).
    async fn known_signin_address(&self, account_id: &str, address: &str) -> StoreResult<bool>;
    /// When an operator last unlocked the account's sign-in (`xmemo admin account unlock`).
    async fn signin_unlocked_at(&self, account_id: &str) -> StoreResult<Option<String>>;
    /// Records an unlock of the account's sign-in at `at`, audited (`NotFound`: no account).
    async fn unlock_signin(&self, account_id: &str, at: &str, audit: AuditDraft)
    -> StoreResult<()>;
    async fn find_session(&self, session_hash: &str) -> StoreResult<Option<WebSession>>;
    /// Moves a session's idle expiry to `idle_expires_at`, capped at its absolute expiry
    /// (bookkeeping, not audited); false when there is no such session.
    async fn extend_session(&self, session_hash: &str, idle_expires_at: &str) -> StoreResult<bool>;
    /// Deletes a session (sign-out), audited; false when there was none.
    async fn delete_session(&self, session_hash: &str, audit: AuditDraft) -> StoreResult<bool>;

    // ---- OAuth authorization server ----
    /// Stores a dynamically registered client; the audit draft gets its `client_id`.
    async fn create_oauth_client(
        &self,
        new: NewOAuthClient,
        audit: AuditDraft,
    ) -> StoreResult<OAuthClient>;
    async fn get_oauth_client(&self, client_id: &str) -> StoreResult<Option<OAuthClient>>;
    /// Stores an approved consent with its first authorization code; the audit draft gets
    /// the `grant_id`. Expired codes of every grant are dropped in the same transaction.
    async fn create_oauth_grant(
        &self,
        new: NewOAuthGrant,
        audit: AuditDraft,
    ) -> StoreResult<OAuthGrant>;
    async fn find_oauth_code(&self, code_hash: &str) -> StoreResult<Option<OAuthCode>>;
    /// Spends the code (compare-and-set on `used_at`) and stores `tokens` in its grant;
    /// [`Exchange::AlreadyUsed`] and nothing written when it was spent already or its grant
    /// is revoked.
    async fn redeem_oauth_code(
        &self,
        code_hash: &str,
        tokens: &[NewOAuthToken],
        audit: AuditDraft,
    ) -> StoreResult<Exchange>;
    async fn find_oauth_token(&self, token_hash: &str) -> StoreResult<Option<OAuthToken>>;
    /// Spends a live refresh token and stores its successors in its grant;
    /// [`Exchange::AlreadyUsed`] and nothing written when it was rotated, revoked or
    /// expired already, or its grant is revoked.
    async fn rotate_oauth_refresh_token(
        &self,
        token_hash: &str,
        tokens: &[NewOAuthToken],
        audit: AuditDraft,
    ) -> StoreResult<Exchange>;
    /// Revokes one token; false when it was unknown or revoked already.
    async fn revoke_oauth_token(&self, token_hash: &str, audit: AuditDraft) -> StoreResult<bool>;
    /// Revokes a live grant — of `account_id` when given — and so every code and token of
    /// it; false when there is no such live grant (nothing audited).
    async fn revoke_oauth_grant(
        &self,
        grant_id: &str,
        account_id: Option<&str>,
        reason: &str,
        audit: AuditDraft,
    ) -> StoreResult<bool>;
    async fn get_oauth_grant(&self, grant_id: &str) -> StoreResult<Option<OAuthGrant>>;
    /// Revokes every live grant of the account, audited when there was one; how many.
    async fn revoke_account_grants(
        &self,
        account_id: &str,
        reason: &str,
        audit: AuditDraft,
    ) -> StoreResult<u64>;
    /// One page of the account's live grants in `(created_at, grant_id)` order.
    async fn list_oauth_grants_page(
        &self,
        account_id: &str,
        page: &KeysetPage<CreationKey>,
    ) -> StoreResult<Vec<OAuthGrant>>;

    // ---- skills and revisions ----
    async fn get_skill(&self, skill_id: &str) -> StoreResult<Option<Skill>>;
    /// Skills with this slug in any of the given workspaces.
    async fn find_skills_by_slug(
        &self,
        workspace_ids: &[String],
        slug: &str,
    ) -> StoreResult<Vec<Skill>>;
    async fn list_skills(&self, workspace_ids: &[String]) -> StoreResult<Vec<Skill>>;
    /// One page of the workspaces' skills (every status) in `(slug, workspace_id)` order.
    async fn list_skills_page(
        &self,
        workspace_ids: &[String],
        page: &KeysetPage<SlugKey>,
    ) -> StoreResult<Vec<Skill>>;
    /// One page of served skills with their published revisions, in a bounded number of
    /// statements whatever the page size.
    async fn served_skills(&self, page: &ServedPage) -> StoreResult<Vec<ServedSkill>>;
    /// Which of `slugs` name skills in more than one of the given workspaces.
    async fn shared_slugs(
        &self,
        workspace_ids: &[String],
        slugs: &[String],
    ) -> StoreResult<Vec<String>>;
    /// Revisions of skills of `workspace_id` whose canonical_hash is `canonical_hash`, by
    /// slug then newest first, at most `limit` (an index on the hash keeps it one lookup).
    async fn content_holders(
        &self,
        workspace_id: &str,
        canonical_hash: &str,
        limit: u32,
    ) -> StoreResult<Vec<ContentHolder>>;
    /// Atomically: create the skill when absent, check `expected_revision_id`, return the
    /// latest revision unchanged when its canonical_hash equals the new one, else store blobs,
    /// the revision with the next number and its components, apply the publish side effect
    /// and append the audit entry.
    async fn save_revision(&self, save: SaveRevision) -> StoreResult<SaveOutcome>;
    async fn get_revision(&self, revision_id: &str) -> StoreResult<Option<Revision>>;
    /// Replaces one revision's safety report (a rescan); false when the revision is unknown.
    async fn set_revision_safety(
        &self,
        revision_id: &str,
        report: &serde_json::Value,
    ) -> StoreResult<bool>;
    /// Every revision's id, in id order, a page at a time (after `after`, `limit` at most).
    async fn revision_ids_after(&self, after: Option<&str>, limit: u32)
    -> StoreResult<Vec<String>>;
    async fn latest_revision(&self, skill_id: &str) -> StoreResult<Option<Revision>>;
    async fn published_revision(&self, skill_id: &str) -> StoreResult<Option<Revision>>;
    async fn list_revisions(&self, skill_id: &str) -> StoreResult<Vec<Revision>>;
    /// One page of the skill's revisions (with their components) by revision number.
    async fn list_revisions_page(
        &self,
        skill_id: &str,
        page: &KeysetPage<i64>,
    ) -> StoreResult<Vec<Revision>>;
    async fn component_bytes(
        &self,
        revision_id: &str,
        logical_path: &str,
    ) -> StoreResult<Option<(ComponentManifest, Vec<u8>)>>;
    /// Compare-and-set of a revision's status (from → to). Publishing deprecates the
    /// previously published revision of the skill in the same transaction.
    /// Proposed revisions of active skills in these workspaces, oldest first, at most `limit`.
    async fn pending_proposals(
        &self,
        workspace_ids: &[String],
        limit: u32,
    ) -> StoreResult<Vec<PendingProposal>>;
    /// The status of each skill's latest revision, by skill id.
    async fn latest_statuses(
        &self,
        skill_ids: &[String],
    ) -> StoreResult<BTreeMap<String, xmemo_core::RevisionStatus>>;
    async fn change_revision_status(&self, change: StatusChange) -> StoreResult<Revision>;
    async fn set_asset_status(
        &self,
        skill_id: &str,
        status: AssetStatus,
        audit: AuditDraft,
    ) -> StoreResult<Skill>;

    /// Level 0: active skills with a published revision in the given workspaces.
    async fn search(&self, query: &SearchQuery) -> StoreResult<Vec<Descriptor>>;

    // ---- memories (SPEC §9) ----
    /// Creates the memory, its first version and audit entry, unless an identical active
    /// memory (workspace, project, kind, content) exists: then that one, `created: false`,
    /// and nothing is written.
    async fn remember(&self, new: NewMemory, audit: AuditDraft) -> StoreResult<RememberOutcome>;
    async fn get_memory(&self, memory_id: &str) -> StoreResult<Option<Memory>>;
    /// Every version of the given memories, by memory then version.
    async fn memory_history(&self, memory_ids: &[String]) -> StoreResult<Vec<MemoryVersion>>;
    /// Appends the next version (compare-and-set on `expected_version`; a forgotten memory
    /// is not updated).
    async fn update_memory(&self, update: MemoryUpdate) -> StoreResult<Memory>;
    /// Compare-and-set of the status (forget, restore).
    async fn set_memory_status(&self, change: MemoryStatusChange) -> StoreResult<Memory>;
    async fn recall_memories(&self, query: &MemoryQuery) -> StoreResult<Vec<MemoryHit>>;
    /// Memories of the workspaces in id order, after `after` (exports).
    async fn memory_page(
        &self,
        workspace_ids: &[String],
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<Memory>>;

    /// How many memories of the workspaces a recall can find at `now` (active, not
    /// expired), whatever the query and filters.
    async fn count_recallable_memories(
        &self,
        workspace_ids: &[String],
        now: &str,
    ) -> StoreResult<u64>;

    // ---- audit ----
    async fn append_audit(&self, audit: AuditDraft) -> StoreResult<()>;
    async fn list_audit(&self, filter: &AuditFilter) -> StoreResult<Vec<AuditEntry>>;

    /// Inserts a whole installation verbatim into this (empty) database, in one transaction.
    async fn import_snapshot(&self, snapshot: &snapshot::Snapshot) -> StoreResult<()>;

    /// Row count per table, for diagnostics and for tests that prove a failed write wrote
    /// nothing.
    async fn table_counts(&self) -> StoreResult<BTreeMap<String, u64>>;

    // ---- the semantic lane ----
    /// The next work of the embedding worker of `model`, if `owner` holds (or takes) the
    /// model's lease until `lease_until`: at most `limit` rows, from the backfill of the rows
    /// older than the lane, then from the log. `None`: another node holds the lease.
    async fn embedding_work(
        &self,
        model: &str,
        owner: &str,
        lease_until: &str,
        limit: usize,
    ) -> StoreResult<Option<EmbeddingWork>>;
    /// Stores the vectors of a claimed work and moves the model's position to `next`, in one
    /// transaction; `false` (nothing written) when `owner` no longer holds the lease.
    async fn embedding_save(
        &self,
        model: &str,
        owner: &str,
        rows: &[EmbeddedRow],
        removed: &[(EmbeddingKind, String)],
        next: &EmbeddingProgress,
    ) -> StoreResult<bool>;
    async fn embedding_lag(&self, model: &str) -> StoreResult<EmbeddingLag>;

    // ---- upkeep ----
    /// Deletes the full-text log's entries older than the newest `keep`, except those the
    /// worker of an embedding model whose lease was live after `idle_before` has not read yet
    /// (an idle model's worker embeds every row again when it comes back). A node that had
    /// applied less than what is deleted rebuilds its indexes at its next query.
    async fn prune_fulltext_log(&self, keep: u64, idle_before: &str) -> StoreResult<LogPrune>;
    /// Builds this node's search indexes unless built (a server calls it at start, so its
    /// first query does not wait for it).
    async fn warm_search(&self) -> StoreResult<()>;
    /// Whether this node's search indexes are built.
    fn search_ready(&self) -> bool;
    /// Who kept this node's search indexes current, and how much.
    fn search_stats(&self) -> SearchStats;
    /// Applies what the full-text log holds past this node's position (other nodes' writes;
    /// this node's own are applied by their writers), building the indexes first if needed.
    async fn follow_search_log(&self) -> StoreResult<()>;
}
