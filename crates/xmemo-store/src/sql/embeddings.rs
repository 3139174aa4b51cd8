//! The semantic lane's durable queue: `fulltext_log` (every committed change of a row's text,
//! in commit order) read past each model's position in `embedding_progress`, after a backfill
//! of the rows older than the lane. One worker at a time holds a model's lease, so on several
//! nodes sharing a database one node embeds each change.

use super::{Dialect, Record, Session, SqlStore, Stmt, in_list};
use crate::StoreResult;
use crate::model::{
    EmbeddedRow, EmbeddingJob, EmbeddingKind, EmbeddingLag, EmbeddingProgress, EmbeddingWork, now,
    parse_instant,
};
use crate::search::follow::{FLOOR_SEQ, Kind, NEWEST_SEQ};
use crate::search::stored_vectors::vector_code;
use crate::search::vectors::{quantize, to_bytes};
use std::collections::BTreeMap;

/// Log entries of rows' texts (not of their vectors), as a condition on `fulltext_log`. Written
/// `kind + 0` so SQLite walks the log by `seq` from the worker's position: with `kind IN (0, 1)`
/// its planner took the `(kind, key, seq)` index, read every entry of those kinds and sorted
/// them, each round (issue #30: at 100k memories most of the worker's time, and the saves
/// waiting behind it).
const ROW_KINDS: &str = "kind + 0 IN (0, 1)";

/// The worker's next `limit` log entries of rows' texts after its position (`$1`), up to `$2`.
fn row_log_page(limit: usize) -> String {
    format!(
        "SELECT seq, kind, key FROM fulltext_log
         WHERE seq > $1 AND seq <= $2 AND {ROW_KINDS} ORDER BY seq LIMIT {limit}"
    )
}

/// How many log entries of rows' texts follow the worker's position (`$1`).
fn row_log_pending() -> String {
    format!("SELECT COUNT(*) AS n FROM fulltext_log WHERE seq > $1 AND {ROW_KINDS}")
}

fn kind_of(k: EmbeddingKind) -> Kind {
    match k {
        EmbeddingKind::Skill => Kind::Skills,
        EmbeddingKind::Memory => Kind::Memories,
    }
}

fn embedding_kind(k: Kind) -> EmbeddingKind {
    match k {
        Kind::Skills => EmbeddingKind::Skill,
        Kind::Memories => EmbeddingKind::Memory,
    }
}

/// Characters of the memory saved just before in the same scope that the semantic lane
/// embeds with a memory (docs/decisions.md, "Semantic recall": a lone "Yes, yesterday" means
/// nothing; on the conversation benchmark the previous turn's start lifts the hybrid's R@5).
pub(crate) const CONTEXT_CHARS: usize = 300;

/// The rows the worker embeds: [`Kind::rows`], memories with the content of the active
/// memory saved just before in the same workspace and project (`before`; memory ids are
/// time-ordered, and migration 0016 indexes them per scope).
fn embedding_rows(kind: Kind) -> &'static str {
    match kind {
        Kind::Skills => kind.rows(),
        Kind::Memories => {
            "SELECT m.memory_id AS key, m.workspace_id, COALESCE(m.title, '') AS title, m.content, m.tags,
                    COALESCE((SELECT p.content FROM memories p
                              WHERE p.workspace_id = m.workspace_id AND p.project = m.project
                                AND p.memory_id < m.memory_id AND p.status = 'active'
                              ORDER BY p.memory_id DESC LIMIT 1), '') AS before
             FROM memories m WHERE 1 = 1"
        }
    }
}

/// The text the semantic lane embeds of a row of [`embedding_rows`]: what Level 0 shows of a
/// skill; a memory's title, content and tags, then the first [`CONTEXT_CHARS`] of the memory
/// before it. The vector follows the memory's own changes (the log), not its neighbour's.
fn text_of<D: Dialect>(kind: Kind, r: &super::Row<D>) -> StoreResult<String> {
    Ok(match kind {
        Kind::Skills => format!("{}\n{}", r.text("name")?, r.text("description")?),
        Kind::Memories => {
            let title = r.text("title")?;
            let tags = r.text("tags")?;
            let mut text = String::new();
            if !title.is_empty() {
                text.push_str(&title);
                text.push('\n');
            }
            text.push_str(&r.text("content")?);
            if !tags.is_empty() && tags != "[]" {
                text.push('\n');
                text.push_str(&tags);
            }
            let before = r.text("before")?;
            if !before.is_empty() {
                text.push('\n');
                text.extend(before.chars().take(CONTEXT_CHARS));
            }
            text
        }
    })
}

