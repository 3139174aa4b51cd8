//! The semantic recall lane (docs/decisions.md, "Semantic recall"): the meaning of a query,
//! fused with full text in memory recall and Level 0 search, and the background worker that
//! embeds skills and memories off the write path.
//!
//! Off unless the operator names a model (`--embedding-model`, `--embeddings-url`). A query
//! whose embedding fails or takes too long is answered by full text alone, and says so in the
//! lane's status (`xmemo admin doctor`, `/readyz`, `/metrics`); saves never wait for it.

use super::Service;
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use xmemo_embed::{Embedder, Purpose};
use xmemo_store::{EmbeddedRow, Semantic};

/// Weight of full text in the fused score by default: the convex combination measured best
/// (docs/decisions.md).
pub const DEFAULT_TEXT_WEIGHT: f64 = 0.5;
/// A query's embedding takes at most this long before the recall goes on without it.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(2);
/// Rows the worker claims at once.
const WORK_BATCH: usize = 64;
/// How long a worker's claim on a model lasts without being renewed.
const LEASE: Duration = Duration::from_secs(60);
/// Pause of an idle worker before it looks at the log again.
const IDLE: Duration = Duration::from_millis(500);

#[derive(Debug, Default)]
struct Health {
    /// The last failure of the model or endpoint, until a success.
    error: Option<String>,
}

/// The lane of a service: its embedder, how its lanes are fused, and its state.
#[derive(Debug)]
pub struct SemanticLane {
    embedder: Arc<dyn Embedder>,
    text_weight: f64,
    health: Mutex<Health>,
    pending: AtomicI64,
    vectors: AtomicI64,
    backfilling: AtomicI64,
    embedded: AtomicU64,
    failures: AtomicU64,
    lexical_only: AtomicU64,
}

/// What `xmemo admin doctor` and `/readyz` say of the lane.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SemanticStatus {
    pub model: String,
    pub dimensions: usize,
    /// `ok`, or `degraded`: recall answers by full text alone until the model answers again.
    pub state: &'static str,
    pub error: Option<String>,
    /// Changes not embedded yet (the lane's lag), and vectors stored.
    pub pending: i64,
    pub vectors: i64,
    pub backfilling: bool,
}

impl SemanticLane {
    pub fn new(embedder: Arc<dyn Embedder>, text_weight: f64) -> Self {
        Self {
            embedder,
            text_weight: text_weight.clamp(0.0, 1.0),
            health: Mutex::default(),
            pending: AtomicI64::new(0),
            vectors: AtomicI64::new(0),
            backfilling: AtomicI64::new(1),
            embedded: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            lexical_only: AtomicU64::new(0),
        }
    }

    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn failed(&self, error: &xmemo_embed::EmbedError) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let text = error.to_string();
        let mut health = self.health();
        if health.error.as_deref() != Some(text.as_str()) {
            tracing::warn!(error = %text, "the embedding model failed: recall uses full text alone until it answers");
        }
        health.error = Some(text);
    }

    fn succeeded(&self) {
        let mut health = self.health();
        if health.error.take().is_some() {
            tracing::info!("the embedding model answers again: the semantic lane is back");
        }
    }

    pub fn status(&self) -> SemanticStatus {
        let error = self.health().error.clone();
        SemanticStatus {
            model: self.embedder.model_id().to_string(),
            dimensions: self.embedder.dimensions(),
            state: if error.is_some() { "degraded" } else { "ok" },
            error,
            pending: self.pending.load(Ordering::Relaxed),
            vectors: self.vectors.load(Ordering::Relaxed),
            backfilling: self.backfilling.load(Ordering::Relaxed) != 0,
        }
    }

    /// The Prometheus lines of the lane.
    pub fn render_metrics(&self, out: &mut String) {
        use crate::metrics::render_gauge;
        let status = self.status();
        render_gauge(
            out,
            "xmemo_semantic_pending",
            "Skill and memory changes the semantic lane has not embedded yet (its lag).",
            status.pending.max(0) as u64,
        );
        render_gauge(
            out,
            "xmemo_semantic_vectors",
            "Vectors stored for the configured embedding model.",
            status.vectors.max(0) as u64,
        );
        render_gauge(
            out,
            "xmemo_semantic_degraded",
            "1 while the embedding model fails and recall uses full text alone.",
            u64::from(status.error.is_some()),
        );
        for (name, help, value) in [
            (
                "xmemo_semantic_embedded_total",
                "Texts this node embedded for the semantic lane.",
                &self.embedded,
            ),
            (
                "xmemo_semantic_failures_total",
                "Embedding calls that failed (queries and the worker).",
                &self.failures,
            ),
            (
                "xmemo_semantic_lexical_only_total",
                "Queries answered by full text alone because their embedding failed.",
                &self.lexical_only,
            ),
        ] {
            let _ = std::fmt::Write::write_fmt(
                out,
                format_args!(
                    "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}\n",
                    value.load(Ordering::Relaxed)
                ),
            );
        }
    }
}

