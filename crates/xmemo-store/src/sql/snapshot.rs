//! Inserting a whole installation verbatim (`xmemo admin copy`), in one transaction.

use super::{Dialect, SqlStore, Stmt, accounts, audit, invitations, memories, skills};
use crate::model::AuditDraft;
use crate::snapshot::Snapshot;
use crate::{Record, StoreResult};

pub async fn import<D: Dialect>(store: &SqlStore<D>, snap: &Snapshot) -> StoreResult<()> {
    let mut s = store.write().await?;
    let accounts = s
        .one(Stmt::new("SELECT COUNT(*) AS n FROM accounts"), "count")
        .await?
        .int("n")?;
    crate::snapshot::ensure_empty(super::driver::to_u64(accounts, "account count")?)?;
    for w in &snap.workspaces {
        s.execute(
            Stmt::new("INSERT INTO workspaces (workspace_id, handle, name, kind, created_at) VALUES ($1,$2,$3,$4,$5)").writes_auth()
                .bind(&w.workspace_id)
                .bind(&w.handle)
                .bind(&w.name)
                .bind(w.kind.as_str())
                .bind(&w.created_at),
        )
        .await?;
    }
    for a in &snap.accounts {
        s.execute(
            Stmt::new("INSERT INTO accounts (account_id, handle, display_name, is_admin, personal_workspace_id, created_at) VALUES ($1,$2,$3,$4,$5,$6)").writes_auth()
                .bind(&a.account_id)
                .bind(&a.handle)
                .bind(&a.display_name)
                .bind(a.is_admin)
                .bind(&a.personal_workspace_id)
                .bind(&a.created_at),
        )
        .await?;
    }
    for m in &snap.memberships {
        s.execute(
            Stmt::new("INSERT INTO memberships (workspace_id, account_id, role, added_at) VALUES ($1,$2,$3,$4)").writes_auth()
                .bind(&m.workspace_id)
                .bind(&m.account_id)
                .bind(m.role.as_str())
                .bind(&m.added_at),
        )
        .await?;
    }
    for k in &snap.api_keys {
        accounts::insert_api_key(&mut s, k).await?;
    }
    for p in &snap.passwords {
        super::signin::insert_password(&mut s, p).await?;
    }
    for i in &snap.invitations {
        invitations::insert(&mut s, i).await?;
    }
    for k in &snap.skills {
        s.execute(
            Stmt::new("INSERT INTO skills (skill_id, workspace_id, slug, name, description, asset_status, latest_revision_number, created_at, updated_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)")
                .bind(&k.skill_id)
                .bind(&k.workspace_id)
                .bind(&k.slug)
                .bind(&k.name)
                .bind(&k.description)
                .bind(k.asset_status.as_str())
                .bind(k.latest_revision_number)
                .bind(&k.created_at)
                .bind(&k.updated_at),
        )
        .await?;
    }
    for b in &snap.blobs {
        skills::insert_blobs(&mut s, &[(b.content_hash.as_str(), b.bytes.as_slice())], "").await?;
    }
    for r in &snap.revisions {
        skills::insert_revision(&mut s, r).await?;
        skills::insert_components(&mut s, r).await?;
    }
    let mut versions: std::collections::BTreeMap<&str, Vec<&crate::model::MemoryVersion>> =
        std::collections::BTreeMap::new();
    for v in &snap.memory_versions {
        versions.entry(v.memory_id.as_str()).or_default().push(v);
    }
    for m in &snap.memories {
        let of_m = versions.remove(m.memory_id.as_str()).unwrap_or_default();
        memories::import_memory(&mut s, m, &of_m).await?;
    }
    for e in &snap.audit {
        let draft = AuditDraft {
            action: e.action.clone(),
            actor: e.actor.clone(),
            workspace_id: e.workspace_id.clone(),
            skill_id: e.skill_id.clone(),
            revision_id: e.revision_id.clone(),
            details: e.details.clone(),
        };
        audit::insert(&mut s, e.seq, &e.at, &draft, &e.prev_hash, &e.entry_hash).await?;
    }
    for k in &snap.skills {
        skills::refresh_search_row(&mut s, &k.skill_id).await?;
    }
    s.commit().await
}
