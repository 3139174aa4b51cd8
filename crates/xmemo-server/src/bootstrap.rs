//! Opening the database a settings block names, and the first-start admin key file.

use crate::error::{ServiceError, ServiceResult};
use crate::service::Service;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use xmemo_store::Store;
use xmemo_store::postgres::{PgPoolSettings, PostgresStore};
use xmemo_store::sqlite::SqliteStore;

/// `sqlite://…` / `sqlite:…` / `postgres://…`, or `None` for SQLite in the data dir; applies
/// pending migrations.
pub async fn open_store(
    database_url: Option<&str>,
    data_dir: &Path,
) -> ServiceResult<Arc<dyn Store>> {
    open_store_with(database_url, data_dir, true).await
}

/// As [`open_store`]; with `migrate == false` the schema is left alone and a database that
/// is behind this binary is refused with a clear error.
pub async fn open_store_with(
    database_url: Option<&str>,
    data_dir: &Path,
    migrate: bool,
) -> ServiceResult<Arc<dyn Store>> {
    match database_url {
        None => {
            std::fs::create_dir_all(data_dir).map_err(|e| {
                ServiceError::Unavailable(format!(
                    "cannot create data directory {}: {e}",
                    data_dir.display()
                ))
            })?;
            let store = SqliteStore::open_with(&data_dir.join("xmemo.db"), migrate).await?;
            Ok(Arc::new(store))
        }
        Some(url) if url.starts_with("sqlite:") => {
            Ok(Arc::new(SqliteStore::open_url(url, migrate).await?))
        }
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            open_postgres(url, migrate).await
        }
        Some(_) => Err(ServiceError::Validation(
            "database URL must start with sqlite: or postgres://".into(),
            None,
        )),
    }
}

async fn open_postgres(url: &str, migrate: bool) -> ServiceResult<Arc<dyn Store>> {
    let store = PostgresStore::connect(url, pool_settings_from_env()).await?;
    if migrate {
        store.migrate().await?;
    } else if !store.schema_is_current().await? {
        return Err(ServiceError::Unavailable(
            "the database schema is behind this binary; run `xmemo admin migrate`".into(),
        ));
    }
    Ok(Arc::new(store))
}

/// Pool settings from `XMEMO_DB_MAX_CONNECTIONS` / `XMEMO_DB_MIN_CONNECTIONS` /
/// `XMEMO_DB_ACQUIRE_TIMEOUT_SECS`, else the defaults.
fn pool_settings_from_env() -> PgPoolSettings {
    let read = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let mut settings = PgPoolSettings::default();
    if let Some(n) = read("XMEMO_DB_MAX_CONNECTIONS") {
        settings.max_connections = n.clamp(1, 1000) as u32;
    }
    if let Some(n) = read("XMEMO_DB_MIN_CONNECTIONS") {
        settings.min_connections = (n as u32).min(settings.max_connections);
    }
    if let Some(n) = read("XMEMO_DB_ACQUIRE_TIMEOUT_SECS") {
        settings.acquire_timeout = std::time::Duration::from_secs(n.clamp(1, 600));
    }
    settings
}

/// Path of the bootstrap admin key file.
pub fn admin_key_path(data_dir: &Path) -> PathBuf {
    data_dir.join("admin.key")
}

/// On an empty database: creates the admin account and key, writes the key to
/// `<data-dir>/admin.key` with mode 0600, and returns that path. The key is never logged.
pub async fn bootstrap_admin(service: &Service, data_dir: &Path) -> ServiceResult<Option<PathBuf>> {
    let Some((_, key)) = service.bootstrap().await? else {
        return Ok(None);
    };
    let path = admin_key_path(data_dir);
    write_secret_file(&path, &key.key)
        .map_err(|e| ServiceError::Unavailable(format!("cannot write {}: {e}", path.display())))?;
    Ok(Some(path))
}

fn write_secret_file(path: &Path, secret: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    writeln!(file, "{secret}")?;
    file.sync_all()
}
