//! Skills, their append-only revisions and content-addressed components.

use super::rows::{self, COMPONENT_COLUMNS, REVISION_SELECT, SKILL_SELECT};
use super::{Dialect, Session, SqlStore, Stmt, audit, in_list, page, to_i64};
use crate::model::*;
use crate::{Record, StoreError, StoreResult};
use std::collections::BTreeMap;
use xmemo_core::{AssetStatus, RevisionStatus, new_id};

// ---- reads ---------------------------------------------------------------------------------

async fn skill_in<D: Dialect>(s: &mut Session<D>, skill_id: &str) -> StoreResult<Option<Skill>> {
    let row = s
        .optional(Stmt::new(format!("{SKILL_SELECT} WHERE s.skill_id = $1")).bind(skill_id))
        .await?;
    row.map(|r| rows::skill(&r)).transpose()
}

async fn existing_skill<D: Dialect>(s: &mut Session<D>, skill_id: &str) -> StoreResult<Skill> {
    skill_in(s, skill_id)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("skill {skill_id}")))
}

/// Revisions matching `clause` (its placeholders start at `$1`), with their components read
/// in one more statement.
async fn revisions_where<D: Dialect>(
    s: &mut Session<D>,
    stmt: Stmt<'_>,
) -> StoreResult<Vec<Revision>> {
    let rows = s.all(stmt).await?;
    let ids: Vec<String> = rows
        .iter()
        .map(|r| r.text("revision_id"))
        .collect::<StoreResult<_>>()?;
    let mut components = components_of(s, &ids).await?;
    rows.iter()
        .zip(&ids)
        .map(|(r, id)| rows::revision(r, components.remove(id).unwrap_or_default()))
        .collect()
}

/// Components of the given revisions, by revision, each list in logical-path order.
async fn components_of<D: Dialect>(
    s: &mut Session<D>,
    revision_ids: &[String],
) -> StoreResult<BTreeMap<String, Vec<ComponentManifest>>> {
    let mut out: BTreeMap<String, Vec<ComponentManifest>> = BTreeMap::new();
    if revision_ids.is_empty() {
        return Ok(out);
    }
    let sql = format!(
        "SELECT {COMPONENT_COLUMNS} FROM revision_components c WHERE c.revision_id IN ({}) ORDER BY c.revision_id, c.logical_path",
        in_list(1, revision_ids.len())
    );
    for row in s.all(Stmt::new(sql).bind_all(revision_ids)).await? {
        out.entry(row.text("revision_id")?)
            .or_default()
            .push(rows::component(&row)?);
    }
    Ok(out)
}

/// The first revision `stmt` (a [`REVISION_SELECT`]) finds, with its components, in one
/// statement: the revision's row repeated once per component (a LEFT JOIN, so a revision
/// without components is one row with NULL component columns).
async fn one_revision<D: Dialect>(
    s: &mut Session<D>,
    stmt: Stmt<'_>,
) -> StoreResult<Option<Revision>> {
    let stmt = stmt.map_sql(|inner| {
        format!(
            "SELECT r.*, c.logical_path, c.component_type, c.content_hash, c.size, c.media_type
             FROM ({inner} LIMIT 1) r
             LEFT JOIN revision_components c ON c.revision_id = r.revision_id
             ORDER BY c.logical_path"
        )
    });
    let found = s.all(stmt).await?;
    let Some(first) = found.first() else {
        return Ok(None);
    };
    let mut components = Vec::with_capacity(found.len());
    for row in &found {
        if row.opt_text("logical_path")?.is_some() {
            components.push(rows::component(row)?);
        }
    }
    rows::revision(first, components).map(Some)
}

async fn revision_in<D: Dialect>(s: &mut Session<D>, revision_id: &str) -> StoreResult<Revision> {
    one_revision(
        s,
        Stmt::new(format!("{REVISION_SELECT} WHERE revision_id = $1")).bind(revision_id),
    )
    .await?
    .ok_or_else(|| StoreError::NotFound(format!("revision {revision_id}")))
}

pub async fn get_skill<D: Dialect>(store: &SqlStore<D>, id: &str) -> StoreResult<Option<Skill>> {
    skill_in(&mut store.read().await?, id).await
}

pub async fn find_skills_by_slug<D: Dialect>(
    store: &SqlStore<D>,
    workspace_ids: &[String],
    slug: &str,
) -> StoreResult<Vec<Skill>> {
    if workspace_ids.is_empty() {
        return Ok(vec![]);
    }
    let sql = format!(
        "{SKILL_SELECT} WHERE s.slug = $1 AND s.workspace_id IN ({}) ORDER BY s.workspace_id",
        in_list(2, workspace_ids.len())
    );
    let mut s = store.read().await?;
    s.all(Stmt::new(sql).bind(slug).bind_all(workspace_ids))
        .await?
        .iter()
        .map(rows::skill)
        .collect()
}

