//! PostgreSQL implementation of [`Store`], for running many `xmemo serve` nodes on one
//! database. Behaviour is that of the SQLite backend (same rows, same RFC 3339 text
//! timestamps, same JSON text); what SQLite gets from its single writer connection is obtained
//! here with row locks and advisory locks, so it also holds across nodes:
//!
//! - revision numbers: every write to a skill's revisions first locks the skill row
//!   (`SELECT … FOR NO KEY UPDATE`, or `INSERT … ON CONFLICT DO NOTHING` for a new slug), so
//!   numbers are gap-free and the compare-and-set / dedupe checks see the latest state;
//! - one published revision per skill: a partial unique index, and publishes serialise on the
//!   skill row lock (the later one deprecates the earlier one);
//! - the audit chain: appends take `pg_advisory_xact_lock(AUDIT_LOCK)` inside the writing
//!   transaction, so the chain stays linear; a trigger refuses UPDATE, DELETE and TRUNCATE;
//! - migrations: applied in one transaction under `pg_advisory_xact_lock(MIGRATION_LOCK)`, so
//!   nodes starting together do not race.
//!
//! Lock order, which keeps the backend free of deadlocks: at most one skill row per
//! transaction, then blobs in content-hash order, then the audit lock last (after it a
//! transaction only reads).

mod rows;

use crate::migrate::Migration;
use crate::model::*;
use crate::{Store, StoreError, StoreResult};
use async_trait::async_trait;
use rows::*;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions, PgRow};
use sqlx::{AssertSqlSafe, Connection, Postgres, Row, Transaction};
use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;
use xmemo_core::{AssetStatus, RevisionStatus, Role, WorkspaceKind, new_id};

/// SQL text built only from this module's constants and `$n` placeholder numbers.
macro_rules! sql {
    ($($t:tt)*) => {
        AssertSqlSafe(format!($($t)*))
    };
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        sql: include_str!("../../migrations/postgres/0001_init.sql"),
    },
    Migration {
        version: 2,
        name: "revision_source",
        sql: include_str!("../../migrations/postgres/0002_revision_source.sql"),
    },
];

/// Advisory lock keys (`pg_advisory_xact_lock(bigint)`): "xmemo:mg" and "xmemo:au".
const MIGRATION_LOCK: i64 = 0x786d_656d_6f3a_6d67;
const AUDIT_LOCK: i64 = 0x786d_656d_6f3a_6175;

/// Connection pool settings of a node.
#[derive(Debug, Clone)]
pub struct PgPoolSettings {
    /// Connections this node may hold open (keep nodes × this under the server's
    /// `max_connections`).
    pub max_connections: u32,
    /// Connections kept open even when idle.
    pub min_connections: u32,
    /// How long a query waits for a free connection before failing as unavailable.
    pub acquire_timeout: Duration,
    /// How long the first connection may take before `connect` gives up.
    pub connect_timeout: Duration,
    pub idle_timeout: Option<Duration>,
    pub max_lifetime: Option<Duration>,
    /// Shown in `pg_stat_activity`.
    pub application_name: String,
}

impl Default for PgPoolSettings {
    fn default() -> Self {
        Self {
            max_connections: 10,
            min_connections: 0,
            acquire_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Some(Duration::from_secs(600)),
            max_lifetime: Some(Duration::from_secs(1800)),
            application_name: "xmemo".into(),
        }
    }
}

#[derive(Clone)]
pub struct PostgresStore {
    pool: PgPool,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to `postgres://user:password@host:port/database?…` without touching the
    /// schema. An invalid URL or an unreachable / refusing server is
    /// [`StoreError::Unavailable`], with a message that never contains the password.
    pub async fn connect(url: &str, settings: PgPoolSettings) -> StoreResult<Self> {
        let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        if !matches!(scheme.as_deref(), Some("postgres" | "postgresql")) {
            return Err(StoreError::Unavailable(
                "not a PostgreSQL URL: expected postgres://user:password@host:port/database".into(),
            ));
        }
        // Messages name the target from the parsed options (never the URL text itself), and
        // are scrubbed of the URL's passwords all the same.
        let options = PgConnectOptions::from_str(url).map_err(|e| {
            StoreError::Unavailable(scrub(&format!("invalid PostgreSQL URL: {e}"), url))
        })?;
        Self::connect_with(options, settings)
            .await
            .map_err(|e| match e {
                StoreError::Unavailable(m) => StoreError::Unavailable(scrub(&m, url)),
                other => other,
            })
    }

