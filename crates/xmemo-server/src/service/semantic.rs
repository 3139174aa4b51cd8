//! The semantic recall lane (docs/decisions.md, "Semantic recall"): the meaning of a query,
//! fused with full text in memory recall and Level 0 search, and the background worker that
//! embeds skills and memories off the write path.
//!
//! Off unless the operator names a model (`--embedding-model`, `--embeddings-url`). A query
//! asks the model once, within [`QUERY_TIMEOUT`]; when that fails the lane is *degraded*: the
//! following queries do not ask the model at all and are answered by full text alone at once,
//! until a background probe sees the model answer a query in time again (after 0.5 s, then
//! doubling pauses up to [`PROBE_PAUSE_MAX`]). A lane with an endpoint starts degraded, so a
//! server starts and serves whether the endpoint answers or not. The lane's state is in
//! `/readyz` (a fixed description of the failure, never the endpoint's address or answer),
//! `xmemo admin doctor` and `/metrics`; saves never wait for it.

use super::Service;
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use xmemo_core::limits::{SCORE_MAX, SCORE_MIN};
use xmemo_embed::{EmbedError, Embedder, Purpose};
use xmemo_store::{EmbeddedRow, FusionMethod, Semantic};

/// Weight of full text in the fused score by default: the best of 0.4 to 0.7 on the
/// conversation benchmark with the recommended model and memories embedded with the start of
/// the one before (docs/decisions.md, "Semantic recall").
pub const DEFAULT_TEXT_WEIGHT: f64 = 0.5;
/// A query's embedding takes at most this long (one try) before the recall goes on without
/// it; the probe must answer within it too before queries ask the model again.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(2);
/// Pause before the first probe of a model that just failed; doubled after each failed
/// probe up to [`PROBE_PAUSE_MAX`].
pub const PROBE_PAUSE_FIRST: Duration = Duration::from_millis(500);
/// Longest pause between two probes of a failing model: it answers again, and within this
/// time queries use it again.
pub const PROBE_PAUSE_MAX: Duration = Duration::from_secs(10);
/// How often the probe looks whether the lane is degraded.
const PROBE_LOOK: Duration = Duration::from_millis(250);
/// What the probe embeds: a query's worth of text.
const PROBE_TEXT: &str = "is the semantic lane back";
/// Why a lane with an endpoint starts degraded.
const NOT_ANSWERED_YET: &str = "the embeddings endpoint has not answered yet";
/// Rows the worker claims at once.
const WORK_BATCH: usize = 64;
/// How long a worker's claim on a model lasts without being renewed.
const LEASE: Duration = Duration::from_secs(60);
/// Pause of an idle worker before it looks at the log again.
const IDLE: Duration = Duration::from_millis(500);
/// How often a busy worker reads the lane's lag for `/metrics` (counting the vectors is
/// linear in their number: read every round, it cost a third of the saves' rate at 100k
/// memories, docs/benchmarks.md).
const LAG_EVERY: Duration = Duration::from_secs(1);

/// Whether queries ask the model (a circuit breaker: a failure opens it, only a probe that
/// answers in time closes it).
#[derive(Debug)]
struct Health {
    /// Why recall answers by full text alone (a fixed description), while degraded.
    degraded: Option<String>,
    /// When the probe tries the model next, while degraded.
    next_probe: Instant,
    /// The pause after the next failed probe.
    pause: Duration,
}

/// The lane of a service: its embedder, how its lanes are fused, and its state.
#[derive(Debug)]
pub struct SemanticLane {
    embedder: Arc<dyn Embedder>,
    text_weight: f64,
    fusion: FusionMethod,
    health: Mutex<Health>,
    pending: AtomicI64,
    vectors: AtomicI64,
    backfilling: AtomicI64,
    embedded: AtomicU64,
    failures: AtomicU64,
    lexical_only: AtomicU64,
    /// When the worker last read the lag.
    lag_read: Mutex<Option<Instant>>,
}

/// What the public `/readyz` says of the lane: whether queries use it, and why not, in words
/// of the server's (no endpoint address, nothing the endpoint answered); the lane's lag and
/// counts are for administrators (`/metrics`, `xmemo admin doctor`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SemanticStatus {
    pub model: String,
    /// `None` until an embeddings endpoint first answers.
    pub dimensions: Option<usize>,
    /// `ok`, or `degraded`: recall answers by full text alone until the model answers again.
    pub state: &'static str,
    pub error: Option<String>,
    pub backfilling: bool,
}