/// Skills of the given workspaces by `(slug, workspace_id)`: one page, or all.
pub async fn list_skills<D: Dialect>(
    store: &SqlStore<D>,
    workspace_ids: &[String],
    page: Option<&KeysetPage<SlugKey>>,
) -> StoreResult<Vec<Skill>> {
    if workspace_ids.is_empty() {
        return Ok(vec![]);
    }
    let n = workspace_ids.len();
    let sql = format!(
        "{SKILL_SELECT} WHERE s.workspace_id IN ({}){}",
        in_list(1, n),
        page::tail(&["s.slug", "s.workspace_id"], n + 1, page)
    );
    let mut s = store.read().await?;
    s.all(page::bind(Stmt::new(sql).bind_all(workspace_ids), page))
        .await?
        .iter()
        .map(rows::skill)
        .collect()
}

pub async fn served_skills<D: Dialect>(
    store: &SqlStore<D>,
    page: &ServedPage,
) -> StoreResult<Vec<ServedSkill>> {
    if page.workspace_ids.is_empty() || page.limit == 0 {
        return Ok(vec![]);
    }
    let n = page.workspace_ids.len();
    let mut sql = format!(
        "{SKILL_SELECT} JOIN revisions p ON p.skill_id = s.skill_id AND p.status = 'published'
         WHERE s.asset_status = 'active' AND s.workspace_id IN ({})",
        in_list(1, n)
    );
    if page.after.is_some() {
        sql.push_str(&format!(
            " AND (s.workspace_id > ${a} OR (s.workspace_id = ${a} AND s.slug > ${b}))",
            a = n + 1,
            b = n + 2
        ));
    }
    sql.push_str(&format!(
        " ORDER BY s.workspace_id, s.slug LIMIT ${}",
        if page.after.is_some() { n + 3 } else { n + 1 }
    ));
    let mut stmt = Stmt::new(sql).bind_all(&page.workspace_ids);
    if let Some(after) = &page.after {
        stmt = stmt.bind(&after.workspace_id).bind(&after.slug);
    }
    let stmt = stmt.bind(i64::from(page.limit));
    let mut s = store.read().await?;
    let skills: Vec<Skill> = s
        .all(stmt)
        .await?
        .iter()
        .map(rows::skill)
        .collect::<StoreResult<_>>()?;
    let ids: Vec<String> = skills
        .iter()
        .filter_map(|k| k.published_revision_id.clone())
        .collect();
    let mut revisions: BTreeMap<String, Revision> = revisions_by_id(&mut s, &ids)
        .await?
        .into_iter()
        .map(|r| (r.revision_id.clone(), r))
        .collect();
    Ok(skills
        .into_iter()
        .filter_map(|skill| {
            let revision = revisions.remove(skill.published_revision_id.as_deref()?)?;
            Some(ServedSkill { skill, revision })
        })
        .collect())
}

pub async fn shared_slugs<D: Dialect>(
    store: &SqlStore<D>,
    workspace_ids: &[String],
    slugs: &[String],
) -> StoreResult<Vec<String>> {
    if workspace_ids.len() < 2 || slugs.is_empty() {
        return Ok(vec![]);
    }
    let sql = format!(
        "SELECT slug FROM skills WHERE workspace_id IN ({}) AND slug IN ({}) GROUP BY slug HAVING COUNT(*) > 1 ORDER BY slug",
        in_list(1, workspace_ids.len()),
        in_list(workspace_ids.len() + 1, slugs.len())
    );
    let mut s = store.read().await?;
    s.all(Stmt::new(sql).bind_all(workspace_ids).bind_all(slugs))
        .await?
        .iter()
        .map(|r| r.text("slug"))
        .collect()
}

/// Revisions of the workspace's skills with this canonical_hash (index
/// `revisions_canonical_hash`), by slug then newest first.
pub async fn content_holders<D: Dialect>(
    store: &SqlStore<D>,
    workspace_id: &str,
    canonical_hash: &str,
    limit: u32,
) -> StoreResult<Vec<ContentHolder>> {
    let sql = format!(
        "SELECT s.skill_id, s.slug, r.revision_id, r.revision_number, r.status, s.latest_revision_number \
         FROM revisions r JOIN skills s ON s.skill_id = r.skill_id \
         WHERE r.canonical_hash = $1 AND s.workspace_id = $2 \
         ORDER BY s.slug, r.revision_number DESC LIMIT {limit}"
    );
    let mut s = store.read().await?;
    s.all(Stmt::new(sql).bind(canonical_hash).bind(workspace_id))
        .await?
        .iter()
        .map(|r| {
            let revision_number = r.int("revision_number")?;
            Ok(ContentHolder {
                skill_id: r.text("skill_id")?,
                slug: r.text("slug")?,
                revision_id: r.text("revision_id")?,
                revision_number,
                status: r.parsed("status")?,
                latest: r.int("latest_revision_number")? == revision_number,
            })
        })
        .collect()
}