/// A `min_score` as given: a number from -1 to 1 (similarities) or any larger relevance.
pub(crate) fn check_min_score(min: Option<f64>) -> crate::error::ServiceResult<Option<f64>> {
    match min {
        Some(v) if !v.is_finite() || v < -1.0 => Err(crate::error::ServiceError::validation(
            "min_score must be a number of at least -1",
            "min_score",
        )),
        other => Ok(other),
    }
}

fn text_hash(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

impl Service {
    /// This service with a semantic lane (call [`Service::start_embedding_worker`] to keep its
    /// vectors current).
    pub fn with_semantic_lane(mut self, embedder: Arc<dyn Embedder>, text_weight: f64) -> Self {
        self.semantic = Some(Arc::new(SemanticLane::new(embedder, text_weight)));
        self
    }

    pub fn semantic_status(&self) -> Option<SemanticStatus> {
        self.semantic.as_ref().map(|l| l.status())
    }

    /// The meaning of a query for the store, when the lane is on and the model answers in
    /// time; else `None` and the recall goes on by full text.
    pub(crate) async fn query_meaning(
        &self,
        text: &str,
        min_score: Option<f64>,
    ) -> Option<Semantic> {
        let lane = self.semantic.as_ref()?;
        let started = Instant::now();
        let embedded = tokio::time::timeout(
            QUERY_TIMEOUT,
            lane.embedder.embed(&[text.to_string()], Purpose::Query),
        )
        .await;
        match embedded {
            Ok(Ok(mut vectors)) if !vectors.is_empty() => {
                lane.succeeded();
                tracing::trace!(us = started.elapsed().as_micros() as u64, "query embedded");
                Some(Semantic {
                    model: lane.embedder.model_id().to_string(),
                    vector: vectors.swap_remove(0),
                    text_weight: lane.text_weight,
                    min_similarity: min_score,
                })
            }
            Ok(Ok(_)) => None,
            Ok(Err(e)) => {
                lane.failed(&e);
                lane.lexical_only.fetch_add(1, Ordering::Relaxed);
                None
            }
            Err(_) => {
                lane.failed(&xmemo_embed::EmbedError::Compute(format!(
                    "the query took longer than {} s to embed",
                    QUERY_TIMEOUT.as_secs()
                )));
                lane.lexical_only.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Starts the background worker that embeds what changed (and, for a new model, every
    /// row there is). It holds the model's lease while it works, so on several nodes one of
    /// them embeds each change; it stops when the service is dropped.
    pub fn start_embedding_worker(&self, owner: String) -> Option<tokio::task::JoinHandle<()>> {
        let lane = Arc::downgrade(self.semantic.as_ref()?);
        let service = self.clone();
        // The worker must not keep the lane alive: it holds a weak reference and a service
        // without the lane.
        let mut store_side = service;
        store_side.semantic = None;
        Some(tokio::spawn(async move {
            let mut pause = IDLE;
            loop {
                let Some(lane) = lane.upgrade() else { return };
                match store_side.embed_round(&lane, &owner).await {
                    Ok(true) => pause = IDLE,
                    Ok(false) => {
                        drop(lane);
                        tokio::time::sleep(IDLE).await;
                    }
                    Err(wait) => {
                        drop(lane);
                        pause = (pause * 2).clamp(IDLE, Duration::from_secs(30)).max(wait);
                        tokio::time::sleep(pause).await;
                    }
                }
            }
        }))
    }

    /// One round of the worker: `Ok(true)` when it embedded or moved something (go on at
    /// once), `Ok(false)` when idle, `Err(wait)` after a failure.
    async fn embed_round(&self, lane: &SemanticLane, owner: &str) -> Result<bool, Duration> {
        let model = lane.embedder.model_id();
        let store = self.store();
        if let Ok(lag) = store.embedding_lag(model).await {
            lane.pending.store(lag.pending, Ordering::Relaxed);
            lane.vectors.store(lag.vectors, Ordering::Relaxed);
            lane.backfilling
                .store(i64::from(lag.backfilling), Ordering::Relaxed);
        }
        let lease_until = self.instant_after(LEASE);
        let work = match store
            .embedding_work(model, owner, &lease_until, WORK_BATCH)
            .await
        {
            Ok(Some(work)) => work,
            // Another node holds the lease.
            Ok(None) => return Ok(false),
            Err(e) => {
                tracing::warn!(error = %e, "the embedding worker could not read its work");
                return Err(Duration::from_secs(5));
            }
        };
        if work.jobs.is_empty() && work.removed.is_empty() && work.next == work.from {
            return Ok(false);
        }
        let hashes: Vec<String> = work.jobs.iter().map(|j| text_hash(&j.text)).collect();
        let changed: Vec<usize> = (0..work.jobs.len())
            .filter(|&i| work.jobs[i].stored_hash.as_deref() != Some(hashes[i].as_str()))
            .collect();
        let texts: Vec<String> = changed.iter().map(|&i| work.jobs[i].text.clone()).collect();
        let mut vectors = if texts.is_empty() {
            Vec::new()
        } else {
            match lane.embedder.embed(&texts, Purpose::Document).await {
                Ok(v) if v.len() == texts.len() => {
                    lane.succeeded();
                    v
                }
                Ok(_) => {
                    lane.failed(&xmemo_embed::EmbedError::Compute(
                        "the model answered another number of vectors than texts".into(),
                    ));
                    return Err(Duration::from_secs(30));
                }
                Err(e) => {
                    lane.failed(&e);
                    return Err(if e.transient() {
                        Duration::from_secs(2)
                    } else {
                        Duration::from_secs(30)
                    });
                }
            }
        };
        lane.embedded
            .fetch_add(texts.len() as u64, Ordering::Relaxed);
        let mut rows = Vec::with_capacity(work.jobs.len());
        // `changed` and `vectors` are in the same order; take them back to front.
        let mut next_changed = changed.len();
        for (i, (job, hash)) in work.jobs.into_iter().zip(hashes).enumerate().rev() {
            let vector = if next_changed > 0 && changed[next_changed - 1] == i {
                next_changed -= 1;
                vectors.pop()
            } else {
                None
            };
            rows.push(EmbeddedRow {
                job,
                text_hash: hash,
                vector,
            });
        }
        match store
            .embedding_save(model, owner, &rows, &work.removed, &work.next)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) => {
                tracing::warn!(error = %e, "the embedding worker could not save its vectors");
                Err(Duration::from_secs(5))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_told_apart_by_hash() {
        assert_eq!(text_hash("a"), text_hash("a"));
        assert_ne!(text_hash("a"), text_hash("b"));
        assert_eq!(text_hash("").len(), 64);
    }
}
