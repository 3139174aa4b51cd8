//! `xmemo admin backup` and `xmemo admin restore`: a checked copy of a (running) SQLite
//! installation, and putting one back into a new data directory (docs/operations.md).
//! PostgreSQL installations use `pg_dump`/`pg_restore`; both commands say so.

use crate::output::print_result_one_line;
use crate::settings::{DbArgs, resolve_db_only};
use anyhow::Context;
use serde_json::json;
use std::path::{Path, PathBuf};
use xmemo_server::bootstrap::create_private_dir;
use xmemo_store::sqlite::SqliteStore;
use xmemo_store::sqlite::backup::{copy_live, quick_check};
use xmemo_store::{Store, verify_audit_chain};

/// The SQLite file these settings name, or why there is none to copy.
fn sqlite_file(data_dir: &Path, url: Option<&str>) -> anyhow::Result<PathBuf> {
    match url {
        None => Ok(data_dir.join("xmemo.db")),
        Some(u) => SqliteStore::url_path(u).map(Path::to_path_buf).ok_or_else(|| {
            anyhow::anyhow!(
                "this is a PostgreSQL installation: back it up with pg_dump -Fc and restore it with pg_restore, then run `xmemo admin audit verify` (docs/operations.md)"
            )
        }),
    }
}

/// What a checked copy holds.
struct Checked {
    audit_entries: usize,
    rows: std::collections::BTreeMap<String, u64>,
}

/// SQLite's quick_check, then the audit chain and row counts read through the store.
async fn check_copy(path: &Path) -> anyhow::Result<Checked> {
    let file = path.to_path_buf();
    tokio::task::spawn_blocking(move || quick_check(&file))
        .await
        .context("the check stopped")??;
    let store = SqliteStore::open_with(path, false)
        .await
        .map_err(|e| anyhow::anyhow!("cannot open the copy {}: {e}", path.display()))?;
    let entries = store
        .list_audit(&xmemo_store::AuditFilter::default())
        .await
        .map_err(|e| anyhow::anyhow!("cannot read the copy's audit log: {e}"))?;
    if let Err(seq) = verify_audit_chain(&entries) {
        anyhow::bail!(
            "the copy's audit chain is broken at entry {seq}: do not rely on {}",
            path.display()
        );
    }
    let rows = store
        .table_counts()
        .await
        .map_err(|e| anyhow::anyhow!("cannot count the copy's rows: {e}"))?;
    Ok(Checked {
        audit_entries: entries.len(),
        rows,
    })
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Copies the live database to `to` (a new file), checks the copy, and reports what it holds.
pub async fn backup(db: &DbArgs, to: &Path, as_json: bool) -> anyhow::Result<()> {
    let (data_dir, url) = resolve_db_only(db)?;
    let source = sqlite_file(&data_dir, url.as_deref())?;
    if !source.is_file() {
        anyhow::bail!("there is no database at {}", source.display());
    }
    let report = take(&source, to).await?;
    print_result_one_line(
        as_json,
        &json!({
            "backup": to.display().to_string(),
            "bytes": report.1,
            "audit_entries": report.0.audit_entries,
            "rows": report.0.rows,
        }),
        format!(
            "backed up {} to {} ({} bytes; quick_check ok; audit chain intact, {} entries)",
            source.display(),
            to.display(),
            report.1,
            report.0.audit_entries
        ),
    );
    Ok(())
}

/// One checked backup of `source` into `to`: written beside it as `.partial`, checked by
/// SQLite, renamed, then its audit chain verified (a copy that fails is renamed `.broken`).
async fn take(source: &Path, to: &Path) -> anyhow::Result<(Checked, u64)> {
    if to.exists() {
        anyhow::bail!("{} exists; a backup never overwrites a file", to.display());
    }
    let partial = with_suffix(to, ".partial");
    let _ = std::fs::remove_file(&partial);
    let (from, into) = (source.to_path_buf(), partial.clone());
    tokio::task::spawn_blocking(move || copy_live(&from, &into))
        .await
        .context("the copy stopped")??;
    let check = partial.clone();
    if let Err(e) = tokio::task::spawn_blocking(move || quick_check(&check))
        .await
        .context("the check stopped")?
    {
        let _ = std::fs::remove_file(&partial);
        return Err(e.into());
    }
    std::fs::rename(&partial, to)
        .with_context(|| format!("cannot rename the copy to {}", to.display()))?;
    match check_copy(to).await {
        Ok(checked) => {
            let bytes = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
            Ok((checked, bytes))
        }
        Err(e) => {
            let _ = std::fs::rename(to, with_suffix(to, ".broken"));
            Err(e)
        }
    }
}

/// Puts the backup `from` into the data directory of these settings, which must hold no
/// database: a restore never replaces one a server may be using.
pub async fn restore(db: &DbArgs, from: &Path, as_json: bool) -> anyhow::Result<()> {
    let (data_dir, url) = resolve_db_only(db)?;
    let target = sqlite_file(&data_dir, url.as_deref())?;
    let holds_data = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.len() > 0);
    if holds_data(&target) || holds_data(&with_suffix(&target, "-wal")) {
        anyhow::bail!(
            "{} already holds a database; a restore never replaces one (a server may be using it, and its newer writes would be lost). Restore into a new data directory (xmemo admin restore --from {} --data-dir NEW_DIR), then start the server on it",
            target.display(),
            from.display()
        );
    }
    if !from.is_file() {
        anyhow::bail!("there is no backup at {}", from.display());
    }
    let file = from.to_path_buf();
    tokio::task::spawn_blocking(move || quick_check(&file))
        .await
        .context("the check stopped")?
        .map_err(|e| anyhow::anyhow!("{e}: not restored"))?;
    if let Some(dir) = target.parent() {
        create_private_dir(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let partial = with_suffix(&target, ".partial");
    let _ = std::fs::remove_file(&partial);
    let (src, dst) = (from.to_path_buf(), partial.clone());
    tokio::task::spawn_blocking(move || copy_private(&src, &dst))
        .await
        .context("the copy stopped")?
        .with_context(|| format!("cannot copy {} into {}", from.display(), data_dir.display()))?;
    // The empty file a server may have created is replaced; a non-empty one was refused.
    for leftover in [target.clone(), with_suffix(&target, "-shm")] {
        let _ = std::fs::remove_file(leftover);
    }
    std::fs::rename(&partial, &target)
        .with_context(|| format!("cannot put the database at {}", target.display()))?;
    let checked = check_copy(&target).await?;
    print_result_one_line(
        as_json,
        &json!({
            "restored": target.display().to_string(),
            "audit_entries": checked.audit_entries,
            "rows": checked.rows,
        }),
        format!(
            "restored {} into {} (audit chain intact, {} entries); start the server with --data-dir {} — keys, accounts and passwords are in the database, so they work as before",
            from.display(),
            target.display(),
            checked.audit_entries,
            data_dir.display()
        ),
    );
    Ok(())
}

/// Copies `from` to the new file `to` with mode 0600, synced to disk.
fn copy_private(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut source = std::fs::File::open(from)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(xmemo_store::sqlite::DATABASE_FILE_MODE);
    }
    let mut target = options.open(to)?;
    std::io::copy(&mut source, &mut target)?;
    target.sync_all()
}
