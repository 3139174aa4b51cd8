//! Memories (SPEC §9): remember (with the identical-content rule), versions with history,
//! forget/restore, and ranked, filtered recall.

use super::driver::Arg;
use super::{Dialect, Session, SqlStore, Stmt, audit, in_list};
use crate::model::*;
use crate::{Record, StoreError, StoreResult};
use xmemo_core::MemoryStatus;
use xmemo_core::memory::MemoryContent;

const MEMORY_COLUMNS: &str = "m.memory_id, m.workspace_id, m.kind, m.title, m.content, m.tags, m.project, m.expires_at, m.status, m.forgotten_reason, m.forgotten_at, m.version, m.account_id, m.credential_id, m.client_profile, m.agent_id, m.agent_instance_id, m.created_at, m.updated_at, a.handle AS account_handle";
/// Memories with the handle of the account that remembered them.
const MEMORY_FROM: &str = "memories m LEFT JOIN accounts a ON a.account_id = m.account_id";

fn tags_json(tags: &[String]) -> String {
    serde_json::Value::from(tags.to_vec()).to_string()
}

pub(crate) fn tags_from(r: &impl Record) -> StoreResult<Vec<String>> {
    serde_json::from_str(&r.text("tags")?)
        .map_err(|e| StoreError::Internal(format!("memory tags are not a JSON list: {e}")))
}

fn memory(r: &impl Record) -> StoreResult<Memory> {
    let project = r.text("project")?;
    Ok(Memory {
        memory_id: r.text("memory_id")?,
        workspace_id: r.text("workspace_id")?,
        kind: r.parsed("kind")?,
        title: r.opt_text("title")?,
        content: r.text("content")?,
        tags: tags_from(r)?,
        project: (!project.is_empty()).then_some(project),
        expires_at: r.opt_text("expires_at")?,
        status: r.parsed("status")?,
        forgotten_reason: r.opt_text("forgotten_reason")?,
        forgotten_at: r.opt_text("forgotten_at")?,
        version: r.int("version")?,
        attribution: super::rows::attribution(r)?,
        account_handle: r.opt_text("account_handle")?,
        created_at: r.text("created_at")?,
        updated_at: r.text("updated_at")?,
    })
}

fn version(r: &impl Record) -> StoreResult<MemoryVersion> {
    Ok(MemoryVersion {
        memory_id: r.text("memory_id")?,
        version: r.int("version")?,
        kind: r.parsed("kind")?,
        title: r.opt_text("title")?,
        content: r.text("content")?,
        tags: tags_from(r)?,
        attribution: super::rows::attribution(r)?,
        created_at: r.text("created_at")?,
    })
}

async fn memory_in<D: Dialect>(s: &mut Session<D>, id: &str) -> StoreResult<Option<Memory>> {
    let sql = format!("SELECT {MEMORY_COLUMNS} FROM {MEMORY_FROM} WHERE m.memory_id = $1");
    let row = s.optional(Stmt::new(sql).bind(id)).await?;
    row.map(|r| memory(&r)).transpose()
}

/// The active memory that holds exactly this content, if any.
async fn identical<D: Dialect>(s: &mut Session<D>, new: &NewMemory) -> StoreResult<Option<Memory>> {
    let sql = format!(
        "SELECT {MEMORY_COLUMNS} FROM {MEMORY_FROM}
         WHERE m.workspace_id = $1 AND m.project = $2 AND m.kind = $3 AND m.content_hash = $4 AND m.status = 'active'"
    );
    let row = s
        .optional(
            Stmt::new(sql)
                .bind(&new.workspace_id)
                .bind(new.content.project.as_deref().unwrap_or(""))
                .bind(new.content.kind.as_str())
                .bind(&new.content_hash),
        )
        .await?;
    row.map(|r| memory(&r)).transpose()
}

/// Rewrites the memory's tag rows from its current content and records the change for the
/// full-text index.
async fn reindex<D: Dialect>(s: &mut Session<D>, id: &str, tags: &[String]) -> StoreResult<()> {
    s.execute(Stmt::new("DELETE FROM memory_tags WHERE memory_id = $1").bind(id))
        .await?;
    for tag in tags {
        s.execute(
            Stmt::new("INSERT INTO memory_tags (memory_id, tag) VALUES ($1, $2)")
                .bind(id)
                .bind(tag),
        )
        .await?;
    }
    crate::search::follow::log_change(s, crate::search::follow::Kind::Memories, id).await
}

