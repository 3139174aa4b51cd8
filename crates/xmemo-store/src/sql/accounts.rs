//! Accounts, workspaces, memberships and API keys.

use super::rows::{self, ACCOUNT_SELECT, API_KEY_SELECT, MEMBER_SELECT, MEMBERSHIP_SELECT};
use super::{Dialect, Session, SqlStore, Stmt, audit, page};
use crate::model::*;
use crate::{Record, StoreError, StoreResult};
use xmemo_core::{Role, WorkspaceKind, new_id};

/// The audit draft the service passed, with an identifier the store allocated added to its
/// details (the service cannot know it in advance); nothing the service wrote is replaced.
pub(crate) fn noting(mut draft: AuditDraft, key: &str, value: &str) -> AuditDraft {
    if !draft.details.is_object() {
        draft.details = serde_json::Value::Object(Default::default());
    }
    if let Some(details) = draft.details.as_object_mut() {
        details.insert(key.to_string(), value.into());
    }
    draft
}

pub(crate) const INSERT_MEMBER: &str =
    "INSERT INTO memberships (workspace_id, account_id, role, added_at) VALUES ($1, $2, $3, $4)";
const INSERT_OWNER: &str = "INSERT INTO memberships (workspace_id, account_id, role, added_at) VALUES ($1, $2, 'owner', $3)";

pub async fn create_account<D: Dialect>(
    store: &SqlStore<D>,
    new: NewAccount,
    audit: AuditDraft,
) -> StoreResult<Account> {
    let account = Account {
        account_id: new_id("acct"),
        handle: new.handle,
        display_name: new.display_name,
        is_admin: new.is_admin,
        personal_workspace_id: new_id("ws"),
        created_at: now(),
    };
    let (at, ws) = (&account.created_at, &account.personal_workspace_id);
    let mut s = store.write().await?;
    s.execute(
        Stmt::new("INSERT INTO workspaces (workspace_id, handle, name, kind, created_at) VALUES ($1, 'personal', $2, 'personal', $3)").writes_auth()
            .bind(ws)
            .bind(format!("{} (personal)", account.display_name).as_str())
            .bind(at),
    )
    .await?;
    s.execute(
        Stmt::new("INSERT INTO accounts (account_id, handle, display_name, is_admin, personal_workspace_id, created_at) VALUES ($1,$2,$3,$4,$5,$6)").writes_auth()
            .bind(&account.account_id)
            .bind(&account.handle)
            .bind(&account.display_name)
            .bind(account.is_admin)
            .bind(ws)
            .bind(at),
    )
    .await?;
    s.execute(
        Stmt::new(INSERT_OWNER)
            .writes_auth()
            .bind(ws)
            .bind(&account.account_id)
            .bind(at),
    )
    .await?;
    let mut audit = noting(audit, "account_id", &account.account_id).workspace(ws);
    if audit.actor.account_id.is_empty() {
        // The first account creates itself (bootstrap).
        audit.actor.account_id = account.account_id.clone();
    }
    audit::append(&mut s, &audit).await?;
    s.commit().await?;
    Ok(account)
}

async fn account_where<D: Dialect>(
    store: &SqlStore<D>,
    column: &'static str,
    value: &str,
) -> StoreResult<Option<Account>> {
    let mut s = store.read().await?;
    let row = s
        .optional(Stmt::new(format!("{ACCOUNT_SELECT} WHERE {column} = $1")).bind(value))
        .await?;
    row.map(|r| rows::account(&r)).transpose()
}

pub async fn get_account<D: Dialect>(
    store: &SqlStore<D>,
    id: &str,
) -> StoreResult<Option<Account>> {
    account_where(store, "account_id", id).await
}

pub async fn find_account_by_handle<D: Dialect>(
    store: &SqlStore<D>,
    handle: &str,
) -> StoreResult<Option<Account>> {
    account_where(store, "handle", handle).await
}

