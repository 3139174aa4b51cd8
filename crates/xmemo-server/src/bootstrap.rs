//! Opening the database a settings block names, the first-start admin key file, and the
//! private modes of the data directory and the files in it.

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
            create_private_dir(data_dir).map_err(|e| {
                ServiceError::Unavailable(format!(
                    "cannot create data directory {}: {e}",
                    data_dir.display()
                ))
            })?;
            let store = SqliteStore::open_with(&data_dir.join(SQLITE_FILE), migrate).await?;
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

/// Path of the bootstrap admin password file (for signing in at `/login`).
pub fn admin_password_path(data_dir: &Path) -> PathBuf {
    data_dir.join("admin.password")
}

/// On an empty database: creates the admin account, its key and its password, writes the
/// key to `<data-dir>/admin.key` and the password to `<data-dir>/admin.password`, both with
/// mode 0600, and returns the key's path. Neither secret is ever logged.
pub async fn bootstrap_admin(service: &Service, data_dir: &Path) -> ServiceResult<Option<PathBuf>> {
    let Some((account, key)) = service.bootstrap().await? else {
        return Ok(None);
    };
    let path = admin_key_path(data_dir);
    write_secret_file(&path, &key.key)
        .map_err(|e| ServiceError::Unavailable(format!("cannot write {}: {e}", path.display())))?;
    let password = service.bootstrap_password(&account).await?;
    let password_path = admin_password_path(data_dir);
    write_secret_file(&password_path, &password).map_err(|e| {
        ServiceError::Unavailable(format!("cannot write {}: {e}", password_path.display()))
    })?;
    Ok(Some(path))
}

fn write_secret_file(path: &Path, secret: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        create_private_dir(parent)?;
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

/// The SQLite file these settings name: `xmemo.db` in the data directory without a database
/// URL, the file of a `sqlite:` URL; `None` for PostgreSQL.
pub fn sqlite_database(data_dir: &Path, database_url: Option<&str>) -> Option<PathBuf> {
    match database_url {
        None => Some(data_dir.join(SQLITE_FILE)),
        Some(url) => SqliteStore::url_path(url).map(Path::to_path_buf),
    }
}

/// The database file's name in the data directory.
const SQLITE_FILE: &str = "xmemo.db";

/// Mode of the data directory: it holds the database and the admin key.
pub const DATA_DIR_MODE: u32 = 0o700;
/// Mode of the files in it (database, `-wal`, `-shm`, `admin.key`, `admin.password`).
pub const DATA_FILE_MODE: u32 = xmemo_store::sqlite::DATABASE_FILE_MODE;

/// Creates a missing directory (and its parents) with mode 0700 whatever the umask. An
/// existing directory is left as the operator made it; [`permission_problems`] reports it
/// when it is open to group or others.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        builder.mode(DATA_DIR_MODE);
        builder.create(dir)?;
        // The mode given to mkdir is masked by the umask; this one is not.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DATA_DIR_MODE))
    }
    #[cfg(not(unix))]
    builder.create(dir)
}

/// A data directory or file that group or others may access.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PermissionProblem {
    pub path: PathBuf,
    /// The mode found, e.g. `0755`.
    pub mode: String,
    /// The mode it should have, `0700` or `0600`.
    pub expected: String,
    /// The command that fixes it.
    pub fix: String,
}

/// The data directory and the server's files in it (or the SQLite file a `sqlite:` URL
/// names, with its `-wal` and `-shm`) that are open to group or others. Missing files are
/// not problems.
pub fn permission_problems(data_dir: &Path, database_url: Option<&str>) -> Vec<PermissionProblem> {
    let database = sqlite_database(data_dir, database_url);
    let mut checks = vec![(data_dir.to_path_buf(), DATA_DIR_MODE)];
    if let Some(db) = database {
        for suffix in ["", "-wal", "-shm"] {
            let mut name = db.clone().into_os_string();
            name.push(suffix);
            checks.push((PathBuf::from(name), DATA_FILE_MODE));
        }
    }
    checks.push((admin_key_path(data_dir), DATA_FILE_MODE));
    checks.push((admin_password_path(data_dir), DATA_FILE_MODE));
    checks
        .into_iter()
        .filter_map(|(path, expected)| too_open(&path, expected))
        .collect()
}

#[cfg(unix)]
fn too_open(path: &Path, expected: u32) -> Option<PermissionProblem> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o7777;
    (mode & 0o077 != 0).then(|| PermissionProblem {
        fix: format!("chmod {expected:o} {}", shell_quote(path)),
        path: path.to_path_buf(),
        mode: format!("{mode:04o}"),
        expected: format!("{expected:04o}"),
    })
}

#[cfg(not(unix))]
fn too_open(_path: &Path, _expected: u32) -> Option<PermissionProblem> {
    None
}

/// A path as one shell word, so the printed fix can be pasted.
fn shell_quote(path: &Path) -> String {
    let text = path.display().to_string();
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%".contains(c))
    {
        text
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_created_directory_is_private_and_an_open_one_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a b/data");
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert!(permission_problems(&dir, None).is_empty());

        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.join("admin.key"), "k").unwrap();
        std::fs::set_permissions(
            dir.join("admin.key"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        // Existing directories are not changed behind the operator's back.
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o755);
        let problems = permission_problems(&dir, None);
        let found: Vec<(String, String, String)> = problems
            .iter()
            .map(|p| (p.mode.clone(), p.expected.clone(), p.fix.clone()))
            .collect();
        let quoted = |p: &Path| format!("'{}'", p.display());
        assert_eq!(
            found,
            [
                (
                    "0755".into(),
                    "0700".into(),
                    format!("chmod 700 {}", quoted(&dir))
                ),
                (
                    "0644".into(),
                    "0600".into(),
                    format!("chmod 600 {}", quoted(&dir.join("admin.key")))
                ),
            ]
        );
    }

    #[test]
    fn sqlite_urls_check_their_own_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let db = tmp.path().join("other.db");
        std::fs::write(&db, "").unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o640)).unwrap();
        let url = format!("sqlite:{}", db.display());
        let problems = permission_problems(tmp.path(), Some(&url));
        let paths: Vec<&Path> = problems.iter().map(|p| p.path.as_path()).collect();
        assert_eq!(paths, [db.as_path()]);
        // PostgreSQL: only the directory and the admin key are ours.
        assert!(permission_problems(tmp.path(), Some("postgres://h/db")).is_empty());
    }
}
