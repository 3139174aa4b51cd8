//! SQLite implementation of [`Store`]: WAL, foreign keys on, one serialised writer connection
//! (so revision numbers are gap-free without retry loops) and a pool of readers.

mod rows;

use crate::migrate::{Migration, statements};
use crate::model::*;
use crate::{Store, StoreError, StoreResult};
use async_trait::async_trait;
use rows::*;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{AssertSqlSafe, Row, Sqlite, Transaction};

/// SQL text built only from this module's constants and `?` placeholder lists.
macro_rules! sql {
    ($($t:tt)*) => {
        AssertSqlSafe(format!($($t)*))
    };
}
use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;
use xmemo_core::{AssetStatus, RevisionStatus, Role, WorkspaceKind, new_id};

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        sql: include_str!("../../migrations/sqlite/0001_init.sql"),
    },
    Migration {
        version: 2,
        name: "revision_source",
        sql: include_str!("../../migrations/sqlite/0002_revision_source.sql"),
    },
];

#[derive(Clone)]
pub struct SqliteStore {
    reader: SqlitePool,
    writer: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and applies pending migrations.
    pub async fn open(path: &Path) -> StoreResult<Self> {
        Self::open_with(path, true).await
    }

    /// Opens the database file; with `migrate == false` nothing is changed and a schema that
    /// is behind this binary is refused (for operators who migrate explicitly).
    pub async fn open_with(path: &Path, migrate: bool) -> StoreResult<Self> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        Self::with_options(options, migrate).await
    }

    /// `sqlite://path` or `sqlite:path` URL.
    pub async fn open_url(url: &str, migrate: bool) -> StoreResult<Self> {
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .ok_or_else(|| StoreError::Unavailable("not a sqlite: URL".into()))?;
        Self::open_with(Path::new(path), migrate).await
    }

    async fn with_options(options: SqliteConnectOptions, migrate: bool) -> StoreResult<Self> {
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options.clone())
            .await
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        let store_for_migrations = Self {
            reader: writer.clone(),
            writer: writer.clone(),
        };
        if migrate {
            store_for_migrations.migrate().await?;
        } else if !store_for_migrations.schema_is_current().await? {
            return Err(StoreError::Unavailable(
                "the database schema is behind this binary; run `xmemo admin migrate`".into(),
            ));
        }
        let readers = std::thread::available_parallelism()
            .map(|n| n.get() as u32 * 2)
            .unwrap_or(4)
            .max(4);
        let reader = SqlitePoolOptions::new()
            .max_connections(readers)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options.read_only(true))
            .await
            .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        Ok(Self { reader, writer })
    }

    /// True when every migration this binary knows has been applied.
    pub async fn schema_is_current(&self) -> StoreResult<bool> {
        let exists: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
        )
        .fetch_one(&self.writer)
        .await?;
        if exists == 0 {
            return Ok(false);
        }
        let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM schema_migrations")
            .fetch_all(&self.writer)
            .await?;
        Ok(MIGRATIONS.iter().all(|m| applied.contains(&m.version)))
    }

    async fn migrate(&self) -> StoreResult<()> {
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
        )
        .execute(&self.writer)
        .await?;
        for m in MIGRATIONS {
            let applied: Option<i64> =
                sqlx::query_scalar("SELECT version FROM schema_migrations WHERE version = ?")
                    .bind(m.version)
                    .fetch_optional(&self.writer)
                    .await?;
            if applied.is_some() {
                continue;
            }
            let mut tx = self.writer.begin().await?;
            for stmt in statements(m.sql) {
                sqlx::query(AssertSqlSafe(stmt)).execute(&mut *tx).await?;
            }
            sqlx::query(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            )
            .bind(m.version)
            .bind(m.name)
            .bind(now())
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            tracing::info!(
                version = m.version,
                name = m.name,
                "applied sqlite migration"
            );
        }
        Ok(())
    }

    async fn begin(&self) -> StoreResult<Transaction<'static, Sqlite>> {
        // The single writer connection serialises every write transaction.
        Ok(self.writer.begin().await?)
    }
}

type Tx = Transaction<'static, Sqlite>;