/// Accounts in creation order: one page, or all of them.
pub async fn list_accounts<D: Dialect>(
    store: &SqlStore<D>,
    page: Option<&KeysetPage<CreationKey>>,
) -> StoreResult<Vec<Account>> {
    let sql = format!(
        "{ACCOUNT_SELECT} WHERE 1 = 1{}",
        page::tail(&["created_at", "account_id"], 1, page)
    );
    let mut s = store.read().await?;
    s.all(page::bind(Stmt::new(sql), page))
        .await?
        .iter()
        .map(rows::account)
        .collect()
}

pub async fn count_accounts<D: Dialect>(store: &SqlStore<D>) -> StoreResult<u64> {
    let mut s = store.read().await?;
    let row = s
        .one(Stmt::new("SELECT COUNT(*) AS n FROM accounts"), "count")
        .await?;
    super::driver::to_u64(row.int("n")?, "account count")
}

pub async fn create_team<D: Dialect>(
    store: &SqlStore<D>,
    new: NewTeam,
    audit: AuditDraft,
) -> StoreResult<Workspace> {
    let team = Workspace {
        workspace_id: new_id("ws"),
        handle: new.handle,
        name: new.name,
        kind: WorkspaceKind::Team,
        created_at: now(),
    };
    let mut s = store.write().await?;
    s.execute(
        Stmt::new("INSERT INTO workspaces (workspace_id, handle, name, kind, created_at) VALUES ($1, $2, $3, 'team', $4)").writes_auth()
            .bind(&team.workspace_id)
            .bind(&team.handle)
            .bind(&team.name)
            .bind(&team.created_at),
    )
    .await
    .map_err(|e| match e {
        StoreError::Conflict(_) => {
            StoreError::Conflict(format!("a team with handle `{}` already exists", team.handle))
        }
        other => other,
    })?;
    s.execute(
        Stmt::new(INSERT_OWNER)
            .writes_auth()
            .bind(&team.workspace_id)
            .bind(&new.owner_account_id)
            .bind(&team.created_at),
    )
    .await?;
    audit::append(&mut s, &audit.workspace(&team.workspace_id)).await?;
    s.commit().await?;
    Ok(team)
}

async fn workspace_where<D: Dialect>(
    store: &SqlStore<D>,
    clause: &'static str,
    value: &str,
) -> StoreResult<Option<Workspace>> {
    let mut s = store.read().await?;
    let row = s
        .optional(Stmt::new(format!("{} WHERE {clause}", rows::WORKSPACE_SELECT)).bind(value))
        .await?;
    row.map(|r| rows::workspace(&r)).transpose()
}

pub async fn get_workspace<D: Dialect>(
    store: &SqlStore<D>,
    id: &str,
) -> StoreResult<Option<Workspace>> {
    workspace_where(store, "workspace_id = $1", id).await
}

pub async fn find_team_by_handle<D: Dialect>(
    store: &SqlStore<D>,
    handle: &str,
) -> StoreResult<Option<Workspace>> {
    workspace_where(store, "handle = $1 AND kind = 'team'", handle).await
}

/// The account's workspaces, personal first, then teams by handle: one page, or all.
pub async fn memberships<D: Dialect>(
    store: &SqlStore<D>,
    account_id: &str,
    page: Option<&KeysetPage<WorkspaceKey>>,
) -> StoreResult<Vec<Membership>> {
    let sql = format!(
        "{MEMBERSHIP_SELECT} WHERE m.account_id = $1{}",
        page::tail(&["w.kind", "w.handle", "w.workspace_id"], 2, page)
    );
    let mut s = store.read().await?;
    s.all(page::bind(Stmt::new(sql).bind(account_id), page))
        .await?
        .iter()
        .map(rows::membership)
        .collect()
}

