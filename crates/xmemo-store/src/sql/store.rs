//! [`Store`] for every [`SqlStore`]: each method is one function of the core modules.

use super::{
    Dialect, SqlStore, Stmt, accounts, audit, invitations, memories, oauth, rows, signin, skills,
    snapshot,
};
use crate::model::*;
use crate::signin::*;
use crate::{Record, Store, StoreResult};
use async_trait::async_trait;
use std::collections::BTreeMap;
use xmemo_core::{AssetStatus, InvitationStatus, Role};

#[async_trait]
impl<D: Dialect> Store for SqlStore<D> {
    fn backend(&self) -> &'static str {
        D::BACKEND
    }

    fn statements_run(&self) -> u64 {
        SqlStore::statements_run(self)
    }

    fn save_transactions(&self) -> u64 {
        SqlStore::save_transactions(self)
    }
    fn queued_saves(&self) -> usize {
        self.saves.queued()
    }

    async fn ping(&self) -> StoreResult<()> {
        self.read().await?.execute(Stmt::new("SELECT 1")).await?;
        Ok(())
    }

    async fn create_account(&self, new: NewAccount, audit: AuditDraft) -> StoreResult<Account> {
        accounts::create_account(self, new, audit).await
    }
    async fn get_account(&self, account_id: &str) -> StoreResult<Option<Account>> {
        accounts::get_account(self, account_id).await
    }
    async fn account_of_credential(&self, account_id: &str) -> StoreResult<Option<Account>> {
        let cache = self.auth_cache();
        if let Some(hit) = cache.account(account_id) {
            return Ok(Some(hit));
        }
        let generation = cache.generation();
        let found = accounts::get_account(self, account_id).await?;
        if let Some(a) = &found {
            cache.put_account(account_id, a.clone(), generation);
        }
        Ok(found)
    }
    async fn find_account_by_handle(&self, handle: &str) -> StoreResult<Option<Account>> {
        accounts::find_account_by_handle(self, handle).await
    }
    async fn list_accounts(&self) -> StoreResult<Vec<Account>> {
        accounts::list_accounts(self, None).await
    }
    async fn list_accounts_page(
        &self,
        page: &KeysetPage<CreationKey>,
    ) -> StoreResult<Vec<Account>> {
        accounts::list_accounts(self, Some(page)).await
    }
    async fn delete_account(
        &self,
        account_id: &str,
        audit: AuditDraft,
    ) -> StoreResult<AccountDeletion> {
        accounts::delete_account(self, account_id, audit).await
    }
    async fn count_accounts(&self) -> StoreResult<u64> {
        accounts::count_accounts(self).await
    }
    async fn create_team(&self, new: NewTeam, audit: AuditDraft) -> StoreResult<Workspace> {
        accounts::create_team(self, new, audit).await
    }
    async fn get_workspace(&self, workspace_id: &str) -> StoreResult<Option<Workspace>> {
        accounts::get_workspace(self, workspace_id).await
    }
    async fn find_team_by_handle(&self, handle: &str) -> StoreResult<Option<Workspace>> {
        accounts::find_team_by_handle(self, handle).await
    }
    async fn memberships(&self, account_id: &str) -> StoreResult<Vec<Membership>> {
        let cache = self.auth_cache();
        if let Some(hit) = cache.memberships(account_id) {
            return Ok(hit);
        }
        let generation = cache.generation();
        let list = accounts::memberships(self, account_id, None).await?;
        cache.put_memberships(account_id, list.clone(), generation);
        Ok(list)
    }
    async fn memberships_page(
        &self,
        account_id: &str,
        page: &KeysetPage<WorkspaceKey>,
    ) -> StoreResult<Vec<Membership>> {
        accounts::memberships(self, account_id, Some(page)).await
    }
    async fn list_members(&self, workspace_id: &str) -> StoreResult<Vec<Member>> {
        accounts::list_members(self, workspace_id, None).await
    }
    async fn list_members_page(
        &self,
        workspace_id: &str,
        page: &KeysetPage<String>,
    ) -> StoreResult<Vec<Member>> {
        accounts::list_members(self, workspace_id, Some(page)).await
    }
    async fn set_member_role(
        &self,
        workspace_id: &str,
        account_id: &str,
        role: Role,
        audit: AuditDraft,
    ) -> StoreResult<()> {
        accounts::set_member_role(self, workspace_id, account_id, role, audit).await
    }
    async fn make_team_owner(
        &self,
        workspace_id: &str,
        account_id: &str,
        audit: AuditDraft,
    ) -> StoreResult<()> {
        accounts::make_team_owner(self, workspace_id, account_id, audit).await
    }
    async fn ownerless_teams(&self) -> StoreResult<Vec<Workspace>> {
        accounts::ownerless_teams(self).await
    }
    async fn account_usage(&self, account_id: &str) -> StoreResult<Usage> {
        super::usage::usage(self, account_id).await
    }
    async fn record_node_quotas(&self, record: &NodeQuotas) -> StoreResult<()> {
        super::usage::record_node_quotas(self, record).await
    }
    async fn node_quotas(&self) -> StoreResult<Vec<NodeQuotas>> {
        super::usage::node_quotas(self).await
    }
    async fn remove_member(
        &self,
        workspace_id: &str,
        account_id: &str,
        audit: AuditDraft,
    ) -> StoreResult<bool> {
        accounts::remove_member(self, workspace_id, account_id, audit).await
    }

    async fn create_invitation(
        &self,
        new: NewInvitation,
        audit: AuditDraft,
    ) -> StoreResult<Invitation> {
        invitations::create(self, new, audit).await
    }
    async fn get_invitation(&self, invitation_id: &str) -> StoreResult<Option<Invitation>> {
        invitations::get(self, invitation_id).await
    }
    async fn workspace_invitations(
        &self,
        workspace_id: &str,
        status: Option<InvitationStatus>,
    ) -> StoreResult<Vec<Invitation>> {
        invitations::of_workspace(self, workspace_id, status).await
    }
    async fn account_invitations(&self, account_id: &str) -> StoreResult<Vec<Invitation>> {
        invitations::of_account(self, account_id).await
    }
    async fn answer_invitation(
        &self,
        invitation_id: &str,
        account_id: &str,
        answer: InvitationAnswer,
        audit: AuditDraft,
    ) -> StoreResult<Invitation> {
        invitations::answer(self, invitation_id, account_id, answer, audit).await
    }
    async fn revoke_invitation(
        &self,
        workspace_id: &str,
        invitation_id: &str,
        audit: AuditDraft,
    ) -> StoreResult<Invitation> {
        invitations::revoke(self, workspace_id, invitation_id, audit).await
    }

    async fn create_api_key(&self, new: NewApiKey, audit: AuditDraft) -> StoreResult<ApiKey> {
        accounts::create_api_key(self, new, audit).await
    }
    async fn find_api_key_by_hash(&self, key_hash: &str) -> StoreResult<Option<ApiKey>> {
        let cache = self.auth_cache();
        if let Some(hit) = cache.key(key_hash) {
            return Ok(Some(hit));
        }
        let generation = cache.generation();
        let found = accounts::find_api_key_by_hash(self, key_hash).await?;
        if let Some(k) = &found {
            cache.put_key(key_hash, k.clone(), generation);
        }
        Ok(found)
    }
    async fn list_api_keys(&self, account_id: &str) -> StoreResult<Vec<ApiKey>> {
        accounts::list_api_keys(self, account_id, None).await
    }
    async fn list_api_keys_page(
        &self,
        account_id: &str,
        page: &KeysetPage<CreationKey>,
    ) -> StoreResult<Vec<ApiKey>> {
        accounts::list_api_keys(self, account_id, Some(page)).await
    }
    async fn touch_api_key(&self, key_id: &str, at: &str, since: &str) -> StoreResult<bool> {
        accounts::touch_api_key(self, key_id, at, since).await
    }
    async fn revoke_api_key(
        &self,
        account_id: &str,
        key_id: &str,
        audit: AuditDraft,
    ) -> StoreResult<bool> {
        accounts::revoke_api_key(self, account_id, key_id, audit).await
    }

    async fn set_password(
        &self,
        account_id: &str,
        password_hash: &str,
        audit: AuditDraft,
    ) -> StoreResult<()> {
        signin::set_password(self, account_id, password_hash, audit).await
    }
    async fn password_hash(&self, account_id: &str) -> StoreResult<Option<String>> {
        signin::password_hash(self, account_id).await
    }
    async fn list_passwords(&self) -> StoreResult<Vec<PasswordRow>> {
        signin::list_passwords(self).await
    }
    async fn create_session(
        &self,
        new: NewWebSession,
        replaces: Option<&str>,
        origins: &[&str],
        audit: AuditDraft,
    ) -> StoreResult<WebSession> {
        signin::create_session(self, new, replaces, origins, audit).await
    }
    async fn known_signin_address(&self, account_id: &str, address: &str) -> StoreResult<bool> {
        signin::known_signin_address(self, account_id, address).await
    }
    async fn signin_unlocked_at(&self, account_id: &str) -> StoreResult<Option<String>> {
        signin::signin_unlocked_at(self, account_id).await
    }
    async fn unlock_signin(
        &self,
        account_id: &str,
        at: &str,
        audit: AuditDraft,
    ) -> StoreResult<()> {
        signin::unlock_signin(self, account_id, at, audit).await
    }
    async fn find_session(&self, session_hash: &str) -> StoreResult<Option<WebSession>> {
        signin::find_session(self, session_hash).await
    }
    async fn extend_session(&self, session_hash: &str, idle_expires_at: &str) -> StoreResult<bool> {
        signin::extend_session(self, session_hash, idle_expires_at).await
    }
    async fn delete_session(&self, session_hash: &str, audit: AuditDraft) -> StoreResult<bool> {
        signin::delete_session(self, session_hash, audit).await
    }

    async fn create_oauth_client(
        &self,
        new: NewOAuthClient,
        audit: AuditDraft,
    ) -> StoreResult<OAuthClient> {
        oauth::create_client(self, new, audit).await
    }
    async fn get_oauth_client(&self, client_id: &str) -> StoreResult<Option<OAuthClient>> {
        oauth::get_client(self, client_id).await
    }
    async fn create_oauth_grant(
        &self,
        new: NewOAuthGrant,
        audit: AuditDraft,
    ) -> StoreResult<OAuthGrant> {
        oauth::create_grant(self, new, audit).await
    }
    async fn find_oauth_code(&self, code_hash: &str) -> StoreResult<Option<OAuthCode>> {
        oauth::find_code(self, code_hash).await
    }
    async fn redeem_oauth_code(
        &self,
        code_hash: &str,
        tokens: &[NewOAuthToken],
        audit: AuditDraft,
    ) -> StoreResult<Exchange> {
        oauth::redeem_code(self, code_hash, tokens, audit).await
    }
    async fn find_oauth_token(&self, token_hash: &str) -> StoreResult<Option<OAuthToken>> {
        oauth::find_token(self, token_hash).await
    }
    async fn rotate_oauth_refresh_token(
        &self,
        token_hash: &str,
        tokens: &[NewOAuthToken],
        audit: AuditDraft,
    ) -> StoreResult<Exchange> {
        oauth::rotate_refresh_token(self, token_hash, tokens, audit).await
    }
    async fn revoke_oauth_token(&self, token_hash: &str, audit: AuditDraft) -> StoreResult<bool> {
        oauth::revoke_token(self, token_hash, audit).await
    }
    async fn revoke_oauth_grant(
        &self,
        grant_id: &str,
        account_id: Option<&str>,
        reason: &str,
        audit: AuditDraft,
    ) -> StoreResult<bool> {
        oauth::revoke_grant(self, grant_id, account_id, reason, audit).await
    }
    async fn revoke_account_grants(
        &self,
        account_id: &str,
        reason: &str,
        audit: AuditDraft,
    ) -> StoreResult<u64> {
        oauth::revoke_account_grants(self, account_id, reason, audit).await
    }
    async fn get_oauth_grant(&self, grant_id: &str) -> StoreResult<Option<OAuthGrant>> {
        oauth::get_grant(self, grant_id).await
    }
    async fn list_oauth_grants_page(
        &self,
        account_id: &str,
        page: &KeysetPage<CreationKey>,
    ) -> StoreResult<Vec<OAuthGrant>> {
        oauth::list_grants(self, account_id, page).await
    }

    async fn get_skill(&self, skill_id: &str) -> StoreResult<Option<Skill>> {
        skills::get_skill(self, skill_id).await
    }
    async fn find_skills_by_slug(
        &self,
        workspace_ids: &[String],
        slug: &str,
    ) -> StoreResult<Vec<Skill>> {
        skills::find_skills_by_slug(self, workspace_ids, slug).await
    }
    async fn list_skills(&self, workspace_ids: &[String]) -> StoreResult<Vec<Skill>> {
        skills::list_skills(self, workspace_ids, None).await
    }
    async fn list_skills_page(
        &self,
        workspace_ids: &[String],
        page: &KeysetPage<SlugKey>,
    ) -> StoreResult<Vec<Skill>> {
        skills::list_skills(self, workspace_ids, Some(page)).await
    }
    async fn served_skills(&self, page: &ServedPage) -> StoreResult<Vec<ServedSkill>> {
        skills::served_skills(self, page).await
    }
    async fn shared_slugs(
        &self,
        workspace_ids: &[String],
        slugs: &[String],
    ) -> StoreResult<Vec<String>> {
        skills::shared_slugs(self, workspace_ids, slugs).await
    }
    async fn content_holders(
        &self,
        workspace_id: &str,
        canonical_hash: &str,
        limit: u32,
    ) -> StoreResult<Vec<ContentHolder>> {
        skills::content_holders(self, workspace_id, canonical_hash, limit).await
    }
    async fn save_revision(&self, save: SaveRevision) -> StoreResult<SaveOutcome> {
        super::group::save(self, save).await
    }
    async fn get_revision(&self, revision_id: &str) -> StoreResult<Option<Revision>> {
        skills::get_revision(self, revision_id).await
    }
    async fn set_revision_safety(
        &self,
        revision_id: &str,
        report: &serde_json::Value,
    ) -> StoreResult<bool> {
        skills::set_revision_safety(self, revision_id, report).await
    }
    async fn revision_ids_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<String>> {
        skills::revision_ids_after(self, after, limit).await
    }
    async fn latest_revision(&self, skill_id: &str) -> StoreResult<Option<Revision>> {
        skills::latest_revision(self, skill_id).await
    }
    async fn published_revision(&self, skill_id: &str) -> StoreResult<Option<Revision>> {
        skills::published_revision(self, skill_id).await
    }
    async fn list_revisions(&self, skill_id: &str) -> StoreResult<Vec<Revision>> {
        skills::list_revisions(self, skill_id, None).await
    }
    async fn list_revisions_page(
        &self,
        skill_id: &str,
        page: &KeysetPage<i64>,
    ) -> StoreResult<Vec<Revision>> {
        skills::list_revisions(self, skill_id, Some(page)).await
    }
    async fn component_bytes(
        &self,
        revision_id: &str,
        logical_path: &str,
    ) -> StoreResult<Option<(ComponentManifest, Vec<u8>)>> {
        skills::component_bytes(self, revision_id, logical_path).await
    }
    async fn pending_proposals(
        &self,
        workspace_ids: &[String],
        limit: u32,
    ) -> StoreResult<Vec<PendingProposal>> {
        skills::pending_proposals(self, workspace_ids, limit).await
    }
    async fn latest_statuses(
        &self,
        skill_ids: &[String],
    ) -> StoreResult<BTreeMap<String, xmemo_core::RevisionStatus>> {
        skills::latest_statuses(self, skill_ids).await
    }
    async fn change_revision_status(&self, change: StatusChange) -> StoreResult<Revision> {
        skills::change_revision_status(self, change).await
    }
    async fn set_asset_status(
        &self,
        skill_id: &str,
        status: AssetStatus,
        audit: AuditDraft,
    ) -> StoreResult<Skill> {
        skills::set_asset_status(self, skill_id, status, audit).await
    }

    async fn search(&self, query: &SearchQuery) -> StoreResult<Vec<Descriptor>> {
        skills::search(self, query).await
    }

    async fn remember(&self, new: NewMemory, audit: AuditDraft) -> StoreResult<RememberOutcome> {
        memories::remember(self, new, audit).await
    }
    async fn get_memory(&self, memory_id: &str) -> StoreResult<Option<Memory>> {
        memories::get_memory(self, memory_id).await
    }
    async fn memory_history(&self, memory_ids: &[String]) -> StoreResult<Vec<MemoryVersion>> {
        memories::memory_history(self, memory_ids).await
    }
    async fn update_memory(&self, update: MemoryUpdate) -> StoreResult<Memory> {
        memories::update_memory(self, update).await
    }
    async fn set_memory_status(&self, change: MemoryStatusChange) -> StoreResult<Memory> {
        memories::set_memory_status(self, change).await
    }
    async fn recall_memories(&self, query: &MemoryQuery) -> StoreResult<Vec<MemoryHit>> {
        memories::recall_memories(self, query).await
    }
    async fn memory_page(
        &self,
        workspace_ids: &[String],
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<Memory>> {
        memories::memory_page(self, workspace_ids, after, limit).await
    }

    async fn count_recallable_memories(
        &self,
        workspace_ids: &[String],
        now: &str,
    ) -> StoreResult<u64> {
        memories::count_recallable_memories(self, workspace_ids, now).await
    }

    async fn append_audit(&self, draft: AuditDraft) -> StoreResult<()> {
        audit::append_alone(self, &draft).await
    }
    async fn list_audit(&self, filter: &AuditFilter) -> StoreResult<Vec<AuditEntry>> {
        audit::list(self, filter).await
    }

    async fn import_snapshot(&self, snap: &crate::snapshot::Snapshot) -> StoreResult<()> {
        snapshot::import(self, snap).await
    }

    async fn embedding_work(
        &self,
        model: &str,
        owner: &str,
        lease_until: &str,
        limit: usize,
    ) -> StoreResult<Option<EmbeddingWork>> {
        self.embedding_work_in(model, owner, lease_until, limit)
            .await
    }

    async fn embedding_save(
        &self,
        model: &str,
        owner: &str,
        rows: &[EmbeddedRow],
        removed: &[(EmbeddingKind, String)],
        next: &EmbeddingProgress,
    ) -> StoreResult<bool> {
        self.embedding_save_in(model, owner, rows, removed, next)
            .await
    }

    async fn embedding_lag(&self, model: &str) -> StoreResult<EmbeddingLag> {
        self.embedding_lag_in(model).await
    }

    async fn prune_fulltext_log(&self, keep: u64, idle_before: &str) -> StoreResult<LogPrune> {
        self.prune_log(keep, idle_before).await
    }

    async fn warm_search(&self) -> StoreResult<()> {
        SqlStore::warm_search(self).await
    }

    fn search_ready(&self) -> bool {
        self.fulltext.is_built()
    }

    fn search_stats(&self) -> SearchStats {
        self.fulltext.stats()
    }

    async fn follow_search_log(&self) -> StoreResult<()> {
        self.follow_log().await
    }

    async fn table_counts(&self) -> StoreResult<BTreeMap<String, u64>> {
        let mut s = self.read().await?;
        let mut out = BTreeMap::new();
        let tables = rows::TABLES
            .iter()
            .map(|t| (*t, format!("SELECT COUNT(*) AS n FROM {t}")));
        // Level 0 rows: active skills with a published revision (what search can find).
        let level0 = (
            "level0",
            "SELECT COUNT(*) AS n FROM skills s
             JOIN revisions r ON r.skill_id = s.skill_id AND r.status = 'published'
             WHERE s.asset_status = 'active'"
                .to_string(),
        );
        for (name, sql) in tables.chain([level0]) {
            let n = s.one(Stmt::new(sql), "count").await?.int("n")?;
            out.insert(name.to_string(), super::driver::to_u64(n, "row count")?);
        }
        Ok(out)
    }
}
