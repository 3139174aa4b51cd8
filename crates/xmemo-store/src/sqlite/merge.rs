//! Keeps the full-text indexes merged while the writer is idle.
//!
//! FTS5 writes every transaction's rows as a new b-tree segment and merges segments only a few
//! at a time, so an index built by many small saves holds dozens of them, and every word of a
//! query is looked up in each (a 1,000-skill index held 66 records as the saves left it, 44
//! merged; the search-time gain at that size was not established, docs/benchmarks.md).
//! After a pause in writes, this task
//! merges a bounded number of pages at a time (`'merge', -N`: every segment is eligible, so
//! repeated runs end with one) until a run changes nothing, taking the writer like any write,
//! so saves wait at most one step.

use super::lite::{LitePool, WeakPool};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long the writer must have been idle before merging starts.
const QUIET: Duration = Duration::from_millis(500);
/// Pages written per step (4 KiB each): a step holds the writer for a few milliseconds.
const STEP: &[&str] = &[
    "INSERT INTO skills_fts (skills_fts, rank) VALUES ('merge', -64)",
    "INSERT INTO memories_fts (memories_fts, rank) VALUES ('merge', -64)",
];

/// Starts the maintenance of `writer`'s database on the current runtime (none outside one);
/// it ends when the pool is closed or dropped. Answers the count of merge steps run so far.
pub fn spawn(writer: &LitePool) -> Arc<AtomicU64> {
    let steps = Arc::new(AtomicU64::new(0));
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return steps;
    };
    let weak = writer.downgrade();
    let counted = steps.clone();
    runtime.spawn(async move {
        // The index as found on start is merged too (after the first pause).
        let mut merged_at = u64::MAX;
        let mut seen = 0;
        loop {
            tokio::time::sleep(QUIET).await;
            let Some(commits) = writer_commits(&weak) else {
                return;
            };
            if commits == merged_at {
                continue;
            }
            if commits != seen {
                // Still writing: wait for a pause.
                seen = commits;
                continue;
            }
            match merge_until_done(&weak, &counted).await {
                Some(()) => merged_at = commits,
                None => return,
            }
        }
    });
    steps
}

fn writer_commits(weak: &WeakPool) -> Option<u64> {
    weak.upgrade()
        .filter(|pool| !pool.is_closed())
        .map(|pool| pool.commits())
}

/// Merges step by step until a step changes nothing or saves resume; `None` once the pool is
/// gone.
async fn merge_until_done(weak: &WeakPool, steps: &AtomicU64) -> Option<()> {
    loop {
        let pool = weak.upgrade().filter(|pool| !pool.is_closed())?;
        steps.fetch_add(1, Ordering::Relaxed);
        let before = pool.commits();
        let mut worked = false;
        for sql in STEP {
            match pool.run_alone(sql).await {
                // The command counts as one change itself; FTS5 documents a difference of
                // two or more as work done.
                Ok(changes) => worked |= changes >= 2,
                Err(e) => {
                    tracing::warn!(error = %e, "full-text index merge failed; retried after the next writes");
                    return Some(());
                }
            }
        }
        if !worked || pool.commits() != before {
            return Some(());
        }
        drop(pool);
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::driver::{Driver, Held, Record, Stmt};
    use crate::sqlite::lite::{Access, Lite};

    async fn count(pool: &LitePool, sql: &'static str) -> i64 {
        let mut held = Held::<Lite>::Pooled(Lite::acquire(pool).await.unwrap());
        let row = Lite::fetch_optional(&mut held, Stmt::new(sql))
            .await
            .unwrap()
            .unwrap();
        row.int("n").unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_index_built_by_many_commits_is_merged_once_writes_pause() {
        let dir = tempfile::tempdir().unwrap();
        let writer = LitePool::open(&dir.path().join("t.db"), Access::ReadWrite, 1).unwrap();
        let mut held = Held::<Lite>::Pooled(Lite::acquire(&writer).await.unwrap());
        Lite::run_script(
            &mut held,
            "CREATE VIRTUAL TABLE skills_fts USING fts5(body);
             CREATE VIRTUAL TABLE memories_fts USING fts5(body);",
        )
        .await
        .unwrap();
        drop(held);
        let steps = spawn(&writer);
        for i in 0..40 {
            let mut tx = Held::<Lite>::Tx(Lite::begin(&writer).await.unwrap());
            Lite::execute(
                &mut tx,
                Stmt::new("INSERT INTO skills_fts (body) VALUES ($1)")
                    .bind(format!("word{i} shared text")),
            )
            .await
            .unwrap();
            let Held::Tx(tx) = tx else { unreachable!() };
            Lite::commit(tx).await.unwrap();
        }
        let data = "SELECT COUNT(*) AS n FROM skills_fts_data";
        let unmerged = count(&writer, data).await;
        let mut merged = unmerged;
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            merged = count(&writer, data).await;
            if merged < unmerged / 2 {
                break;
            }
        }
        assert!(
            merged < unmerged / 2,
            "40 one-row segments: {unmerged} index records before, {merged} after"
        );
        let hits = count(
            &writer,
            "SELECT COUNT(*) AS n FROM skills_fts WHERE skills_fts MATCH 'shared'",
        )
        .await;
        assert_eq!(hits, 40, "merging loses no row");
        // Once merged, the task stops: no step runs until the next writes.
        tokio::time::sleep(QUIET * 2).await;
        let settled = steps.load(Ordering::Relaxed);
        tokio::time::sleep(QUIET * 3).await;
        assert_eq!(
            steps.load(Ordering::Relaxed),
            settled,
            "merge steps go on over a merged index"
        );
        writer.close().await;
    }
}