pub(super) async fn insert_version<D: Dialect>(
    s: &mut Session<D>,
    id: &str,
    number: i64,
    c: &MemoryContent,
    a: &Attribution,
    at: &str,
) -> StoreResult<()> {
    s.execute(
        Stmt::new("INSERT INTO memory_versions (memory_id, version, kind, title, content, tags, account_id, credential_id, client_profile, agent_id, agent_instance_id, created_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)")
            .bind(id)
            .bind(number)
            .bind(c.kind.as_str())
            .bind(&c.title)
            .bind(&c.content)
            .bind(tags_json(&c.tags))
            .bind(&a.account_id)
            .bind(&a.credential_id)
            .bind(&a.client_profile)
            .bind(&a.agent_id)
            .bind(&a.agent_instance_id)
            .bind(at),
    )
    .await?;
    Ok(())
}

/// The bytes a memory version stores: content and title.
fn content_bytes(c: &xmemo_core::memory::MemoryContent) -> u64 {
    (c.content.len() + c.title.as_deref().map_or(0, str::len)) as u64
}

pub async fn remember<D: Dialect>(
    store: &SqlStore<D>,
    new: NewMemory,
    audit_draft: AuditDraft,
) -> StoreResult<RememberOutcome> {
    let mut s = store.write().await?;
    if let Some(existing) = identical(&mut s, &new).await? {
        return Ok(RememberOutcome {
            memory: existing,
            created: false,
        });
    }
    let at = now();
    let (c, a) = (&new.content, &new.attribution);
    if let Some(quota) = &new.quota {
        let charge = super::usage::Charge {
            memories: 1,
            bytes: content_bytes(c),
            ..Default::default()
        };
        super::usage::charge(&mut s, &a.account_id, charge, quota).await?;
    }
    let inserted = s
        .execute(
            Stmt::new("INSERT INTO memories (memory_id, workspace_id, kind, title, content, content_hash, tags, project, expires_at, status, version, account_id, credential_id, client_profile, agent_id, agent_instance_id, created_at, updated_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,'active',1,$10,$11,$12,$13,$14,$15,$15)")
                .bind(&new.memory_id)
                .bind(&new.workspace_id)
                .bind(c.kind.as_str())
                .bind(&c.title)
                .bind(&c.content)
                .bind(&new.content_hash)
                .bind(tags_json(&c.tags))
                .bind(c.project.as_deref().unwrap_or(""))
                .bind(&new.expires_at)
                .bind(&a.account_id)
                .bind(&a.credential_id)
                .bind(&a.client_profile)
                .bind(&a.agent_id)
                .bind(&a.agent_instance_id)
                .bind(at.as_str()),
        )
        .await;
    match inserted {
        Ok(_) => {}
        // Another node remembered the same content meanwhile: that memory answers.
        Err(StoreError::Conflict(_)) => {
            drop(s);
            let mut s = store.write().await?;
            return match identical(&mut s, &new).await? {
                Some(existing) => Ok(RememberOutcome {
                    memory: existing,
                    created: false,
                }),
                None => Err(StoreError::Contention(
                    "an identical memory changed concurrently, try again".into(),
                )),
            };
        }
        Err(e) => return Err(e),
    }
    insert_version(&mut s, &new.memory_id, 1, c, a, &at).await?;
    reindex(&mut s, &new.memory_id, &c.tags).await?;
    audit::append(&mut s, &audit_draft).await?;
    let memory = memory_in(&mut s, &new.memory_id)
        .await?
        .ok_or_else(|| StoreError::Internal("remembered memory vanished".into()))?;
    s.commit().await?;
    Ok(RememberOutcome {
        memory,
        created: true,
    })
}

pub async fn get_memory<D: Dialect>(store: &SqlStore<D>, id: &str) -> StoreResult<Option<Memory>> {
    memory_in(&mut store.read().await?, id).await
}

pub async fn memory_history<D: Dialect>(
    store: &SqlStore<D>,
    ids: &[String],
) -> StoreResult<Vec<MemoryVersion>> {
    if ids.is_empty() {
        return Ok(vec![]);
    }
    let sql = format!(
        "SELECT memory_id, version, kind, title, content, tags, account_id, credential_id, client_profile, agent_id, agent_instance_id, created_at
         FROM memory_versions WHERE memory_id IN ({}) ORDER BY memory_id, version",
        in_list(1, ids.len())
    );
    let mut s = store.read().await?;
    s.all(Stmt::new(sql).bind_all(ids))
        .await?
        .iter()
        .map(version)
        .collect()
}

