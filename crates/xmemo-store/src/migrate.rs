//! Embedded migrations: each backend lists its ordered SQL files; applied versions are
//! recorded in `schema_migrations` (see `crate::sql::migrations`).

/// One embedded migration script.
pub struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub sql: &'static str,
}