async fn append_audit_tx(tx: &mut Tx, draft: &AuditDraft) -> StoreResult<()> {
    let last: Option<(i64, String)> =
        sqlx::query_as("SELECT seq, entry_hash FROM audit_log ORDER BY seq DESC LIMIT 1")
            .fetch_optional(&mut **tx)
            .await?;
    let (seq, prev) = match last {
        Some((s, h)) => (s + 1, h),
        None => (1, String::new()),
    };
    let at = now();
    let hash = audit_entry_hash(&prev, seq, &at, draft);
    sqlx::query(
        "INSERT INTO audit_log (seq, at, action, account_id, credential_id, client_profile, agent_id, agent_instance_id, workspace_id, skill_id, revision_id, details, prev_hash, entry_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    )
    .bind(seq)
    .bind(&at)
    .bind(&draft.action)
    .bind(&draft.actor.account_id)
    .bind(&draft.actor.credential_id)
    .bind(&draft.actor.client_profile)
    .bind(&draft.actor.agent_id)
    .bind(&draft.actor.agent_instance_id)
    .bind(&draft.workspace_id)
    .bind(&draft.skill_id)
    .bind(&draft.revision_id)
    .bind(draft.details.to_string())
    .bind(&prev)
    .bind(&hash)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Rewrites the skill's Level 0 row: present only while the skill is active and has a
/// published revision, carrying that revision's name and description.
async fn refresh_search_row(tx: &mut Tx, skill_id: &str) -> StoreResult<()> {
    // By rowid: `skill_id` is an unindexed FTS column, so matching on it scans the table.
    sqlx::query(
        "DELETE FROM skills_fts WHERE rowid = (SELECT search_key FROM skills WHERE skill_id = ?)",
    )
    .bind(skill_id)
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "INSERT INTO skills_fts (rowid, skill_id, workspace_id, slug, name, description)
         SELECT s.search_key, s.skill_id, s.workspace_id, replace(s.slug, '-', ' '), r.name, r.description
         FROM skills s JOIN revisions r ON r.skill_id = s.skill_id AND r.status = 'published'
         WHERE s.skill_id = ? AND s.asset_status = 'active'",
    )
    .bind(skill_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

async fn skill_tx(tx: &mut Tx, skill_id: &str) -> StoreResult<Skill> {
    let row = sqlx::query(SKILL_SELECT_BY_ID)
        .bind(skill_id)
        .fetch_one(&mut **tx)
        .await?;
    skill_from_row(&row)
}

async fn revision_tx(tx: &mut Tx, revision_id: &str) -> StoreResult<Revision> {
    let row = sqlx::query(sql!("{REVISION_SELECT} WHERE revision_id = ?"))
        .bind(revision_id)
        .fetch_one(&mut **tx)
        .await?;
    let components = sqlx::query(COMPONENTS_SELECT)
        .bind(revision_id)
        .fetch_all(&mut **tx)
        .await?;
    revision_from_rows(&row, &components)
}

impl SqliteStore {
    async fn revision_where(&self, clause: &str, bind: &str) -> StoreResult<Option<Revision>> {
        let Some(row) = sqlx::query(sql!("{REVISION_SELECT} WHERE {clause}"))
            .bind(bind)
            .fetch_optional(&self.reader)
            .await?
        else {
            return Ok(None);
        };
        let revision_id: String = row.try_get("revision_id")?;
        let components = sqlx::query(COMPONENTS_SELECT)
            .bind(&revision_id)
            .fetch_all(&self.reader)
            .await?;
        revision_from_rows(&row, &components).map(Some)
    }
}

fn in_list(n: usize) -> String {
    vec!["?"; n.max(1)].join(",")
}

#[async_trait]
impl Store for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.reader).await?;
        Ok(())
    }

    async fn create_account(&self, new: NewAccount, audit: AuditDraft) -> StoreResult<Account> {
        let account_id = new_id("acct");
        let workspace_id = new_id("ws");
        let at = now();
        let mut tx = self.begin().await?;
        sqlx::query("INSERT INTO workspaces (workspace_id, handle, name, kind, created_at) VALUES (?, 'personal', ?, 'personal', ?)")
            .bind(&workspace_id)
            .bind(format!("{} (personal)", new.display_name))
            .bind(&at)
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO accounts (account_id, handle, display_name, is_admin, personal_workspace_id, created_at) VALUES (?,?,?,?,?,?)")
            .bind(&account_id)
            .bind(&new.handle)
            .bind(&new.display_name)
            .bind(new.is_admin)
            .bind(&workspace_id)
            .bind(&at)
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO memberships (workspace_id, account_id, role, added_at) VALUES (?, ?, 'owner', ?)")
            .bind(&workspace_id)
            .bind(&account_id)
            .bind(&at)
            .execute(&mut *tx)
            .await?;
        let mut audit = audit;
        audit.workspace_id = Some(workspace_id.clone());
        if audit.actor.account_id.is_empty() {
            audit.actor.account_id = account_id.clone();
        }
        audit.details = serde_json::json!({"account_id": account_id, "handle": new.handle});
        append_audit_tx(&mut tx, &audit).await?;
        tx.commit().await?;
        Ok(Account {
            account_id,
            handle: new.handle,
            display_name: new.display_name,
            is_admin: new.is_admin,
            personal_workspace_id: workspace_id,
            created_at: at,
        })
    }

    async fn get_account(&self, account_id: &str) -> StoreResult<Option<Account>> {
        let row = sqlx::query(sql!("{ACCOUNT_SELECT} WHERE account_id = ?"))
            .bind(account_id)
            .fetch_optional(&self.reader)
            .await?;
        row.map(|r| account_from_row(&r)).transpose()
    }

    async fn find_account_by_handle(&self, handle: &str) -> StoreResult<Option<Account>> {
        let row = sqlx::query(sql!("{ACCOUNT_SELECT} WHERE handle = ?"))
            .bind(handle)
            .fetch_optional(&self.reader)
            .await?;
        row.map(|r| account_from_row(&r)).transpose()
    }

    async fn list_accounts(&self) -> StoreResult<Vec<Account>> {
        let rows = sqlx::query(sql!("{ACCOUNT_SELECT} ORDER BY created_at, account_id"))
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(account_from_row).collect()
    }

    async fn count_accounts(&self) -> StoreResult<u64> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM accounts")
            .fetch_one(&self.reader)
            .await?;
        Ok(n as u64)
    }

    async fn create_team(&self, new: NewTeam, audit: AuditDraft) -> StoreResult<Workspace> {
        let workspace_id = new_id("ws");
        let at = now();
        let mut tx = self.begin().await?;
        sqlx::query("INSERT INTO workspaces (workspace_id, handle, name, kind, created_at) VALUES (?, ?, ?, 'team', ?)")
            .bind(&workspace_id)
            .bind(&new.handle)
            .bind(&new.name)
            .bind(&at)
            .execute(&mut *tx)
            .await
            .map_err(|e| match StoreError::from(e) {
                StoreError::Conflict(_) => {
                    StoreError::Conflict(format!("a team with handle `{}` already exists", new.handle))
                }
                other => other,
            })?;
        sqlx::query("INSERT INTO memberships (workspace_id, account_id, role, added_at) VALUES (?, ?, 'owner', ?)")
            .bind(&workspace_id)
            .bind(&new.owner_account_id)
            .bind(&at)
            .execute(&mut *tx)
            .await?;
        append_audit_tx(&mut tx, &audit.workspace(&workspace_id)).await?;
        tx.commit().await?;
        Ok(Workspace {
            workspace_id,
            handle: new.handle,
            name: new.name,
            kind: WorkspaceKind::Team,
            created_at: at,
        })
    }

    async fn get_workspace(&self, workspace_id: &str) -> StoreResult<Option<Workspace>> {
        let row = sqlx::query(sql!("{WORKSPACE_SELECT} WHERE workspace_id = ?"))
            .bind(workspace_id)
            .fetch_optional(&self.reader)
            .await?;
        row.map(|r| workspace_from_row(&r)).transpose()
    }

    async fn find_team_by_handle(&self, handle: &str) -> StoreResult<Option<Workspace>> {
        let row = sqlx::query(sql!(
            "{WORKSPACE_SELECT} WHERE handle = ? AND kind = 'team'"
        ))
        .bind(handle)
        .fetch_optional(&self.reader)
        .await?;
        row.map(|r| workspace_from_row(&r)).transpose()
    }

    async fn memberships(&self, account_id: &str) -> StoreResult<Vec<Membership>> {
        let rows = sqlx::query(
            "SELECT w.workspace_id, w.handle, w.name, w.kind, w.created_at, m.role
             FROM memberships m JOIN workspaces w ON w.workspace_id = m.workspace_id
             WHERE m.account_id = ? ORDER BY w.kind, w.handle",
        )
        .bind(account_id)
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(Membership {
                    workspace: workspace_from_row(r)?,
                    role: parse(r, "role")?,
                })
            })
            .collect()
    }

    async fn list_members(&self, workspace_id: &str) -> StoreResult<Vec<Member>> {
        let rows = sqlx::query(
            "SELECT a.account_id, a.handle, a.display_name, m.role, m.added_at
             FROM memberships m JOIN accounts a ON a.account_id = m.account_id
             WHERE m.workspace_id = ? ORDER BY a.handle",
        )
        .bind(workspace_id)
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(Member {
                    account_id: r.try_get("account_id")?,
                    handle: r.try_get("handle")?,
                    display_name: r.try_get("display_name")?,
                    role: parse(r, "role")?,
                    added_at: r.try_get("added_at")?,
                })
            })
            .collect()
    }

    async fn put_member(
        &self,
        workspace_id: &str,
        account_id: &str,
        role: Role,
        audit: AuditDraft,
    ) -> StoreResult<()> {
        let mut tx = self.begin().await?;
        sqlx::query(
            "INSERT INTO memberships (workspace_id, account_id, role, added_at) VALUES (?, ?, ?, ?)
             ON CONFLICT (workspace_id, account_id) DO UPDATE SET role = excluded.role",
        )
        .bind(workspace_id)
        .bind(account_id)
        .bind(role.as_str())
        .bind(now())
        .execute(&mut *tx)
        .await?;
        append_audit_tx(&mut tx, &audit).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn remove_member(
        &self,
        workspace_id: &str,
        account_id: &str,
        audit: AuditDraft,
    ) -> StoreResult<bool> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("DELETE FROM memberships WHERE workspace_id = ? AND account_id = ?")
            .bind(workspace_id)
            .bind(account_id)
            .execute(&mut *tx)
            .await?
            .rows_affected()
            > 0;
        if done {
            append_audit_tx(&mut tx, &audit).await?;
        }
        tx.commit().await?;
        Ok(done)
    }

    async fn create_api_key(&self, new: NewApiKey, audit: AuditDraft) -> StoreResult<ApiKey> {
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
        };
        let mut tx = self.begin().await?;
        sqlx::query("INSERT INTO api_keys (key_id, account_id, name, prefix, key_hash, scopes, profile, created_at, expires_at) VALUES (?,?,?,?,?,?,?,?,?)")
            .bind(&key.key_id)
            .bind(&key.account_id)
            .bind(&key.name)
            .bind(&key.prefix)
            .bind(&key.key_hash)
            .bind(key.scopes.join(" "))
            .bind(&key.profile)
            .bind(&key.created_at)
            .bind(&key.expires_at)
            .execute(&mut *tx)
            .await?;
        let mut audit = audit;
        audit.details =
            serde_json::json!({"key_id": key.key_id, "scopes": key.scopes, "profile": key.profile});
        append_audit_tx(&mut tx, &audit).await?;
        tx.commit().await?;
        Ok(key)
    }

    async fn find_api_key_by_hash(&self, key_hash: &str) -> StoreResult<Option<ApiKey>> {
        let row = sqlx::query(sql!("{API_KEY_SELECT} WHERE key_hash = ?"))
            .bind(key_hash)
            .fetch_optional(&self.reader)
            .await?;
        row.map(|r| api_key_from_row(&r)).transpose()
    }

    async fn list_api_keys(&self, account_id: &str) -> StoreResult<Vec<ApiKey>> {
        let rows = sqlx::query(sql!(
            "{API_KEY_SELECT} WHERE account_id = ? ORDER BY created_at, key_id"
        ))
        .bind(account_id)
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(api_key_from_row).collect()
    }

    async fn revoke_api_key(
        &self,
        account_id: &str,
        key_id: &str,
        audit: AuditDraft,
    ) -> StoreResult<bool> {
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND account_id = ? AND revoked_at IS NULL",
        )
        .bind(now())
        .bind(key_id)
        .bind(account_id)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            > 0;
        if done {
            let mut audit = audit;
            audit.details = serde_json::json!({"key_id": key_id});
            append_audit_tx(&mut tx, &audit).await?;
        }
        tx.commit().await?;
        Ok(done)
    }

    async fn get_skill(&self, skill_id: &str) -> StoreResult<Option<Skill>> {
        let row = sqlx::query(SKILL_SELECT_BY_ID)
            .bind(skill_id)
            .fetch_optional(&self.reader)
            .await?;
        row.map(|r| skill_from_row(&r)).transpose()
    }

    async fn find_skills_by_slug(
        &self,
        workspace_ids: &[String],
        slug: &str,
    ) -> StoreResult<Vec<Skill>> {
        if workspace_ids.is_empty() {
            return Ok(vec![]);
        }
        let sql = format!(
            "{SKILL_SELECT} WHERE s.slug = ? AND s.workspace_id IN ({}) ORDER BY s.workspace_id",
            in_list(workspace_ids.len())
        );
        let mut q = sqlx::query(AssertSqlSafe(sql)).bind(slug);
        for id in workspace_ids {
            q = q.bind(id);
        }
        let rows = q.fetch_all(&self.reader).await?;
        rows.iter().map(skill_from_row).collect()
    }

    async fn list_skills(&self, workspace_ids: &[String]) -> StoreResult<Vec<Skill>> {
        if workspace_ids.is_empty() {
            return Ok(vec![]);
        }
        let sql = format!(
            "{SKILL_SELECT} WHERE s.workspace_id IN ({}) ORDER BY s.slug, s.workspace_id",
            in_list(workspace_ids.len())
        );
        let mut q = sqlx::query(AssertSqlSafe(sql));
        for id in workspace_ids {
            q = q.bind(id);
        }
        let rows = q.fetch_all(&self.reader).await?;
        rows.iter().map(skill_from_row).collect()
    }

    async fn save_revision(&self, save: SaveRevision) -> StoreResult<SaveOutcome> {
        let mut tx = self.begin().await?;
        let at = now();
        let existing: Option<String> =
            sqlx::query_scalar("SELECT skill_id FROM skills WHERE workspace_id = ? AND slug = ?")
                .bind(&save.workspace_id)
                .bind(&save.slug)
                .fetch_optional(&mut *tx)
                .await?;
        let skill_id = match existing {
            Some(id) => {
                let latest: Option<(String, String)> = sqlx::query_as(
                    "SELECT revision_id, canonical_hash FROM revisions WHERE skill_id = ? ORDER BY revision_number DESC LIMIT 1",
                )
                .bind(&id)
                .fetch_optional(&mut *tx)
                .await?;
                if let Some(expected) = &save.expected_revision_id {
                    let latest_id = latest.as_ref().map(|(r, _)| r.as_str());
                    if latest_id != Some(expected.as_str()) {
                        return Err(StoreError::Conflict(format!(
                            "expected_revision_id `{expected}` is not the latest revision (latest is {})",
                            latest_id.unwrap_or("none")
                        )));
                    }
                }
                if let Some((rev_id, hash)) = latest
                    && hash == save.canonical_hash
                {
                    let skill = skill_tx(&mut tx, &id).await?;
                    let revision = revision_tx(&mut tx, &rev_id).await?;
                    tx.rollback().await?;
                    return Ok(SaveOutcome {
                        skill,
                        revision,
                        created: false,
                    });
                }
                id
            }
            None => {
                if let Some(expected) = &save.expected_revision_id {
                    return Err(StoreError::Conflict(format!(
                        "expected_revision_id `{expected}` given but skill `{}` does not exist yet",
                        save.slug
                    )));
                }
                let id = new_id("skill");
                sqlx::query("INSERT INTO skills (skill_id, workspace_id, slug, name, description, asset_status, latest_revision_number, created_at, updated_at) VALUES (?,?,?,?,?,'active',0,?,?)")
                    .bind(&id)
                    .bind(&save.workspace_id)
                    .bind(&save.slug)
                    .bind(&save.name)
                    .bind(&save.description)
                    .bind(&at)
                    .bind(&at)
                    .execute(&mut *tx)
                    .await?;
                id
            }
        };

        let number: i64 = sqlx::query_scalar(
            "UPDATE skills SET latest_revision_number = latest_revision_number + 1, name = ?, description = ?, updated_at = ? WHERE skill_id = ? RETURNING latest_revision_number",
        )
        .bind(&save.name)
        .bind(&save.description)
        .bind(&at)
        .bind(&skill_id)
        .fetch_one(&mut *tx)
        .await?;

        if save.status == RevisionStatus::Published {
            sqlx::query("UPDATE revisions SET status = 'deprecated', status_changed_at = ? WHERE skill_id = ? AND status = 'published'")
                .bind(&at)
                .bind(&skill_id)
                .execute(&mut *tx)
                .await?;
        }
        let revision_id = new_id("rev");
        let a = &save.attribution;
        sqlx::query("INSERT INTO revisions (revision_id, skill_id, revision_number, name, description, instruction_body, metadata, canonical_hash, status, account_id, credential_id, client_profile, agent_id, agent_instance_id, created_at, status_changed_at, source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
            .bind(&revision_id)
            .bind(&skill_id)
            .bind(number)
            .bind(&save.name)
            .bind(&save.description)
            .bind(&save.instruction_body)
            .bind(serde_json::Value::Object(save.metadata.clone()).to_string())
            .bind(&save.canonical_hash)
            .bind(save.status.as_str())
            .bind(&a.account_id)
            .bind(&a.credential_id)
            .bind(&a.client_profile)
            .bind(&a.agent_id)
            .bind(&a.agent_instance_id)
            .bind(&at)
            .bind(&at)
            .bind(save.source.as_ref().map(|v| v.to_string()))
            .execute(&mut *tx)
            .await?;
        for c in &save.components {
            let m = &c.manifest;
            sqlx::query("INSERT INTO blobs (content_hash, size, bytes) VALUES (?, ?, ?) ON CONFLICT (content_hash) DO NOTHING")
                .bind(&m.content_hash)
                .bind(m.size as i64)
                .bind(&c.content)
                .execute(&mut *tx)
                .await?;
            sqlx::query("INSERT INTO revision_components (revision_id, logical_path, path_folded, component_type, content_hash, size, media_type) VALUES (?,?,?,?,?,?,?)")
                .bind(&revision_id)
                .bind(&m.logical_path)
                .bind(m.logical_path.to_lowercase())
                .bind(m.component_type.as_str())
                .bind(&m.content_hash)
                .bind(m.size as i64)
                .bind(&m.media_type)
                .execute(&mut *tx)
                .await?;
        }
        if save.status == RevisionStatus::Published {
            refresh_search_row(&mut tx, &skill_id).await?;
        }
        let audit = AuditDraft::new("skill.save", &save.attribution)
            .workspace(&save.workspace_id)
            .skill(&skill_id)
            .revision(&revision_id)
            .details(serde_json::json!({
                "slug": save.slug,
                "revision_number": number,
                "status": save.status,
                "canonical_hash": save.canonical_hash,
            }));
        append_audit_tx(&mut tx, &audit).await?;
        let skill = skill_tx(&mut tx, &skill_id).await?;
        let revision = revision_tx(&mut tx, &revision_id).await?;
        tx.commit().await?;
        Ok(SaveOutcome {
            skill,
            revision,
            created: true,
        })
    }

    async fn get_revision(&self, revision_id: &str) -> StoreResult<Option<Revision>> {
        self.revision_where("revision_id = ?", revision_id).await
    }

    async fn latest_revision(&self, skill_id: &str) -> StoreResult<Option<Revision>> {
        self.revision_where(
            "skill_id = ? ORDER BY revision_number DESC LIMIT 1",
            skill_id,
        )
        .await
    }

    async fn published_revision(&self, skill_id: &str) -> StoreResult<Option<Revision>> {
        self.revision_where("skill_id = ? AND status = 'published'", skill_id)
            .await
    }

    async fn list_revisions(&self, skill_id: &str) -> StoreResult<Vec<Revision>> {
        let rows = sqlx::query(sql!(
            "{REVISION_SELECT} WHERE skill_id = ? ORDER BY revision_number"
        ))
        .bind(skill_id)
        .fetch_all(&self.reader)
        .await?;
        let components = sqlx::query(
            "SELECT c.revision_id, c.logical_path, c.component_type, c.content_hash, c.size, c.media_type
             FROM revision_components c JOIN revisions r ON r.revision_id = c.revision_id
             WHERE r.skill_id = ? ORDER BY c.logical_path",
        )
        .bind(skill_id)
        .fetch_all(&self.reader)
        .await?;
        let mut by_revision: BTreeMap<String, Vec<sqlx::sqlite::SqliteRow>> = BTreeMap::new();
        for c in components {
            let id: String = c.try_get("revision_id")?;
            by_revision.entry(id).or_default().push(c);
        }
        rows.iter()
            .map(|r| {
                let id: String = r.try_get("revision_id")?;
                revision_from_rows(r, by_revision.get(&id).map_or(&[][..], |v| v.as_slice()))
            })
            .collect()
    }

    async fn component_bytes(
        &self,
        revision_id: &str,
        logical_path: &str,
    ) -> StoreResult<Option<(ComponentManifest, Vec<u8>)>> {
        let row = sqlx::query(
            "SELECT c.logical_path, c.component_type, c.content_hash, c.size, c.media_type, b.bytes
             FROM revision_components c JOIN blobs b ON b.content_hash = c.content_hash
             WHERE c.revision_id = ? AND c.logical_path = ?",
        )
        .bind(revision_id)
        .bind(logical_path)
        .fetch_optional(&self.reader)
        .await?;
        row.map(|r| Ok((component_from_row(&r)?, r.try_get::<Vec<u8>, _>("bytes")?)))
            .transpose()
    }

    async fn change_revision_status(&self, change: StatusChange) -> StoreResult<Revision> {
        let mut tx = self.begin().await?;
        let at = now();
        let skill_id: Option<String> = sqlx::query_scalar(
            "SELECT skill_id FROM revisions WHERE revision_id = ? AND status = ?",
        )
        .bind(&change.revision_id)
        .bind(change.from.as_str())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(skill_id) = skill_id else {
            return Err(StoreError::Conflict(format!(
                "revision `{}` is no longer {}",
                change.revision_id, change.from
            )));
        };
        if change.to == RevisionStatus::Published {
            sqlx::query("UPDATE revisions SET status = 'deprecated', status_changed_at = ? WHERE skill_id = ? AND status = 'published'")
                .bind(&at)
                .bind(&skill_id)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query("UPDATE revisions SET status = ?, review_note = COALESCE(?, review_note), status_changed_at = ? WHERE revision_id = ?")
            .bind(change.to.as_str())
            .bind(&change.review_note)
            .bind(&at)
            .bind(&change.revision_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE skills SET updated_at = ? WHERE skill_id = ?")
            .bind(&at)
            .bind(&skill_id)
            .execute(&mut *tx)
            .await?;
        refresh_search_row(&mut tx, &skill_id).await?;
        append_audit_tx(&mut tx, &change.audit).await?;
        let revision = revision_tx(&mut tx, &change.revision_id).await?;
        tx.commit().await?;
        Ok(revision)
    }

    async fn set_asset_status(
        &self,
        skill_id: &str,
        status: AssetStatus,
        audit: AuditDraft,
    ) -> StoreResult<Skill> {
        let mut tx = self.begin().await?;
        let changed =
            sqlx::query("UPDATE skills SET asset_status = ?, updated_at = ? WHERE skill_id = ?")
                .bind(status.as_str())
                .bind(now())
                .bind(skill_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        if changed == 0 {
            return Err(StoreError::NotFound(format!("skill {skill_id}")));
        }
        refresh_search_row(&mut tx, skill_id).await?;
        append_audit_tx(&mut tx, &audit).await?;
        let skill = skill_tx(&mut tx, skill_id).await?;
        tx.commit().await?;
        Ok(skill)
    }

    async fn search(&self, query: &SearchQuery) -> StoreResult<Vec<Descriptor>> {
        let Some(expression) = crate::search::fts_expression(&query.text) else {
            return Ok(vec![]);
        };
        if query.workspace_ids.is_empty() {
            return Ok(vec![]);
        }
        let exact = crate::search::exact_key(&query.text);
        let ws = in_list(query.workspace_ids.len());
        // Bounded work: BM25 picks the best few rows inside FTS5 (slug and name weigh more
        // than the description; bm25() is negative, smaller is better), an exact slug is
        // looked up by index, and only those rows are joined and ordered: exact slug or name
        // first, then rank.
        let sql = format!(
            "WITH ranked AS MATERIALIZED (
               SELECT rowid AS key, bm25(skills_fts, 0.0, 0.0, 10.0, 5.0, 1.0) AS rank
               FROM skills_fts WHERE skills_fts MATCH ? AND workspace_id IN ({ws})
               ORDER BY rank LIMIT ?),
             keys AS (
               SELECT key FROM ranked
               UNION SELECT search_key FROM skills WHERE slug = ? AND workspace_id IN ({ws}))
             SELECT f.skill_id, f.workspace_id, s.slug, f.name, f.description,
                    (s.slug = ? OR lower(f.name) = ?) AS exact,
                    COALESCE(r.rank, 0.0) AS rank
             FROM keys k
             JOIN skills_fts f ON f.rowid = k.key
             JOIN skills s ON s.search_key = k.key
             LEFT JOIN ranked r ON r.key = k.key
             ORDER BY exact DESC, rank ASC, s.slug ASC LIMIT ?"
        );
        let mut q = sqlx::query(AssertSqlSafe(sql)).bind(&expression);
        for id in &query.workspace_ids {
            q = q.bind(id);
        }
        q = q.bind(query.limit as i64 * 4 + 8).bind(&exact.slug);
        for id in &query.workspace_ids {
            q = q.bind(id);
        }
        q = q.bind(&exact.slug).bind(&exact.name);
        let rows = q.bind(query.limit as i64).fetch_all(&self.reader).await?;
        rows.iter()
            .map(|r| {
                let exact: bool = r.try_get("exact")?;
                let rank: f64 = r.try_get("rank")?;
                Ok(Descriptor {
                    skill_id: r.try_get("skill_id")?,
                    slug: r.try_get("slug")?,
                    name: r.try_get("name")?,
                    description: r.try_get("description")?,
                    workspace_id: r.try_get("workspace_id")?,
                    score: crate::search::score(exact, -rank),
                })
            })
            .collect()
    }

    async fn append_audit(&self, audit: AuditDraft) -> StoreResult<()> {
        let mut tx = self.begin().await?;
        append_audit_tx(&mut tx, &audit).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn list_audit(&self, filter: &AuditFilter) -> StoreResult<Vec<AuditEntry>> {
        let mut sql = format!("{AUDIT_SELECT} WHERE 1=1");
        if let Some(ws) = &filter.workspace_ids {
            if ws.is_empty() {
                return Ok(vec![]);
            }
            sql.push_str(&format!(" AND workspace_id IN ({})", in_list(ws.len())));
        }
        if filter.skill_id.is_some() {
            sql.push_str(" AND skill_id = ?");
        }
        sql.push_str(" ORDER BY seq");
        if filter.limit > 0 {
            sql.push_str(" LIMIT ?");
        }
        let mut q = sqlx::query(AssertSqlSafe(sql));
        if let Some(ws) = &filter.workspace_ids {
            for id in ws {
                q = q.bind(id);
            }
        }
        if let Some(skill) = &filter.skill_id {
            q = q.bind(skill);
        }
        if filter.limit > 0 {
            q = q.bind(filter.limit as i64);
        }
        let rows = q.fetch_all(&self.reader).await?;
        rows.iter().map(audit_from_row).collect()
    }

    async fn import_snapshot(&self, snapshot: &crate::snapshot::Snapshot) -> StoreResult<()> {
        let mut tx = self.begin().await?;
        let accounts: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM accounts")
            .fetch_one(&mut *tx)
            .await?;
        crate::snapshot::ensure_empty(accounts as u64)?;
        crate::insert_snapshot!(
            &mut tx,
            snapshot,
            |s: &str| s.to_string(),
            refresh_search_row
        );
        tx.commit().await?;
        Ok(())
    }

    async fn table_counts(&self) -> StoreResult<BTreeMap<String, u64>> {
        let mut out = BTreeMap::new();
        for table in TABLES {
            let n: i64 = sqlx::query_scalar(sql!("SELECT COUNT(*) FROM {table}"))
                .fetch_one(&self.reader)
                .await?;
            out.insert(table.to_string(), n as u64);
        }
        Ok(out)
    }
}

fn parse<T: FromStr<Err = String>>(row: &sqlx::sqlite::SqliteRow, column: &str) -> StoreResult<T> {
    let text: String = row.try_get(column)?;
    text.parse().map_err(StoreError::Internal)
}
