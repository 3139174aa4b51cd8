//! SQLite backend: WAL, foreign keys on, one writer connection (so every write transaction is
//! serialised and revision numbers are gap-free without row locks) and a pool of read-only
//! connections.

use crate::migrate::Migration;
use crate::sql::{Dialect, SqlStore};
use crate::{StoreError, StoreResult};
use std::path::Path;

pub mod backup;
pub(crate) mod lite;

pub struct Sqlite;

/// The SQLite store.
pub type SqliteStore = SqlStore<Sqlite>;

impl Dialect for Sqlite {
    const PUBLISHED_CARD: &'static str = " INDEXED BY revisions_published_card";
    type Driver = lite::Lite;
    const BACKEND: &'static str = "sqlite";
    const MIGRATIONS: &'static [Migration] = crate::embed_migrations!("sqlite");
    const SCHEMA_TABLE_EXISTS: &'static str = "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'";
}

impl SqlStore<Sqlite> {
    /// Opens (creating if needed) the database file and applies pending migrations.
    pub async fn open(path: &Path) -> StoreResult<Self> {
        Self::open_with(path, true).await
    }

    /// Opens the database file; with `migrate == false` nothing is changed and a schema that
    /// is behind this binary is refused (for operators who migrate explicitly).
    pub async fn open_with(path: &Path, migrate: bool) -> StoreResult<Self> {
        create_private_file(path).map_err(|e| {
            StoreError::Unavailable(format!("cannot create {}: {e}", path.display()))
        })?;
        let writer = lite::LitePool::open(path, lite::Access::ReadWrite, 1)?;
        let setup = Self::from_pools(writer.clone(), writer.clone());
        if migrate {
            setup.migrate().await?;
        } else if !setup.schema_is_current().await? {
            return Err(StoreError::Unavailable(
                "the database schema is behind this binary; run `xmemo admin migrate`".into(),
            ));
        }
        let readers = std::thread::available_parallelism()
            .map(|n| n.get() as u32 * 2)
            .unwrap_or(4)
            .max(4);
        let reader = lite::LitePool::open(path, lite::Access::ReadOnly, readers)?;
        Ok(Self::from_pools(reader, writer))
    }

    /// The file a `sqlite:` URL names (`sqlite://path` or `sqlite:path`).
    pub fn url_path(url: &str) -> Option<&Path> {
        url.strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .map(Path::new)
    }

    /// `sqlite://path` or `sqlite:path` URL.
    pub async fn open_url(url: &str, migrate: bool) -> StoreResult<Self> {
        let path = Self::url_path(url)
            .ok_or_else(|| StoreError::Unavailable("not a sqlite: URL".into()))?;
        Self::open_with(path, migrate).await
    }
}

/// Mode of a database file this store creates: the file holds every skill and key hash.
pub const DATABASE_FILE_MODE: u32 = 0o600;

/// Creates a missing database file empty (a valid empty SQLite database) with mode 0600 before
/// SQLite opens it, whatever the umask: SQLite itself would create it 0644 minus the umask.
/// Its `-wal` and `-shm` files are created later by SQLite with the database file's own
/// mode, so they are 0600 too. An existing file is left as it is (`xmemo admin doctor`
/// reports one that is too open).
fn create_private_file(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(DATABASE_FILE_MODE);
    }
    match options.open(path) {
        Ok(file) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                file.set_permissions(std::fs::Permissions::from_mode(DATABASE_FILE_MODE))?;
            }
            file.sync_all()
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}
