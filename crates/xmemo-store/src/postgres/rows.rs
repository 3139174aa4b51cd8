//! Row → model mapping for PostgreSQL. Column names and shapes are those of the SQLite
//! backend, so both produce identical models.

use crate::model::*;
use crate::{StoreError, StoreResult};
use sqlx::Row;
use sqlx::postgres::PgRow;

/// `(name reported by table_counts, PostgreSQL table)`. The keys are exactly SQLite's table
/// names; the Level 0 index is `skill_search` here and `skills_fts` there.
pub const TABLES: &[(&str, &str)] = &[
    ("accounts", "accounts"),
    ("workspaces", "workspaces"),
    ("memberships", "memberships"),
    ("api_keys", "api_keys"),
    ("skills", "skills"),
    ("revisions", "revisions"),
    ("revision_components", "revision_components"),
    ("blobs", "blobs"),
    ("audit_log", "audit_log"),
    ("skills_fts", "skill_search"),
];

pub const ACCOUNT_SELECT: &str = "SELECT account_id, handle, display_name, is_admin, personal_workspace_id, created_at FROM accounts";
pub const WORKSPACE_SELECT: &str =
    "SELECT workspace_id, handle, name, kind, created_at FROM workspaces";
pub const API_KEY_SELECT: &str = "SELECT key_id, account_id, name, prefix, key_hash, scopes, profile, created_at, expires_at, revoked_at FROM api_keys";
pub const SKILL_SELECT: &str = "SELECT s.skill_id, s.workspace_id, s.slug, s.name, s.description, s.asset_status, s.latest_revision_number, s.created_at, s.updated_at,
    (SELECT r.revision_id FROM revisions r WHERE r.skill_id = s.skill_id AND r.status = 'published') AS published_revision_id
    FROM skills s";
pub const SKILL_SELECT_BY_ID: &str = "SELECT s.skill_id, s.workspace_id, s.slug, s.name, s.description, s.asset_status, s.latest_revision_number, s.created_at, s.updated_at,
    (SELECT r.revision_id FROM revisions r WHERE r.skill_id = s.skill_id AND r.status = 'published') AS published_revision_id
    FROM skills s WHERE s.skill_id = $1";
pub const REVISION_SELECT: &str = "SELECT revision_id, skill_id, revision_number, name, description, instruction_body, metadata, canonical_hash, status, review_note, account_id, credential_id, client_profile, agent_id, agent_instance_id, created_at, status_changed_at, source FROM revisions";
pub const COMPONENTS_SELECT: &str = "SELECT logical_path, component_type, content_hash, size, media_type FROM revision_components WHERE revision_id = $1 ORDER BY logical_path";
pub const AUDIT_SELECT: &str = "SELECT seq, at, action, account_id, credential_id, client_profile, agent_id, agent_instance_id, workspace_id, skill_id, revision_id, details, prev_hash, entry_hash FROM audit_log";

pub fn parse_text<T: std::str::FromStr<Err = String>>(row: &PgRow, col: &str) -> StoreResult<T> {
    let text: String = row.try_get(col)?;
    text.parse().map_err(StoreError::Internal)
}

pub fn account_from_row(r: &PgRow) -> StoreResult<Account> {
    Ok(Account {
        account_id: r.try_get("account_id")?,
        handle: r.try_get("handle")?,
        display_name: r.try_get("display_name")?,
        is_admin: r.try_get("is_admin")?,
        personal_workspace_id: r.try_get("personal_workspace_id")?,
        created_at: r.try_get("created_at")?,
    })
}

pub fn workspace_from_row(r: &PgRow) -> StoreResult<Workspace> {
    Ok(Workspace {
        workspace_id: r.try_get("workspace_id")?,
        handle: r.try_get("handle")?,
        name: r.try_get("name")?,
        kind: parse_text(r, "kind")?,
        created_at: r.try_get("created_at")?,
    })
}

