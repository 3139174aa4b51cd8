//! The hash-chained audit log: appends inside the writing transaction, filtered reads.

use super::rows::{self, AUDIT_SELECT};
use super::{Dialect, Session, SqlStore, Stmt, in_list};
use crate::model::*;
use crate::{Record, StoreResult};

/// Appends `draft` as the next link of the chain, inside the caller's transaction.
/// Several appends in one transaction (a group commit of saves) lock the chain and read its
/// head once: the transaction holds the lock to its end, so nobody else appends meanwhile.
pub async fn append<D: Dialect>(s: &mut Session<D>, draft: &AuditDraft) -> StoreResult<()> {
    let (seq, prev) = match s.audit_head.take() {
        Some((seq, hash)) => (seq + 1, hash),
        None => {
            s.lock(D::LOCK_AUDIT_CHAIN).await?;
            let last = s
                .optional(Stmt::new(
                    "SELECT seq, entry_hash FROM audit_log ORDER BY seq DESC LIMIT 1",
                ))
                .await?;
            match last {
                Some(r) => (r.int("seq")? + 1, r.text("entry_hash")?),
                None => (1, String::new()),
            }
        }
    };
    let at = now();
    let hash = audit_entry_hash(&prev, seq, &at, draft);
    insert(s, seq, &at, draft, &prev, &hash).await?;
    s.audit_head = Some((seq, hash));
    Ok(())
}

/// Inserts one entry as given (appends and snapshot imports).
pub async fn insert<D: Dialect>(
    s: &mut Session<D>,
    seq: i64,
    at: &str,
    draft: &AuditDraft,
    prev_hash: &str,
    entry_hash: &str,
) -> StoreResult<()> {
    s.audit_head = None;
    let a = &draft.actor;
    s.execute(
        Stmt::new("INSERT INTO audit_log (seq, at, action, account_id, credential_id, client_profile, agent_id, agent_instance_id, workspace_id, skill_id, revision_id, details, prev_hash, entry_hash) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)")
            .bind(seq)
            .bind(at)
            .bind(&draft.action)
            .bind(&a.account_id)
            .bind(&a.credential_id)
            .bind(&a.client_profile)
            .bind(&a.agent_id)
            .bind(&a.agent_instance_id)
            .bind(&draft.workspace_id)
            .bind(&draft.skill_id)
            .bind(&draft.revision_id)
            .bind(draft.details.to_string().as_str())
            .bind(prev_hash)
            .bind(entry_hash),
    )
    .await?;
    Ok(())
}

pub async fn append_alone<D: Dialect>(store: &SqlStore<D>, draft: &AuditDraft) -> StoreResult<()> {
    let mut s = store.write().await?;
    append(&mut s, draft).await?;
    s.commit().await
}

pub async fn list<D: Dialect>(
    store: &SqlStore<D>,
    filter: &AuditFilter,
) -> StoreResult<Vec<AuditEntry>> {
    let mut sql = format!("{AUDIT_SELECT} WHERE 1=1");
    let mut n = 1;
    if let Some(ws) = &filter.workspace_ids {
        if ws.is_empty() {
            return Ok(vec![]);
        }
        sql.push_str(&format!(" AND workspace_id IN ({})", in_list(n, ws.len())));
        n += ws.len();
    }
    if filter.skill_id.is_some() {
        sql.push_str(&format!(" AND skill_id = ${n}"));
        n += 1;
    }
    sql.push_str(" ORDER BY seq");
    if filter.limit > 0 {
        sql.push_str(&format!(" LIMIT ${n}"));
    }
    let mut stmt = Stmt::new(sql);
    if let Some(ws) = &filter.workspace_ids {
        stmt = stmt.bind_all(ws);
    }
    if let Some(skill) = &filter.skill_id {
        stmt = stmt.bind(skill);
    }
    if filter.limit > 0 {
        stmt = stmt.bind(i64::from(filter.limit));
    }
    let mut s = store.read().await?;
    s.all(stmt).await?.iter().map(rows::audit).collect()
}