/// Revisions waiting for review (`proposed`) in active skills of the given workspaces, oldest
/// first, at most `limit`.
pub async fn pending_proposals<D: Dialect>(
    store: &SqlStore<D>,
    workspace_ids: &[String],
    limit: u32,
) -> StoreResult<Vec<PendingProposal>> {
    if workspace_ids.is_empty() || limit == 0 {
        return Ok(vec![]);
    }
    let n = workspace_ids.len();
    let sql = format!(
        "SELECT s.skill_id, s.workspace_id, s.slug, s.name, r.revision_id, r.revision_number, r.account_id, r.created_at
         FROM revisions r JOIN skills s ON s.skill_id = r.skill_id
         WHERE r.status = 'proposed' AND s.asset_status = 'active' AND s.workspace_id IN ({})
         ORDER BY r.created_at, r.revision_id LIMIT ${}",
        in_list(1, n),
        n + 1
    );
    let mut s = store.read().await?;
    s.all(
        Stmt::new(sql)
            .bind_all(workspace_ids)
            .bind(i64::from(limit)),
    )
    .await?
    .iter()
    .map(|r| {
        Ok(PendingProposal {
            skill_id: r.text("skill_id")?,
            workspace_id: r.text("workspace_id")?,
            slug: r.text("slug")?,
            name: r.text("name")?,
            revision_id: r.text("revision_id")?,
            revision_number: r.int("revision_number")?,
            account_id: r.text("account_id")?,
            created_at: r.text("created_at")?,
        })
    })
    .collect()
}

/// The status of each given skill's latest revision, by skill id (skills without a revision
/// are left out).
pub async fn latest_statuses<D: Dialect>(
    store: &SqlStore<D>,
    skill_ids: &[String],
) -> StoreResult<BTreeMap<String, RevisionStatus>> {
    if skill_ids.is_empty() {
        return Ok(BTreeMap::new());
    }
    let sql = format!(
        "SELECT r.skill_id, r.status FROM skills s JOIN revisions r
           ON r.skill_id = s.skill_id AND r.revision_number = s.latest_revision_number
         WHERE s.skill_id IN ({})",
        in_list(1, skill_ids.len())
    );
    let mut s = store.read().await?;
    s.all(Stmt::new(sql).bind_all(skill_ids))
        .await?
        .iter()
        .map(|r| Ok((r.text("skill_id")?, r.parsed("status")?)))
        .collect()
}

async fn revisions_by_id<D: Dialect>(
    s: &mut Session<D>,
    ids: &[String],
) -> StoreResult<Vec<Revision>> {
    if ids.is_empty() {
        return Ok(vec![]);
    }
    let sql = format!(
        "{REVISION_SELECT} WHERE revision_id IN ({}) ORDER BY revision_id",
        in_list(1, ids.len())
    );
    revisions_where(s, Stmt::new(sql).bind_all(ids)).await
}

pub async fn get_revision<D: Dialect>(
    store: &SqlStore<D>,
    revision_id: &str,
) -> StoreResult<Option<Revision>> {
    let sql = format!("{REVISION_SELECT} WHERE revision_id = $1");
    one_revision(&mut store.read().await?, Stmt::new(sql).bind(revision_id)).await
}

pub async fn latest_revision<D: Dialect>(
    store: &SqlStore<D>,
    skill_id: &str,
) -> StoreResult<Option<Revision>> {
    let sql = format!("{REVISION_SELECT} WHERE skill_id = $1 ORDER BY revision_number DESC");
    one_revision(&mut store.read().await?, Stmt::new(sql).bind(skill_id)).await
}

pub async fn published_revision<D: Dialect>(
    store: &SqlStore<D>,
    skill_id: &str,
) -> StoreResult<Option<Revision>> {
    let sql = format!("{REVISION_SELECT} WHERE skill_id = $1 AND status = 'published'");
    one_revision(&mut store.read().await?, Stmt::new(sql).bind(skill_id)).await
}

/// A skill's revisions by number, with their components: one page, or all.
pub async fn list_revisions<D: Dialect>(
    store: &SqlStore<D>,
    skill_id: &str,
    page: Option<&KeysetPage<i64>>,
) -> StoreResult<Vec<Revision>> {
    let sql = format!(
        "{REVISION_SELECT} WHERE skill_id = $1{}",
        page::tail(&["revision_number"], 2, page)
    );
    revisions_where(
        &mut store.read().await?,
        page::bind(Stmt::new(sql).bind(skill_id), page),
    )
    .await
}

pub async fn component_bytes<D: Dialect>(
    store: &SqlStore<D>,
    revision_id: &str,
    logical_path: &str,
) -> StoreResult<Option<(ComponentManifest, Vec<u8>)>> {
    let sql = format!(
        "SELECT {COMPONENT_COLUMNS}, b.bytes FROM revision_components c JOIN blobs b ON b.content_hash = c.content_hash
         WHERE c.revision_id = $1 AND c.logical_path = $2"
    );
    let mut s = store.read().await?;
    let row = s
        .optional(Stmt::new(sql).bind(revision_id).bind(logical_path))
        .await?;
    row.map(|r| Ok((rows::component(&r)?, r.bytes("bytes")?)))
        .transpose()
}

