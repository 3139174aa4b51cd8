//! The migration runner: every pending script of the dialect, in order, in one transaction
//! (both SQLite and PostgreSQL have transactional DDL), under the dialect's migration lock.

use super::{Dialect, SqlStore, Stmt};
use crate::model::now;
use crate::{Record, StoreError, StoreResult};

/// The migration list of a dialect folder under `migrations/` (one place names the files).
#[macro_export]
macro_rules! embed_migrations {
    ($dialect:literal) => {
        &[
            $crate::migrate::Migration {
                version: 1,
                name: "init",
                sql: include_str!(concat!("../../migrations/", $dialect, "/0001_init.sql")),
            },
            $crate::migrate::Migration {
                version: 2,
                name: "revision_source",
                sql: include_str!(concat!(
                    "../../migrations/",
                    $dialect,
                    "/0002_revision_source.sql"
                )),
            },
            $crate::migrate::Migration {
                version: 3,
                name: "invitations",
                sql: include_str!(concat!(
                    "../../migrations/",
                    $dialect,
                    "/0003_invitations.sql"
                )),
            },
            $crate::migrate::Migration {
                version: 4,
                name: "memories",
                sql: include_str!(concat!("../../migrations/", $dialect, "/0004_memories.sql")),
            },
            $crate::migrate::Migration {
                version: 5,
                name: "sessions_oauth",
                sql: include_str!(concat!(
                    "../../migrations/",
                    $dialect,
                    "/0005_sessions_oauth.sql"
                )),
            },
            $crate::migrate::Migration {
                version: 6,
                name: "console",
                sql: include_str!(concat!("../../migrations/", $dialect, "/0006_console.sql")),
            },
            $crate::migrate::Migration {
                version: 7,
                name: "exact_name",
                sql: include_str!(concat!(
                    "../../migrations/",
                    $dialect,
                    "/0007_exact_name.sql"
                )),
            },
            $crate::migrate::Migration {
                version: 8,
                name: "fulltext_log",
                sql: include_str!(concat!(
                    "../../migrations/",
                    $dialect,
                    "/0008_fulltext_log.sql"
                )),
            },
            $crate::migrate::Migration {
                version: 9,
                name: "drop_fts",
                sql: include_str!(concat!("../../migrations/", $dialect, "/0009_drop_fts.sql")),
            },
            $crate::migrate::Migration {
                version: 10,
                name: "budgets_quotas",
                sql: include_str!(concat!(
                    "../../migrations/",
                    $dialect,
                    "/0010_budgets_quotas.sql"
                )),
            },
            $crate::migrate::Migration {
                version: 11,
                name: "revisions_canonical_hash",
                sql: include_str!(concat!(
                    "../../migrations/",
                    $dialect,
                    "/0011_revisions_canonical_hash.sql"
                )),
            },
            $crate::migrate::Migration {
                version: 12,
                name: "embeddings",
                sql: include_str!(concat!(
                    "../../migrations/",
                    $dialect,
                    "/0012_embeddings.sql"
                )),
            },
            $crate::migrate::Migration {
                version: 13,
                name: "fulltext_log_floor",
                sql: include_str!(concat!(
                    "../../migrations/",
                    $dialect,
                    "/0013_fulltext_log_floor.sql"
                )),
            },
            $crate::migrate::Migration {
                version: 14,
                name: "node_quotas",
                sql: include_str!(concat!(
                    "../../migrations/",
                    $dialect,
                    "/0014_node_quotas.sql"
                )),
            },
            $crate::migrate::Migration {
                version: 15,
                name: "revisions_published_card",
                sql: include_str!(concat!(
                    "../../migrations/",
                    $dialect,
                    "/0015_revisions_published_card.sql"
                )),
            },
            $crate::migrate::Migration {
                version: 16,
                name: "memories_in_scope_order",
                sql: include_str!(concat!(
                    "../../migrations/",
                    $dialect,
                    "/0016_memories_in_scope_order.sql"
                )),
            },
            $crate::migrate::Migration {
                version: 17,
                name: "revision_safety",
                sql: include_str!(concat!(
                    "../../migrations/",
                    $dialect,
                    "/0017_revision_safety.sql"
                )),
            },
        ]
    };
}

const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)";

async fn applied<D: Dialect>(s: &mut super::Session<D>) -> StoreResult<Vec<i64>> {
    s.all(Stmt::new("SELECT version FROM schema_migrations"))
        .await?
        .iter()
        .map(|r| r.int("version"))
        .collect()
}

pub async fn migrate<D: Dialect>(store: &SqlStore<D>) -> StoreResult<()> {
    let mut s = store.write().await?;
    s.lock(D::LOCK_MIGRATIONS).await?;
    s.execute(Stmt::new(CREATE_TABLE)).await?;
    let done = applied(&mut s).await?;
    for m in D::MIGRATIONS.iter().filter(|m| !done.contains(&m.version)) {
        s.script(m.sql).await.map_err(|e| {
            StoreError::Internal(format!("migration {} ({}) failed: {e}", m.version, m.name))
        })?;
        s.execute(
            Stmt::new(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
            )
            .bind(m.version)
            .bind(m.name)
            .bind(now()),
        )
        .await?;
        tracing::info!(
            backend = D::BACKEND,
            version = m.version,
            name = m.name,
            "applied migration"
        );
    }
    s.commit().await
}

pub async fn schema_is_current<D: Dialect>(store: &SqlStore<D>) -> StoreResult<bool> {
    let mut s = store.read().await?;
    let exists = s
        .one(Stmt::new(D::SCHEMA_TABLE_EXISTS), "schema check")
        .await?;
    if exists.int("n")? == 0 {
        return Ok(false);
    }
    let done = applied(&mut s).await?;
    Ok(D::MIGRATIONS.iter().all(|m| done.contains(&m.version)))
}