/// Whether a lease held until `held` has more than half of a new lease (until `wanted`,
/// from now) left. Instants are the store's fixed-width UTC format; one that does not parse
/// is renewed.
fn lease_is_fresh(held: &str, wanted: &str) -> bool {
    let now = time::OffsetDateTime::now_utc();
    match (parse_instant(held), parse_instant(wanted)) {
        (Some(held), Some(wanted)) if wanted > now => held >= now + (wanted - now) / 2,
        _ => false,
    }
}

fn progress_of<D: Dialect>(r: &super::Row<D>) -> StoreResult<EmbeddingProgress> {
    // -1 (SQL NULL): the backfill is done.
    let kind = r.int("backfill_kind")?;
    Ok(EmbeddingProgress {
        done_seq: r.int("done_seq")?,
        backfill_until: r.int("backfill_until")?,
        backfill: Kind::from_code(kind)
            .map(|k| r.text("backfill_key").map(|key| (embedding_kind(k), key)))
            .transpose()?,
    })
}

impl<D: Dialect> SqlStore<D> {
    /// Takes (or keeps) the model's lease; its position when held. A lease of this owner
    /// with more than half its time left is kept as it is, read without a write: a worker
    /// following a stream of saves runs several rounds a second, and renewing each time put
    /// a write transaction (and its fsync) between the saves' group commits at every round.
    async fn claim(
        &self,
        model: &str,
        owner: &str,
        lease_until: &str,
    ) -> StoreResult<Option<EmbeddingProgress>> {
        if let Some(row) = self
            .read()
            .await?
            .optional(
                Stmt::new(
                    "SELECT done_seq, backfill_until, COALESCE(backfill_kind, -1) AS backfill_kind, backfill_key, lease_owner, lease_until
                     FROM embedding_progress WHERE model = $1",
                )
                .bind(model),
            )
            .await?
            && row.opt_text("lease_owner")?.as_deref() == Some(owner)
            && row
                .opt_text("lease_until")?
                .is_some_and(|held| lease_is_fresh(&held, lease_until))
        {
            return Ok(Some(progress_of::<D>(&row)?));
        }
        let mut s = self.write().await?;
        let current = s
            .optional(
                Stmt::new(format!(
                    "SELECT done_seq, backfill_until, COALESCE(backfill_kind, -1) AS backfill_kind, backfill_key, lease_owner, lease_until
                     FROM embedding_progress WHERE model = $1{}",
                    D::LOCK_ROWS
                ))
                .bind(model),
            )
            .await?;
        let progress = match current {
            None => {
                // A new model: every row older than now is backfilled, then the log follows.
                let newest = s
                    .one(crate::search::follow::newest_seq(), "log")
                    .await?
                    .int("n")?;
                s.execute(
                    Stmt::new(
                        "INSERT INTO embedding_progress (model, done_seq, backfill_until, backfill_kind, backfill_key, lease_owner, lease_until)
                         VALUES ($1, $2, $2, $3, '', $4, $5) ON CONFLICT (model) DO NOTHING",
                    )
                    .bind(model)
                    .bind(newest)
                    .bind(Kind::Skills as i64)
                    .bind(owner)
                    .bind(lease_until),
                )
                .await?;
                s.commit().await?;
                // Another node may have made it first: its lease then decides.
                return Box::pin(self.claim_existing(model, owner, lease_until)).await;
            }
            Some(row) => {
                let holder = row.opt_text("lease_owner")?;
                let until = row.opt_text("lease_until")?;
                let free = holder.as_deref().is_none_or(|h| h == owner)
                    || until.is_none_or(|u| u.as_str() <= now().as_str());
                if !free {
                    return Ok(None);
                }
                progress_of::<D>(&row)?
            }
        };
        s.execute(
            Stmt::new(
                "UPDATE embedding_progress SET lease_owner = $2, lease_until = $3 WHERE model = $1",
            )
            .bind(model)
            .bind(owner)
            .bind(lease_until),
        )
        .await?;
        s.commit().await?;
        Ok(Some(progress))
    }

