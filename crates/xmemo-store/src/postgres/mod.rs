//! PostgreSQL backend, for running many `xmemo serve` nodes on one database. What SQLite gets
//! from its single writer connection is obtained here with row locks and advisory locks, so it
//! also holds across nodes:
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
//! transaction only reads). A group commit of saves (`sql/group.rs`) is the exception: its
//! later saves lock their skill rows while it holds the audit lock, so it can deadlock with a
//! lifecycle change of one of those skills on another connection; PostgreSQL detects it and
//! one side gets a retryable conflict. Rows, timestamps (RFC 3339 text) and JSON (text) read exactly as
//! on SQLite; the statements are the shared ones of `crate::sql`.

mod url;

pub use url::redact_url;

use crate::migrate::Migration;
use crate::sql::{Dialect, SqlStore};
use crate::{StoreError, StoreResult};
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use std::str::FromStr;
use std::time::Duration;

pub struct Postgres;

/// The PostgreSQL store.
pub type PostgresStore = SqlStore<Postgres>;

/// Advisory lock keys (`pg_advisory_xact_lock(bigint)`): "xmemo:au" and "xmemo:mg".
const AUDIT_LOCK: &str = "SELECT pg_advisory_xact_lock(8677703577704751477)";
const MIGRATION_LOCK: &str = "SELECT pg_advisory_xact_lock(8677703577704754535)";

impl Dialect for Postgres {
    type Driver = sqlx::Postgres;
    const BACKEND: &'static str = "postgres";
    const MIGRATIONS: &'static [Migration] = crate::embed_migrations!("postgres");
    const SCHEMA_TABLE_EXISTS: &'static str =
        "SELECT CASE WHEN to_regclass('schema_migrations') IS NULL THEN 0 ELSE 1 END::bigint AS n";
    const LOCK_ROWS: &'static str = " FOR NO KEY UPDATE";
    const LOCK_AUDIT_CHAIN: Option<&'static str> = Some(AUDIT_LOCK);
    const LOCK_MIGRATIONS: Option<&'static str> = Some(MIGRATION_LOCK);
}

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

impl SqlStore<Postgres> {
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
            StoreError::Unavailable(url::scrub(&format!("invalid PostgreSQL URL: {e}"), url))
        })?;
        Self::connect_with(options, settings)
            .await
            .map_err(|e| match e {
                StoreError::Unavailable(m) => StoreError::Unavailable(url::scrub(&m, url)),
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
        Ok(Self::from_pools(pool.clone(), pool))
    }

    /// [`PostgresStore::connect`] then [`PostgresStore::migrate`].
    pub async fn connect_and_migrate(url: &str, settings: PgPoolSettings) -> StoreResult<Self> {
        let store = Self::connect(url, settings).await?;
        store.migrate().await?;
        Ok(store)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let m = url::scrub("a s3cr%40t b s3cr@t c other", url);
        assert!(!m.contains("s3cr") && !m.contains("other"), "{m}");
    }
}