pub async fn update_memory<D: Dialect>(
    store: &SqlStore<D>,
    update: MemoryUpdate,
) -> StoreResult<Memory> {
    let mut s = store.write().await?;
    let current = memory_in(&mut s, &update.memory_id)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("memory {}", update.memory_id)))?;
    if current.status != MemoryStatus::Active {
        return Err(StoreError::Conflict(format!(
            "memory `{}` is forgotten; restore it before updating it",
            update.memory_id
        )));
    }
    if current.version != update.expected_version {
        return Err(StoreError::Conflict(format!(
            "expected_version {} is stale: memory `{}` is at version {}",
            update.expected_version, update.memory_id, current.version
        )));
    }
    let at = now();
    let next = current.version + 1;
    let c = &update.content;
    if let Some(quota) = &update.quota {
        // Every version is kept, so each one counts.
        let charge = super::usage::Charge {
            bytes: content_bytes(c),
            ..Default::default()
        };
        super::usage::charge(&mut s, &update.attribution.account_id, charge, quota).await?;
    }
    // Compare-and-set on the version: a concurrent update on another node changes nothing.
    let changed = s
        .execute(
            Stmt::new("UPDATE memories SET kind = $1, title = $2, content = $3, content_hash = $4, tags = $5, version = $6, updated_at = $7 WHERE memory_id = $8 AND version = $9 AND status = 'active'")
                .bind(c.kind.as_str())
                .bind(&c.title)
                .bind(&c.content)
                .bind(&update.content_hash)
                .bind(tags_json(&c.tags))
                .bind(next)
                .bind(at.as_str())
                .bind(&update.memory_id)
                .bind(current.version),
        )
        .await
        .map_err(|e| match e {
            StoreError::Conflict(_) => StoreError::Conflict(
                "an identical active memory already exists in this workspace, project and kind"
                    .into(),
            ),
            other => other,
        })?;
    if changed == 0 {
        return Err(StoreError::Conflict(format!(
            "memory `{}` changed concurrently; read it again",
            update.memory_id
        )));
    }
    insert_version(&mut s, &update.memory_id, next, c, &update.attribution, &at).await?;
    reindex(&mut s, &update.memory_id, &c.tags).await?;
    audit::append(&mut s, &update.audit).await?;
    let memory = memory_in(&mut s, &update.memory_id)
        .await?
        .ok_or_else(|| StoreError::Internal("updated memory vanished".into()))?;
    s.commit().await?;
    Ok(memory)
}

pub async fn set_memory_status<D: Dialect>(
    store: &SqlStore<D>,
    change: MemoryStatusChange,
) -> StoreResult<Memory> {
    let mut s = store.write().await?;
    let at = now();
    let forgetting = change.to == MemoryStatus::Forgotten;
    let changed = s
        .execute(
            Stmt::new("UPDATE memories SET status = $1, forgotten_reason = $2, forgotten_at = $3, updated_at = $4 WHERE memory_id = $5 AND status = $6")
                .bind(change.to.as_str())
                .bind(if forgetting { change.reason.as_deref() } else { None })
                .bind(if forgetting { Some(at.as_str()) } else { None })
                .bind(at.as_str())
                .bind(&change.memory_id)
                .bind(change.from.as_str()),
        )
        .await
        .map_err(|e| match e {
            StoreError::Conflict(_) => StoreError::Conflict(
                "an identical active memory exists; it cannot be restored beside it".into(),
            ),
            other => other,
        })?;
    if changed == 0 {
        return match memory_in(&mut s, &change.memory_id).await? {
            None => Err(StoreError::NotFound(format!("memory {}", change.memory_id))),
            Some(m) => Err(StoreError::Conflict(format!(
                "memory `{}` is {}, not {}",
                change.memory_id, m.status, change.from
            ))),
        };
    }
    // Its status and `updated_at` are filter fields the search index holds.
    crate::search::follow::log_change(
        &mut s,
        crate::search::follow::Kind::Memories,
        &change.memory_id,
    )
    .await?;
    audit::append(&mut s, &change.audit).await?;
    let memory = memory_in(&mut s, &change.memory_id)
        .await?
        .ok_or_else(|| StoreError::Internal("memory vanished".into()))?;
    s.commit().await?;
    Ok(memory)
}