pub fn api_key_from_row(r: &PgRow) -> StoreResult<ApiKey> {
    let scopes: String = r.try_get("scopes")?;
    Ok(ApiKey {
        key_id: r.try_get("key_id")?,
        account_id: r.try_get("account_id")?,
        name: r.try_get("name")?,
        prefix: r.try_get("prefix")?,
        key_hash: r.try_get("key_hash")?,
        scopes: scopes.split_whitespace().map(str::to_string).collect(),
        profile: r.try_get("profile")?,
        created_at: r.try_get("created_at")?,
        expires_at: r.try_get("expires_at")?,
        revoked_at: r.try_get("revoked_at")?,
    })
}

pub fn skill_from_row(r: &PgRow) -> StoreResult<Skill> {
    Ok(Skill {
        skill_id: r.try_get("skill_id")?,
        workspace_id: r.try_get("workspace_id")?,
        slug: r.try_get("slug")?,
        name: r.try_get("name")?,
        description: r.try_get("description")?,
        asset_status: parse_text(r, "asset_status")?,
        latest_revision_number: r.try_get("latest_revision_number")?,
        published_revision_id: r.try_get("published_revision_id")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

pub fn component_from_row(r: &PgRow) -> StoreResult<ComponentManifest> {
    let size: i64 = r.try_get("size")?;
    Ok(ComponentManifest {
        logical_path: r.try_get("logical_path")?,
        component_type: parse_text(r, "component_type")?,
        content_hash: r.try_get("content_hash")?,
        size: u64::try_from(size)
            .map_err(|_| StoreError::Internal(format!("negative component size {size}")))?,
        media_type: r.try_get("media_type")?,
    })
}

pub fn revision_from_rows(r: &PgRow, components: &[PgRow]) -> StoreResult<Revision> {
    let metadata: String = r.try_get("metadata")?;
    let metadata = match serde_json::from_str(&metadata) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => {
            return Err(StoreError::Internal(
                "revision metadata is not an object".into(),
            ));
        }
    };
    Ok(Revision {
        revision_id: r.try_get("revision_id")?,
        skill_id: r.try_get("skill_id")?,
        revision_number: r.try_get("revision_number")?,
        name: r.try_get("name")?,
        description: r.try_get("description")?,
        instruction_body: r.try_get("instruction_body")?,
        metadata,
        canonical_hash: r.try_get("canonical_hash")?,
        status: parse_text(r, "status")?,
        review_note: r.try_get("review_note")?,
        components: components
            .iter()
            .map(component_from_row)
            .collect::<StoreResult<_>>()?,
        attribution: Attribution {
            account_id: r.try_get("account_id")?,
            credential_id: r.try_get("credential_id")?,
            client_profile: r.try_get("client_profile")?,
            agent_id: r.try_get("agent_id")?,
            agent_instance_id: r.try_get("agent_instance_id")?,
        },
        created_at: r.try_get("created_at")?,
        status_changed_at: r.try_get("status_changed_at")?,
        source: source_from_row(r)?,
    })
}

/// The `source` column: JSON text or NULL.
fn source_from_row(r: &PgRow) -> StoreResult<Option<serde_json::Value>> {
    let text: Option<String> = r.try_get("source")?;
    text.map(|t| {
        serde_json::from_str(&t)
            .map_err(|e| StoreError::Internal(format!("revision source is not JSON: {e}")))
    })
    .transpose()
}

pub fn audit_from_row(r: &PgRow) -> StoreResult<AuditEntry> {
    let details: String = r.try_get("details")?;
    Ok(AuditEntry {
        seq: r.try_get("seq")?,
        at: r.try_get("at")?,
        action: r.try_get("action")?,
        actor: Attribution {
            account_id: r.try_get("account_id")?,
            credential_id: r.try_get("credential_id")?,
            client_profile: r.try_get("client_profile")?,
            agent_id: r.try_get("agent_id")?,
            agent_instance_id: r.try_get("agent_instance_id")?,
        },
        workspace_id: r.try_get("workspace_id")?,
        skill_id: r.try_get("skill_id")?,
        revision_id: r.try_get("revision_id")?,
        details: serde_json::from_str(&details).map_err(|e| StoreError::Internal(e.to_string()))?,
        prev_hash: r.try_get("prev_hash")?,
        entry_hash: r.try_get("entry_hash")?,
    })
}