    async fn claim_existing(
        &self,
        model: &str,
        owner: &str,
        lease_until: &str,
    ) -> StoreResult<Option<EmbeddingProgress>> {
        let mut s = self.read().await?;
        let row = s
            .one(
                Stmt::new(
                    "SELECT done_seq, backfill_until, COALESCE(backfill_kind, -1) AS backfill_kind, backfill_key, lease_owner, lease_until
                     FROM embedding_progress WHERE model = $1",
                )
                .bind(model),
                "embedding progress",
            )
            .await?;
        drop(s);
        if row.opt_text("lease_owner")?.as_deref() == Some(owner) {
            return Ok(Some(progress_of::<D>(&row)?));
        }
        // Somebody else's fresh row: try as an existing one.
        let mut s = self.write().await?;
        let changed = s
            .execute(
                Stmt::new(
                    "UPDATE embedding_progress SET lease_owner = $2, lease_until = $3
                     WHERE model = $1 AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until <= $4)",
                )
                .bind(model)
                .bind(owner)
                .bind(lease_until)
                .bind(now()),
            )
            .await?;
        s.commit().await?;
        if changed == 0 {
            return Ok(None);
        }
        Ok(Some(progress_of::<D>(&row)?))
    }

    pub(crate) async fn embedding_work_in(
        &self,
        model: &str,
        owner: &str,
        lease_until: &str,
        limit: usize,
    ) -> StoreResult<Option<EmbeddingWork>> {
        let Some(mut progress) = self.claim(model, owner, lease_until).await? else {
            return Ok(None);
        };
        let limit = limit.max(1);
        let mut s = self.read().await?;
        // Up to the newest number as it is now: a later entry waits for the next round
        // (numbers are handed out in commit order).
        let bounds = s
            .one(
                Stmt::new(format!(
                    "SELECT {FLOOR_SEQ} AS floor, {NEWEST_SEQ} AS newest"
                )),
                "log bounds",
            )
            .await?;
        let newest = bounds.int("newest")?;
        if bounds.int("floor")? > progress.done_seq {
            // The log was pruned past this model's position while its worker was away (a
            // live model's position holds the prune back): what changed meanwhile is known
            // only by reading every row again. Unchanged texts keep their vectors.
            tracing::info!(
                model,
                done_seq = progress.done_seq,
                "the full-text log was pruned past this model's position: embedding every row again"
            );
            progress = EmbeddingProgress {
                done_seq: newest,
                backfill_until: newest,
                backfill: Some((EmbeddingKind::Skill, String::new())),
            };
        }
        let mut work = EmbeddingWork {
            from: progress.clone(),
            next: progress.clone(),
            ..EmbeddingWork::default()
        };
        match &progress.backfill {
            Some((kind, after)) => {
                let kind = kind_of(*kind);
                let rows = s
                    .all(
                        Stmt::new(format!(
                            "{} AND {col} > $1 ORDER BY {col} LIMIT {limit}",
                            embedding_rows(kind),
                            col = kind.key_column()
                        ))
                        .bind(after.clone()),
                    )
                    .await?;
                for r in &rows {
                    work.jobs.push(EmbeddingJob {
                        kind: embedding_kind(kind),
                        key: r.text("key")?,
                        workspace_id: r.text("workspace_id")?,
                        text: text_of::<D>(kind, r)?,
                        seq: progress.backfill_until,
                        stored_hash: None,
                    });
                }
                work.next.backfill = match (rows.len() < limit, kind) {
                    (false, _) => work
                        .jobs
                        .last()
                        .map(|j| (embedding_kind(kind), j.key.clone())),
                    (true, Kind::Skills) => Some((EmbeddingKind::Memory, String::new())),
                    (true, Kind::Memories) => None,
                };
                if work.next.backfill.is_none() {
                    work.next.done_seq = progress.backfill_until;
                }
            }
            None => {
                let entries = s
                    .all(
                        Stmt::new(row_log_page(limit))
                            .bind(progress.done_seq)
                            .bind(newest),
                    )
                    .await?;
                work.next.done_seq = if entries.len() < limit {
                    newest
                } else {
                    entries
                        .last()
                        .map(|r| r.int("seq"))
                        .transpose()?
                        .unwrap_or(progress.done_seq)
                };
                // The newest change of each row.
                let mut changed: BTreeMap<(i64, String), i64> = BTreeMap::new();
                for r in &entries {
                    changed.insert((r.int("kind")?, r.text("key")?), r.int("seq")?);
                }
                for kind in [Kind::Skills, Kind::Memories] {
                    let keys: Vec<(String, i64)> = changed
                        .iter()
                        .filter(|((k, _), _)| *k == kind as i64)
                        .map(|((_, key), seq)| (key.clone(), *seq))
                        .collect();
                    if keys.is_empty() {
                        continue;
                    }
                    let names: Vec<String> = keys.iter().map(|(k, _)| k.clone()).collect();
                    let rows = s
                        .all(
                            Stmt::new(format!(
                                "{} AND {} IN ({})",
                                embedding_rows(kind),
                                kind.key_column(),
                                in_list(1, names.len())
                            ))
                            .bind_all(&names),
                        )
                        .await?;
                    let mut present = std::collections::HashSet::new();
                    for r in &rows {
                        let key = r.text("key")?;
                        let seq = keys
                            .iter()
                            .find(|(k, _)| *k == key)
                            .map_or(progress.done_seq, |(_, s)| *s);
                        present.insert(key.clone());
                        work.jobs.push(EmbeddingJob {
                            kind: embedding_kind(kind),
                            key,
                            workspace_id: r.text("workspace_id")?,
                            text: text_of::<D>(kind, r)?,
                            seq,
                            stored_hash: None,
                        });
                    }
                    for key in names.into_iter().filter(|k| !present.contains(k)) {
                        work.removed.push((embedding_kind(kind), key));
                    }
                }
            }
        }
        stored_hashes(&mut s, model, &mut work.jobs).await?;
        Ok(Some(work))
    }

    pub(crate) async fn embedding_save_in(
        &self,
        model: &str,
        owner: &str,
        rows: &[EmbeddedRow],
        removed: &[(EmbeddingKind, String)],
        next: &EmbeddingProgress,
    ) -> StoreResult<bool> {
        let mut s = self.write().await?;
        let holder = s
            .optional(
                Stmt::new(format!(
                    "SELECT lease_owner FROM embedding_progress WHERE model = $1{}",
                    D::LOCK_ROWS
                ))
                .bind(model),
            )
            .await?;
        if holder
            .as_ref()
            .map(|r| r.opt_text("lease_owner"))
            .transpose()?
            .flatten()
            .as_deref()
            != Some(owner)
        {
            return Ok(false);
        }
        let mut touched: BTreeMap<i64, Vec<String>> = BTreeMap::new();
        for row in rows {
            let kind = kind_of(row.job.kind) as i64;
            match &row.vector {
                Some(vector) => {
                    let q = quantize(vector);
                    let bytes = to_bytes(&q.values);
                    s.execute(
                        Stmt::new(
                            "INSERT INTO embeddings (model, kind, key, workspace_id, seq, text_hash, scale, vector)
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                             ON CONFLICT (model, kind, key) DO UPDATE SET workspace_id = excluded.workspace_id,
                               seq = excluded.seq, text_hash = excluded.text_hash, scale = excluded.scale,
                               vector = excluded.vector",
                        )
                        .bind(model)
                        .bind(kind)
                        .bind(&row.job.key)
                        .bind(&row.job.workspace_id)
                        .bind(row.job.seq)
                        .bind(&row.text_hash)
                        .bind(f64::from(q.scale))
                        .bind(bytes.as_slice()),
                    )
                    .await?;
                }
                // The same text as the stored vector's: only its position moves.
                None => {
                    s.execute(
                        Stmt::new(
                            "UPDATE embeddings SET seq = $4 WHERE model = $1 AND kind = $2 AND key = $3",
                        )
                        .bind(model)
                        .bind(kind)
                        .bind(&row.job.key)
                        .bind(row.job.seq),
                    )
                    .await?;
                }
            }
            touched
                .entry(vector_code(kind_of(row.job.kind)))
                .or_default()
                .push(row.job.key.clone());
        }
        for (kind, key) in removed {
            let k = kind_of(*kind);
            s.execute(
                Stmt::new("DELETE FROM embeddings WHERE model = $1 AND kind = $2 AND key = $3")
                    .bind(model)
                    .bind(k as i64)
                    .bind(key),
            )
            .await?;
            touched.entry(vector_code(k)).or_default().push(key.clone());
        }
        for (code, keys) in &touched {
            crate::search::follow::log_codes(&mut s, *code, keys).await?;
        }
        let (backfill_kind, backfill_key) = match &next.backfill {
            Some((kind, key)) => (kind_of(*kind) as i64, key.clone()),
            None => (-1, String::new()),
        };
        s.execute(
            Stmt::new(
                "UPDATE embedding_progress SET done_seq = $2, backfill_until = $3,
                   backfill_kind = NULLIF($4, -1), backfill_key = $5 WHERE model = $1",
            )
            .bind(model)
            .bind(next.done_seq)
            .bind(next.backfill_until)
            .bind(backfill_kind)
            .bind(backfill_key),
        )
        .await?;
        s.commit().await?;
        Ok(true)
    }

    pub(crate) async fn embedding_lag_in(&self, model: &str) -> StoreResult<EmbeddingLag> {
        let mut s = self.read().await?;
        let Some(progress) = s
            .optional(
                Stmt::new(
                    "SELECT done_seq, backfill_until, COALESCE(backfill_kind, -1) AS backfill_kind, backfill_key
                     FROM embedding_progress WHERE model = $1",
                )
                .bind(model),
            )
            .await?
        else {
            let rows = s
                .one(
                    Stmt::new(
                        "SELECT (SELECT COUNT(*) FROM memories) + (SELECT COUNT(*) FROM skills) AS n",
                    ),
                    "rows",
                )
                .await?
                .int("n")?;
            return Ok(EmbeddingLag {
                pending: rows,
                backfilling: true,
                vectors: 0,
            });
        };
        let progress = progress_of::<D>(&progress)?;
        let pending = s
            .one(
                Stmt::new(row_log_pending()).bind(progress.done_seq),
                "pending",
            )
            .await?
            .int("n")?;
        let vectors = s
            .one(
                Stmt::new("SELECT COUNT(*) AS n FROM embeddings WHERE model = $1").bind(model),
                "vectors",
            )
            .await?
            .int("n")?;
        Ok(EmbeddingLag {
            pending,
            backfilling: progress.backfill.is_some(),
            vectors,
        })
    }
}