impl SemanticLane {
    pub fn new(embedder: Arc<dyn Embedder>, text_weight: f64, fusion: FusionMethod) -> Self {
        // An endpoint not heard from yet is probed at once; queries wait for nothing.
        let degraded = embedder
            .dimensions()
            .is_none()
            .then(|| NOT_ANSWERED_YET.to_string());
        Self {
            embedder,
            text_weight: text_weight.clamp(0.0, 1.0),
            fusion,
            health: Mutex::new(Health {
                degraded,
                next_probe: Instant::now(),
                pause: PROBE_PAUSE_FIRST,
            }),
            pending: AtomicI64::new(0),
            vectors: AtomicI64::new(0),
            backfilling: AtomicI64::new(1),
            embedded: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            lexical_only: AtomicU64::new(0),
            lag_read: Mutex::new(None),
        }
    }

    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the worker should read the lag now ([`LAG_EVERY`]), noting that it does.
    fn lag_due(&self) -> bool {
        let mut read = self.lag_read.lock().unwrap_or_else(|p| p.into_inner());
        if read.is_some_and(|at| at.elapsed() < LAG_EVERY) {
            return false;
        }
        *read = Some(Instant::now());
        true
    }

    fn is_degraded(&self) -> bool {
        self.health().degraded.is_some()
    }

    /// A query or the worker saw the model fail: queries stop asking it until a probe
    /// answers. The log says which endpoint (without credentials) and how.
    fn failed(&self, error: &EmbedError) {
        self.failed_because(error.public_reason(), &error.to_string());
    }

