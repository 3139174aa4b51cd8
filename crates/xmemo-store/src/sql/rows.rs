//! Column lists and row → model mapping, once for both backends.

use super::driver::{Record, to_u64};
use crate::model::*;
use crate::{StoreError, StoreResult};
use serde_json::{Map, Value};

/// Tables reported by `table_counts` (with `level0`, the rows Level 0 search can find).
pub const TABLES: &[&str] = &[
    "accounts",
    "workspaces",
    "memberships",
    "api_keys",
    "skills",
    "revisions",
    "revision_components",
    "blobs",
    "audit_log",
    "memories",
    "memory_tags",
    "memory_versions",
    "invitations",
    "account_passwords",
    "web_sessions",
    "oauth_clients",
    "oauth_grants",
    "oauth_codes",
    "oauth_tokens",
];

pub const ACCOUNT_SELECT: &str = "SELECT account_id, handle, display_name, is_admin, personal_workspace_id, created_at FROM accounts";
pub const WORKSPACE_SELECT: &str =
    "SELECT workspace_id, handle, name, kind, created_at FROM workspaces";
pub const MEMBERSHIP_SELECT: &str =
    "SELECT w.workspace_id, w.handle, w.name, w.kind, w.created_at, m.role
     FROM memberships m JOIN workspaces w ON w.workspace_id = m.workspace_id";
pub const MEMBER_SELECT: &str = "SELECT a.account_id, a.handle, a.display_name, m.role, m.added_at
     FROM memberships m JOIN accounts a ON a.account_id = m.account_id";
pub const INVITATION_SELECT: &str = "SELECT i.invitation_id, i.workspace_id, w.handle AS workspace_handle, w.name AS workspace_name, i.invitee, i.account_id, i.role, i.status, i.invited_by, COALESCE(a.handle, '') AS invited_by_handle, i.created_at, i.responded_at
     FROM invitations i JOIN workspaces w ON w.workspace_id = i.workspace_id
     LEFT JOIN accounts a ON a.account_id = i.invited_by";
pub const API_KEY_SELECT: &str = "SELECT key_id, account_id, name, prefix, key_hash, scopes, profile, created_at, expires_at, revoked_at, last_used_at FROM api_keys";
pub const SKILL_SELECT: &str = "SELECT s.skill_id, s.workspace_id, s.slug, s.name, s.description, s.asset_status, s.latest_revision_number, s.created_at, s.updated_at,
    (SELECT r.revision_id FROM revisions r WHERE r.skill_id = s.skill_id AND r.status = 'published') AS published_revision_id
    FROM skills s";
pub const REVISION_SELECT: &str = "SELECT revision_id, skill_id, revision_number, name, description, instruction_body, metadata, canonical_hash, status, review_note, account_id, credential_id, client_profile, agent_id, agent_instance_id, created_at, status_changed_at, source, safety FROM revisions";
pub const COMPONENT_COLUMNS: &str =
    "c.revision_id, c.logical_path, c.component_type, c.content_hash, c.size, c.media_type";
pub const AUDIT_SELECT: &str = "SELECT seq, at, action, account_id, credential_id, client_profile, agent_id, agent_instance_id, workspace_id, skill_id, revision_id, details, prev_hash, entry_hash FROM audit_log";

pub fn account(r: &impl Record) -> StoreResult<Account> {
    Ok(Account {
        account_id: r.text("account_id")?,
        handle: r.text("handle")?,
        display_name: r.text("display_name")?,
        is_admin: r.flag("is_admin")?,
        personal_workspace_id: r.text("personal_workspace_id")?,
        created_at: r.text("created_at")?,
    })
}

pub fn workspace(r: &impl Record) -> StoreResult<Workspace> {
    Ok(Workspace {
        workspace_id: r.text("workspace_id")?,
        handle: r.text("handle")?,
        name: r.text("name")?,
        kind: r.parsed("kind")?,
        created_at: r.text("created_at")?,
    })
}

pub fn membership(r: &impl Record) -> StoreResult<Membership> {
    Ok(Membership {
        workspace: workspace(r)?,
        role: r.parsed("role")?,
    })
}

pub fn member(r: &impl Record) -> StoreResult<Member> {
    Ok(Member {
        account_id: r.text("account_id")?,
        handle: r.text("handle")?,
        display_name: r.text("display_name")?,
        role: r.parsed("role")?,
        added_at: r.text("added_at")?,
    })
}