/// Ranked when the query has text (rows holding every word, then relevance, then most
/// recent), else most recent first.
pub async fn recall_memories<D: Dialect>(
    store: &SqlStore<D>,
    q: &MemoryQuery,
) -> StoreResult<Vec<MemoryHit>> {
    if q.workspace_ids.is_empty() || q.limit == 0 {
        return Ok(vec![]);
    }
    let Some(text) = q.text.as_deref().map(str::trim).filter(|t| !t.is_empty()) else {
        return recall_page(store, q, None).await;
    };
    // Text without a searchable word matches nothing.
    if crate::search::query::terms(text).is_empty() {
        return Ok(vec![]);
    }
    // The search applies every filter while it ranks: its hits are the page.
    let hits = store
        .ranked(
            crate::search::follow::Kind::Memories,
            text,
            &recall_scope(q),
            q.limit as usize,
            q.semantic.as_ref(),
        )
        .await?;
    if hits.is_empty() {
        return Ok(vec![]);
    }
    recall_page(store, q, Some(&hits)).await
}

/// The rows a recall may rank: its workspaces and filters.
fn recall_scope(q: &MemoryQuery) -> crate::search::Scope {
    crate::search::Scope {
        workspaces: q.workspace_ids.clone(),
        memories: Some(crate::search::MemoryFilter {
            include_forgotten: q.include_forgotten,
            now: q.now.clone(),
            kind: q.kind.map(|k| k.as_str().to_string()),
            project: q.project.clone(),
            agent_instance_id: q.agent_instance_id.clone(),
            since: q.since.clone(),
            until: q.until.clone(),
            tags: q.tags.clone(),
        }),
    }
}

/// The memories matching `q`'s filters: among `hits` in their order, or most recent first.
async fn recall_page<D: Dialect>(
    store: &SqlStore<D>,
    q: &MemoryQuery,
    hits: Option<&[crate::search::lexical::Hit]>,
) -> StoreResult<Vec<MemoryHit>> {
    let mut args: Vec<Arg<'static>> = Vec::new();
    // Appends a value and returns its placeholder.
    fn param(args: &mut Vec<Arg<'static>>, value: Arg<'static>) -> String {
        args.push(value);
        format!("${}", args.len())
    }
    let text = |v: &str| Arg::OwnedText(v.to_string());
    let mut sql = String::new();
    if let Some(hits) = hits {
        // The hits' order is the ranking (tiers, then BM25 or the fused score); the relevance
        // is the public score.
        let rows: Vec<String> = hits
            .iter()
            .enumerate()
            .map(|(position, h)| {
                let key = param(&mut args, text(&h.key));
                let relevance = param(&mut args, Arg::Float(h.relevance));
                let position = param(&mut args, Arg::Int(position as i64));
                format!("({key}, {relevance}, {position})")
            })
            .collect();
        sql.push_str(&format!(
            "WITH hits (hit_key, relevance, position) AS (VALUES {}) ",
            rows.join(", ")
        ));
    }
    // With hits, they drive the join: CROSS JOIN fixes that order on SQLite, whose planner
    // (3.51) otherwise walks every memory of the workspace and probes the hits.
    let (relevance, from) = if hits.is_some() {
        (
            "h.relevance",
            "hits h CROSS JOIN memories m LEFT JOIN accounts a ON a.account_id = m.account_id",
        )
    } else {
        ("CAST(0 AS DOUBLE PRECISION)", MEMORY_FROM)
    };
    sql.push_str(&format!(
        "SELECT {MEMORY_COLUMNS}, {relevance} AS relevance FROM {from}"
    ));
    let ws: Vec<String> = q
        .workspace_ids
        .iter()
        .map(|w| param(&mut args, text(w)))
        .collect();
    sql.push_str(&format!(" WHERE m.workspace_id IN ({})", ws.join(",")));
    if hits.is_some() {
        sql.push_str(" AND m.memory_id = h.hit_key");
    }
    if !q.include_forgotten {
        sql.push_str(" AND m.status = 'active'");
    }
    let now = param(&mut args, text(&q.now));
    sql.push_str(&format!(
        " AND (m.expires_at IS NULL OR m.expires_at > {now})"
    ));
    let filters = [
        ("m.kind =", q.kind.map(|k| k.as_str())),
        ("m.project =", q.project.as_deref()),
        ("m.agent_instance_id =", q.agent_instance_id.as_deref()),
        ("m.updated_at >=", q.since.as_deref()),
        ("m.updated_at <=", q.until.as_deref()),
    ];
    for (column, value) in filters {
        if let Some(value) = value {
            let p = param(&mut args, text(value));
            sql.push_str(&format!(" AND {column} {p}"));
        }
    }
    for tag in &q.tags {
        let p = param(&mut args, text(tag));
        sql.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_id = m.memory_id AND t.tag = {p})"
        ));
    }
    let order = if hits.is_some() {
        "h.position, m.updated_at DESC, m.memory_id DESC"
    } else {
        "m.updated_at DESC, m.memory_id DESC"
    };
    let limit = param(&mut args, Arg::Int(i64::from(q.limit)));
    sql.push_str(&format!(" ORDER BY {order} LIMIT {limit}"));
    let stmt = args
        .into_iter()
        .fold(Stmt::new(sql), |stmt, arg| stmt.bind_arg(arg));
    let lanes: std::collections::HashMap<&str, (Lanes, bool)> = hits
        .into_iter()
        .flatten()
        .map(|h| (h.key.as_str(), (h.lanes, h.every_word)))
        .collect();
    let mut s = store.read().await?;
    s.all(stmt)
        .await?
        .iter()
        .map(|r| {
            let memory = memory(r)?;
            let (matched, every_word) = lanes
                .get(memory.memory_id.as_str())
                .copied()
                .unwrap_or_default();
            Ok(MemoryHit {
                matched,
                every_word,
                score: crate::search::query::score(false, r.float("relevance")?),
                memory,
            })
        })
        .collect()
}

