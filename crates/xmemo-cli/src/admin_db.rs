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

/// What `xmemo admin verify` found wrong, at most this many listed.
const PROBLEMS_SHOWN: usize = 20;

/// Reads the whole installation and checks what can be recomputed: the audit chain, every
/// stored file's hash against its bytes, every revision's canonical hash against its fields
/// and component hashes (and that each component's file is there). Run it after any restore.
pub async fn verify(db: &DbArgs, as_json: bool) -> anyhow::Result<()> {
    let (data_dir, url) = resolve_db_only(db)?;
    let store = open_store_with(url.as_deref(), &data_dir, false)
        .await
        .map_err(|e| anyhow::anyhow!("cannot open the database: {e}"))?;
    let snapshot = export_snapshot(store.as_ref())
        .await
        .map_err(|e| anyhow::anyhow!("cannot read the database: {e}"))?;
    let mut problems = Vec::new();
    if let Err(seq) = verify_audit_chain(&snapshot.audit) {
        problems.push(format!("the audit chain is broken at entry {seq}"));
    }
    let mut blobs = std::collections::BTreeSet::new();
    for blob in &snapshot.blobs {
        if xmemo_core::content_hash(&blob.bytes) != blob.content_hash {
            problems.push(format!(
                "the file stored as {} does not hash to it",
                blob.content_hash
            ));
        }
        blobs.insert(blob.content_hash.as_str());
    }
    for r in &snapshot.revisions {
        let recomputed = xmemo_core::canonical_hash(
            &r.name,
            &r.description,
            &r.metadata,
            &r.instruction_body,
            &xmemo_store::hashed_components(&r.components),
        );
        if recomputed != r.canonical_hash {
            problems.push(format!(
                "revision {} hashes to {recomputed}, not its stored {}",
                r.revision_id, r.canonical_hash
            ));
        }
        for c in &r.components {
            if !blobs.contains(c.content_hash.as_str()) {
                problems.push(format!(
                    "revision {} lacks the file of {} ({})",
                    r.revision_id, c.logical_path, c.content_hash
                ));
            }
        }
    }
    let counts = store
        .table_counts()
        .await
        .map_err(|e| anyhow::anyhow!("cannot count the rows: {e}"))?;
    let summary = format!(
        "{} audit entries, {} revisions, {} files, {} memories",
        snapshot.audit.len(),
        snapshot.revisions.len(),
        snapshot.blobs.len(),
        snapshot.memories.len()
    );
    let ok = problems.is_empty();
    let shown: Vec<&String> = problems.iter().take(PROBLEMS_SHOWN).collect();
    print_result_one_line(
        as_json,
        &json!({ "ok": ok, "backend": store.backend(), "rows": counts, "problems": shown,
                 "problem_count": problems.len() }),
        if ok {
            format!(
                "verified {} ({summary}): audit chain intact, every hash recomputed and equal",
                store.backend()
            )
        } else {
            format!(
                "{} problems in {} ({summary}):\n{}",
                problems.len(),
                store.backend(),
                shown
                    .iter()
                    .map(|p| format!("  {p}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        },
    );
    if !ok {
        anyhow::bail!("verification failed: {} problems", problems.len());
    }
    Ok(())
}