    fn failed_because(&self, reason: String, detail: &str) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let mut health = self.health();
        if health.degraded.as_deref() != Some(reason.as_str()) {
            tracing::warn!(error = %detail, "the embedding model failed: recall uses full text alone until it answers");
        }
        if health.degraded.is_none() {
            health.next_probe = Instant::now() + PROBE_PAUSE_FIRST;
            health.pause = PROBE_PAUSE_FIRST;
        }
        health.degraded = Some(reason);
    }

    /// The probe failed: the next one waits twice as long (up to [`PROBE_PAUSE_MAX`]).
    fn probe_failed(&self, reason: String, detail: &str) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let mut health = self.health();
        if health.degraded.as_deref() != Some(reason.as_str()) {
            tracing::warn!(error = %detail, "the embedding model still fails: recall uses full text alone until it answers");
        }
        health.degraded = Some(reason);
        health.next_probe = Instant::now() + health.pause;
        health.pause = (health.pause * 2).min(PROBE_PAUSE_MAX);
    }

    fn recovered(&self) {
        let mut health = self.health();
        if health.degraded.take().is_some() {
            tracing::info!("the embedding model answers again: the semantic lane is back");
        }
        health.pause = PROBE_PAUSE_FIRST;
    }

    /// `None` while healthy, else how long until the probe is due (zero: now).
    fn probe_due_in(&self) -> Option<Duration> {
        let health = self.health();
        health.degraded.as_ref()?;
        Some(health.next_probe.saturating_duration_since(Instant::now()))
    }

    /// One probe: a query's embedding, which must come within [`QUERY_TIMEOUT`] for queries
    /// to ask the model again (a model that answers only slower would make each of them wait).
    async fn probe(&self) {
        let text = [PROBE_TEXT.to_string()];
        match tokio::time::timeout(QUERY_TIMEOUT, self.embedder.embed(&text, Purpose::Query)).await
        {
            Ok(Ok(vectors)) if vectors.len() == 1 => self.recovered(),
            Ok(Ok(_)) => self.probe_failed(
                "the embedding model answered no vector".into(),
                "the embedding model answered another number of vectors than texts",
            ),
            Ok(Err(e)) => self.probe_failed(e.public_reason(), &e.to_string()),
            Err(_) => {
                let reason = too_slow();
                self.probe_failed(reason.clone(), &reason)
            }
        }
    }

    pub fn status(&self) -> SemanticStatus {
        let error = self.health().degraded.clone();
        SemanticStatus {
            model: self.embedder.model_id().to_string(),
            dimensions: self.embedder.dimensions(),
            state: if error.is_some() { "degraded" } else { "ok" },
            error,
            backfilling: self.backfilling.load(Ordering::Relaxed) != 0,
        }
    }

    /// The Prometheus lines of the lane.
    pub fn render_metrics(&self, out: &mut String) {
        use crate::metrics::render_gauge;
        render_gauge(
            out,
            "xmemo_semantic_pending",
            "Skill and memory changes the semantic lane has not embedded yet (its lag).",
            self.pending.load(Ordering::Relaxed).max(0) as u64,
        );
        render_gauge(
            out,
            "xmemo_semantic_vectors",
            "Vectors stored for the configured embedding model.",
            self.vectors.load(Ordering::Relaxed).max(0) as u64,
        );
        render_gauge(
            out,
            "xmemo_semantic_degraded",
            "1 while the embedding model fails and recall uses full text alone.",
            u64::from(self.is_degraded()),
        );
        for (name, help, value) in [
            (
                "xmemo_semantic_embedded_total",
                "Texts this node embedded for the semantic lane.",
                &self.embedded,
            ),
            (
                "xmemo_semantic_failures_total",
                "Embedding calls that failed (queries, probes and the worker).",
                &self.failures,
            ),
            (
                "xmemo_semantic_lexical_only_total",
                "Queries answered by full text alone because the embedding model failed or the lane was degraded.",
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

fn too_slow() -> String {
    format!(
        "the embedding model took longer than {} s to embed a query",
        QUERY_TIMEOUT.as_secs()
    )
}

/// Probes a degraded lane until it answers in time, for as long as the lane lives.
async fn probe_while_degraded(lane: Weak<SemanticLane>) {
    loop {
        let wait = {
            let Some(lane) = lane.upgrade() else { return };
            match lane.probe_due_in() {
                Some(due) if due.is_zero() => {
                    lane.probe().await;
                    continue;
                }
                Some(due) => due.min(PROBE_LOOK),
                None => PROBE_LOOK,
            }
        };
        tokio::time::sleep(wait).await;
    }
}

/// A `min_score` as given: a floor on the public score, 0 to 1, whichever lanes rank
/// (docs/decisions.md, "Scores").
pub(crate) fn check_min_score(min: Option<f64>) -> crate::error::ServiceResult<Option<f64>> {
    match min {
        Some(v) if !(SCORE_MIN..=SCORE_MAX).contains(&v) => {
            Err(crate::error::ServiceError::validation(
                format!("min_score must be a number from {SCORE_MIN} to {SCORE_MAX}"),
                "min_score",
            ))
        }
        other => Ok(other),
    }
}

/// Whether a result stays under a `min_score`: it scores at least that, or it matches the
/// query's words exactly (every word of the query, or the exact slug or name), which no
/// floor leaves out.
pub(crate) fn above_floor(min_score: Option<f64>, score: f64, every_word: bool) -> bool {
    every_word || min_score.is_none_or(|min| score >= min)
}

fn text_hash(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

impl Service {
    /// This service with a semantic lane (call [`Service::start_embedding_worker`] to keep its
    /// vectors current).
    pub fn with_semantic_lane(
        mut self,
        embedder: Arc<dyn Embedder>,
        text_weight: f64,
        fusion: FusionMethod,
    ) -> Self {
        self.semantic = Some(Arc::new(SemanticLane::new(embedder, text_weight, fusion)));
        self
    }

    pub fn semantic_status(&self) -> Option<SemanticStatus> {
        self.semantic.as_ref().map(|l| l.status())
    }

    /// The meaning of a query for the store, when the lane is on, not degraded, and the
    /// model answers in time (one try); else `None` and the recall goes on by full text.
    pub(crate) async fn query_meaning(&self, text: &str) -> Option<Semantic> {
        let lane = self.semantic.as_ref()?;
        if lane.is_degraded() {
            lane.lexical_only.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let started = Instant::now();
        let embedded = tokio::time::timeout(
            QUERY_TIMEOUT,
            lane.embedder.embed(&[text.to_string()], Purpose::Query),
        )
        .await;
        match embedded {
            Ok(Ok(mut vectors)) if !vectors.is_empty() => {
                tracing::trace!(us = started.elapsed().as_micros() as u64, "query embedded");
                Some(Semantic {
                    model: lane.embedder.model_id().to_string(),
                    vector: vectors.swap_remove(0),
                    text_weight: lane.text_weight,
                    method: lane.fusion,
                })
            }
            Ok(Ok(_)) => None,
            Ok(Err(e)) => {
                lane.failed(&e);
                lane.lexical_only.fetch_add(1, Ordering::Relaxed);
                None
            }
            Err(_) => {
                let reason = too_slow();
                lane.failed_because(reason.clone(), &reason);
                lane.lexical_only.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Starts the background worker that embeds what changed (and, for a new model, every
    /// row there is), and the probe of a degraded lane. The worker holds the model's lease
    /// while it works, so on several nodes one of them embeds each change, and tries a
    /// failed batch again after a pause that doubles up to 30 s; both stop when the service
    /// is dropped.
    pub fn start_embedding_worker(&self, owner: String) -> Option<tokio::task::JoinHandle<()>> {
        let lane = Arc::downgrade(self.semantic.as_ref()?);
        let service = self.clone();
        // The worker must not keep the lane alive: it holds a weak reference and a service
        // without the lane.
        let mut store_side = service;
        store_side.semantic = None;
        let probed = lane.clone();
        let worker = async move {
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
        };
        Some(tokio::spawn(async move {
            tokio::join!(worker, probe_while_degraded(probed));
        }))
    }

    /// One round of the worker: `Ok(true)` when it embedded or moved something (go on at
    /// once), `Ok(false)` when idle, `Err(wait)` after a failure.
    async fn embed_round(&self, lane: &SemanticLane, owner: &str) -> Result<bool, Duration> {
        let model = lane.embedder.model_id();
        let store = self.store();
        if lane.lag_due()
            && let Ok(lag) = store.embedding_lag(model).await
        {
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
            // Idle: the next round reads the lag, so the gauges settle on the final counts.
            lane.lag_read
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
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
            // A success does not close the breaker: only the probe, which also checks that a
            // query is answered in time, does.
            match lane.embedder.embed(&texts, Purpose::Document).await {
                Ok(v) if v.len() == texts.len() => v,
                Ok(_) => {
                    lane.failed(&EmbedError::Compute(
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