/// Memories of the given workspaces in `memory_id` order, after `after` (exports).
pub async fn memory_page<D: Dialect>(
    store: &SqlStore<D>,
    workspace_ids: &[String],
    after: Option<&str>,
    limit: u32,
) -> StoreResult<Vec<Memory>> {
    if workspace_ids.is_empty() {
        return Ok(vec![]);
    }
    let n = workspace_ids.len();
    let sql = format!(
        "SELECT {MEMORY_COLUMNS} FROM {MEMORY_FROM} WHERE m.workspace_id IN ({}) AND m.memory_id > ${} ORDER BY m.memory_id LIMIT ${}",
        in_list(1, n),
        n + 1,
        n + 2
    );
    let mut s = store.read().await?;
    s.all(
        Stmt::new(sql)
            .bind_all(workspace_ids)
            .bind(after.unwrap_or(""))
            .bind(i64::from(limit)),
    )
    .await?
    .iter()
    .map(memory)
    .collect()
}

/// How many memories of the workspaces a recall can find at `now` (active, not expired),
/// whatever the query and filters: what an empty recall tells its caller.
pub async fn count_recallable_memories<D: Dialect>(
    store: &SqlStore<D>,
    workspace_ids: &[String],
    now: &str,
) -> StoreResult<u64> {
    if workspace_ids.is_empty() {
        return Ok(0);
    }
    let n = workspace_ids.len();
    let sql = format!(
        "SELECT COUNT(*) AS n FROM memories m WHERE m.workspace_id IN ({}) AND m.status = 'active' AND (m.expires_at IS NULL OR m.expires_at > ${})",
        in_list(1, n),
        n + 1
    );
    let mut s = store.read().await?;
    let row = s
        .one(Stmt::new(sql).bind_all(workspace_ids).bind(now), "count")
        .await?;
    super::driver::to_u64(row.int("n")?, "memory count")
}

/// Inserts a memory and its versions as given (snapshot imports).
pub async fn import_memory<D: Dialect>(
    s: &mut Session<D>,
    m: &Memory,
    versions: &[&MemoryVersion],
) -> StoreResult<()> {
    let a = &m.attribution;
    s.execute(
        Stmt::new("INSERT INTO memories (memory_id, workspace_id, kind, title, content, content_hash, tags, project, expires_at, status, forgotten_reason, forgotten_at, version, account_id, credential_id, client_profile, agent_id, agent_instance_id, created_at, updated_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20)")
            .bind(&m.memory_id)
            .bind(&m.workspace_id)
            .bind(m.kind.as_str())
            .bind(&m.title)
            .bind(&m.content)
            .bind(xmemo_core::memory::memory_content_hash(&m.content))
            .bind(tags_json(&m.tags))
            .bind(m.project.as_deref().unwrap_or(""))
            .bind(&m.expires_at)
            .bind(m.status.as_str())
            .bind(&m.forgotten_reason)
            .bind(&m.forgotten_at)
            .bind(m.version)
            .bind(&a.account_id)
            .bind(&a.credential_id)
            .bind(&a.client_profile)
            .bind(&a.agent_id)
            .bind(&a.agent_instance_id)
            .bind(&m.created_at)
            .bind(&m.updated_at),
    )
    .await?;
    for v in versions {
        let content = MemoryContent {
            kind: v.kind,
            content: v.content.clone(),
            title: v.title.clone(),
            tags: v.tags.clone(),
            project: None,
        };
        insert_version(
            s,
            &v.memory_id,
            v.version,
            &content,
            &v.attribution,
            &v.created_at,
        )
        .await?;
    }
    reindex(s, &m.memory_id, &m.tags).await
}