/// A workspace's members by handle: one page, or all.
pub async fn list_members<D: Dialect>(
    store: &SqlStore<D>,
    workspace_id: &str,
    page: Option<&KeysetPage<String>>,
) -> StoreResult<Vec<Member>> {
    let sql = format!(
        "{MEMBER_SELECT} WHERE m.workspace_id = $1{}",
        page::tail(&["a.handle"], 2, page)
    );
    let mut s = store.read().await?;
    s.all(page::bind(Stmt::new(sql).bind(workspace_id), page))
        .await?
        .iter()
        .map(rows::member)
        .collect()
}

/// Serialises membership changes of one workspace (a row lock on it; SQLite's single writer
/// already does) and refuses one that takes `owner` from `account_id` while no other owner
/// remains. Returns the account's current role, `None` when it is not a member.
async fn guard_owners<D: Dialect>(
    s: &mut Session<D>,
    workspace_id: &str,
    account_id: &str,
    new_role: Option<Role>,
) -> StoreResult<Option<Role>> {
    s.one(
        Stmt::new(format!(
            "SELECT workspace_id FROM workspaces WHERE workspace_id = $1{}",
            D::LOCK_ROWS
        ))
        .bind(workspace_id),
        "workspace",
    )
    .await?;
    let current: Option<Role> = s
        .optional(
            Stmt::new("SELECT role FROM memberships WHERE workspace_id = $1 AND account_id = $2")
                .bind(workspace_id)
                .bind(account_id),
        )
        .await?
        .map(|r| r.parsed("role"))
        .transpose()?;
    if current == Some(Role::Owner) && new_role != Some(Role::Owner) {
        let owners = s
            .one(
                Stmt::new(
                    "SELECT COUNT(*) AS n FROM memberships WHERE workspace_id = $1 AND role = 'owner'",
                )
                .bind(workspace_id),
                "owner count",
            )
            .await?
            .int("n")?;
        if owners <= 1 {
            return Err(StoreError::Conflict(LAST_OWNER.into()));
        }
    }
    Ok(current)
}

/// The refusal both backends give for a change that would leave a team without an owner.
pub const LAST_OWNER: &str = "a team keeps at least one owner: make another member owner first";

pub async fn set_member_role<D: Dialect>(
    store: &SqlStore<D>,
    workspace_id: &str,
    account_id: &str,
    role: Role,
    audit: AuditDraft,
) -> StoreResult<()> {
    let mut s = store.write().await?;
    if guard_owners(&mut s, workspace_id, account_id, Some(role))
        .await?
        .is_none()
    {
        return Err(StoreError::NotFound("member".into()));
    }
    s.execute(
        Stmt::new("UPDATE memberships SET role = $1 WHERE workspace_id = $2 AND account_id = $3")
            .writes_auth()
            .bind(role.as_str())
            .bind(workspace_id)
            .bind(account_id),
    )
    .await?;
    audit::append(&mut s, &audit).await?;
    s.commit().await
}

pub async fn remove_member<D: Dialect>(
    store: &SqlStore<D>,
    workspace_id: &str,
    account_id: &str,
    audit: AuditDraft,
) -> StoreResult<bool> {
    let mut s = store.write().await?;
    if guard_owners(&mut s, workspace_id, account_id, None)
        .await?
        .is_none()
    {
        return Ok(false);
    }
    s.execute(
        Stmt::new("DELETE FROM memberships WHERE workspace_id = $1 AND account_id = $2")
            .writes_auth()
            .bind(workspace_id)
            .bind(account_id),
    )
    .await?;
    audit::append(&mut s, &audit).await?;
    s.commit().await?;
    Ok(true)
}

pub async fn create_api_key<D: Dialect>(
    store: &SqlStore<D>,
    new: NewApiKey,
    audit: AuditDraft,
) -> StoreResult<ApiKey> {
    let key = ApiKey {
        key_id: new_id("key"),
        account_id: new.account_id,
        name: new.name,
        prefix: new.prefix,
        key_hash: new.key_hash,
        scopes: new.scopes,
        profile: new.profile,
        created_at: now(),
        expires_at: new.expires_at,
        revoked_at: None,
        last_used_at: None,
    };
    let mut s = store.write().await?;
    insert_api_key(&mut s, &key).await?;
    audit::append(&mut s, &noting(audit, "key_id", &key.key_id)).await?;
    s.commit().await?;
    Ok(key)
}

