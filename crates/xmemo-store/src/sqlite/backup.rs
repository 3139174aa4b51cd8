//! Copies of a SQLite installation: a consistent copy of a running database, and the check a
//! copy must pass before anyone relies on it. Blocking (file I/O): callers run them off the
//! async workers.

use crate::{StoreError, StoreResult};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;

/// Writes a consistent copy of the database at `from` into `to`, a new file (mode 0600).
///
/// `VACUUM INTO` reads the database in one read transaction on its own read-only connection:
/// the copy is the database as of one instant, and the server keeps serving writes meanwhile
/// (WAL: readers never block the writer). The copy is compact and holds no WAL of its own.
pub fn copy_live(from: &Path, to: &Path) -> StoreResult<()> {
    if to.exists() {
        return Err(StoreError::Unavailable(format!(
            "{} already exists; a backup never overwrites a file",
            to.display()
        )));
    }
    // Created empty and private first: VACUUM INTO writes into an empty file, and would
    // create a missing one with the umask's mode.
    super::create_private_file(to)
        .map_err(|e| StoreError::Unavailable(format!("cannot create {}: {e}", to.display())))?;
    let source = Connection::open_with_flags(
        from,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| unavailable("cannot open the database", from, e))?;
    source
        .busy_timeout(std::time::Duration::from_secs(30))
        .map_err(|e| unavailable("cannot open the database", from, e))?;
    let target = to
        .to_str()
        .ok_or_else(|| StoreError::Unavailable(format!("{} is not a UTF-8 path", to.display())))?;
    if let Err(e) = source.execute("VACUUM INTO ?1", [target]) {
        let _ = std::fs::remove_file(to);
        return Err(unavailable("cannot copy the database", from, e));
    }
    Ok(())
}

/// SQLite's own consistency check of the file at `path` (`PRAGMA quick_check`), read only.
pub fn quick_check(path: &Path) -> StoreResult<()> {
    let db = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| unavailable("cannot open", path, e))?;
    let verdict: String = db
        .query_row("PRAGMA quick_check", [], |row| row.get(0))
        .map_err(|e| unavailable("cannot check", path, e))?;
    if verdict == "ok" {
        Ok(())
    } else {
        Err(StoreError::Unavailable(format!(
            "{} fails SQLite's quick_check: {verdict}",
            path.display()
        )))
    }
}

fn unavailable(what: &str, path: &Path, e: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(format!("{what} {}: {e}", path.display()))
}