    /// Like [`PostgresStore::connect`] with already-built connect options.
    pub async fn connect_with(
        options: PgConnectOptions,
        settings: PgPoolSettings,
    ) -> StoreResult<Self> {
        let options = options.application_name(&settings.application_name);
        let target = describe(&options);
        // One direct attempt first: the pool would retry until its acquire timeout and then
        // report only "timed out", hiding the cause (refused, unknown database, bad password).
        match tokio::time::timeout(
            settings.connect_timeout,
            PgConnection::connect_with(&options),
        )
        .await
        {
            Err(_) => {
                return Err(StoreError::Unavailable(format!(
                    "cannot connect to PostgreSQL at {target}: no answer within {:?}",
                    settings.connect_timeout
                )));
            }
            Ok(Err(e)) => {
                return Err(StoreError::Unavailable(format!(
                    "cannot connect to PostgreSQL at {target}: {}",
                    connect_error_text(&e)
                )));
            }
            Ok(Ok(conn)) => {
                let _ = conn.close().await;
            }
        }
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections.max(1))
            .min_connections(settings.min_connections)
            .acquire_timeout(settings.acquire_timeout)
            .idle_timeout(settings.idle_timeout)
            .max_lifetime(settings.max_lifetime)
            .after_connect(|conn, _meta| {
                Box::pin(async move {
                    // Stop-word-only text searches and `IF NOT EXISTS` raise NOTICEs, which
                    // sqlx would log at INFO on every occurrence.
                    sqlx::raw_sql("SET client_min_messages = warning")
                        .execute(conn)
                        .await?;
                    Ok(())
                })
            })
            .connect_lazy_with(options);
        Ok(Self { pool })
    }

    /// [`PostgresStore::connect`] then [`PostgresStore::migrate`].
    pub async fn connect_and_migrate(url: &str, settings: PgPoolSettings) -> StoreResult<Self> {
        let store = Self::connect(url, settings).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Applies the embedded migrations that `schema_migrations` does not list yet, all in one
    /// transaction under an advisory lock: nodes starting at once apply them exactly once.
    pub async fn migrate(&self) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(pg)?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(MIGRATION_LOCK)
            .execute(&mut *tx)
            .await
            .map_err(pg)?;
        sqlx::raw_sql(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
        )
        .execute(&mut *tx)
        .await
        .map_err(pg)?;
        let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM schema_migrations")
            .fetch_all(&mut *tx)
            .await
            .map_err(pg)?;
        for m in MIGRATIONS {
            if applied.contains(&m.version) {
                continue;
            }
            sqlx::raw_sql(m.sql).execute(&mut *tx).await.map_err(|e| {
                StoreError::Internal(format!("migration {} ({}) failed: {e}", m.version, m.name))
            })?;
            sqlx::query(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
            )
            .bind(m.version)
            .bind(m.name)
            .bind(now())
            .execute(&mut *tx)
            .await
            .map_err(pg)?;
            tracing::info!(
                version = m.version,
                name = m.name,
                "applied postgres migration"
            );
        }
        tx.commit().await.map_err(pg)?;
        Ok(())
    }

    /// True when every migration this binary embeds has been applied (an operator can refuse
    /// to start a node on a schema that is behind instead of migrating it).
    pub async fn schema_is_current(&self) -> StoreResult<bool> {
        let exists: bool =
            sqlx::query_scalar("SELECT to_regclass('schema_migrations') IS NOT NULL")
                .fetch_one(&self.pool)
                .await
                .map_err(pg)?;
        if !exists {
            return Ok(false);
        }
        let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM schema_migrations")
            .fetch_all(&self.pool)
            .await
            .map_err(pg)?;
        Ok(MIGRATIONS.iter().all(|m| applied.contains(&m.version)))
    }

    /// Closes the pool, waiting for checked-out connections to come back.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    async fn begin(&self) -> StoreResult<Tx> {
        self.pool.begin().await.map_err(pg)
    }

    async fn revision_where(&self, clause: &str, bind: &str) -> StoreResult<Option<Revision>> {
        let Some(row) = sqlx::query(sql!("{REVISION_SELECT} WHERE {clause}"))
            .bind(bind)
            .fetch_optional(&self.pool)
            .await
            .map_err(pg)?
        else {
            return Ok(None);
        };
        let revision_id: String = row.try_get("revision_id")?;
        let components = sqlx::query(COMPONENTS_SELECT)
            .bind(&revision_id)
            .fetch_all(&self.pool)
            .await
            .map_err(pg)?;
        revision_from_rows(&row, &components).map(Some)
    }
}

type Tx = Transaction<'static, Postgres>;

/// Maps a sqlx error, adding what the shared `From` impl does not know about PostgreSQL:
/// connection-class SQLSTATEs are `Unavailable`, deadlock / serialization failures `Conflict`.
fn pg(err: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(db) = &err
        && let Some(code) = db.code()
    {
        let code = code.as_ref();
        if code == "40001" || code == "40P01" {
            return StoreError::Conflict(format!("concurrent update, try again: {}", db.message()));
        }
        if code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300") {
            return StoreError::Unavailable(db.message().to_string());
        }
    }
    StoreError::from(err)
}

fn connect_error_text(err: &sqlx::Error) -> String {
    match err {
        sqlx::Error::Database(db) => db.message().to_string(),
        other => other.to_string(),
    }
}

/// `postgres://user@host:port/database`, for messages (the password is never part of it).
fn describe(options: &PgConnectOptions) -> String {
    let database = options
        .get_database()
        .unwrap_or_else(|| options.get_username());
    let host = match options.get_socket() {
        Some(socket) => socket.display().to_string(),
        None => format!("{}:{}", options.get_host(), options.get_port()),
    };
    format!("postgres://{}@{host}/{database}", options.get_username())
}

/// The parts of a connection URL that matter for redaction. The userinfo runs to the *last*
/// `@`, so a password with an unencoded `/`, `?` or `@` is still recognised as one (erring on
/// the side of hiding too much).
struct UrlParts<'a> {
    scheme: Option<&'a str>,
    user: Option<&'a str>,
    password: Option<&'a str>,
    host_and_path: &'a str,
    query: Option<&'a str>,
}

