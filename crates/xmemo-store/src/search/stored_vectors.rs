//! Keeps this node's vectors ([`super::vectors::VectorIndex`]) in step with the `embeddings`
//! table.
//!
//! The vectors of the model a semantic query names are read on first use: those made from
//! the row's current text (no newer change of the row in `fulltext_log`). The worker that
//! writes a vector appends `(kind + 2, key)` to the log in the same transaction, so every
//! node's next catch-up reads it; a change of a row's text makes its vector stale until then
//! (the row is ranked by text alone meanwhile).

use super::follow::{Kind, VECTOR_KIND_OFFSET};
use super::vectors::{Quantized, VectorIndex, from_bytes};
use crate::StoreResult;
use crate::sql::{Dialect, Record, Session, SqlStore, Stmt, in_list};

/// Vectors read per statement while loading.
const LOAD_PAGE: i64 = 5_000;

/// The current vectors of a model: a newer change of the row means the vector is stale.
const CURRENT: &str = "FROM embeddings e WHERE e.model = $1
     AND NOT EXISTS (SELECT 1 FROM fulltext_log l WHERE l.kind = e.kind AND l.key = e.key AND l.seq > e.seq)";

impl<D: Dialect> SqlStore<D> {
    /// Reads the current vectors of `model`, unless this node holds them already.
    pub(super) async fn load_vectors(&self, model: &str) -> StoreResult<()> {
        let loaded = |store: &Self| {
            store
                .fulltext
                .vectors_read()
                .as_ref()
                .is_some_and(|i| i.model() == model)
        };
        if loaded(self) {
            return Ok(());
        }
        // No catch-up while the vectors are read: one that follows applies what was written
        // meanwhile (a vector is replaced only by one made from a newer text).
        let _one_at_a_time = self.fulltext.catching_up.lock().await;
        if loaded(self) {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let mut index = VectorIndex::new(model);
        let mut s = self.read().await?;
        for kind in [Kind::Skills, Kind::Memories] {
            let mut after = String::new();
            loop {
                let rows = s
                    .all(
                        Stmt::new(format!(
                            "SELECT e.key, e.workspace_id, e.seq, e.scale, e.vector {CURRENT}
                             AND e.kind = $2 AND e.key > $3 ORDER BY e.key LIMIT {LOAD_PAGE}"
                        ))
                        .bind(model)
                        .bind(kind as i64)
                        .bind(after.clone()),
                    )
                    .await?;
                let Some(last) = rows.last() else { break };
                after = last.text("key")?;
                for r in &rows {
                    upsert_row::<D>(&mut index, kind, r)?;
                }
                if (rows.len() as i64) < LOAD_PAGE {
                    break;
                }
                tokio::task::yield_now().await;
            }
        }
        tracing::debug!(
            model,
            vectors = index.len(),
            ms = started.elapsed().as_millis() as u64,
            "vectors loaded"
        );
        *self.fulltext.vectors_write() = Some(index);
        Ok(())
    }

    /// Re-reads the vectors of `keys` (their log entries say the worker wrote them).
    pub(crate) async fn reload_vectors(
        &self,
        s: &mut Session<D>,
        kind: Kind,
        keys: &[String],
    ) -> StoreResult<()> {
        let Some(model) = self
            .fulltext
            .vectors_read()
            .as_ref()
            .map(|i| i.model().to_string())
        else {
            return Ok(());
        };
        let rows = s
            .all(
                Stmt::new(format!(
                    "SELECT e.key, e.workspace_id, e.seq, e.scale, e.vector {CURRENT}
                     AND e.kind = $2 AND e.key IN ({})",
                    in_list(3, keys.len())
                ))
                .bind(model.as_str())
                .bind(kind as i64)
                .bind_all(keys),
            )
            .await?;
        let mut guard = self.fulltext.vectors_write();
        if let Some(index) = guard.as_mut().filter(|i| i.model() == model) {
            for key in keys {
                index.remove(kind as u8, key);
            }
            for r in &rows {
                upsert_row::<D>(index, kind, r)?;
            }
        }
        Ok(())
    }
}

fn upsert_row<D: Dialect>(
    index: &mut VectorIndex,
    kind: Kind,
    r: &crate::sql::Row<D>,
) -> StoreResult<()> {
    index.upsert(
        kind as u8,
        &r.text("key")?,
        &r.text("workspace_id")?,
        r.int("seq")?,
        Quantized {
            scale: r.float("scale")? as f32,
            values: from_bytes(&r.bytes("vector")?),
        },
    );
    Ok(())
}

/// The log code of a vector change of `kind`.
pub(crate) fn vector_code(kind: Kind) -> i64 {
    kind as i64 + VECTOR_KIND_OFFSET
}