/// One key row as given (creation and snapshot imports).
pub async fn insert_api_key<D: Dialect>(
    s: &mut super::Session<D>,
    key: &ApiKey,
) -> StoreResult<()> {
    s.execute(
        Stmt::new("INSERT INTO api_keys (key_id, account_id, name, prefix, key_hash, scopes, profile, created_at, expires_at, revoked_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)").writes_auth()
            .bind(&key.key_id)
            .bind(&key.account_id)
            .bind(&key.name)
            .bind(&key.prefix)
            .bind(&key.key_hash)
            .bind(key.scopes.join(" ").as_str())
            .bind(&key.profile)
            .bind(&key.created_at)
            .bind(&key.expires_at)
            .bind(&key.revoked_at),
    )
    .await?;
    Ok(())
}

pub async fn find_api_key_by_hash<D: Dialect>(
    store: &SqlStore<D>,
    key_hash: &str,
) -> StoreResult<Option<ApiKey>> {
    let mut s = store.read().await?;
    let row = s
        .optional(Stmt::new(format!("{API_KEY_SELECT} WHERE key_hash = $1")).bind(key_hash))
        .await?;
    row.map(|r| rows::api_key(&r)).transpose()
}

/// The account's keys in creation order: one page, or all.
pub async fn list_api_keys<D: Dialect>(
    store: &SqlStore<D>,
    account_id: &str,
    page: Option<&KeysetPage<CreationKey>>,
) -> StoreResult<Vec<ApiKey>> {
    let sql = format!(
        "{API_KEY_SELECT} WHERE account_id = $1{}",
        page::tail(&["created_at", "key_id"], 2, page)
    );
    let mut s = store.read().await?;
    s.all(page::bind(Stmt::new(sql).bind(account_id), page))
        .await?
        .iter()
        .map(rows::api_key)
        .collect()
}

/// Records that key `key_id` was used at `at`, unless its stored use is `since` or later
/// (so a busy key is written about once per interval, not on every request). Returns whether
/// a row changed. Not audited: it is bookkeeping, not an action.
pub async fn touch_api_key<D: Dialect>(
    store: &SqlStore<D>,
    key_id: &str,
    at: &str,
    since: &str,
) -> StoreResult<bool> {
    let mut s = store.write().await?;
    let changed = s
        .execute(
            Stmt::new("UPDATE api_keys SET last_used_at = $1 WHERE key_id = $2 AND (last_used_at IS NULL OR last_used_at < $3)").writes_auth()
                .bind(at)
                .bind(key_id)
                .bind(since),
        )
        .await?
        > 0;
    if changed {
        s.commit().await?;
    }
    Ok(changed)
}

pub async fn revoke_api_key<D: Dialect>(
    store: &SqlStore<D>,
    account_id: &str,
    key_id: &str,
    audit: AuditDraft,
) -> StoreResult<bool> {
    let mut s = store.write().await?;
    let revoked = s
        .execute(
            Stmt::new("UPDATE api_keys SET revoked_at = $1 WHERE key_id = $2 AND account_id = $3 AND revoked_at IS NULL").writes_auth()
                .bind(now())
                .bind(key_id)
                .bind(account_id),
        )
        .await?
        > 0;
    if revoked {
        audit::append(&mut s, &audit).await?;
        s.commit().await?;
    }
    Ok(revoked)
}

async fn count<D: Dialect>(
    s: &mut super::Session<D>,
    sql: &'static str,
    id: &str,
) -> StoreResult<u64> {
    let n = s.one(Stmt::new(sql).bind(id), "count").await?.int("n")?;
    super::driver::to_u64(n, "count")
}

