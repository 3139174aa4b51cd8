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
    pub skills: Vec<Skill>,
    pub revisions: Vec<Revision>,
    pub blobs: Vec<BlobRow>,
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
    snap.audit = store.list_audit(&AuditFilter::default()).await?;
    Ok(snap)
}

/// Rewrites `?` placeholders as `$1, $2, …` for PostgreSQL.
pub fn numbered_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for ch in sql.chars() {
        if ch == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(ch);
        }
    }
    out
}

/// Inserts a snapshot inside the open transaction `$tx`; `$sql` maps `?`-placeholder SQL to
/// the backend's dialect and `$refresh` rebuilds one skill's Level 0 row. Shared by both
/// backends so the column lists exist once.
#[macro_export]
#[doc(hidden)]
macro_rules! insert_snapshot {
    ($tx:expr, $snap:expr, $sql:expr, $refresh:path) => {{
        let tx = $tx;
        let snap: &$crate::snapshot::Snapshot = $snap;
        let sql = $sql;
        for w in &snap.workspaces {
            sqlx::query(sqlx::AssertSqlSafe(sql("INSERT INTO workspaces (workspace_id, handle, name, kind, created_at) VALUES (?,?,?,?,?)")))
                .bind(&w.workspace_id).bind(&w.handle).bind(&w.name).bind(w.kind.as_str()).bind(&w.created_at)
                .execute(&mut **tx).await?;
        }
        for a in &snap.accounts {
            sqlx::query(sqlx::AssertSqlSafe(sql("INSERT INTO accounts (account_id, handle, display_name, is_admin, personal_workspace_id, created_at) VALUES (?,?,?,?,?,?)")))
                .bind(&a.account_id).bind(&a.handle).bind(&a.display_name).bind(a.is_admin).bind(&a.personal_workspace_id).bind(&a.created_at)
                .execute(&mut **tx).await?;
        }
        for m in &snap.memberships {
            sqlx::query(sqlx::AssertSqlSafe(sql("INSERT INTO memberships (workspace_id, account_id, role, added_at) VALUES (?,?,?,?)")))
                .bind(&m.workspace_id).bind(&m.account_id).bind(m.role.as_str()).bind(&m.added_at)
                .execute(&mut **tx).await?;
        }
        for k in &snap.api_keys {
            sqlx::query(sqlx::AssertSqlSafe(sql("INSERT INTO api_keys (key_id, account_id, name, prefix, key_hash, scopes, profile, created_at, expires_at, revoked_at) VALUES (?,?,?,?,?,?,?,?,?,?)")))
                .bind(&k.key_id).bind(&k.account_id).bind(&k.name).bind(&k.prefix).bind(&k.key_hash)
                .bind(k.scopes.join(" ")).bind(&k.profile).bind(&k.created_at).bind(&k.expires_at).bind(&k.revoked_at)
                .execute(&mut **tx).await?;
        }
        for s in &snap.skills {
            sqlx::query(sqlx::AssertSqlSafe(sql("INSERT INTO skills (skill_id, workspace_id, slug, name, description, asset_status, latest_revision_number, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)")))
                .bind(&s.skill_id).bind(&s.workspace_id).bind(&s.slug).bind(&s.name).bind(&s.description)
                .bind(s.asset_status.as_str()).bind(s.latest_revision_number).bind(&s.created_at).bind(&s.updated_at)
                .execute(&mut **tx).await?;
        }
        for b in &snap.blobs {
            sqlx::query(sqlx::AssertSqlSafe(sql("INSERT INTO blobs (content_hash, size, bytes) VALUES (?,?,?)")))
                .bind(&b.content_hash).bind(b.bytes.len() as i64).bind(&b.bytes)
                .execute(&mut **tx).await?;
        }
        for r in &snap.revisions {
            let a = &r.attribution;
            sqlx::query(sqlx::AssertSqlSafe(sql("INSERT INTO revisions (revision_id, skill_id, revision_number, name, description, instruction_body, metadata, canonical_hash, status, review_note, account_id, credential_id, client_profile, agent_id, agent_instance_id, created_at, status_changed_at, source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")))
                .bind(&r.revision_id).bind(&r.skill_id).bind(r.revision_number).bind(&r.name).bind(&r.description)
                .bind(&r.instruction_body).bind(serde_json::Value::Object(r.metadata.clone()).to_string())
                .bind(&r.canonical_hash).bind(r.status.as_str()).bind(&r.review_note)
                .bind(&a.account_id).bind(&a.credential_id).bind(&a.client_profile).bind(&a.agent_id).bind(&a.agent_instance_id)
                .bind(&r.created_at).bind(&r.status_changed_at).bind(r.source.as_ref().map(|v| v.to_string()))
                .execute(&mut **tx).await?;
            for c in &r.components {
                sqlx::query(sqlx::AssertSqlSafe(sql("INSERT INTO revision_components (revision_id, logical_path, path_folded, component_type, content_hash, size, media_type) VALUES (?,?,?,?,?,?,?)")))
                    .bind(&r.revision_id).bind(&c.logical_path).bind(c.logical_path.to_lowercase())
                    .bind(c.component_type.as_str()).bind(&c.content_hash).bind(c.size as i64).bind(&c.media_type)
                    .execute(&mut **tx).await?;
            }
        }
        for e in &snap.audit {
            let a = &e.actor;
            sqlx::query(sqlx::AssertSqlSafe(sql("INSERT INTO audit_log (seq, at, action, account_id, credential_id, client_profile, agent_id, agent_instance_id, workspace_id, skill_id, revision_id, details, prev_hash, entry_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)")))
                .bind(e.seq).bind(&e.at).bind(&e.action).bind(&a.account_id).bind(&a.credential_id).bind(&a.client_profile)
                .bind(&a.agent_id).bind(&a.agent_instance_id).bind(&e.workspace_id).bind(&e.skill_id).bind(&e.revision_id)
                .bind(e.details.to_string()).bind(&e.prev_hash).bind(&e.entry_hash)
                .execute(&mut **tx).await?;
        }
        for s in &snap.skills {
            $refresh(tx, &s.skill_id).await?;
        }
    }};
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

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_are_numbered() {
        assert_eq!(
            super::numbered_placeholders("INSERT INTO t (a, b) VALUES (?,?)"),
            "INSERT INTO t (a, b) VALUES ($1,$2)"
        );
    }
}