/// Fills each job's `stored_hash` (the text its current vector was made from).
async fn stored_hashes<D: Dialect>(
    s: &mut Session<D>,
    model: &str,
    jobs: &mut [EmbeddingJob],
) -> StoreResult<()> {
    for kind in [EmbeddingKind::Skill, EmbeddingKind::Memory] {
        let keys: Vec<String> = jobs
            .iter()
            .filter(|j| j.kind == kind)
            .map(|j| j.key.clone())
            .collect();
        if keys.is_empty() {
            continue;
        }
        let rows = s
            .all(
                Stmt::new(format!(
                    "SELECT key, text_hash FROM embeddings WHERE model = $1 AND kind = $2 AND key IN ({})",
                    in_list(3, keys.len())
                ))
                .bind(model)
                .bind(kind_of(kind) as i64)
                .bind_all(&keys),
            )
            .await?;
        let hashes: std::collections::HashMap<String, String> = rows
            .iter()
            .map(|r| Ok((r.text("key")?, r.text("text_hash")?)))
            .collect::<StoreResult<_>>()?;
        for job in jobs.iter_mut().filter(|j| j.kind == kind) {
            job.stored_hash = hashes.get(&job.key).cloned();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{lease_is_fresh, row_log_page, row_log_pending};
    use crate::model::instant_text;

    /// The worker's log reads walk the log by `seq` from its position; SQLite took the
    /// `(kind, key, seq)` index for `kind IN (0, 1)` and sorted every entry of those kinds.
    #[tokio::test]
    async fn the_workers_log_reads_start_at_its_position() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.db");
        crate::sqlite::SqliteStore::open(&path).await.unwrap();
        let db = rusqlite::Connection::open(&path).unwrap();
        for sql in [row_log_page(64), row_log_pending()] {
            let mut plan = db.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            // Unbound parameters are NULL: the plan does not depend on them.
            let mut rows = plan.raw_query();
            let mut steps: Vec<String> = Vec::new();
            while let Some(row) = rows.next().unwrap() {
                steps.push(row.get(3).unwrap());
            }
            assert_eq!(
                steps,
                [if sql.contains("<=") {
                    "SEARCH fulltext_log USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"
                } else {
                    "SEARCH fulltext_log USING INTEGER PRIMARY KEY (rowid>?)"
                }],
                "{sql}"
            );
        }
    }

    fn at(offset_s: i64) -> String {
        instant_text(time::OffsetDateTime::now_utc() + time::Duration::seconds(offset_s))
    }

    #[test]
    fn a_lease_is_renewed_once_half_of_it_is_gone() {
        // Wanted: 60 s from now. Held 50 s more: kept; 20 s more: renewed.
        assert!(lease_is_fresh(&at(50), &at(60)));
        assert!(!lease_is_fresh(&at(20), &at(60)));
        assert!(!lease_is_fresh(&at(-5), &at(60)));
        // What does not parse, or a wanted instant already past, is renewed.
        assert!(!lease_is_fresh("soon", &at(60)));
        assert!(!lease_is_fresh(&at(50), &at(-1)));
    }
}
