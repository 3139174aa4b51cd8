//! `xmemo admin migrate` and `xmemo admin copy`: schema and whole-installation moves.

use crate::output::print_result_one_line;
use crate::settings::{DbArgs, resolve_db_only};
use serde_json::json;
use xmemo_server::bootstrap::open_store_with;
use xmemo_store::snapshot::export_snapshot;
use xmemo_store::verify_audit_chain;

/// Applies pending migrations to the configured database and reports the backend.
pub async fn migrate(db: &DbArgs, as_json: bool) -> anyhow::Result<()> {
    let (data_dir, url) = resolve_db_only(db)?;
    let store = open_store_with(url.as_deref(), &data_dir, true)
        .await
        .map_err(|e| anyhow::anyhow!("cannot migrate the database: {e}"))?;
    print_result_one_line(
        as_json,
        &json!({ "migrated": true, "backend": store.backend() }),
        format!("{} schema is up to date", store.backend()),
    );
    Ok(())
}

/// Copies every row from one database to another, empty one (both migrated first), then
/// checks the target reads back exactly what the source holds.
pub async fn copy(from: &str, to: &str, as_json: bool) -> anyhow::Result<()> {
    let scratch = std::env::temp_dir();
    let source = open_store_with(Some(from), &scratch, true)
        .await
        .map_err(|e| anyhow::anyhow!("cannot open the source database: {e}"))?;
    let target = open_store_with(Some(to), &scratch, true)
        .await
        .map_err(|e| anyhow::anyhow!("cannot open the target database: {e}"))?;
    let snapshot = export_snapshot(source.as_ref())
        .await
        .map_err(|e| anyhow::anyhow!("cannot read the source database: {e}"))?;
    target
        .import_snapshot(&snapshot)
        .await
        .map_err(|e| anyhow::anyhow!("cannot write the target database: {e}"))?;
    let copied = export_snapshot(target.as_ref())
        .await
        .map_err(|e| anyhow::anyhow!("cannot read the target back: {e}"))?;
    if copied != snapshot {
        anyhow::bail!("the target does not read back what was copied; do not use it");
    }
    if let Err(seq) = verify_audit_chain(&copied.audit) {
        anyhow::bail!("the copied audit chain is broken at entry {seq}");
    }
    let counts = target
        .table_counts()
        .await
        .map_err(|e| anyhow::anyhow!("cannot count the target's rows: {e}"))?;
    print_result_one_line(
        as_json,
        &json!({ "from": source.backend(), "to": target.backend(), "rows": counts }),
        format!(
            "copied {} accounts, {} workspaces, {} skills, {} revisions, {} blobs, {} audit entries ({} → {}); verified",
            snapshot.accounts.len(),
            snapshot.workspaces.len(),
            snapshot.skills.len(),
            snapshot.revisions.len(),
            snapshot.blobs.len(),
            snapshot.audit.len(),
            source.backend(),
            target.backend()
        ),
    );
    Ok(())
}