// ---- saves ---------------------------------------------------------------------------------

/// What a save does, decided from the skill's latest revision.
#[derive(Debug, PartialEq, Eq)]
enum SaveDecision {
    /// The content equals the latest revision's: nothing is written, that revision answers.
    Unchanged(String),
    Append,
}

/// The optimistic-concurrency and dedupe rules of a save (SPEC §1, §4).
fn decide(
    slug: &str,
    expected: Option<&str>,
    latest: Option<(&str, &str)>,
    new_hash: &str,
) -> StoreResult<SaveDecision> {
    let latest_id = latest.map(|(id, _)| id);
    match (expected, latest_id) {
        (Some(expected), None) => {
            return Err(StoreError::Conflict(format!(
                "expected_revision_id `{expected}` given but skill `{slug}` does not exist yet"
            )));
        }
        (Some(expected), Some(latest)) if expected != latest => {
            return Err(StoreError::Conflict(format!(
                "expected_revision_id `{expected}` is not the latest revision (latest is {latest})"
            )));
        }
        _ => {}
    }
    Ok(match latest {
        Some((id, hash)) if hash == new_hash => SaveDecision::Unchanged(id.to_string()),
        _ => SaveDecision::Append,
    })
}

/// The skill a save writes to, locked for the rest of the transaction.
enum Target {
    /// The skill existed: its id.
    Existing(String),
    /// Created by this save, already numbered for its first revision: nothing else can exist
    /// for it yet (no revision, no Level 0 row), which spares the save those reads.
    Created(Skill),
}

/// The skill of this slug, created when absent, locked (where the dialect locks rows) so that
/// revision numbers, the compare-and-set and the dedupe see the latest committed state.
async fn lock_or_create_skill<D: Dialect>(
    s: &mut Session<D>,
    save: &SaveRevision,
    at: &str,
) -> StoreResult<Target> {
    let lock = || {
        Stmt::new(format!(
            "SELECT skill_id FROM skills WHERE workspace_id = $1 AND slug = $2{}",
            D::LOCK_ROWS
        ))
        .bind(&save.workspace_id)
        .bind(&save.slug)
    };
    if let Some(row) = s.optional(lock()).await? {
        return Ok(Target::Existing(row.text("skill_id")?));
    }
    // A concurrent creator (any node) makes this wait for its commit and then do nothing;
    // the skill is then locked and appended to like an existing one.
    let skill_id = new_id("skill");
    let inserted = s
        .optional(
            Stmt::new(
                "INSERT INTO skills (skill_id, workspace_id, slug, name, description, asset_status, latest_revision_number, created_at, updated_at)
                 VALUES ($1,$2,$3,$4,$5,'active',1,$6,$6)
                 ON CONFLICT (workspace_id, slug) DO NOTHING RETURNING skill_id",
            )
            .bind(skill_id.as_str())
            .bind(&save.workspace_id)
            .bind(&save.slug)
            .bind(&save.name)
            .bind(&save.description)
            .bind(at),
        )
        .await?;
    if inserted.is_some() {
        return Ok(Target::Created(Skill {
            skill_id,
            workspace_id: save.workspace_id.clone(),
            slug: save.slug.clone(),
            name: save.name.clone(),
            description: save.description.clone(),
            asset_status: AssetStatus::Active,
            latest_revision_number: 1,
            published_revision_id: None,
            created_at: at.to_string(),
            updated_at: at.to_string(),
        }));
    }
    match s.optional(lock()).await? {
        Some(row) => Ok(Target::Existing(row.text("skill_id")?)),
        None => Err(StoreError::Contention(format!(
            "skill `{}` changed concurrently, try again",
            save.slug
        ))),
    }
}

/// Moves the skill's published revision (if any) to deprecated: the one-published rule.
async fn deprecate_published<D: Dialect>(
    s: &mut Session<D>,
    skill_id: &str,
    at: &str,
) -> StoreResult<()> {
    s.execute(
        Stmt::new("UPDATE revisions SET status = 'deprecated', status_changed_at = $1 WHERE skill_id = $2 AND status = 'published'")
            .bind(at)
            .bind(skill_id),
    )
    .await?;
    Ok(())
}

/// The skills whose Level 0 row a transaction's saves changed, logged for every node's
/// full-text index in one statement after the last save (a round trip less a save on
/// PostgreSQL).
#[derive(Default)]
pub struct SearchRows(Vec<String>);

impl SearchRows {
    fn add(&mut self, skill_id: &str) {
        // A skill saved twice in one batch gets its row once (it is keyed by the skill).
        if !self.0.iter().any(|id| id == skill_id) {
            self.0.push(skill_id.to_string());
        }
    }

    /// Logs the changes.
    pub async fn write<D: Dialect>(self, s: &mut Session<D>) -> StoreResult<()> {
        crate::search::follow::log_changes(s, crate::search::follow::Kind::Skills, &self.0).await
    }
}