/// The refusal of a deletion that would leave a team without an owner.
pub const SOLE_OWNER: &str =
    "the account is the only owner of a team: hand it over to another owner or delete it first";
/// The refusal of a deletion of the last server administrator.
pub const LAST_ADMIN: &str = "the last server administrator cannot delete itself; make another account an administrator first";

/// Inside a deletion's transaction: refuses when the account is the only owner of a team,
/// or the last administrator. The teams it owns are locked first (in id order, so two
/// deletions lock them in the same order and never deadlock), as every membership change
/// of a team locks it (`guard_owners`): two owners deleting themselves, or one leaving while
/// the other deletes, cannot both pass. SQLite's single writer serialises them anyway.
async fn refuse_orphaning<D: Dialect>(s: &mut Session<D>, account_id: &str) -> StoreResult<()> {
    let owned: Vec<String> = s
        .all(
            Stmt::new(
                "SELECT m.workspace_id FROM memberships m JOIN workspaces w ON w.workspace_id = m.workspace_id
                 WHERE m.account_id = $1 AND m.role = 'owner' AND w.kind = 'team' ORDER BY m.workspace_id",
            )
            .bind(account_id),
        )
        .await?
        .iter()
        .map(|r| r.text("workspace_id"))
        .collect::<StoreResult<_>>()?;
    for workspace_id in &owned {
        s.one(
            Stmt::new(format!(
                "SELECT workspace_id FROM workspaces WHERE workspace_id = $1{}",
                D::LOCK_ROWS
            ))
            .bind(workspace_id),
            "workspace",
        )
        .await?;
        let others = s
            .one(
                Stmt::new(
                    "SELECT COUNT(*) AS n FROM memberships WHERE workspace_id = $1 AND role = 'owner' AND account_id <> $2",
                )
                .bind(workspace_id)
                .bind(account_id),
                "owner count",
            )
            .await?
            .int("n")?;
        if others == 0 {
            return Err(StoreError::Conflict(SOLE_OWNER.into()));
        }
    }
    // Administrators: every admin row is locked, so two admins deleting themselves at once
    // see each other.
    let admins: Vec<String> = s
        .all(Stmt::new(format!(
            "SELECT account_id FROM accounts WHERE is_admin ORDER BY account_id{}",
            D::LOCK_ROWS
        )))
        .await?
        .iter()
        .map(|r| r.text("account_id"))
        .collect::<StoreResult<_>>()?;
    if admins.iter().any(|a| a == account_id) && admins.len() <= 1 {
        return Err(StoreError::Conflict(LAST_ADMIN.into()));
    }
    Ok(())
}

/// Makes the account an owner of the team (the operator's repair of an ownerless team):
/// its membership's role, or a new owner membership.
pub async fn make_team_owner<D: Dialect>(
    store: &SqlStore<D>,
    workspace_id: &str,
    account_id: &str,
    audit: AuditDraft,
) -> StoreResult<()> {
    let mut s = store.write().await?;
    s.one(
        Stmt::new(format!(
            "SELECT workspace_id FROM workspaces WHERE workspace_id = $1 AND kind = 'team'{}",
            D::LOCK_ROWS
        ))
        .bind(workspace_id),
        "team",
    )
    .await?;
    s.one(
        Stmt::new("SELECT account_id FROM accounts WHERE account_id = $1").bind(account_id),
        "account",
    )
    .await?;
    let updated = s
        .execute(
            Stmt::new(
                "UPDATE memberships SET role = 'owner' WHERE workspace_id = $1 AND account_id = $2",
            )
            .writes_auth()
            .bind(workspace_id)
            .bind(account_id),
        )
        .await?;
    if updated == 0 {
        s.execute(
            Stmt::new(INSERT_OWNER)
                .writes_auth()
                .bind(workspace_id)
                .bind(account_id)
                .bind(now()),
        )
        .await?;
    }
    audit::append(&mut s, &audit.workspace(workspace_id)).await?;
    s.commit().await
}