pub fn invitation(r: &impl Record) -> StoreResult<Invitation> {
    Ok(Invitation {
        invitation_id: r.text("invitation_id")?,
        workspace_id: r.text("workspace_id")?,
        workspace_handle: r.text("workspace_handle")?,
        workspace_name: r.text("workspace_name")?,
        invitee: r.text("invitee")?,
        account_id: r.opt_text("account_id")?,
        role: r.parsed("role")?,
        status: r.parsed("status")?,
        invited_by: r.text("invited_by")?,
        invited_by_handle: r.text("invited_by_handle")?,
        created_at: r.text("created_at")?,
        responded_at: r.opt_text("responded_at")?,
    })
}

pub fn api_key(r: &impl Record) -> StoreResult<ApiKey> {
    Ok(ApiKey {
        key_id: r.text("key_id")?,
        account_id: r.text("account_id")?,
        name: r.text("name")?,
        prefix: r.text("prefix")?,
        key_hash: r.text("key_hash")?,
        scopes: r
            .text("scopes")?
            .split_whitespace()
            .map(str::to_string)
            .collect(),
        profile: r.text("profile")?,
        created_at: r.text("created_at")?,
        expires_at: r.opt_text("expires_at")?,
        revoked_at: r.opt_text("revoked_at")?,
        last_used_at: r.opt_text("last_used_at")?,
    })
}

pub fn skill(r: &impl Record) -> StoreResult<Skill> {
    Ok(Skill {
        skill_id: r.text("skill_id")?,
        workspace_id: r.text("workspace_id")?,
        slug: r.text("slug")?,
        name: r.text("name")?,
        description: r.text("description")?,
        asset_status: r.parsed("asset_status")?,
        latest_revision_number: r.int("latest_revision_number")?,
        published_revision_id: r.opt_text("published_revision_id")?,
        created_at: r.text("created_at")?,
        updated_at: r.text("updated_at")?,
    })
}

pub fn component(r: &impl Record) -> StoreResult<ComponentManifest> {
    Ok(ComponentManifest {
        logical_path: r.text("logical_path")?,
        component_type: r.parsed("component_type")?,
        content_hash: r.text("content_hash")?,
        size: to_u64(r.int("size")?, "component size")?,
        media_type: r.text("media_type")?,
    })
}

fn json_text(text: &str, what: &str) -> StoreResult<Value> {
    serde_json::from_str(text).map_err(|e| StoreError::Internal(format!("{what} is not JSON: {e}")))
}

pub fn revision(r: &impl Record, components: Vec<ComponentManifest>) -> StoreResult<Revision> {
    let metadata: Map<String, Value> = match json_text(&r.text("metadata")?, "revision metadata")? {
        Value::Object(m) => m,
        _ => {
            return Err(StoreError::Internal(
                "revision metadata is not an object".into(),
            ));
        }
    };
    Ok(Revision {
        revision_id: r.text("revision_id")?,
        skill_id: r.text("skill_id")?,
        revision_number: r.int("revision_number")?,
        name: r.text("name")?,
        description: r.text("description")?,
        instruction_body: r.text("instruction_body")?,
        metadata,
        canonical_hash: r.text("canonical_hash")?,
        status: r.parsed("status")?,
        review_note: r.opt_text("review_note")?,
        components,
        attribution: attribution(r)?,
        created_at: r.text("created_at")?,
        status_changed_at: r.text("status_changed_at")?,
        source: r
            .opt_text("source")?
            .map(|t| json_text(&t, "revision source"))
            .transpose()?,
        safety: r
            .opt_text("safety")?
            .map(|t| json_text(&t, "revision safety report"))
            .transpose()?,
    })
}

pub fn attribution(r: &impl Record) -> StoreResult<Attribution> {
    Ok(Attribution {
        account_id: r.text("account_id")?,
        credential_id: r.opt_text("credential_id")?,
        client_profile: r.opt_text("client_profile")?,
        agent_id: r.opt_text("agent_id")?,
        agent_instance_id: r.opt_text("agent_instance_id")?,
    })
}

pub fn audit(r: &impl Record) -> StoreResult<AuditEntry> {
    Ok(AuditEntry {
        seq: r.int("seq")?,
        at: r.text("at")?,
        action: r.text("action")?,
        actor: attribution(r)?,
        workspace_id: r.opt_text("workspace_id")?,
        skill_id: r.opt_text("skill_id")?,
        revision_id: r.opt_text("revision_id")?,
        details: json_text(&r.text("details")?, "audit details")?,
        prev_hash: r.text("prev_hash")?,
        entry_hash: r.text("entry_hash")?,
    })
}