fn url_parts(url: &str) -> UrlParts<'_> {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, url),
    };
    let (userinfo, after) = match rest.rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let (user, password) = match userinfo {
        Some(u) => match u.split_once(':') {
            Some((user, password)) => (Some(user), Some(password)),
            None => (Some(u), None),
        },
        None => (None, None),
    };
    let (host_and_path, query) = match after.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (after, None),
    };
    UrlParts {
        scheme,
        user,
        password,
        host_and_path,
        query,
    }
}

/// The URL with its password (userinfo or `password=` query parameter) replaced by `***`,
/// for logs and messages.
pub fn redact_url(url: &str) -> String {
    let p = url_parts(url);
    let mut out = String::new();
    if let Some(scheme) = p.scheme {
        out.push_str(scheme);
        out.push_str("://");
    }
    if let Some(user) = p.user {
        out.push_str(user);
        if p.password.is_some() {
            out.push_str(":***");
        }
        out.push('@');
    }
    out.push_str(p.host_and_path);
    if let Some(query) = p.query {
        let params: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => kv.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

/// The passwords a URL carries, raw and percent-decoded.
fn url_secrets(url: &str) -> Vec<String> {
    let p = url_parts(url);
    let mut secrets: Vec<String> = p.password.map(str::to_string).into_iter().collect();
    if let Some(query) = p.query {
        for kv in query.split('&') {
            if let Some((k, v)) = kv.split_once('=')
                && k.eq_ignore_ascii_case("password")
            {
                secrets.push(v.to_string());
            }
        }
    }
    let decoded: Vec<String> = secrets.iter().map(|s| percent_decode(s)).collect();
    secrets.extend(decoded);
    secrets.retain(|s| !s.is_empty());
    secrets
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Removes every password the URL carries from a message.
fn scrub(message: &str, url: &str) -> String {
    let mut out = message.to_string();
    for secret in url_secrets(url) {
        out = out.replace(&secret, "***");
    }
    out
}

/// The Level 0 query as two `to_tsquery` texts, ORed together by the search: every word as
/// typed ('simple' config), the last one as a prefix for search-as-you-type; and the words but
/// the last for the stemmed ('english') index, which is how SQLite's porter tokenizer treats
/// them (its prefix term is not stemmed). Words are letters and digits only
/// (`crate::search::terms`), single-quoted, so no tsquery syntax from the input survives; both
/// texts are passed as bound parameters. `None` when the query has no word.
pub(crate) struct TsQueries {
    pub plain: String,
    pub stemmed: String,
}

pub(crate) fn tsqueries(query: &str) -> Option<TsQueries> {
    let terms: Vec<String> = crate::search::terms(query)
        .into_iter()
        .filter(|t| t.chars().all(char::is_alphanumeric))
        .collect();
    let (last, rest) = terms.split_last()?;
    let quoted: Vec<String> = rest.iter().map(|t| format!("'{t}'")).collect();
    let mut plain = quoted.clone();
    plain.push(format!("'{last}':*"));
    Some(TsQueries {
        plain: plain.join(" | "),
        stemmed: quoted.join(" | "),
    })
}

async fn append_audit_tx(tx: &mut Tx, draft: &AuditDraft) -> StoreResult<()> {
    // Held until commit: appends from every node form one linear chain.
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(AUDIT_LOCK)
        .execute(&mut **tx)
        .await
        .map_err(pg)?;
    let last: Option<(i64, String)> =
        sqlx::query_as("SELECT seq, entry_hash FROM audit_log ORDER BY seq DESC LIMIT 1")
            .fetch_optional(&mut **tx)
            .await
            .map_err(pg)?;
    let (seq, prev) = match last {
        Some((s, h)) => (s + 1, h),
        None => (1, String::new()),
    };
    let at = now();
    let hash = audit_entry_hash(&prev, seq, &at, draft);
    sqlx::query(
        "INSERT INTO audit_log (seq, at, action, account_id, credential_id, client_profile, agent_id, agent_instance_id, workspace_id, skill_id, revision_id, details, prev_hash, entry_hash) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)",
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
    .await
    .map_err(pg)?;
    Ok(())
}

/// Rewrites the skill's Level 0 row: present only while the skill is active and has a
/// published revision, carrying that revision's name and description. Callers hold the skill
/// row lock.
async fn refresh_search_row(tx: &mut Tx, skill_id: &str) -> StoreResult<()> {
    sqlx::query("DELETE FROM skill_search WHERE skill_id = $1")
        .bind(skill_id)
        .execute(&mut **tx)
        .await
        .map_err(pg)?;
    sqlx::query(
        "INSERT INTO skill_search (skill_id, workspace_id, slug, name, description)
         SELECT s.skill_id, s.workspace_id, s.slug, r.name, r.description
         FROM skills s JOIN revisions r ON r.skill_id = s.skill_id AND r.status = 'published'
         WHERE s.skill_id = $1 AND s.asset_status = 'active'",
    )
    .bind(skill_id)
    .execute(&mut **tx)
    .await
    .map_err(pg)?;
    Ok(())
}

async fn skill_tx(tx: &mut Tx, skill_id: &str) -> StoreResult<Skill> {
    let row = sqlx::query(SKILL_SELECT_BY_ID)
        .bind(skill_id)
        .fetch_one(&mut **tx)
        .await
        .map_err(pg)?;
    skill_from_row(&row)
}

async fn revision_tx(tx: &mut Tx, revision_id: &str) -> StoreResult<Revision> {
    let row = sqlx::query(sql!("{REVISION_SELECT} WHERE revision_id = $1"))
        .bind(revision_id)
        .fetch_one(&mut **tx)
        .await
        .map_err(pg)?;
    let components = sqlx::query(COMPONENTS_SELECT)
        .bind(revision_id)
        .fetch_all(&mut **tx)
        .await
        .map_err(pg)?;
    revision_from_rows(&row, &components)
}

/// Locks the skill row of this slug, if the skill exists.
async fn lock_skill_by_slug(
    tx: &mut Tx,
    workspace_id: &str,
    slug: &str,
) -> StoreResult<Option<String>> {
    sqlx::query_scalar(
        "SELECT skill_id FROM skills WHERE workspace_id = $1 AND slug = $2 FOR NO KEY UPDATE",
    )
    .bind(workspace_id)
    .bind(slug)
    .fetch_optional(&mut **tx)
    .await
    .map_err(pg)
}

fn to_i64(n: u64, what: &str) -> StoreResult<i64> {
    i64::try_from(n).map_err(|_| StoreError::Internal(format!("{what} {n} out of range")))
}

#[async_trait]
impl Store for PostgresStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(pg)?;
        Ok(())
    }

    async fn create_account(&self, new: NewAccount, audit: AuditDraft) -> StoreResult<Account> {
        let account_id = new_id("acct");
        let workspace_id = new_id("ws");
        let at = now();
        let mut tx = self.begin().await?;
        sqlx::query("INSERT INTO workspaces (workspace_id, handle, name, kind, created_at) VALUES ($1, 'personal', $2, 'personal', $3)")
            .bind(&workspace_id)
            .bind(format!("{} (personal)", new.display_name))
            .bind(&at)
            .execute(&mut *tx)
            .await
            .map_err(pg)?;
        sqlx::query("INSERT INTO accounts (account_id, handle, display_name, is_admin, personal_workspace_id, created_at) VALUES ($1,$2,$3,$4,$5,$6)")
            .bind(&account_id)
            .bind(&new.handle)
            .bind(&new.display_name)
            .bind(new.is_admin)
            .bind(&workspace_id)
            .bind(&at)
            .execute(&mut *tx)
            .await
            .map_err(pg)?;
        sqlx::query("INSERT INTO memberships (workspace_id, account_id, role, added_at) VALUES ($1, $2, 'owner', $3)")
            .bind(&workspace_id)
            .bind(&account_id)
            .bind(&at)
            .execute(&mut *tx)
            .await
            .map_err(pg)?;
        let mut audit = audit;
        audit.workspace_id = Some(workspace_id.clone());
        if audit.actor.account_id.is_empty() {
            audit.actor.account_id = account_id.clone();
        }
        audit.details = serde_json::json!({"account_id": account_id, "handle": new.handle});
        append_audit_tx(&mut tx, &audit).await?;
        tx.commit().await.map_err(pg)?;
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
        let row = sqlx::query(sql!("{ACCOUNT_SELECT} WHERE account_id = $1"))
            .bind(account_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(pg)?;
        row.map(|r| account_from_row(&r)).transpose()
    }

    async fn find_account_by_handle(&self, handle: &str) -> StoreResult<Option<Account>> {
        let row = sqlx::query(sql!("{ACCOUNT_SELECT} WHERE handle = $1"))
            .bind(handle)
            .fetch_optional(&self.pool)
            .await
            .map_err(pg)?;
        row.map(|r| account_from_row(&r)).transpose()
    }

    async fn list_accounts(&self) -> StoreResult<Vec<Account>> {
        let rows = sqlx::query(sql!("{ACCOUNT_SELECT} ORDER BY created_at, account_id"))
            .fetch_all(&self.pool)
            .await
            .map_err(pg)?;
        rows.iter().map(account_from_row).collect()
    }

    async fn count_accounts(&self) -> StoreResult<u64> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM accounts")
            .fetch_one(&self.pool)
            .await
            .map_err(pg)?;
        Ok(n.max(0) as u64)
    }

    async fn create_team(&self, new: NewTeam, audit: AuditDraft) -> StoreResult<Workspace> {
        let workspace_id = new_id("ws");
        let at = now();
        let mut tx = self.begin().await?;
        sqlx::query("INSERT INTO workspaces (workspace_id, handle, name, kind, created_at) VALUES ($1, $2, $3, 'team', $4)")
            .bind(&workspace_id)
            .bind(&new.handle)
            .bind(&new.name)
            .bind(&at)
            .execute(&mut *tx)
            .await
            .map_err(|e| match pg(e) {
                StoreError::Conflict(_) => {
                    StoreError::Conflict(format!("a team with handle `{}` already exists", new.handle))
                }
                other => other,
            })?;
        sqlx::query("INSERT INTO memberships (workspace_id, account_id, role, added_at) VALUES ($1, $2, 'owner', $3)")
            .bind(&workspace_id)
            .bind(&new.owner_account_id)
            .bind(&at)
            .execute(&mut *tx)
            .await
            .map_err(pg)?;
        append_audit_tx(&mut tx, &audit.workspace(&workspace_id)).await?;
        tx.commit().await.map_err(pg)?;
        Ok(Workspace {
            workspace_id,
            handle: new.handle,
            name: new.name,
            kind: WorkspaceKind::Team,
            created_at: at,
        })
    }

    async fn get_workspace(&self, workspace_id: &str) -> StoreResult<Option<Workspace>> {
        let row = sqlx::query(sql!("{WORKSPACE_SELECT} WHERE workspace_id = $1"))
            .bind(workspace_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(pg)?;
        row.map(|r| workspace_from_row(&r)).transpose()
    }

    async fn find_team_by_handle(&self, handle: &str) -> StoreResult<Option<Workspace>> {
        let row = sqlx::query(sql!(
            "{WORKSPACE_SELECT} WHERE handle = $1 AND kind = 'team'"
        ))
        .bind(handle)
        .fetch_optional(&self.pool)
        .await
        .map_err(pg)?;
        row.map(|r| workspace_from_row(&r)).transpose()
    }

    async fn memberships(&self, account_id: &str) -> StoreResult<Vec<Membership>> {
        let rows = sqlx::query(
            "SELECT w.workspace_id, w.handle, w.name, w.kind, w.created_at, m.role
             FROM memberships m JOIN workspaces w ON w.workspace_id = m.workspace_id
             WHERE m.account_id = $1 ORDER BY w.kind, w.handle",
        )
        .bind(account_id)
        .fetch_all(&self.pool)
        .await
        .map_err(pg)?;
        rows.iter()
            .map(|r| {
                Ok(Membership {
                    workspace: workspace_from_row(r)?,
                    role: parse_text(r, "role")?,
                })
            })
            .collect()
    }

    async fn list_members(&self, workspace_id: &str) -> StoreResult<Vec<Member>> {
        let rows = sqlx::query(
            "SELECT a.account_id, a.handle, a.display_name, m.role, m.added_at
             FROM memberships m JOIN accounts a ON a.account_id = m.account_id
             WHERE m.workspace_id = $1 ORDER BY a.handle",
        )
        .bind(workspace_id)
        .fetch_all(&self.pool)
        .await
        .map_err(pg)?;
        rows.iter()
            .map(|r| {
                Ok(Member {
                    account_id: r.try_get("account_id")?,
                    handle: r.try_get("handle")?,
                    display_name: r.try_get("display_name")?,
                    role: parse_text(r, "role")?,
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
            "INSERT INTO memberships (workspace_id, account_id, role, added_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (workspace_id, account_id) DO UPDATE SET role = excluded.role",
        )
        .bind(workspace_id)
        .bind(account_id)
        .bind(role.as_str())
        .bind(now())
        .execute(&mut *tx)
        .await
        .map_err(pg)?;
        append_audit_tx(&mut tx, &audit).await?;
        tx.commit().await.map_err(pg)?;
        Ok(())
    }

    async fn remove_member(
        &self,
        workspace_id: &str,
        account_id: &str,
        audit: AuditDraft,
    ) -> StoreResult<bool> {
        let mut tx = self.begin().await?;
        let done =
            sqlx::query("DELETE FROM memberships WHERE workspace_id = $1 AND account_id = $2")
                .bind(workspace_id)
                .bind(account_id)
                .execute(&mut *tx)
                .await
                .map_err(pg)?
                .rows_affected()
                > 0;
        if done {
            append_audit_tx(&mut tx, &audit).await?;
        }
        tx.commit().await.map_err(pg)?;
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
        sqlx::query("INSERT INTO api_keys (key_id, account_id, name, prefix, key_hash, scopes, profile, created_at, expires_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)")
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
            .await
            .map_err(pg)?;
        let mut audit = audit;
        audit.details =
            serde_json::json!({"key_id": key.key_id, "scopes": key.scopes, "profile": key.profile});
        append_audit_tx(&mut tx, &audit).await?;
        tx.commit().await.map_err(pg)?;
        Ok(key)
    }

    async fn find_api_key_by_hash(&self, key_hash: &str) -> StoreResult<Option<ApiKey>> {
        let row = sqlx::query(sql!("{API_KEY_SELECT} WHERE key_hash = $1"))
            .bind(key_hash)
            .fetch_optional(&self.pool)
            .await
            .map_err(pg)?;
        row.map(|r| api_key_from_row(&r)).transpose()
    }

    async fn list_api_keys(&self, account_id: &str) -> StoreResult<Vec<ApiKey>> {
        let rows = sqlx::query(sql!(
            "{API_KEY_SELECT} WHERE account_id = $1 ORDER BY created_at, key_id"
        ))
        .bind(account_id)
        .fetch_all(&self.pool)
        .await
        .map_err(pg)?;
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
            "UPDATE api_keys SET revoked_at = $1 WHERE key_id = $2 AND account_id = $3 AND revoked_at IS NULL",
        )
        .bind(now())
        .bind(key_id)
        .bind(account_id)
        .execute(&mut *tx)
        .await
        .map_err(pg)?
        .rows_affected()
            > 0;
        if done {
            let mut audit = audit;
            audit.details = serde_json::json!({"key_id": key_id});
            append_audit_tx(&mut tx, &audit).await?;
        }
        tx.commit().await.map_err(pg)?;
        Ok(done)
    }

    async fn get_skill(&self, skill_id: &str) -> StoreResult<Option<Skill>> {
        let row = sqlx::query(SKILL_SELECT_BY_ID)
            .bind(skill_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(pg)?;
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
        let rows = sqlx::query(sql!(
            "{SKILL_SELECT} WHERE s.slug = $1 AND s.workspace_id = ANY($2) ORDER BY s.workspace_id"
        ))
        .bind(slug)
        .bind(workspace_ids)
        .fetch_all(&self.pool)
        .await
        .map_err(pg)?;
        rows.iter().map(skill_from_row).collect()
    }

    async fn list_skills(&self, workspace_ids: &[String]) -> StoreResult<Vec<Skill>> {
        if workspace_ids.is_empty() {
            return Ok(vec![]);
        }
        let rows = sqlx::query(sql!(
            "{SKILL_SELECT} WHERE s.workspace_id = ANY($1) ORDER BY s.slug, s.workspace_id"
        ))
        .bind(workspace_ids)
        .fetch_all(&self.pool)
        .await
        .map_err(pg)?;
        rows.iter().map(skill_from_row).collect()
    }

    async fn save_revision(&self, save: SaveRevision) -> StoreResult<SaveOutcome> {
        let mut tx = self.begin().await?;
        let at = now();
        let mut locked = lock_skill_by_slug(&mut tx, &save.workspace_id, &save.slug).await?;
        let mut new_skill = None;
        if locked.is_none() {
            if let Some(expected) = &save.expected_revision_id {
                return Err(StoreError::Conflict(format!(
                    "expected_revision_id `{expected}` given but skill `{}` does not exist yet",
                    save.slug
                )));
            }
            let id = new_id("skill");
            // A concurrent creator (any node) makes this wait for its commit and then do
            // nothing; the skill is then locked and appended to like an existing one.
            let inserted: Option<String> = sqlx::query_scalar(
                "INSERT INTO skills (skill_id, workspace_id, slug, name, description, asset_status, latest_revision_number, created_at, updated_at)
                 VALUES ($1,$2,$3,$4,$5,'active',0,$6,$7)
                 ON CONFLICT (workspace_id, slug) DO NOTHING RETURNING skill_id",
            )
            .bind(&id)
            .bind(&save.workspace_id)
            .bind(&save.slug)
            .bind(&save.name)
            .bind(&save.description)
            .bind(&at)
            .bind(&at)
            .fetch_optional(&mut *tx)
            .await
            .map_err(pg)?;
            match inserted {
                Some(id) => new_skill = Some(id),
                None => {
                    locked = lock_skill_by_slug(&mut tx, &save.workspace_id, &save.slug).await?;
                    if locked.is_none() {
                        return Err(StoreError::Conflict(format!(
                            "skill `{}` changed concurrently, try again",
                            save.slug
                        )));
                    }
                }
            }
        }
        let skill_id = match (new_skill, locked) {
            (Some(id), _) => id,
            (None, Some(id)) => {
                let latest: Option<(String, String)> = sqlx::query_as(
                    "SELECT revision_id, canonical_hash FROM revisions WHERE skill_id = $1 ORDER BY revision_number DESC LIMIT 1",
                )
                .bind(&id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(pg)?;
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
                    tx.rollback().await.map_err(pg)?;
                    return Ok(SaveOutcome {
                        skill,
                        revision,
                        created: false,
                    });
                }
                id
            }
            (None, None) => {
                return Err(StoreError::Internal(
                    "skill neither found nor created".into(),
                ));
            }
        };

        let number: i64 = sqlx::query_scalar(
            "UPDATE skills SET latest_revision_number = latest_revision_number + 1, name = $1, description = $2, updated_at = $3 WHERE skill_id = $4 RETURNING latest_revision_number",
        )
        .bind(&save.name)
        .bind(&save.description)
        .bind(&at)
        .bind(&skill_id)
        .fetch_one(&mut *tx)
        .await
        .map_err(pg)?;

        if save.status == RevisionStatus::Published {
            sqlx::query("UPDATE revisions SET status = 'deprecated', status_changed_at = $1 WHERE skill_id = $2 AND status = 'published'")
                .bind(&at)
                .bind(&skill_id)
                .execute(&mut *tx)
                .await
                .map_err(pg)?;
        }
        let revision_id = new_id("rev");
        let a = &save.attribution;
        sqlx::query("INSERT INTO revisions (revision_id, skill_id, revision_number, name, description, instruction_body, metadata, canonical_hash, status, account_id, credential_id, client_profile, agent_id, agent_instance_id, created_at, status_changed_at, source) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17)")
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
            .await
            .map_err(pg)?;
        // Blobs in content-hash order, so two saves sharing blobs never wait on each other in
        // opposite orders.
        let blobs: BTreeMap<&str, &NewComponent> = save
            .components
            .iter()
            .map(|c| (c.manifest.content_hash.as_str(), c))
            .collect();
        for (hash, c) in blobs {
            sqlx::query("INSERT INTO blobs (content_hash, size, bytes) VALUES ($1, $2, $3) ON CONFLICT (content_hash) DO NOTHING")
                .bind(hash)
                .bind(to_i64(c.manifest.size, "component size")?)
                .bind(&c.content)
                .execute(&mut *tx)
                .await
                .map_err(pg)?;
        }
        for c in &save.components {
            let m = &c.manifest;
            sqlx::query("INSERT INTO revision_components (revision_id, logical_path, path_folded, component_type, content_hash, size, media_type) VALUES ($1,$2,$3,$4,$5,$6,$7)")
                .bind(&revision_id)
                .bind(&m.logical_path)
                .bind(m.logical_path.to_lowercase())
                .bind(m.component_type.as_str())
                .bind(&m.content_hash)
                .bind(to_i64(m.size, "component size")?)
                .bind(&m.media_type)
                .execute(&mut *tx)
                .await
                .map_err(pg)?;
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
        tx.commit().await.map_err(pg)?;
        Ok(SaveOutcome {
            skill,
            revision,
            created: true,
        })
    }

    async fn get_revision(&self, revision_id: &str) -> StoreResult<Option<Revision>> {
        self.revision_where("revision_id = $1", revision_id).await
    }

    async fn latest_revision(&self, skill_id: &str) -> StoreResult<Option<Revision>> {
        self.revision_where(
            "skill_id = $1 ORDER BY revision_number DESC LIMIT 1",
            skill_id,
        )
        .await
    }

    async fn published_revision(&self, skill_id: &str) -> StoreResult<Option<Revision>> {
        self.revision_where("skill_id = $1 AND status = 'published'", skill_id)
            .await
    }

    async fn list_revisions(&self, skill_id: &str) -> StoreResult<Vec<Revision>> {
        let rows = sqlx::query(sql!(
            "{REVISION_SELECT} WHERE skill_id = $1 ORDER BY revision_number"
        ))
        .bind(skill_id)
        .fetch_all(&self.pool)
        .await
        .map_err(pg)?;
        let components = sqlx::query(
            "SELECT c.revision_id, c.logical_path, c.component_type, c.content_hash, c.size, c.media_type
             FROM revision_components c JOIN revisions r ON r.revision_id = c.revision_id
             WHERE r.skill_id = $1 ORDER BY c.logical_path",
        )
        .bind(skill_id)
        .fetch_all(&self.pool)
        .await
        .map_err(pg)?;
        let mut by_revision: BTreeMap<String, Vec<PgRow>> = BTreeMap::new();
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
             WHERE c.revision_id = $1 AND c.logical_path = $2",
        )
        .bind(revision_id)
        .bind(logical_path)
        .fetch_optional(&self.pool)
        .await
        .map_err(pg)?;
        row.map(|r| Ok((component_from_row(&r)?, r.try_get::<Vec<u8>, _>("bytes")?)))
            .transpose()
    }

    async fn change_revision_status(&self, change: StatusChange) -> StoreResult<Revision> {
        let mut tx = self.begin().await?;
        let conflict = || {
            StoreError::Conflict(format!(
                "revision `{}` is no longer {}",
                change.revision_id, change.from
            ))
        };
        let skill_id: Option<String> =
            sqlx::query_scalar("SELECT skill_id FROM revisions WHERE revision_id = $1")
                .bind(&change.revision_id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(pg)?;
        let Some(skill_id) = skill_id else {
            return Err(conflict());
        };
        // Every status write of a skill's revisions happens under its row lock, so the check
        // below sees the latest committed status and concurrent publishes serialise.
        sqlx::query("SELECT 1 FROM skills WHERE skill_id = $1 FOR NO KEY UPDATE")
            .bind(&skill_id)
            .execute(&mut *tx)
            .await
            .map_err(pg)?;
        let status: String =
            sqlx::query_scalar("SELECT status FROM revisions WHERE revision_id = $1")
                .bind(&change.revision_id)
                .fetch_one(&mut *tx)
                .await
                .map_err(pg)?;
        if status != change.from.as_str() {
            return Err(conflict());
        }
        let at = now();
        if change.to == RevisionStatus::Published {
            sqlx::query("UPDATE revisions SET status = 'deprecated', status_changed_at = $1 WHERE skill_id = $2 AND status = 'published'")
                .bind(&at)
                .bind(&skill_id)
                .execute(&mut *tx)
                .await
                .map_err(pg)?;
        }
        sqlx::query("UPDATE revisions SET status = $1, review_note = COALESCE($2, review_note), status_changed_at = $3 WHERE revision_id = $4")
            .bind(change.to.as_str())
            .bind(&change.review_note)
            .bind(&at)
            .bind(&change.revision_id)
            .execute(&mut *tx)
            .await
            .map_err(pg)?;
        sqlx::query("UPDATE skills SET updated_at = $1 WHERE skill_id = $2")
            .bind(&at)
            .bind(&skill_id)
            .execute(&mut *tx)
            .await
            .map_err(pg)?;
        refresh_search_row(&mut tx, &skill_id).await?;
        append_audit_tx(&mut tx, &change.audit).await?;
        let revision = revision_tx(&mut tx, &change.revision_id).await?;
        tx.commit().await.map_err(pg)?;
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
            sqlx::query("UPDATE skills SET asset_status = $1, updated_at = $2 WHERE skill_id = $3")
                .bind(status.as_str())
                .bind(now())
                .bind(skill_id)
                .execute(&mut *tx)
                .await
                .map_err(pg)?
                .rows_affected();
        if changed == 0 {
            return Err(StoreError::NotFound(format!("skill {skill_id}")));
        }
        refresh_search_row(&mut tx, skill_id).await?;
        append_audit_tx(&mut tx, &audit).await?;
        let skill = skill_tx(&mut tx, skill_id).await?;
        tx.commit().await.map_err(pg)?;
        Ok(skill)
    }

    async fn search(&self, query: &SearchQuery) -> StoreResult<Vec<Descriptor>> {
        let Some(tsquery) = tsqueries(&query.text) else {
            return Ok(vec![]);
        };
        if query.workspace_ids.is_empty() {
            return Ok(vec![]);
        }
        let exact = crate::search::exact_key(&query.text);
        // Exact slug or name matches first, then cover density (slug A=1.0, name B=0.5,
        // description C=0.1, like SQLite's 10/5/1 BM25 column weights; divided by the document
        // length, as BM25 favours short documents), then slug. The index holds every text both
        // as plain words and stemmed ('english'); see `tsqueries`.
        let rows = sqlx::query(
            "SELECT s.skill_id, s.workspace_id, s.slug, f.name, f.description,
                    (s.slug = $1 OR lower(f.name) = $2) AS exact,
                    ts_rank_cd('{0.0, 0.1, 0.5, 1.0}'::float4[], f.document, q.query, 2)::float8 AS rank
             FROM skill_search f
             JOIN skills s ON s.skill_id = f.skill_id
             CROSS JOIN (SELECT CASE WHEN $4 = '' THEN to_tsquery('simple'::regconfig, $3)
                          ELSE to_tsquery('simple'::regconfig, $3) || to_tsquery('english'::regconfig, $4)
                     END AS query) q
             WHERE f.document @@ q.query AND f.workspace_id = ANY($5)
             ORDER BY exact DESC, rank DESC, s.slug ASC
             LIMIT $6",
        )
        .bind(&exact.slug)
        .bind(&exact.name)
        .bind(&tsquery.plain)
        .bind(&tsquery.stemmed)
        .bind(&query.workspace_ids)
        .bind(i64::from(query.limit))
        .fetch_all(&self.pool)
        .await
        .map_err(pg)?;
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
                    score: crate::search::score(exact, rank),
                })
            })
            .collect()
    }

    async fn append_audit(&self, audit: AuditDraft) -> StoreResult<()> {
        let mut tx = self.begin().await?;
        append_audit_tx(&mut tx, &audit).await?;
        tx.commit().await.map_err(pg)?;
        Ok(())
    }

    async fn list_audit(&self, filter: &AuditFilter) -> StoreResult<Vec<AuditEntry>> {
        let mut sql = format!("{AUDIT_SELECT} WHERE TRUE");
        let mut n = 0;
        if let Some(ws) = &filter.workspace_ids {
            if ws.is_empty() {
                return Ok(vec![]);
            }
            n += 1;
            sql.push_str(&format!(" AND workspace_id = ANY(${n})"));
        }
        if filter.skill_id.is_some() {
            n += 1;
            sql.push_str(&format!(" AND skill_id = ${n}"));
        }
        sql.push_str(" ORDER BY seq");
        if filter.limit > 0 {
            n += 1;
            sql.push_str(&format!(" LIMIT ${n}"));
        }
        let mut q = sqlx::query(AssertSqlSafe(sql));
        if let Some(ws) = &filter.workspace_ids {
            q = q.bind(ws);
        }
        if let Some(skill) = &filter.skill_id {
            q = q.bind(skill);
        }
        if filter.limit > 0 {
            q = q.bind(i64::from(filter.limit));
        }
        let rows = q.fetch_all(&self.pool).await.map_err(pg)?;
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
            crate::snapshot::numbered_placeholders,
            refresh_search_row
        );
        tx.commit().await?;
        Ok(())
    }

    async fn table_counts(&self) -> StoreResult<BTreeMap<String, u64>> {
        let mut out = BTreeMap::new();
        for (name, table) in TABLES {
            let n: i64 = sqlx::query_scalar(sql!("SELECT COUNT(*) FROM {table}"))
                .fetch_one(&self.pool)
                .await
                .map_err(pg)?;
            out.insert(name.to_string(), n.max(0) as u64);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsquery_quotes_words_and_prefixes_the_last() {
        let q = tsqueries("deploy  prod").unwrap();
        assert_eq!(q.plain, "'deploy' | 'prod':*");
        assert_eq!(q.stemmed, "'deploy'");
        let q = tsqueries("a' OR NEAR(b) & !c:*").unwrap();
        assert_eq!(q.plain, "'a' | 'or' | 'near' | 'b' | 'c':*");
        assert_eq!(q.stemmed, "'a' | 'or' | 'near' | 'b'");
        assert!(tsqueries("  -- ** ' \" ").is_none());
        let q = tsqueries("Über").unwrap();
        assert_eq!((q.plain.as_str(), q.stemmed.as_str()), ("'über':*", ""));
    }

    #[test]
    fn urls_are_redacted() {
        assert_eq!(
            redact_url("postgres://app:s3cr%40t@db.example:5432/xmemo?sslmode=require"),
            "postgres://app:***@db.example:5432/xmemo?sslmode=require"
        );
        assert_eq!(
            redact_url("postgres://app@db/xmemo?password=hunter2&application_name=x"),
            "postgres://app@db/xmemo?password=***&application_name=x"
        );
        assert_eq!(redact_url("postgres://db/xmemo"), "postgres://db/xmemo");
        assert_eq!(redact_url("garbage"), "garbage");
        assert_eq!(
            redact_url("postgres://app:pa/ss?w@rd@db:5432/x?sslmode=disable"),
            "postgres://app:***@db:5432/x?sslmode=disable"
        );
    }

    #[test]
    fn scrub_removes_raw_and_decoded_passwords() {
        let url = "postgres://app:s3cr%40t@db/x?password=other";
        let m = scrub("a s3cr%40t b s3cr@t c other", url);
        assert!(!m.contains("s3cr") && !m.contains("other"), "{m}");
    }
}
