//! A whole installation as rows, for `xmemo admin copy` between backends. Export goes through
//! the `Store` trait; import inserts every row verbatim (ids, numbers, statuses, hashes,
//! attribution and the audit chain) in one transaction of the target backend.

use crate::model::*;
use crate::{Store, StoreError, StoreResult};
use std::collections::{BTreeMap, BTreeSet};
use xmemo_core::Role;

#[derive(Debug, Clone, PartialEq)]
pub struct MembershipRow {
    pub workspace_id: String,
    pub account_id: String,
    pub role: Role,
    pub added_at: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BlobRow {
    pub content_hash: String,
    pub bytes: Vec<u8>,
}

/// Every row of an installation. Held in memory: fine for the sizes one copy moves today
/// (components are ≤ 128 KiB and deduplicated).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub accounts: Vec<Account>,
    pub workspaces: Vec<Workspace>,
    pub memberships: Vec<MembershipRow>,
    pub api_keys: Vec<ApiKey>,
    /// Sign-in passwords (argon2id hashes). Sessions and OAuth rows are not copied: people
    /// sign in again and MCP hosts reconnect.
    pub passwords: Vec<crate::signin::PasswordRow>,
    /// Every invitation, whatever its status.
    pub invitations: Vec<Invitation>,
    pub skills: Vec<Skill>,
    pub revisions: Vec<Revision>,
    pub blobs: Vec<BlobRow>,
    pub memories: Vec<Memory>,
    pub memory_versions: Vec<MemoryVersion>,
    pub audit: Vec<AuditEntry>,
}

/// Reads everything from `store`.
pub async fn export_snapshot(store: &dyn Store) -> StoreResult<Snapshot> {
    let mut snap = Snapshot {
        accounts: store.list_accounts().await?,
        ..Default::default()
    };
    let mut workspaces: BTreeMap<String, Workspace> = BTreeMap::new();
    for account in &snap.accounts {
        for m in store.memberships(&account.account_id).await? {
            workspaces.insert(m.workspace.workspace_id.clone(), m.workspace);
        }
        snap.api_keys
            .extend(store.list_api_keys(&account.account_id).await?);
    }
    for ws in workspaces.values() {
        for m in store.list_members(&ws.workspace_id).await? {
            snap.memberships.push(MembershipRow {
                workspace_id: ws.workspace_id.clone(),
                account_id: m.account_id,
                role: m.role,
                added_at: m.added_at,
            });
        }
    }
    for ws in workspaces.values() {
        snap.invitations
            .extend(store.workspace_invitations(&ws.workspace_id, None).await?);
    }
    snap.passwords = store.list_passwords().await?;
    let ids: Vec<String> = workspaces.keys().cloned().collect();
    snap.workspaces = workspaces.into_values().collect();
    snap.skills = store.list_skills(&ids).await?;
    let mut seen_blobs = BTreeSet::new();
    for skill in &snap.skills {
        for revision in store.list_revisions(&skill.skill_id).await? {
            for c in &revision.components {
                if seen_blobs.insert(c.content_hash.clone()) {
                    let (_, bytes) = store
                        .component_bytes(&revision.revision_id, &c.logical_path)
                        .await?
                        .ok_or_else(|| {
                            StoreError::Internal(format!("missing blob {}", c.content_hash))
                        })?;
                    snap.blobs.push(BlobRow {
                        content_hash: c.content_hash.clone(),
                        bytes,
                    });
                }
            }
            snap.revisions.push(revision);
        }
    }
    let mut after: Option<String> = None;
    loop {
        let page = store.memory_page(&ids, after.as_deref(), 500).await?;
        let Some(last) = page.last() else { break };
        after = Some(last.memory_id.clone());
        let page_ids: Vec<String> = page.iter().map(|m| m.memory_id.clone()).collect();
        snap.memory_versions
            .extend(store.memory_history(&page_ids).await?);
        snap.memories.extend(page);
    }
    snap.audit = store.list_audit(&AuditFilter::default()).await?;
    Ok(snap)
}

/// The target of a copy must hold no account (a freshly migrated database).
pub fn ensure_empty(accounts: u64) -> StoreResult<()> {
    if accounts > 0 {
        return Err(StoreError::Conflict(format!(
            "the target database already holds {accounts} account(s); copy into an empty database"
        )));
    }
    Ok(())
}
