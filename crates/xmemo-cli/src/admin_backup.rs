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
    xmemo_server::bootstrap::sqlite_database(data_dir, url).ok_or_else(|| {
        anyhow::anyhow!(
            "this is a PostgreSQL installation: back it up with pg_dump -Fc and restore it with pg_restore, then run `xmemo admin verify` (docs/operations.md)"
        )
    })
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

/// Scheduled backups are named `xmemo-<UTC time>.db`, so their names sort by age.
const SCHEDULED_PREFIX: &str = "xmemo-";
const SCHEDULED_SUFFIX: &str = ".db";

/// The scheduled backups in `dir`, oldest first.
pub fn scheduled_backups(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                        n.starts_with(SCHEDULED_PREFIX) && n.ends_with(SCHEDULED_SUFFIX)
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// Takes a backup of `source` into the schedule's folder now, then deletes all but the newest
/// `keep`. Returns the new file.
pub async fn scheduled_backup(
    source: &Path,
    schedule: &crate::settings::BackupSchedule,
) -> anyhow::Result<PathBuf> {
    create_private_dir(&schedule.dir)
        .with_context(|| format!("cannot create {}", schedule.dir.display()))?;
    let stamp = xmemo_store::now().replace(':', "");
    let file = schedule
        .dir
        .join(format!("{SCHEDULED_PREFIX}{stamp}{SCHEDULED_SUFFIX}"));
    take(source, &file).await?;
    let all = scheduled_backups(&schedule.dir);
    let surplus = all.len().saturating_sub(schedule.keep);
    for old in &all[..surplus] {
        std::fs::remove_file(old).with_context(|| format!("cannot delete {}", old.display()))?;
    }
    Ok(file)
}

/// Runs the schedule for as long as the server runs: one backup at once, then one every
/// `schedule.every`. A failed backup is logged and tried again at the next turn.
pub fn start_schedule(
    source: PathBuf,
    schedule: crate::settings::BackupSchedule,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(schedule.every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            match scheduled_backup(&source, &schedule).await {
                Ok(file) => {
                    tracing::info!(file = %file.display(), keep = schedule.keep, "scheduled backup taken and checked")
                }
                Err(e) => {
                    tracing::error!(dir = %schedule.dir.display(), "scheduled backup failed: {e:#}")
                }
            }
        }
    })
}

/// How the newest scheduled backup stands, for `xmemo admin doctor`: a warning when there is
/// none or it is older than twice the schedule.
pub fn schedule_report(schedule: &crate::settings::BackupSchedule) -> serde_json::Value {
    let all = scheduled_backups(&schedule.dir);
    let every = schedule.every.as_secs();
    let Some(newest) = all.last() else {
        return json!({"ok": false, "dir": schedule.dir, "every_secs": every, "count": 0,
            "warning": format!("no scheduled backup in {} yet", schedule.dir.display())});
    };
    let age = std::fs::metadata(newest)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .map_or(u64::MAX, |d| d.as_secs());
    let mut report = json!({"ok": true, "dir": schedule.dir, "every_secs": every,
        "count": all.len(), "newest": newest, "newest_age_secs": age});
    if age > every.saturating_mul(2) {
        report["ok"] = json!(false);
        report["warning"] = json!(format!(
            "the newest backup, {}, is {age} s old: more than twice the schedule ({every} s); is the server running, and can it write to {}?",
            newest.display(),
            schedule.dir.display()
        ));
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::BackupSchedule;
    use std::time::Duration;

    #[tokio::test]
    async fn the_schedule_keeps_exactly_the_newest_backups() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let source = tmp.path().join("xmemo.db");
        drop(SqliteStore::open(&source).await.expect("a database"));
        let schedule = BackupSchedule {
            dir: tmp.path().join("backups"),
            every: Duration::from_secs(3600),
            keep: 2,
        };
        let mut taken = Vec::new();
        for _ in 0..4 {
            taken.push(scheduled_backup(&source, &schedule).await.expect("backup"));
            // Names carry the time to the millisecond.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(scheduled_backups(&schedule.dir), taken[2..].to_vec());
        let report = schedule_report(&schedule);
        assert_eq!(report["ok"], true, "{report}");
        assert_eq!(report["count"], 2);

        // A newest backup older than twice the schedule is reported.
        let old = std::time::SystemTime::now() - Duration::from_secs(3 * 3600);
        std::fs::File::options()
            .write(true)
            .open(&taken[3])
            .and_then(|f| f.set_modified(old))
            .expect("age the backup");
        let report = schedule_report(&schedule);
        assert_eq!(report["ok"], false, "{report}");
        assert!(
            report["warning"]
                .as_str()
                .is_some_and(|w| w.contains("more than twice the schedule")),
            "{report}"
        );
        let empty = BackupSchedule {
            dir: tmp.path().join("none"),
            ..schedule
        };
        assert_eq!(schedule_report(&empty)["ok"], false);
    }
}