/// Teams with no owner, by handle.
pub async fn ownerless_teams<D: Dialect>(store: &SqlStore<D>) -> StoreResult<Vec<Workspace>> {
    let mut s = store.read().await?;
    s.all(Stmt::new(format!(
        "{} WHERE kind = 'team' AND NOT EXISTS (SELECT 1 FROM memberships m WHERE m.workspace_id = workspaces.workspace_id AND m.role = 'owner') ORDER BY handle",
        rows::WORKSPACE_SELECT
    )))
    .await?
    .iter()
    .map(rows::workspace)
    .collect()
}

/// Removes the account, its personal workspace with everything in it (skills, revisions,
/// components, memories and their history), its keys and memberships, and the blobs only
/// those revisions referenced; content it wrote in team workspaces stays with the teams.
pub async fn delete_account<D: Dialect>(
    store: &SqlStore<D>,
    account_id: &str,
    audit: AuditDraft,
) -> StoreResult<AccountDeletion> {
    let mut s = store.write().await?;
    let Some(row) = s
        .optional(
            Stmt::new("SELECT personal_workspace_id FROM accounts WHERE account_id = $1")
                .bind(account_id),
        )
        .await?
    else {
        return Err(StoreError::NotFound(format!("account {account_id}")));
    };
    let ws = row.text("personal_workspace_id")?;
    refuse_orphaning(&mut s, account_id).await?;
    let report = AccountDeletion {
        skills: count(
            &mut s,
            "SELECT COUNT(*) AS n FROM skills WHERE workspace_id = $1",
            &ws,
        )
        .await?,
        memories: count(
            &mut s,
            "SELECT COUNT(*) AS n FROM memories WHERE workspace_id = $1",
            &ws,
        )
        .await?,
        keys: count(
            &mut s,
            "SELECT COUNT(*) AS n FROM api_keys WHERE account_id = $1",
            account_id,
        )
        .await?,
        memberships: count(
            &mut s,
            "SELECT COUNT(*) AS n FROM memberships WHERE account_id = $1",
            account_id,
        )
        .await?,
        blobs: 0,
    };
    // Blobs the workspace's revisions use, to drop those nothing else references afterwards.
    let candidates: Vec<String> = s
        .all(
            Stmt::new(
                "SELECT DISTINCT c.content_hash FROM revision_components c
                 JOIN revisions r ON r.revision_id = c.revision_id
                 JOIN skills k ON k.skill_id = r.skill_id
                 WHERE k.workspace_id = $1 ORDER BY c.content_hash",
            )
            .bind(&ws),
        )
        .await?
        .iter()
        .map(|r| r.text("content_hash"))
        .collect::<StoreResult<_>>()?;
    crate::search::follow::log_workspace(&mut s, &ws).await?;
    // The vectors of what goes are derived from it: they go with it (every model's).
    s.execute(Stmt::new("DELETE FROM embeddings WHERE workspace_id = $1").bind(&ws))
        .await?;
    // Foreign keys cascade: skills → revisions → components, memories → versions and tags,
    // the workspace's memberships; the account's keys and team memberships.
    s.execute(
        Stmt::new("DELETE FROM workspaces WHERE workspace_id = $1")
            .writes_auth()
            .bind(&ws),
    )
    .await?;
    s.execute(
        Stmt::new("DELETE FROM accounts WHERE account_id = $1")
            .writes_auth()
            .bind(account_id),
    )
    .await?;
    let mut blobs = 0;
    for hash in &candidates {
        blobs += s
            .execute(
                Stmt::new(
                    "DELETE FROM blobs WHERE content_hash = $1
                     AND NOT EXISTS (SELECT 1 FROM revision_components c WHERE c.content_hash = $1)",
                )
                .bind(hash),
            )
            .await?;
    }
    audit::append(&mut s, &audit).await?;
    s.commit().await?;
    Ok(AccountDeletion { blobs, ..report })
}