/// One save in its own transaction (a batch of one, or a save retried alone).
pub async fn save_alone<D: Dialect>(
    store: &SqlStore<D>,
    save: &SaveRevision,
) -> StoreResult<SaveOutcome> {
    let mut s = store.write().await?;
    let mut search = SearchRows::default();
    let outcome = save_in(&mut s, save, &mut search).await?;
    search.write(&mut s).await?;
    if outcome.created {
        s.commit().await?;
    }
    // An unchanged save wrote nothing: the transaction rolls back when dropped.
    Ok(outcome)
}

/// A save's statements inside the caller's transaction (its own, or shared by a group
/// commit), but for its Level 0 row, which it adds to `search` for the caller to write
/// before the commit. `created == false` means nothing was written. A new skill with
/// components costs six statements; the first audit append of a transaction adds the read
/// of the chain's head (and on PostgreSQL its lock).
pub async fn save_in<D: Dialect>(
    s: &mut Session<D>,
    save: &SaveRevision,
    search: &mut SearchRows,
) -> StoreResult<SaveOutcome> {
    let at = now();
    let publish = save.status == RevisionStatus::Published;
    let mut skill = match lock_or_create_skill(s, save, &at).await? {
        Target::Created(skill) => {
            decide(
                &save.slug,
                save.expected_revision_id.as_deref(),
                None,
                &save.canonical_hash,
            )?;
            skill
        }
        Target::Existing(skill_id) => {
            let latest = s
                .optional(
                    Stmt::new("SELECT revision_id, canonical_hash FROM revisions WHERE skill_id = $1 ORDER BY revision_number DESC LIMIT 1")
                        .bind(&skill_id),
                )
                .await?
                .map(|r| Ok::<_, StoreError>((r.text("revision_id")?, r.text("canonical_hash")?)))
                .transpose()?;
            let latest_ref = latest.as_ref().map(|(id, h)| (id.as_str(), h.as_str()));
            let decision = decide(
                &save.slug,
                save.expected_revision_id.as_deref(),
                latest_ref,
                &save.canonical_hash,
            )?;
            if let SaveDecision::Unchanged(revision_id) = decision {
                // Nothing is written.
                return Ok(SaveOutcome {
                    skill: existing_skill(s, &skill_id).await?,
                    revision: revision_in(s, &revision_id).await?,
                    created: false,
                });
            }
            // The skill as this save leaves it, read by the write itself; its published
            // revision is read before this save changes it.
            let skill = s
                .one(
                    Stmt::new("UPDATE skills SET latest_revision_number = latest_revision_number + 1, name = $1, description = $2, updated_at = $3 WHERE skill_id = $4
                         RETURNING skill_id, workspace_id, slug, name, description, asset_status, latest_revision_number, created_at, updated_at,
                         (SELECT r.revision_id FROM revisions r WHERE r.skill_id = $4 AND r.status = 'published') AS published_revision_id")
                        .bind(&save.name)
                        .bind(&save.description)
                        .bind(at.as_str())
                        .bind(&skill_id),
                    "skill",
                )
                .await?;
            if publish {
                deprecate_published(s, &skill_id, &at).await?;
            }
            rows::skill(&skill)?
        }
    };
    if let Some(quota) = &save.quota {
        // Every revision is kept, so each one counts; a new skill counts once more.
        let charge = super::usage::Charge {
            skills: u64::from(skill.latest_revision_number == 1),
            bytes: revision_bytes(save),
            ..Default::default()
        };
        super::usage::charge(s, &save.attribution.account_id, charge, quota).await?;
    }
    let revision = Revision {
        revision_id: new_id("rev"),
        skill_id: skill.skill_id.clone(),
        revision_number: skill.latest_revision_number,
        name: save.name.clone(),
        description: save.description.clone(),
        instruction_body: save.instruction_body.clone(),
        metadata: save.metadata.clone(),
        canonical_hash: save.canonical_hash.clone(),
        status: save.status,
        review_note: None,
        components: sorted_manifests(&save.components),
        attribution: save.attribution.clone(),
        created_at: at.clone(),
        status_changed_at: at.clone(),
        source: save.source.clone(),
        safety: save.safety.clone(),
    };
    insert_revision(s, &revision).await?;
    // Blobs in content-hash order, so two saves sharing blobs never wait on each other in
    // opposite orders.
    let blobs: BTreeMap<&str, &[u8]> = save
        .components
        .iter()
        .map(|c| (c.manifest.content_hash.as_str(), c.content.as_slice()))
        .collect();
    let blobs: Vec<(&str, &[u8])> = blobs.into_iter().collect();
    insert_blobs(s, &blobs, "ON CONFLICT (content_hash) DO NOTHING").await?;
    insert_components(s, &revision).await?;
    if publish {
        search.add(&skill.skill_id);
        skill.published_revision_id = Some(revision.revision_id.clone());
    }
    let audit = AuditDraft::new("skill.save", &save.attribution)
        .workspace(&save.workspace_id)
        .skill(&skill.skill_id)
        .revision(&revision.revision_id)
        .details(serde_json::json!({
            "slug": save.slug,
            "revision_number": revision.revision_number,
            "status": save.status,
            "canonical_hash": save.canonical_hash,
        }));
    audit::append(s, &audit).await?;
    Ok(SaveOutcome {
        skill,
        revision,
        created: true,
    })
}

/// The bytes a revision stores: body, metadata and components.
fn revision_bytes(save: &SaveRevision) -> u64 {
    let metadata = serde_json::to_vec(&save.metadata).map_or(0, |m| m.len());
    let files: usize = save.components.iter().map(|c| c.content.len()).sum();
    (save.instruction_body.len() + metadata + files) as u64
}

/// Components as a read returns them: in logical-path (byte) order.
fn sorted_manifests(components: &[NewComponent]) -> Vec<ComponentManifest> {
    let mut out: Vec<ComponentManifest> = components.iter().map(|c| c.manifest.clone()).collect();
    out.sort_by(|a, b| a.logical_path.cmp(&b.logical_path));
    out
}

/// One revision row as given (saves and snapshot imports); components are inserted apart.
pub async fn insert_revision<D: Dialect>(s: &mut Session<D>, r: &Revision) -> StoreResult<()> {
    let a = &r.attribution;
    s.execute(
        Stmt::new("INSERT INTO revisions (revision_id, skill_id, revision_number, name, description, instruction_body, metadata, canonical_hash, status, review_note, account_id, credential_id, client_profile, agent_id, agent_instance_id, created_at, status_changed_at, source, safety, safety_verdict) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20)")
            .bind(&r.revision_id)
            .bind(&r.skill_id)
            .bind(r.revision_number)
            .bind(&r.name)
            .bind(&r.description)
            .bind(&r.instruction_body)
            .bind(serde_json::Value::Object(r.metadata.clone()).to_string().as_str())
            .bind(&r.canonical_hash)
            .bind(r.status.as_str())
            .bind(&r.review_note)
            .bind(&a.account_id)
            .bind(&a.credential_id)
            .bind(&a.client_profile)
            .bind(&a.agent_id)
            .bind(&a.agent_instance_id)
            .bind(&r.created_at)
            .bind(&r.status_changed_at)
            .bind(r.source.as_ref().map(|v| v.to_string()).as_deref())
            .bind(r.safety.as_ref().map(|v| v.to_string()).as_deref())
            .bind(safety_verdict(r.safety.as_ref())),
    )
    .await?;
    Ok(())
}

/// The verdict a safety report states (`None` when there is no report or it has none).
pub(crate) fn safety_verdict(report: Option<&serde_json::Value>) -> Option<&str> {
    report?.get("verdict")?.as_str()
}

/// Stores a rescan's report (and its verdict) on one revision; false when it does not exist.
pub async fn set_revision_safety<D: Dialect>(
    store: &SqlStore<D>,
    revision_id: &str,
    report: &serde_json::Value,
) -> StoreResult<bool> {
    let mut s = store.write().await?;
    let changed = s
        .execute(
            Stmt::new(
                "UPDATE revisions SET safety = $1, safety_verdict = $2 WHERE revision_id = $3",
            )
            .bind(report.to_string().as_str())
            .bind(safety_verdict(Some(report)))
            .bind(revision_id),
        )
        .await?;
    s.commit().await?;
    Ok(changed > 0)
}

/// Revision ids in id order after `after`, `limit` at most: the pages a rescan walks.
pub async fn revision_ids_after<D: Dialect>(
    store: &SqlStore<D>,
    after: Option<&str>,
    limit: u32,
) -> StoreResult<Vec<String>> {
    let mut s = store.read().await?;
    s.all(
        Stmt::new("SELECT revision_id FROM revisions WHERE revision_id > $1 ORDER BY revision_id LIMIT $2")
            .bind(after.unwrap_or(""))
            .bind(i64::from(limit)),
    )
    .await?
    .iter()
    .map(|r| r.text("revision_id"))
    .collect()
}

/// Rows per multi-row INSERT: one statement for a revision's components (at most
/// `MAX_COMPONENTS`) in a save, well within both databases' limits on bound values.
const ROWS_PER_INSERT: usize = 64;

/// `($from,…,$from+width-1),(…)` for `rows` rows of `width` values.
fn values_rows(rows: usize, width: usize) -> String {
    (0..rows)
        .map(|row| format!("({})", in_list(1 + row * width, width)))
        .collect::<Vec<_>>()
        .join(",")
}

pub async fn insert_components<D: Dialect>(s: &mut Session<D>, r: &Revision) -> StoreResult<()> {
    for chunk in r.components.chunks(ROWS_PER_INSERT) {
        let mut stmt = Stmt::new(format!(
            "INSERT INTO revision_components (revision_id, logical_path, path_folded, component_type, content_hash, size, media_type) VALUES {}",
            values_rows(chunk.len(), 7)
        ));
        for c in chunk {
            stmt = stmt
                .bind(&r.revision_id)
                .bind(&c.logical_path)
                .bind(c.logical_path.to_lowercase())
                .bind(c.component_type.as_str())
                .bind(&c.content_hash)
                .bind(to_i64(c.size, "component size")?)
                .bind(&c.media_type);
        }
        s.execute(stmt).await?;
    }
    Ok(())
}

/// `(content_hash, bytes)` rows in the given order (saves pass content-hash order: the order
/// in which concurrent writers lock them). `on_conflict` is empty for snapshot imports (a
/// duplicate there is a broken snapshot).
pub async fn insert_blobs<D: Dialect>(
    s: &mut Session<D>,
    blobs: &[(&str, &[u8])],
    on_conflict: &'static str,
) -> StoreResult<()> {
    for chunk in blobs.chunks(ROWS_PER_INSERT) {
        let mut stmt = Stmt::new(format!(
            "INSERT INTO blobs (content_hash, size, bytes) VALUES {} {on_conflict}",
            values_rows(chunk.len(), 3)
        ));
        for (hash, bytes) in chunk {
            stmt = stmt
                .bind(*hash)
                .bind(to_i64(bytes.len() as u64, "blob size")?)
                .bind(*bytes);
        }
        s.execute(stmt).await?;
    }
    Ok(())
}

// ---- lifecycle -----------------------------------------------------------------------------

pub async fn change_revision_status<D: Dialect>(
    store: &SqlStore<D>,
    change: StatusChange,
) -> StoreResult<Revision> {
    let conflict = || {
        StoreError::Conflict(format!(
            "revision `{}` is no longer {}",
            change.revision_id, change.from
        ))
    };
    let mut s = store.write().await?;
    let Some(row) = s
        .optional(
            Stmt::new("SELECT skill_id FROM revisions WHERE revision_id = $1")
                .bind(&change.revision_id),
        )
        .await?
    else {
        return Err(conflict());
    };
    let skill_id = row.text("skill_id")?;
    // Every status write of a skill's revisions happens under its row lock, so the check
    // below sees the latest committed status and concurrent publishes serialise.
    if !D::LOCK_ROWS.is_empty() {
        s.execute(
            Stmt::new(format!(
                "SELECT 1 FROM skills WHERE skill_id = $1{}",
                D::LOCK_ROWS
            ))
            .bind(&skill_id),
        )
        .await?;
    }
    let status: RevisionStatus = s
        .one(
            Stmt::new("SELECT status FROM revisions WHERE revision_id = $1")
                .bind(&change.revision_id),
            "revision",
        )
        .await?
        .parsed("status")?;
    if status != change.from {
        return Err(conflict());
    }
    let at = now();
    if change.to == RevisionStatus::Published {
        deprecate_published(&mut s, &skill_id, &at).await?;
    }
    s.execute(
        Stmt::new("UPDATE revisions SET status = $1, review_note = COALESCE($2, review_note), status_changed_at = $3 WHERE revision_id = $4")
            .bind(change.to.as_str())
            .bind(&change.review_note)
            .bind(at.as_str())
            .bind(&change.revision_id),
    )
    .await?;
    touch_skill(&mut s, &skill_id, &at).await?;
    refresh_search_row(&mut s, &skill_id).await?;
    audit::append(&mut s, &change.audit).await?;
    let revision = revision_in(&mut s, &change.revision_id).await?;
    s.commit().await?;
    Ok(revision)
}

async fn touch_skill<D: Dialect>(s: &mut Session<D>, skill_id: &str, at: &str) -> StoreResult<u64> {
    s.execute(
        Stmt::new("UPDATE skills SET updated_at = $1 WHERE skill_id = $2")
            .bind(at)
            .bind(skill_id),
    )
    .await
}

pub async fn set_asset_status<D: Dialect>(
    store: &SqlStore<D>,
    skill_id: &str,
    status: AssetStatus,
    audit: AuditDraft,
) -> StoreResult<Skill> {
    let mut s = store.write().await?;
    let changed = s
        .execute(
            Stmt::new("UPDATE skills SET asset_status = $1, updated_at = $2 WHERE skill_id = $3")
                .bind(status.as_str())
                .bind(now())
                .bind(skill_id),
        )
        .await?;
    if changed == 0 {
        return Err(StoreError::NotFound(format!("skill {skill_id}")));
    }
    refresh_search_row(&mut s, skill_id).await?;
    audit::append(&mut s, &audit).await?;
    let skill = existing_skill(&mut s, skill_id).await?;
    s.commit().await?;
    Ok(skill)
}

// ---- Level 0 -------------------------------------------------------------------------------

/// Records that the skill's Level 0 row (its published revision, while it is active) may
/// have changed, for every node's full-text index.
pub async fn refresh_search_row<D: Dialect>(s: &mut Session<D>, skill_id: &str) -> StoreResult<()> {
    crate::search::follow::log_change(s, crate::search::follow::Kind::Skills, skill_id).await
}

pub async fn search<D: Dialect>(
    store: &SqlStore<D>,
    query: &SearchQuery,
) -> StoreResult<Vec<Descriptor>> {
    if query.workspace_ids.is_empty() || crate::search::query::terms(&query.text).is_empty() {
        return Ok(vec![]);
    }
    let limit = query.limit as usize;
    let hits = store
        .ranked(
            crate::search::follow::Kind::Skills,
            &query.text,
            &crate::search::Scope::workspaces(&query.workspace_ids),
            limit,
            query.semantic.as_ref(),
        )
        .await?;
    // A hit's position is its rank (tiers, then BM25 or the fused score).
    let ranked: std::collections::HashMap<&str, (usize, f64, bool, Lanes)> = hits
        .iter()
        .enumerate()
        .map(|(position, h)| {
            (
                h.key.as_str(),
                (position, h.relevance, h.every_word, h.lanes),
            )
        })
        .collect();
    let exact = crate::search::query::exact_key(&query.text);
    let ids: Vec<String> = hits.iter().map(|h| h.key.clone()).collect();
    // The ranked rows and the exact slug or name matches (by index), read in one statement.
    // CROSS JOIN keeps the few keys as SQLite's outer loop: its planner (3.51) otherwise walks
    // every skill of the workspace and probes the keys (linear in the workspace's size).
    let ws = in_list(3 + ids.len(), query.workspace_ids.len());
    let ranked_keys = if ids.is_empty() {
        String::new()
    } else {
        format!(
            "SELECT skill_id FROM skills WHERE skill_id IN ({}) UNION ",
            in_list(3, ids.len())
        )
    };
    let sql = format!(
        "WITH keys AS (
           {ranked_keys}SELECT skill_id FROM skills WHERE slug = $1 AND workspace_id IN ({ws})
           UNION SELECT * FROM (SELECT s.skill_id FROM revisions r
             JOIN skills s ON s.skill_id = r.skill_id AND s.asset_status = 'active'
             WHERE r.status = 'published' AND lower(r.name) = $2 AND s.workspace_id IN ({ws})
             LIMIT 8) AS named)
         SELECT s.skill_id, s.workspace_id, s.slug, r.name, r.description, r.safety_verdict,
                (s.slug = $1 OR lower(r.name) = $2) AS exact
         FROM keys k CROSS JOIN skills s CROSS JOIN revisions r{card}
         WHERE s.skill_id = k.skill_id AND r.skill_id = s.skill_id AND r.status = 'published'
           AND s.asset_status = 'active' AND s.workspace_id IN ({ws}){safety}",
        card = D::PUBLISHED_CARD,
        safety = if query.include_malicious {
            ""
        } else {
            " AND (r.safety_verdict IS NULL OR r.safety_verdict <> 'malicious')"
        }
    );
    let stmt = Stmt::new(sql)
        .bind(exact.slug)
        .bind(exact.name)
        .bind_all(&ids)
        .bind_all(&query.workspace_ids);
    let mut s = store.read().await?;
    let mut found: Vec<(bool, usize, Descriptor)> = s
        .all(stmt)
        .await?
        .iter()
        .map(|r| {
            let skill_id = r.text("skill_id")?;
            let exact = r.flag("exact")?;
            let (position, relevance, every_word, lanes) = ranked
                .get(skill_id.as_str())
                .copied()
                .unwrap_or((usize::MAX, 0.0, false, Lanes::default()));
            Ok((
                exact,
                position,
                Descriptor {
                    slug: r.text("slug")?,
                    name: r.text("name")?,
                    description: r.text("description")?,
                    workspace_id: r.text("workspace_id")?,
                    score: crate::search::query::score(exact, relevance),
                    matched: Lanes {
                        text: lanes.text || exact,
                        meaning: lanes.meaning,
                    },
                    every_word: every_word || exact,
                    safety_verdict: r.opt_text("safety_verdict")?,
                    skill_id,
                },
            ))
        })
        .collect::<StoreResult<_>>()?;
    // Exact slug or name first, then the ranking's order, then slug.
    found.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.cmp(&b.1))
            .then(a.2.slug.cmp(&b.2.slug))
    });
    found.truncate(limit);
    Ok(found.into_iter().map(|(_, _, d)| d).collect())
}

#[cfg(test)]
mod tests {
    use super::{SaveDecision, decide};

    #[test]
    fn save_decisions() {
        assert_eq!(
            decide("s", None, None, "h").ok(),
            Some(SaveDecision::Append)
        );
        assert_eq!(
            decide("s", None, Some(("r1", "h")), "h").ok(),
            Some(SaveDecision::Unchanged("r1".into()))
        );
        assert_eq!(
            decide("s", Some("r1"), Some(("r1", "x")), "h").ok(),
            Some(SaveDecision::Append)
        );
        assert!(decide("s", Some("r0"), Some(("r1", "x")), "h").is_err());
        assert!(decide("s", Some("r0"), None, "h").is_err());
    }
}
